#!/usr/bin/env bash
# Entry point of a task container: baseline -> agent -> evaluate, as SSEBench runs a task.
#
#   run-task.sh AGENT_COMMAND [ARG...]
#
# The agent command runs in the source tree with the image's environment. Settings come from
# the environment the image sets (defaults in brackets):
#   SSE_BENCH_PATH  the task folder                  [/ssebench]
#   SSE_SOURCE      the agent's source tree          [the task config's `source`]
#   SSE_BASELINE    where the baseline is recorded   [/var/lib/ssebench/baseline]
#   SSE_RESULTS     where the grade is written       [/var/lib/ssebench/results]
#   TIMEOUT         the evaluation's time limit, s   [3600]
# Exit status: the evaluator's (0 whenever result.json was written).
set -uo pipefail

task="${SSE_BENCH_PATH:-/ssebench}"
baseline="${SSE_BASELINE:-/var/lib/ssebench/baseline}"
results="${SSE_RESULTS:-/var/lib/ssebench/results}"
source_opt=()
if [ -n "${SSE_SOURCE:-}" ]; then
    source_opt=(--source "$SSE_SOURCE")
    src="$SSE_SOURCE"
else
    src="$(cd "$task" && python3 -c 'import sys, yaml; print(yaml.safe_load(open("config.yaml"))["source"])')"
    case "$src" in /*) ;; *) src="$task/$src" ;; esac
fi

# 1. Before the agent: the baseline, and a copy of the whole tree as the grading repo.
ssegrade baseline --source "$src" --into "$baseline" || exit 2

# 2. The agent edits the tree; its exit status and duration are recorded, not judged here.
start=$(date +%s)
if [ $# -gt 0 ]; then
    (cd "$src" && "$@")
    agent_status=$?
else
    agent_status=0
fi
export AGENT_EXIT_STATUS="$agent_status"
export AGENT_DURATION=$(( $(date +%s) - start ))

# 3. Grade.
exec ssegrade evaluate --task "$task" "${source_opt[@]}" --baseline "$baseline" \
    --results "$results" --timeout "${TIMEOUT:-3600}"
