"""Where things live: the checkout (drivers, suites), the build cache, the store."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The checkout holding drivers/ and suites/ (fhemark is installed editable from it)."""
    env = os.environ.get("FHEMARK_HOME")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2]
    return here if (here / "drivers").is_dir() else Path.cwd()


def cache_dir() -> Path:
    """Driver builds live outside the clone so that a fresh clone reuses them."""
    env = os.environ.get("FHEMARK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fhemark"


def default_db() -> Path:
    """`fhemark.db` in the working directory, unless FHEMARK_DB names another file."""
    return Path(os.environ.get("FHEMARK_DB", "fhemark.db"))
