#!/usr/bin/env bash
# Build tlvparse in the current directory (a copy of the project): byte-compile the package,
# check that the command imports, and write the launcher build/tlvdump that run.sh uses.
set -euo pipefail

if ! python3 -m compileall -q tlvparse; then
    echo "build.sh: tlvparse does not compile" >&2
    exit 1
fi
if ! python3 -c "import tlvparse.cli"; then
    echo "build.sh: tlvparse.cli does not import" >&2
    exit 1
fi

mkdir -p build
cat > build/tlvdump <<'LAUNCHER'
#!/usr/bin/env bash
# tlvdump launcher written by build.sh: runs the package from the project above build/.
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHONPATH="$top${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m tlvparse.cli "$@"
LAUNCHER
chmod +x build/tlvdump
echo "build.sh: built build/tlvdump"
