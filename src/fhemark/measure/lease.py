"""One measurement on a host at a time: a second fhemark that would measure while another one
measures waits for it, and says so, instead of measuring the first one's load (and adding its own
to it). Three runs into one store at once each read the others' work as the host's speed.

The lease is an advisory lock (flock) on a file in the host's temporary folder, so every user and
every checkout of fhemark on the host shares it; the kernel drops it when its holder dies, so a
killed run leaves nothing to clean up. It is taken around the measurement only: planning, the
report and the analyses run beside another measurement. Dask workers take a lease of their own
per host (cluster.py); the orchestrator holding this one while they measure is harmless.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

LEASE_FILE = "fhemark-measuring.lock"
_held = 0  # nested measurements in this process (none today) must not wait for themselves


def lease_path() -> Path:
    return Path(os.environ.get("FHEMARK_LEASE") or Path(tempfile.gettempdir()) / LEASE_FILE)


def _open(path: Path) -> int | None:
    """The lease file, created readable and writable by every user; None where it cannot be opened
    at all (then nothing is leased, as before leases existed)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's file: a read-only descriptor locks as well
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
    except OSError:
        return None
    try:
        os.fchmod(fd, 0o666)
    except OSError:
        pass
    return fd


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode(errors="replace").strip()
    except OSError:
        return ""


@contextmanager
def hold(what: str, on_wait: Callable[[str], None] = lambda holder: None) -> Iterator[None]:
    """Hold the host's lease while the block measures; `on_wait(holder)` is told once when another
    process holds it (who, what) and this one waits."""
    global _held
    if _held:
        _held += 1
        try:
            yield
        finally:
            _held -= 1
        return
    fd = _open(lease_path())
    if fd is None:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(_holder(fd) or "another fhemark process")
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: {what}".encode(), 0)
        except OSError:
            pass
        _held = 1
        try:
            yield
        finally:
            _held = 0
    finally:
        os.close(fd)  # closing the descriptor releases the lock
