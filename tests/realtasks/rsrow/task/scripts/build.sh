#!/bin/bash
# Build rsrow in the current directory (a copy of the project), offline: its one dependency
# is vendored (vendor/textsplit, a path dependency).
set -euo pipefail
cargo build --offline
echo "build.sh: built rsrow"
