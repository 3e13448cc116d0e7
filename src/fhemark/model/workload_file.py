"""A user's workload file: loaded under guard, and found again by its content in any process.

A computation travels through fhemark as a WorkloadRef (its name, the file's resolved path and the
sha256 of the bytes that were loaded), never as a name in a process-wide registry: a plan's jobs
carry the ref, a stored suite carries the refs of the files it names, and whatever process needs
the computation (a Dask worker, `compare --recheck`, a resumed run) loads the file again and checks
its digest, refusing in one line a file that is gone or was edited since.

Loading runs the user's code first in a child process (guard.py) with a wall-clock limit that no
`except` can swallow; fhemark's own process runs it only once the child has shown that it finishes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from . import guard, ways
from .catalog import known
from .ops import BenchOp
from .program import Program
from .semantics import Plain
from .workload import INT_SCHEMES, NAME, SCHEMES, Workload, WorkloadRef

LOAD_TIMEOUT_S = 20  # loading a file and building its programs: longer is taken to loop forever
# A program at a run's parameter set, built again under guard: a larger ring than the load's may loop. One
# build gets BUILD_TIMEOUT_S, and the builds of one file that run out (at every ring, library and
# repetition of a process: `choose` tries several) get BUILD_BUDGET_S in all, each what is left of it:
# a loop's line comes within the README's 60 s however many rings meet it, with room for the guard's grace.
BUILD_TIMEOUT_S = 20
BUILD_BUDGET_S = 45
_OVERTIME: dict[tuple[str, str], float] = {}  # (file, sha256) -> seconds its builds that ran out took
MAX_FILE_BYTES = 10 * 2**20
FIX = "fix the workload file (see the README, Your own computation)"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _checked_path(path: str | Path) -> Path:
    """The file, resolved; a missing path, a folder or anything else that is no regular file is
    refused as what it is."""
    p = Path(path).expanduser()
    try:
        p = p.resolve()
        if not p.exists():
            raise UserError(f"workload file {p} not found", "give the path of a .py file that defines a Workload")
        if p.is_dir():
            raise UserError(f"workload file {p} is a folder, not a file",
                            "give the path of the .py file inside it that defines a Workload")
        if not p.is_file():
            raise UserError(f"workload file {p} is not a regular file", "give the path of a .py file")
        if p.stat().st_size > MAX_FILE_BYTES:
            raise UserError(f"workload file {p} has {p.stat().st_size} bytes, more than a hand-written file",
                            "give the .py file that defines the Workload")
    except OSError as exc:
        raise UserError(f"workload file {p}: cannot read it ({exc.strerror or exc})", "check its permissions")
    return p


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as exc:
        raise UserError(f"workload file {p}: cannot read it ({exc.strerror or exc})", "check its permissions")


def _execute(p: Path, source: bytes) -> list[Workload]:
    """The module's Workload values, each carrying the file and its digest. Runs the user's code."""
    name = f"fhemark_workload_{digest(str(p).encode())}"
    spec = importlib.util.spec_from_loader(name, loader=None, origin=str(p))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(p)
    exec(compile(source, str(p), "exec"), module.__dict__)  # noqa: S102 - the user's own file, by design
    found = [v for v in vars(module).values() if isinstance(v, Workload)]
    sha = digest(source)
    return [replace(w, source=str(p), sha256=sha) for w in dict.fromkeys(found)]


def _probe(p: Path, source: bytes) -> list[str]:
    """In the child: load, check and try every workload of the file; their names."""
    found = _execute(p, source)
    for w in found:
        _check(w)
        _try(w)
    return [w.name for w in found]


def _problem(p: Path, fault: guard.Fault, doing: str) -> UserError:
    if fault.timeout:
        return UserError(f"{fault.where}: {doing} {fault.what}", "make compute() build a finite program")
    if fault.what.startswith("AttributeError") and "Circuit" in fault.what:
        name = fault.what.rsplit("'", 2)[-2] if fault.what.count("'") >= 2 else fault.what
        return UserError(f"{fault.where}: unknown operation {name!r} while {doing}",
                         "use the Circuit's calls listed in the README (Your own computation)")
    return UserError(f"{fault.where}: {fault.what.replace(':', f' while {doing}:', 1)}", FIX)


_LOADED: dict[WorkloadRef, Workload] = {}  # a cache of what this process loaded: found by content, not name


def load(path: str | Path) -> list[Workload]:
    """The workloads a file defines (module-level Workload values), checked: each builds its program
    for every scheme it names, and its cleartext replay runs on drawn inputs, first in a child process
    under a wall-clock limit. Any problem is one UserError naming the file (and line)."""
    p = _checked_path(path)
    source = _read(p)
    probed = guard.run(lambda: _probe(p, source), p, LOAD_TIMEOUT_S)
    if isinstance(probed, guard.Fault):
        raise _problem(p, probed, "loading it")
    if not probed:
        raise UserError(f"{p}: defines no Workload", "add e.g. WORKLOAD = Workload('mine', compute, inputs={...})")
    try:
        found = _execute(p, source)  # the child showed that this finishes
    except BaseException as exc:  # noqa: BLE001 - it did not in the child's run: same line as there
        raise _problem(p, guard.Fault(guard.where(p, exc), guard.describe(exc)), "loading it")
    for w in found:
        _LOADED[w.ref] = w
    return found


def resolve(ref: WorkloadRef) -> Workload:
    """The computation a ref names, loaded in this process if it was not: the file must still be there
    and hold the same bytes."""
    if ref in _LOADED:
        return _LOADED[ref]
    if (way := _way(ref)) is not None:
        return way
    p = Path(ref.file)
    if not p.is_file():
        raise UserError(f"workload file {ref.file} (workload {ref.name!r}) is gone",
                        "put the file back where it was, or run the workload again from where it is now")
    now = digest(_read(p))
    if now != ref.sha256:
        raise UserError(f"workload file {ref.file} changed since {ref.name!r} was planned and measured from it "
                        f"(sha256 {ref.sha256}, now {now}): its results and the file no longer match",
                        "start a new run of the edited file (without --resume), or restore the file to continue "
                        "or recheck the old run")
    for w in load(p):
        if w.ref == ref:
            return w
    if (way := _way(ref)) is not None:
        return way
    raise UserError(f"workload file {ref.file} defines no workload {ref.name!r} any more", "restore the file")


def _way(ref: WorkloadRef) -> Workload | None:
    """A way `choose` runs a loaded workload in (ways.py: `<name>__horner`, ...), from the same bytes."""
    for w in list(_LOADED.values()):
        if (w.source, w.sha256) == (ref.file, ref.sha256) and ref.name.startswith(w.name + ways.SEP):
            found = ways.find(w, ref.name)
            if found is not None:
                _LOADED[ref] = found
                return found
    return None


def bench_op(ref: WorkloadRef, scheme: str) -> BenchOp | None:
    """The catalog entry for one scheme of a user's computation (None where it names no such scheme)."""
    w = resolve(ref)
    return _bench_op(w, scheme) if scheme in w.schemes else None


