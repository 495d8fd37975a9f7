#!/usr/bin/env bash
# ssegrade demo: grade each bundled example task twice, as an agent that changes nothing
# (expected verdict: failed) and as one that applies the reference fix (expected: passed).
# Exits non-zero when a verdict is not the expected one.
#
#   bash examples/demo.sh
#
#   examples/tlv      a parser crash; PoCs are input files
#   examples/kvconf   shaped like a Go task: PoCs are a folder of modules sharing a helper,
#                     vendored modules in an ignored folder, a toolchain set in the
#                     environment (KVC_HOME)
#
# Works from any directory. Needs python3 (3.11+) and git; the first run creates .venv at the
# top of the repository and installs ssegrade into it. Scratch folders are removed on exit;
# the results folders are kept and their location printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/.." && pwd)"
venv="$top/.venv"

if [ ! -x "$venv/bin/python" ]; then
    echo "demo: creating $venv"
    python3 -m venv "$venv"
fi
if [ ! -x "$venv/bin/ssegrade" ]; then
    echo "demo: installing ssegrade into $venv"
    "$venv/bin/python" -m pip install -q -e "$top" > "$venv/ssegrade-install.log" 2>&1 \
        || { cat "$venv/ssegrade-install.log" >&2; exit 1; }
fi
ssegrade="$venv/bin/ssegrade"

work="$(mktemp -d "${TMPDIR:-/tmp}/ssegrade-demo.XXXXXX")"
results="$(mktemp -d "${TMPDIR:-/tmp}/ssegrade-demo-results.XXXXXX")"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

# The kvconf task's image configures its toolchain in the environment, as a Go image sets
# GOROOT and GOFLAGS: ssegrade hands the evaluator's environment to the task scripts.
cp -R "$here/kvconf/toolchain" "$work/toolchain"
export KVC_HOME="$work/toolchain"

verdict() {
    "$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["patch_result"]["status"])' \
        "$1/result.json" 2>/dev/null || echo "(no result.json)"
}

summary=()
wrong=0

# grade NAME FIX: lay the example out as a task container would, record the baseline, then
# grade the unmodified tree and the tree with the reference fix FIX (relative to the task).
grade() {
    local name="$1" fix="$2" task="$work/$1/task" src="$work/$1/project"
    mkdir -p "$work/$name"
    cp -R "$here/$name/task" "$task"
    cp -R "$here/$name/project" "$src"
    rm -rf "$src/build"
    find "$src" -name __pycache__ -type d -prune -exec rm -rf {} +

    # The source tree starts as a git repository with a single commit (ignored files, such
    # as vendored modules, are in the tree but not in the commit).
    git -C "$src" -c init.defaultBranch=main init -q
    git -C "$src" add -A
    git -C "$src" -c user.name="ssegrade demo" -c user.email=demo@example.invalid \
        commit -q -m "Initial commit"

    echo
    echo "== $name: baseline, recorded before the agent runs"
    "$ssegrade" baseline --source "$src" --into "$work/$name/baseline"

    for run in unfixed fixed; do
        if [ "$run" = fixed ]; then
            git -C "$src" apply "$task/$fix"
            expected=passed
        else
            expected=failed
        fi
        echo
        echo "== $name: the agent $([ "$run" = fixed ] && echo "applies the reference fix" \
            || echo "changed nothing") (expected: $expected)"
        "$ssegrade" evaluate --task "$task" --source "$src" --baseline "$work/$name/baseline" \
            --results "$results/$name-$run" || true
        got="$(verdict "$results/$name-$run")"
        mark="ok"
        if [ "$got" != "$expected" ]; then
            mark="UNEXPECTED"
            wrong=$((wrong + 1))
        fi
        summary+=("$(printf '%-7s %-8s %-8s (expected %s)  %s' "$mark" "$name" "$got" "$expected" \
            "$results/$name-$run/result.json")")
    done
}

grade tlv fix.diff
grade kvconf diffs/patch.diff

echo
echo "== verdicts"
printf '%s\n' "${summary[@]}"
echo "Results are kept in $results (delete it when done)."
if [ "$wrong" -ne 0 ]; then
    echo "demo: $wrong verdicts were not the expected ones" >&2
    exit 1
fi
