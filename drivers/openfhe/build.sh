#!/usr/bin/env bash
# Build the OpenFHE driver's environment: a CPython 3.10 venv (PyPI's openfhe
# wheel ships an extension for 3.10 only) in the fhemark cache, outside the clone.
# Exits 0 with one line when no CPython 3.10 exists: the driver is then unavailable.
set -euo pipefail

OPENFHE_VERSION="1.6.1.0.22.4"   # PyPI openfhe (BSD-2-Clause): OpenFHE v1.6.1, openfhe-python v1.6.1.0
NUMPY_SPEC="numpy>=1.24,<3"

. "$(dirname "$0")/../python_shared/venv.sh"
VENV="$CACHE/venv-openfhe"
# Another OpenFHE version (fhemark setup --library openfhe@1.5.1): its own venv, the newest wheel of
# that release (PyPI numbers them OpenFHE version + binding build, e.g. 1.5.1.0.22.4).
if [ -n "${FHEMARK_LIB_VERSION:-}" ] && [ "$FHEMARK_LIB_VERSION" != "$(echo "$OPENFHE_VERSION" | cut -d. -f1-3)" ]; then
    OPENFHE_VERSION="$FHEMARK_LIB_VERSION.*"
    VENV="$CACHE/venv-openfhe-$FHEMARK_LIB_VERSION"
fi

python_or_skip openfhe 3.10 FHEMARK_PYTHON310

pinned_venv openfhe "$VENV" "$PY" "openfhe, numpy" "openfhe==$OPENFHE_VERSION" "$NUMPY_SPEC"
