#!/usr/bin/env bash
# The SEAL driver runs in fhemark's own environment at the pinned seal-python (pyproject.toml):
# nothing to build. Another version (FHEMARK_LIB_VERSION, from `fhemark setup --library seal@4.1.2`)
# gets its own venv of fhemark's Python in the fhemark cache, outside the clone.
# Exits 0 with one line when pip cannot install it: that version is then unavailable.
set -euo pipefail

PINNED="4.4.0"   # keep in step with pyproject.toml's seal-python and driver.json's versions.pinned
VERSION="${FHEMARK_LIB_VERSION:-$PINNED}"
if [ "$VERSION" = "$PINNED" ]; then
    echo "seal driver: runs in fhemark's environment (seal-python $PINNED)"
    exit 0
fi
CACHE="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"
VENV="$CACHE/venv-seal-$VERSION"
PY="${PYTHON:-python3}"
NUMPY_SPEC="numpy>=1.24,<3"

. "$(dirname "$0")/../python_shared/venv.sh"
pinned_venv seal "$VENV" "$PY" "seal, numpy" "seal-python==$VERSION" "$NUMPY_SPEC"
