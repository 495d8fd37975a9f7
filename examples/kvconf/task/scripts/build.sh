#!/usr/bin/env bash
# Build kvconf with the toolchain the image configures in its environment (KVC_HOME), from
# the vendored modules only.
set -euo pipefail
: "${KVC_HOME:?KVC_HOME is not set: the image configures the kvc toolchain in its environment}"
exec "$KVC_HOME/bin/kvc" build
