#!/usr/bin/env bash
# ssegrade demo: grade the bundled task examples/tlv twice, as a "dummy agent" that changes
# nothing (expected verdict: failed) and as an agent that applies the reference fix (passed).
#
#   bash examples/demo.sh
#
# Works from any directory. Needs python3 (3.11+) and git; the first run creates .venv at the
# top of the repository and installs ssegrade into it. Scratch folders are removed on exit;
# the two results folders are kept and their location printed.
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

# The task and the agent's source tree, side by side so that the task's `source: ../project`
# also points at the copy (--source is passed explicitly anyway).
task="$work/task"
src="$work/project"
cp -R "$here/tlv/task" "$task"
cp -R "$here/tlv/project" "$src"
rm -rf "$src/build"
find "$src" -name __pycache__ -type d -prune -exec rm -rf {} +

# The source tree starts as a git repository with a single commit.
git -C "$src" -c init.defaultBranch=main init -q
git -C "$src" add -A
git -C "$src" -c user.name="ssegrade demo" -c user.email=demo@example.invalid \
    commit -q -m "Initial commit"

verdict() {
    "$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["patch_result"]["status"])' \
        "$1/result.json" 2>/dev/null || echo "(no result.json)"
}

echo
echo "== baseline: recorded before the agent runs"
"$ssegrade" baseline --source "$src" --into "$work/baseline"

echo
echo "== 1. the agent changed nothing (expected: failed)"
"$ssegrade" evaluate --task "$task" --source "$src" --baseline "$work/baseline" \
    --results "$results/unfixed"

echo
echo "== 2. the agent applies the reference fix (expected: passed)"
git -C "$src" apply "$task/fix.diff"
"$ssegrade" evaluate --task "$task" --source "$src" --baseline "$work/baseline" \
    --results "$results/fixed"

echo
echo "== verdicts"
echo "unfixed: $(verdict "$results/unfixed")   ($results/unfixed/result.json)"
echo "fixed:   $(verdict "$results/fixed")   ($results/fixed/result.json)"
echo "Results are kept in $results (delete it when done)."
