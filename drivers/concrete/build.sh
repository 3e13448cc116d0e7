#!/usr/bin/env bash
# Build the Concrete driver's environment: a CPython 3.11 venv in the fhemark cache, outside the
# clone, with Zama's concrete-python pinned, so its pins (numpy < 2) never meet fhemark's own.
# concrete-python's wheel requires torch, whose Linux wheel pulls ~3 GB of NVIDIA CUDA wheels;
# Concrete imports torch only for its convolution and max-pool extensions, which the driver never
# uses. So concrete-python is installed with --no-deps, its real runtime dependencies pinned
# beside it, and driver.py installs a stand-in torch module (README.md): ~600 MB instead of 6 GB.
# Exits 0 with one line when no CPython 3.11 exists (or pip cannot install): the driver is then
# unavailable.
set -euo pipefail

CONCRETE_VERSION="2.11.0"   # PyPI concrete-python (BSD-3-Clause-Clear), manylinux wheel for CPython 3.11
# Its runtime dependencies (from the wheel's metadata, torch left out), pinned at versions tested here:
DEPS=(
    "numpy==1.26.4"              # concrete-python requires numpy >=1.23,<2.0
    "setuptools==80.9.0"         # concrete/__init__.py needs pkg_resources, gone from setuptools 81
    "jsonpickle==4.1.4"
    "networkx==3.6.1"
    "scipy==1.17.1"
    "z3-solver==4.13.0.0"        # concrete-python requires z3-solver ==4.13.0
    "importlib_resources==7.1.0"
    "typing_extensions==4.16.0"
)

. "$(dirname "$0")/../python_shared/venv.sh"
VENV="$CACHE/venv-concrete"

python_or_skip concrete 3.11 FHEMARK_PYTHON311

# Reuse a venv that already has every pinned version.
if has_pins "$VENV" "concrete-python==$CONCRETE_VERSION" "${DEPS[@]}"; then
    echo "concrete driver: $VENV ready (concrete-python $CONCRETE_VERSION)"
    exit 0
fi

mkdir -p "$CACHE"
if ! fresh_venv "$VENV" "$PY"; then
    echo "concrete driver skipped: $PY cannot create a venv (install python3.11-venv)"
    exit 0
fi
echo "concrete driver: installing concrete-python==$CONCRETE_VERSION (without torch) into $VENV"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# The import check runs driver.py's own stand-in for torch (import the driver, which imports concrete.fhe).
if ! "${PIP[@]}" "${DEPS[@]}" >&2 \
   || ! "${PIP[@]}" --no-deps "concrete-python==$CONCRETE_VERSION" >&2 \
   || ! (cd "$(dirname "$0")" && "$VENV/bin/python" -c 'import driver' >&2); then
    echo "concrete driver skipped: pip could not install concrete-python==$CONCRETE_VERSION into $VENV (offline? see the messages above)"
    rm -rf "$VENV"
    exit 0
fi
echo "concrete driver: built $VENV (concrete-python $CONCRETE_VERSION, $("$PY" -V 2>&1))"
