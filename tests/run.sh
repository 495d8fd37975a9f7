#!/usr/bin/env bash
# Install ssegrade with its dev tools into .venv, then run lint, types, import contracts and
# the whole test suite under coverage (CLI subprocesses included, see pyproject.toml). With
# arguments (a subset of the tests), the coverage floor is not enforced.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
# The Ray engine's tests run on a real local Ray; where Ray cannot be installed they skip.
.venv/bin/python -m pip install -q -e '.[ray]' \
    || echo "ray could not be installed: the Ray engine tests will be skipped"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
floor=()
if [ "$#" -eq 0 ]; then
    floor=(--cov-fail-under=82)
fi
# One worker more than CPUs: the tests wait on real processes, git and sockets, and a third
# worker keeps two CPUs busy meanwhile (the whole suite: 636 s with two workers, 530 s with
# three, on 2 CPUs).
workers=$(( $(nproc) + 1 ))
# Coverage's data files (one per process measured, subprocesses and forks included) go to a
# scratch folder, combined there and removed with it: none is left in the checkout, not even
# one of a process that ends after the tests (a removal running on its own).
coverage_data="$(mktemp -d "${TMPDIR:-/tmp}/ssegrade-coverage.XXXXXX")"
trap 'rm -rf "$coverage_data"' EXIT
export COVERAGE_FILE="$coverage_data/.coverage"
# The suite's wall time, the last line printed, passed or not.
started=$(date +%s)
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" \
    --durations=25 --cov --cov-report=term:skip-covered "${floor[@]}" "$@" || status=$?
echo "suite: $(( $(date +%s) - started )) s on $(nproc) CPUs"
exit "$status"
