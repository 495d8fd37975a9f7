#!/bin/bash
# Run gorow's tests in the current directory (a copy of the project), vendored modules only.
set -euo pipefail
go test -count=1 ./...
