#!/usr/bin/env bash
# Run the project's unit tests in the current directory (a copy of the project).
set -euo pipefail
exec python3 -m unittest discover -s tests -v
