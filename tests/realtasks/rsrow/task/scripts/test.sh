#!/bin/bash
# Run rsrow's tests in the current directory (a copy of the project), offline.
set -euo pipefail
cargo test --offline
