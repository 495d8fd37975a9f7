#!/usr/bin/env bash
# Build rle in the current directory (a copy of the project) with AddressSanitizer, through
# the project's own Makefile, as a fuzzing build would: build/rledump is what run.sh runs.
set -euo pipefail

sanitize="-fsanitize=address -fno-omit-frame-pointer"
make -j2 CC=gcc CFLAGS="-O1 -g $sanitize" LDFLAGS="$sanitize"
echo "build.sh: built build/rledump with AddressSanitizer"
