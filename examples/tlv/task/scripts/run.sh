#!/usr/bin/env bash
# Run one proof of concept: run.sh <poc>, in the folder build.sh ran in.
#
# Exit 0: tlvdump handled the input, printing it (exit 0) or rejecting it with an error
# message (exit 2). Anything else is a crash, the analogue of a sanitizer report: an uncaught
# exception (a Python traceback), a signal, or another exit status.
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: run.sh <poc>" >&2
    exit 2
fi
if [ ! -x build/tlvdump ]; then
    echo "run.sh: build/tlvdump is missing: run build.sh first" >&2
    exit 127
fi

if [ ! -r "$1" ]; then
    echo "run.sh: cannot read $1" >&2
    exit 2
fi

output="$(build/tlvdump "$1" 2>&1)"
status=$?
printf '%s\n' "$output"

if grep -q '^Traceback (most recent call last):' <<<"$output"; then
    echo "run.sh: CRASH: uncaught exception on $1 (exit $status)" >&2
    exit 1
fi
case "$status" in
    0) echo "run.sh: input parsed" ;;
    2) echo "run.sh: input rejected cleanly" ;;
    *) echo "run.sh: CRASH: tlvdump exited with status $status on $1" >&2; exit 1 ;;
esac
exit 0