@lru_cache(maxsize=None)
def _bench_op(w: Workload, scheme: str) -> BenchOp:
    """Planned on the sets whose slots of this scheme hold its values (BFV/BGV: N of them)."""
    return w.bench_op(applies=lambda params: w.fits(params, scheme))


def build(op: BenchOp, scheme: str, plain: Plain) -> Program | guard.Fault:
    """A program at one parameter set. A user's computation is built first in a child process under a
    limit: at a larger ring it may loop or raise where the load's small ring did not (the limit: what is
    left of its file's BUILD_BUDGET_S, at most BUILD_TIMEOUT_S)."""
    path = (op.facts or {}).get("file")
    if not path:
        return op.build(scheme, plain)
    key = (path, str(op.facts.get("file_sha256")))
    left = int(min(BUILD_TIMEOUT_S, BUILD_BUDGET_S - _OVERTIME.get(key, 0.0)) * 10) / 10  # tenths, rounded down
    if left <= 0:
        return guard.Fault(path, f"not built: its builds that ran out of time took the {BUILD_BUDGET_S:g} s a file "
                                 "gets (a loop that never ends?)", timeout=True)
    started = time.monotonic()
    built = guard.run(lambda: op.build(scheme, plain), Path(path), left)
    if isinstance(built, guard.Fault) and built.timeout:
        _OVERTIME[key] = _OVERTIME.get(key, 0.0) + time.monotonic() - started
    return built


# -- checks --------------------------------------------------------------------------------------

def _check(w: Workload) -> None:
    if not isinstance(w.name, str) or not NAME.match(w.name):
        raise ValueError(f"workload name {w.name!r}: use lower-case letters, digits and _ (e.g. 'stats_4096')")
    if known(w.name):
        raise ValueError(f"workload name {w.name!r} is a built-in operation's: choose another name")
    bad = [s for s in w.schemes if s not in SCHEMES]
    if bad or not w.schemes:
        raise ValueError(f"schemes {list(w.schemes)!r}: use some of {', '.join(SCHEMES)}")


def _try(w: Workload) -> None:
    """Build the program for every scheme and replay it on drawn inputs: errors surface at load,
    not in the middle of a run."""
    rng = np.random.default_rng(0)
    for scheme in w.schemes:
        if scheme in INT_SCHEMES:
            plain = Plain(scheme, 4, 1 << (w.bits or 32))
        else:
            plain = Plain(scheme, 8192 if scheme != "ckks" else 4096, 65537 if scheme != "ckks" else None)
        w.program(scheme)
        prog = w.program(scheme, plain)
        vecs, scalars = w.draw(plain, rng), (w.scalars or _no_scalars)(plain, rng)
        made = {s["out"] for s in prog.steps}
        used = {a for s in prog.steps if s["op"] in ("encode", "encrypt_sk") for a in s["args"] if a not in made}
        missing = sorted(map(str, used - set(vecs)))
        if missing:
            raise ValueError(f"input(s) {', '.join(map(repr, missing))} named in the program but not in inputs: say how "
                             f"each is drawn (e.g. inputs={{{missing[0]!r}: Uniform(0, 10)}}), or give a number as "
                             "c.constant(value)")
        w.reference(plain, vecs, scalars)
    w.bench_op()


def _no_scalars(plain: Plain, rng: np.random.Generator) -> dict[str, Any]:
    return {}
