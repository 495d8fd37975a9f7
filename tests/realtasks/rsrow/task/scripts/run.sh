#!/bin/bash
# Run one proof of concept: run.sh <poc>, in the folder build.sh ran in. The PoC is a harness
# crate (pocs/Cargo.toml, pocs/src/main.rs) that depends on /src/rsrow, the agent's tree:
# build a copy of it against the tree this script runs in, the build graded, and run it.
# Exit 0: the harness ran to its end. Anything else (a panic: exit 101) is the bug.
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: run.sh <poc>" >&2
    exit 2
fi
project=$PWD
harness=$(mktemp -d)
trap 'rm -rf "$harness"' EXIT
cp -r "$(dirname "$(dirname "$(realpath "$1")")")/." "$harness"
sed -i "s#\"/src/rsrow\"#\"$project\"#" "$harness/Cargo.toml"
cd "$harness"
cargo build --offline --quiet || exit 125
./target/debug/rsrow-poc
status=$?
echo "run.sh: exit code $status"
exit $status
