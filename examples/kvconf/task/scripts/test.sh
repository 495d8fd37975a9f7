#!/usr/bin/env bash
# The project's unit tests, against a fresh build.
set -euo pipefail
: "${KVC_HOME:?KVC_HOME is not set: the image configures the kvc toolchain in its environment}"
"$KVC_HOME/bin/kvc" build
exec "$KVC_HOME/bin/kvc" test tests
