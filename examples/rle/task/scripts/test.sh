#!/usr/bin/env bash
# Build and run the project's tests (every tests/test_*.c) in the current directory (a copy
# of the project), with AddressSanitizer as the build uses it.
set -euo pipefail

sanitize="-fsanitize=address -fno-omit-frame-pointer"
export ASAN_OPTIONS=detect_leaks=0
exec make -j2 CC=gcc CFLAGS="-O1 -g $sanitize" LDFLAGS="$sanitize" check
