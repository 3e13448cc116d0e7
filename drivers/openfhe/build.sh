#!/usr/bin/env bash
# Build the OpenFHE driver's environment: a CPython 3.10 venv (PyPI's openfhe
# wheel ships an extension for 3.10 only) in the fhemark cache, outside the clone.
# Exits 0 with one line when no CPython 3.10 exists: the driver is then unavailable.
set -euo pipefail

OPENFHE_VERSION="1.6.1.0.22.4"   # PyPI openfhe (BSD-2-Clause): OpenFHE v1.6.1, openfhe-python v1.6.1.0
NUMPY_SPEC="numpy>=1.24,<3"

CACHE="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"
VENV="$CACHE/venv-openfhe"

. "$(dirname "$0")/../python_shared/venv.sh"
PY="$(find_python 3.10 FHEMARK_PYTHON310)"
if [ -z "$PY" ]; then
    echo "openfhe driver skipped: no CPython 3.10 found; install it (e.g. pyenv install 3.10) or set FHEMARK_PYTHON310"
    exit 0
fi

# Reuse a venv that already has the pinned openfhe and numpy.
if has_pins "$VENV" "openfhe==$OPENFHE_VERSION" numpy; then
    echo "openfhe driver: $VENV ready (openfhe $OPENFHE_VERSION)"
    exit 0
fi

mkdir -p "$CACHE"
if ! fresh_venv "$VENV" "$PY"; then
    echo "openfhe driver skipped: $PY cannot create a venv (install python3.10-venv)"
    exit 0
fi
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "openfhe==$OPENFHE_VERSION" "$NUMPY_SPEC" >&2 \
   || ! "$VENV/bin/python" -c 'import openfhe, numpy' >&2; then
    echo "openfhe driver skipped: pip could not install openfhe==$OPENFHE_VERSION into $VENV (offline? see the messages above)"
    rm -rf "$VENV"
    exit 0
fi
echo "openfhe driver: built $VENV (openfhe $OPENFHE_VERSION, $("$PY" -V 2>&1))"
