#!/bin/bash
# Run one proof of concept: run.sh <poc>, in the folder build.sh ran in. The PoC is a Go
# module (its folder: go.mod, go.sum, poc.go) whose go.mod replaces gorow with /src/gorow,
# the agent's tree: run a copy of it against the tree this script runs in, the build graded.
# Exit 0: the PoC ran to its end. Anything else (a panic: exit 2) is the bug.
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: run.sh <poc>" >&2
    exit 2
fi
project=$PWD
module=$(mktemp -d)
trap 'rm -rf "$module"' EXIT
cp -r "$(dirname "$(realpath "$1")")/." "$module"
sed -i "s#=> /src/gorow\$#=> $project#" "$module/go.mod"
cd "$module"
go run -mod=readonly "$(basename "$1")"
status=$?
echo "run.sh: exit code $status"
exit $status
