#!/usr/bin/env bash
# Installs HEIR (Google's FHE compiler) for fhemark's `heir->lattigo` compiler row: the pinned
# heir-py wheel, which ships static heir-opt / heir-translate binaries, in a venv of its own in the
# fhemark cache, outside the clone, so its pins never meet fhemark's dependencies. The Go code HEIR
# emits is built per workload later (src/fhemark/compile/heir.py) against the Lattigo v6.2.0 that
# drivers/lattigo/go.mod pins; that needs Go 1.24+, checked there.
# Exits 0 with one line when it cannot install: the row is then skipped, never a failure.
set -euo pipefail

HEIR_PY_VERSION="2026.11.1"   # PyPI heir-py (Apache-2.0); its wheels are CPython 3.11+

CACHE="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"
VENV="$CACHE/heir/venv"

. "$(dirname "$0")/../python_shared/venv.sh"

if has_pins "$VENV" "heir_py==$HEIR_PY_VERSION" && [ -x "$VENV/bin/heir-opt" ]; then
    echo "heir: $VENV ready (heir-py $HEIR_PY_VERSION)"
    exit 0
fi

PY="$(find_python 3.11 FHEMARK_PYTHON311)"
if [ -z "$PY" ]; then
    echo "heir skipped: no CPython 3.11 found; install it (e.g. pyenv install 3.11) or set FHEMARK_PYTHON311"
    exit 0
fi
mkdir -p "$CACHE/heir"
if ! fresh_venv "$VENV" "$PY"; then
    echo "heir skipped: $PY cannot create a venv (install python3.11-venv)"
    exit 0
fi
echo "heir: installing heir-py==$HEIR_PY_VERSION into $VENV"
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "heir-py==$HEIR_PY_VERSION" >&2 \
   || ! "$VENV/bin/heir-opt" --version >/dev/null 2>&1; then
    echo "heir skipped: pip could not install heir-py==$HEIR_PY_VERSION into $VENV (offline? see the messages above)"
    rm -rf "$VENV"
    exit 0
fi
echo "heir: built $VENV (heir-py $HEIR_PY_VERSION, $("$PY" -V 2>&1))"
