#!/usr/bin/env bash
# Build the TenSEAL driver's environment: a CPython 3.11 venv in the fhemark cache, outside the
# clone, with pinned tenseal and numpy, so its pins never meet fhemark's own dependencies.
# PyPI's tenseal 0.3.18 ships manylinux wheels for CPython 3.11+; the driver runs on 3.11.
# Exits 0 with one line when no CPython 3.11 exists: the driver is then unavailable.
set -euo pipefail

TENSEAL_VERSION="0.3.18"   # PyPI tenseal (Apache-2.0), OpenMined's tensors on Microsoft SEAL
NUMPY_VERSION="2.4.6"      # tenseal requires numpy without a bound; 2.4.6 has CPython 3.11 wheels and is tested here

. "$(dirname "$0")/../python_shared/venv.sh"
VENV="$CACHE/venv-tenseal"

python_or_skip tenseal 3.11 FHEMARK_PYTHON311

pinned_venv tenseal "$VENV" "$PY" "tenseal, tenseal.sealapi, numpy" "tenseal==$TENSEAL_VERSION" "numpy==$NUMPY_VERSION"
