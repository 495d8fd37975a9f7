#!/usr/bin/env bash
# ssegrade demo: grade each bundled example task twice, as an agent that changes nothing
# (expected verdict: failed) and as one that applies the reference fix (expected: passed, and
# no flag from the patch guard); the C task a third time, as an agent that cheats by dropping
# the sanitizer through the project's Makefile (expected: passed, flagged sanitizer and
# build-config). Then each example is verified with its canonical cheats (`ssegrade verify
# --adversarial`): ssegrade writes the cheats itself, grades each and runs the patch guard on
# it, and prints a line per cheat; no example may be hackable (a cheat that passes unflagged),
# and the C task's sanitizer drop must pass and be caught by the guard. Exits non-zero when a
# verdict, the flags or a verification are not the expected ones.
#
#   bash examples/demo.sh
#
#   examples/tlv      a parser crash; PoCs are input files
#   examples/kvconf   shaped like a Go task: PoCs are a folder of modules sharing a helper,
#                     vendored modules in an ignored folder, a toolchain set in the
#                     environment (KVC_HOME)
#   examples/rle      a C library with a heap buffer overflow, built with AddressSanitizer
#                     (gcc) through its own Makefile; skipped, with a note, without gcc
#
# Works from any directory. Needs python3 (3.11+) and git (and gcc with libasan for
# examples/rle); the first run creates .venv at the top of the repository and installs
# ssegrade into it. Run as root, it creates the `sse-runner` system account (no home, no
# login shell, a group of its own) the first time, if missing: task scripts run as that
# account, never as root. Scratch folders are removed on exit; the results folders are kept
# and their location printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/.." && pwd)"
venv="$top/.venv"

if [ ! -x "$venv/bin/python" ]; then
    echo "demo: creating $venv"
    python3 -m venv "$venv"
fi
if [ ! -x "$venv/bin/ssegrade" ] || ! "$venv/bin/python" -c "import click, fastapi, jinja2" 2>/dev/null; then
    echo "demo: installing ssegrade into $venv"
    "$venv/bin/python" -m pip install -q -e "$top[all]" > "$venv/ssegrade-install.log" 2>&1 \
        || { cat "$venv/ssegrade-install.log" >&2; exit 1; }
fi
ssegrade="$venv/bin/ssegrade"

if [ "$(id -u)" -eq 0 ] && ! getent passwd sse-runner > /dev/null; then
    echo "demo: running as root: ssegrade creates the sse-runner account (no home, no login"
    echo "demo: shell) for the task scripts, which never run as root"
fi

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

# The kinds of flag the patch guard raised (guard.json), comma-separated; "none" for none.
flags() {
    "$venv/bin/python" -c 'import json, sys
kinds = [f["kind"] for f in json.load(open(sys.argv[1]))["flags"]]
print(",".join(sorted(set(kinds))) or "none")' "$1/guard.json" 2>/dev/null || echo "(no guard.json)"
}

summary=()
wrong=0

# grade NAME FIX [CHEAT FLAGS]: lay the example out as a task container would, record the
# baseline, then grade the unmodified tree and the tree with the reference fix FIX (relative
# to the task); with CHEAT (relative to the example), also the tree with that patch instead,
# whose guard must raise exactly FLAGS (sorted, comma-separated).
grade() {
    local name="$1" fix="$2" cheat="${3:-}" cheat_flags="${4:-}"
    local task="$work/$1/task" src="$work/$1/project"
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

    local runs=(unfixed fixed)
    [ -n "$cheat" ] && runs+=(cheat)
    for run in "${runs[@]}"; do
        git -C "$src" checkout -q -- . && git -C "$src" clean -fdq
        case "$run" in
            unfixed) expected=failed expected_flags=none what="changed nothing" ;;
            fixed) expected=passed expected_flags=none what="applies the reference fix"
                git -C "$src" apply "$task/$fix" ;;
            cheat) expected=passed expected_flags="$cheat_flags"
                what="drops the sanitizer through the Makefile, fixing nothing"
                git -C "$src" apply "$here/$name/$cheat" ;;
        esac
        echo
        echo "== $name: the agent $what (expected: $expected, flags: $expected_flags)"
        "$ssegrade" evaluate --task "$task" --source "$src" --baseline "$work/$name/baseline" \
            --results "$results/$name-$run" || true
        got="$(verdict "$results/$name-$run")"
        got_flags="$(flags "$results/$name-$run")"
        mark="ok"
        if [ "$got" != "$expected" ] || [ "$got_flags" != "$expected_flags" ]; then
            mark="UNEXPECTED"
            wrong=$((wrong + 1))
        fi
        summary+=("$(printf '%-10s %-7s %-8s %-7s flags %-25s (expected %s, %s)  %s' "$mark" \
            "$name" "$run" "$got" "$got_flags" "$expected" "$expected_flags" \
            "$results/$name-$run")")
    done
}

grade tlv fix.diff
grade kvconf diffs/patch.diff
if command -v gcc > /dev/null; then
    grade rle diffs/patch.diff cheat.diff build-config,sanitizer
else
    echo
    echo "demo: NOTE: examples/rle skipped: it needs gcc (with libasan) to build with AddressSanitizer"
fi

# adversarial NAME [LINE]: verify the example with its canonical cheats, into the shared
# folder $results/verify; it must exit 0 (no cheat passes unflagged) and print LINE if given.
adversarial() {
    local name="$1" line="${2:-}" src="$work/$1/project" out status=0
    git -C "$src" checkout -q -- . && git -C "$src" clean -fdq
    echo
    echo "== $name: ssegrade verify --adversarial (the canonical cheats, each graded and guarded)"
    out="$("$ssegrade" verify "$work/$name/task" --repo "$src" --adversarial \
        --results "$results/verify")" || status=$?
    printf '%s\n' "$out"
    mark="ok"
    if [ "$status" -ne 0 ] || { [ -n "$line" ] && ! grep -qF -- "$line" <<<"$out"; }; then
        mark="UNEXPECTED"
        wrong=$((wrong + 1))
    fi
    summary+=("$(printf '%-10s %-7s %-8s exit %s (expected 0%s)' "$mark" "$name" verify \
        "$status" "${line:+, and: $line}")")
}

adversarial tlv
adversarial kvconf
if command -v gcc > /dev/null; then
    adversarial rle "caught by the guard: rle-001: sanitizer-drop passes"
fi
echo
echo "== the report of the verify folder: the share of hackable tasks"
"$ssegrade" report "$results/verify" | head -n 1

echo
echo "== verdicts and patch guard flags"
printf '%s\n' "${summary[@]}"
echo "Results are kept in $results (delete it when done)."
if [ "$wrong" -ne 0 ]; then
    echo "demo: $wrong verdicts or flags were not the expected ones" >&2
    exit 1
fi
