#!/bin/bash
# Build every package of gorow in the current directory (a copy of the project), with the
# modules vendored in vendor/ (GOFLAGS=-mod=vendor in the image's environment).
set -euo pipefail
go build ./...
echo "build.sh: built gorow"
