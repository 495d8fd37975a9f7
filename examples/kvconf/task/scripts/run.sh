#!/usr/bin/env bash
# run.sh <poc>: run one proof of concept against the build, in the folder build.sh ran in.
# The PoC is a Python file in the pocs/ folder; it imports its helpers (pocs/harness.py)
# from beside it. Exit 0: the vulnerability did not trigger.
set -uo pipefail
: "${KVC_HOME:?KVC_HOME is not set: the image configures the kvc toolchain in its environment}"
if [ $# -ne 1 ] || [ ! -r "$1" ]; then
    echo "usage: run.sh <poc> (a readable file)" >&2
    exit 2
fi
"$KVC_HOME/bin/kvc" run "$1"
