"""Running a user's code where it cannot take fhemark down: in a forked child process with a
wall-clock limit that no `except` in that code can swallow (the child is killed), and whose exit,
`sys.exit`, `os._exit`, Ctrl-C or crash ends only the child.

The parent gets the child's return value (pickled) or one line saying what went wrong; the user's
code then runs in fhemark's own process only once the child has shown that it finishes. Where a
process cannot fork (not POSIX) the call runs in-process with the same error handling but no limit.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Fault:
    """What went wrong in the user's code: `where` is FILE:LINE of its deepest frame in the file, `what`
    one line; `timeout` when the limit ran out."""

    where: str
    what: str
    timeout: bool = False


def where(path: Path, exc: BaseException) -> str:
    """FILE:LINE of the deepest frame in the user's file, else the file alone."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f"{path}:{frames[-1].lineno}" if frames else str(path)


def describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) (a workload file must not exit)"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt"
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {msg}"


class Overtime(BaseException):
    """Raised in the child at its limit, to say where it was; not an Exception, so that an `except
    Exception` in the user's code does not swallow it (a bare `except` can: the parent then kills)."""


GRACE_S = 1.0  # the parent kills a child this long after its own limit has rung


def _ring(signum, frame):
    raise Overtime()


def _in_child(fn: Callable[[], T], path: Path, w: int, timeout_s: float) -> None:
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        signal.signal(signal.SIGALRM, _ring)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        out: object = ("ok", fn())
        signal.setitimer(signal.ITIMER_REAL, 0)
    except Overtime as exc:
        out = ("fault", Fault(where(path, exc), _late(timeout_s), timeout=True))
    except BaseException as exc:  # noqa: BLE001 - the user's code: anything, exits included
        out = ("fault", Fault(where(path, exc), describe(exc)))
    try:
        data = pickle.dumps(out)
    except Exception as exc:  # noqa: BLE001 - a value the user made that cannot travel
        data = pickle.dumps(("fault", Fault(str(path), f"its result cannot be passed on ({type(exc).__name__})")))
    with os.fdopen(w, "wb") as f:
        f.write(data)
    os._exit(0)


def _read(r: int, pid: int, deadline: float) -> bytes | None:
    """The child's answer, or None when the deadline passed first (the child is then killed)."""
    chunks = []
    with os.fdopen(r, "rb") as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                _kill(pid)
                return None
            chunk = os.read(f.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.waitpid(pid, 0)
    return b"".join(chunks)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _late(timeout_s: float) -> str:
    return f"did not finish within {timeout_s:g} s (a loop that never ends?)"


def run(fn: Callable[[], T], path: Path, timeout_s: float) -> T | Fault:
    """fn() in a child process: its value, or the Fault that ended it."""
    if not hasattr(os, "fork"):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            return Fault(where(path, exc), describe(exc))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        _in_child(fn, path, w, timeout_s)
    os.close(w)
    try:
        data = _read(r, pid, time.monotonic() + timeout_s + GRACE_S)
    except BaseException:  # Ctrl-C while waiting: the child goes with the parent's work
        _kill(pid)
        raise
    if data is None:
        return Fault(str(path), _late(timeout_s), timeout=True)
    if not data:
        return Fault(str(path), "its process ended without an answer (os._exit, or a crash in native code)")
    _, value = pickle.loads(data)
    return value
