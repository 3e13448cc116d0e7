"""Where things live: the checkout (drivers, suites), the build cache, the store."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import UserError

# Folders named by the environment, read by fhemark and by the drivers' build scripts, which run in
# their own folders: a relative one would mean another place there (a relative FHEMARK_CACHE wrote the
# Lattigo binary into the checkout and every Lattigo job then crashed).
FOLDER_VARIABLES = ("FHEMARK_CACHE", "FHEMARK_HOME", "XDG_CACHE_HOME")


def settle_environment() -> None:
    """Make every folder the environment names absolute, once, from the directory fhemark started in,
    so that every process it starts (drivers, builds) reads the same place."""
    for var in FOLDER_VARIABLES:
        value = os.environ.get(var)
        if value and not os.path.isabs(os.path.expanduser(value)):
            os.environ[var] = str(Path(value).expanduser().absolute())


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
    value = os.environ.get("FHEMARK_DB", "fhemark.db")
    if not value.strip():
        raise UserError("FHEMARK_DB is set but empty: it names no store", "unset it, or set it to a file such as runs.db")
    return Path(value)
