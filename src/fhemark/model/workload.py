"""Your computation, written once: the public way to describe a workload to fhemark.

A workload file is plain Python, anywhere on disk; it imports only this module:

    from fhemark.workload import Uniform, Workload

    def mean_and_variance(c):                 # c: a Circuit (apps/builder.py), one per scheme
        x = c.encrypted("x")                  # an input the client encrypts (untimed)
        s = c.rotate_sum(x, 4096)             # the timed work: every call is one step
        m = c.rescaled(c.mul_plain(s, c.plaintext("inv_n")))
        ...
        return m, var                         # the outputs, decrypted and checked

    WORKLOAD = Workload("stats", mean_and_variance, schemes=("ckks",),
                        inputs={"x": Uniform(-1, 1, length=4096), "inv_n": Constant(1 / 4096)})

`compute` runs twice per scheme: on the library (each call adds one protocol step to the
program every driver runs) and on cleartext (the same calls replayed on the sample's inputs),
so the reference every decrypted output is checked against is the computation itself. The
requirements (levels, rotations, plaintext size) are read from the program it builds
(requirements.py), never asked of the user.

`fhemark run --workload FILE` measures it on every library and scheme that can run it; a suite
lists it among its ops by path (`ops: [mul_relin, ./stats.py]`); `fhemark choose FILE` finds
and proves parameters for it. Files are loaded (under guard) and found again by their content in
workload_file.py.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .apps.builder import Circuit
from .ops import BenchOp
from .program import Program
from .rotations import routine_steps
from .semantics import Plain

__all__ = ["Circuit", "Constant", "Uniform", "Workload", "WorkloadRef"]

RLWE_SCHEMES = ("bfv", "bgv", "ckks")
INT_SCHEMES = ("tfhe_int",)
SCHEMES = RLWE_SCHEMES + INT_SCHEMES
NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
Output = str | Sequence[str]
ALIGNED_INPUTS = 4  # ranged inputs up to which every combination of their ends is an edge (2^4 of them)


@dataclass(frozen=True)
class Uniform:
    """Fresh values each sample, uniform in [lo, hi]: integers for BFV/BGV (kept modulo t) and
    TFHE integers, reals for CKKS; in the first `length` slots, the others zero (None: every slot)."""

    lo: float
    hi: float
    length: int | None = None

    def draw(self, plain: Plain, rng: np.random.Generator) -> np.ndarray:
        n = plain.slots if self.length is None else min(self.length, plain.slots)
        if plain.words:
            hi = min(int(self.hi), int(plain.t) - 1)
            return rng.integers(int(self.lo), hi, size=plain.slots, endpoint=True, dtype=np.uint64)
        out = np.zeros(plain.slots, dtype=np.int64 if plain.exact else np.float64)
        if plain.exact:
            out[:n] = rng.integers(int(self.lo), int(self.hi), size=n, endpoint=True) % plain.t
        else:
            out[:n] = rng.uniform(float(self.lo), float(self.hi), size=n)
        return out

    def count(self, plain: Plain) -> int:
        """The slots it fills at a layout."""
        return plain.slots if self.length is None or plain.words else min(self.length, plain.slots)

    def at(self, plain: Plain, where: np.ndarray) -> np.ndarray:
        """The input at chosen points of its range: `where` in [0, 1] per filled slot, 0 the low end
        and 1 the high end (integers rounded to the nearest)."""
        lo, hi = float(self.lo), float(min(self.hi, int(plain.t) - 1) if plain.words else self.hi)
        vals = lo + np.clip(where, 0.0, 1.0) * (hi - lo)
        if plain.words:
            return np.rint(vals).astype(np.uint64)
        out = np.zeros(plain.slots, dtype=np.int64 if plain.exact else np.float64)
        out[:where.size] = np.rint(vals).astype(np.int64) % plain.t if plain.exact else vals
        return out


@dataclass(frozen=True)
class Constant:
    """The same value in the first `length` slots (None: every slot): a server's constant such as 1/n."""

    value: float
    length: int | None = None

    def draw(self, plain: Plain, rng: np.random.Generator) -> np.ndarray:
        n = plain.slots if self.length is None else min(self.length, plain.slots)
        out = np.zeros(plain.slots, dtype=np.int64 if plain.exact else np.float64)
        out[:n] = int(self.value) % plain.t if plain.exact else float(self.value)
        return out


Inputs = Mapping[str, Uniform | Constant] | Callable[[Plain, np.random.Generator], dict[str, np.ndarray]]


@dataclass(frozen=True)
class WorkloadRef:
    """Which computation: the workload's name in the file at `file` whose bytes hash to `sha256`."""

    name: str
    file: str
    sha256: str

    def wire(self) -> dict[str, str]:
        return {"name": self.name, "file": self.file, "sha256": self.sha256}


@dataclass(frozen=True, eq=False)  # identity: two files may define equal-looking workloads
class Workload:
    """A computation: `compute(c)` calls the Circuit's vocabulary and returns its output value(s);
    `inputs` says how each named input is drawn (a mapping of Uniform / Constant, or a function
    (plain, rng) -> {name: array} for data of your own, e.g. a data set's images)."""

    name: str
    compute: Callable[[Circuit], Output]
    inputs: Inputs
    schemes: Sequence[str] = RLWE_SCHEMES
    title: str = ""
    scalars: Callable[[Plain, np.random.Generator], dict[str, Any]] | None = None  # per-sample `$name`s (poly_eval)
    precision_bits: float = 20.0   # CKKS: what `choose` asks of every output by default
    bits: int | None = None        # tfhe_int: the integer width it runs at (8, 16, 32 or 64)
    native: bool = False           # the libraries' own routines where the program spells them out
    fallback: bool = False         # a native computation's portable way: fhemark's routines in the library's place
    polynomial: str | None = None  # every polynomial's way: None as written, "log" or "horner" (Circuit)
    refresh: int | None = None     # CKKS, a bootstrapping set's way: bootstrapped where these levels run out
    slots: int | None = None       # values per evaluation (default: the longest input's length)
    rotations: Sequence[int] | None = None  # Galois keys (default: read from the program)
    facts: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""               # the file it was loaded from (set by workload_file.load)
    sha256: str = ""               # and the digest of the bytes loaded

    @property
    def ref(self) -> WorkloadRef | None:
        """How any process finds this computation again (None: not loaded from a file)."""
        return WorkloadRef(self.name, self.source, self.sha256) if self.source else None

    # -- the program and its replay -------------------------------------------------------------
    def circuit(self, scheme: str, plain: Plain | None = None) -> tuple[Circuit, tuple[str, ...]]:
        c = Circuit(scheme, self.native, plain, polynomial=self.polynomial, fallback=self.fallback,
                    refresh=self.refresh)
        outs = self.compute(c)
        outs = (outs,) if isinstance(outs, str) else tuple(outs or ())
        if not outs or not all(isinstance(o, str) for o in outs):
            raise ValueError(f"compute returned {outs!r}: return the output value(s) the Circuit calls gave back")
        made = {s["out"] for s in c.steps}
        for o in outs:
            if o not in made:
                raise ValueError(f"compute returned {o!r}, which is no ciphertext of the program")
        return c, outs

    def program(self, scheme: str, plain: Plain | None = None) -> Program:
        circ, outs = self.circuit(scheme, plain)
        return circ.program(*outs)

    def reference(self, plain: Plain, vecs: dict, scalars: dict) -> np.ndarray | dict[str, np.ndarray]:
        circ, outs = self.circuit(plain.scheme, plain)
        return circ.reference(plain, {**vecs, **scalars}, *outs)

    def draw(self, plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A sample's inputs: the declared ones drawn fresh, and the constants the program names."""
        if callable(self.inputs):
            out = {k: _full(plain, k, v) for k, v in self.inputs(plain, rng).items()}
        else:
            out = {k: spec.draw(plain, rng) for k, spec in self.inputs.items()}
        return _made(self, plain, out, rng)

    def ranged(self) -> dict[str, Uniform]:
        """The declared inputs that vary (a function's inputs have no declared range)."""
        if callable(self.inputs):
            return {}
        return {k: s for k, s in self.inputs.items() if isinstance(s, Uniform) and s.lo != s.hi}

    def at(self, plain: Plain, where: Mapping[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A sample's inputs with every ranged input at chosen points of its range (Uniform.at),
        the constants as `draw` gives them."""
        fixed = {k: s for k, s in self.inputs.items() if k not in where}
        out = {k: s.draw(plain, rng) for k, s in fixed.items()}
        out.update({k: self.inputs[k].at(plain, w) for k, w in where.items()})
        return _made(self, plain, out, rng)

    def edges(self, plain: Plain, rng: np.random.Generator, count: int) -> list[dict[str, np.ndarray]]:
        """Up to `count` points at the edges of the inputs' box, as `at`'s positions per input
        (empty for inputs from a function): first the aligned extremes, every slot of an input at the
        same end and every combination of ends across the inputs (a cross-slot sum or product is
        largest there, e.g. a unanimous block of votes), then alternating ends (neighbouring slots
        at opposite ends, what a rotation pairs), then vertices of the box drawn at random (each slot
        at either end). With more than ALIGNED_INPUTS inputs the combinations are both ends for all,
        then each input alone at the other end."""
        ranged = {k: s.count(plain) for k, s in self.ranged().items()}
        if not ranged:
            return []
        names = list(ranged)
        if len(names) <= ALIGNED_INPUTS:
            combos = [tuple(c) for c in itertools.product((1.0, 0.0), repeat=len(names))]
        else:
            combos = [(1.0,) * len(names), (0.0,) * len(names)]
            combos += [tuple(float(j != i) for j in range(len(names))) for i in range(len(names))]
        out = [{k: np.full(ranged[k], e) for k, e in zip(names, c)} for c in combos]
        out += [{k: (np.arange(n) + flip) % 2.0 for k, n in ranged.items()} for flip in (0, 1)]
        while len(out) < count:
            out.append({k: rng.integers(0, 2, size=n).astype(float) for k, n in ranged.items()})
        specs = self.ranged()
        for point in out:
            for k, pos in point.items():
                lo, hi = float(specs[k].lo), float(specs[k].hi)
                if pos.size and not np.any(lo + pos * (hi - lo)):
                    # A vector of zeros: a plaintext of zeros makes a transparent ciphertext, which
                    # SEAL refuses to return; one slot at the other end keeps the edge a vertex.
                    pos[0] = 1.0 - pos[0]
        return out[:count]

    def routines(self) -> dict[str, dict[str, str]]:
        """Per RLWE scheme, who runs each routine the computation asks for: "library" (its own
        routine), "fhemark" (fhemark's program of primitives in its place) or "horner" (a polynomial
        by Horner's rule); several ways of one routine joined by '+'. Empty where it asks for none."""
        out: dict[str, dict[str, str]] = {}
        for scheme in (s for s in self.schemes if s in RLWE_SCHEMES):
            by: dict[str, list[str]] = {}
            for routine, who in self.circuit(scheme)[0].evaluated:
                by.setdefault(routine, []).append(who)
            if by:
                out[scheme] = {r: "+".join(dict.fromkeys(w)) for r, w in by.items()}
        return out

    def values(self) -> int | None:
        """Values per evaluation: the declared `slots`, else the longest drawn input (a constant
        fills whatever the ring holds, so it sets none)."""
        if self.slots is not None or callable(self.inputs):
            return self.slots
        lengths = [s.length for s in self.inputs.values() if isinstance(s, Uniform)]
        return None if not lengths or None in lengths else max(lengths)

    def fits(self, params: Any, scheme: str | None = None) -> bool:
        """Whether a parameter set can hold it (the integer width; the values per ciphertext: N for
        BFV/BGV, N/2 for CKKS, and N/2 where the scheme is not said)."""
        if getattr(params, "kind", "rlwe") == "bits":
            return self.bits is None or params.bits == self.bits
        n = self.values()
        return n is None or params.N is None or n <= (params.slots(scheme) if scheme else params.N // 2)

    def bench_op(self, applies: Callable[[Any], bool] | None = None) -> BenchOp:
        """The catalog entry every runner, plan and report already understands (`applies`: which
        parameter sets it is planned on; default `fits`)."""
        rlwe = [s for s in self.schemes if s in RLWE_SCHEMES]
        rots = self.rotations if self.rotations is not None else (
            _rotations(self.program(rlwe[0])) if rlwe else ())
        facts = {"workload": self.name, "variant": "native" if self.native else "portable", "instances": 1,
                 **({"file": self.source, "file_sha256": self.sha256} if self.source else {}),
                 **({"routines": by} if self.source and (by := self.routines()) else {}), **self.facts}
        return BenchOp(self.name, self.title or self.name, tuple(self.schemes), self.program, self.reference,
                       inputs=(), scalars=self.scalars or (lambda p, r: {}), rotations=tuple(sorted(set(rots))),
                       group="app", gen=self.draw, applies=applies or self.fits, facts=facts, sized=self.program)


@lru_cache(maxsize=256)
def _naming(w: Workload, plain: Plain) -> tuple[dict[str, float], dict[str, tuple[str, int]]]:
    """The inputs a program names at a slot layout, constants and rotations of the drawn inputs: built
    once, not once per sample drawn (a workload's inputs are drawn for every copy of every sample;
    matvec_256's program has ~500 steps)."""
    circ = w.circuit(plain.scheme, plain)[0]
    return circ.constants, circ.rotated


def _made(w: Workload, plain: Plain, drawn: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A sample's drawn inputs with those the program makes of them: its constants, and the rotated
    copies a linear transformation's pre-rotated diagonals are (Circuit.rotated_plaintext)."""
    if plain.words:
        return drawn
    consts, rotated = _naming(w, plain)
    out = {**drawn, **{k: Constant(v).draw(plain, rng) for k, v in consts.items()}}
    return {**out, **{k: plain.rotate(out[src], by) for k, (src, by) in rotated.items()}}


def _full(plain: Plain, name: str, v: Any) -> np.ndarray:
    """A user-made input padded with zeros to the slot count, as drivers pad it."""
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.size > plain.slots:
        raise ValueError(f"input {name!r} has shape {arr.shape}: give a vector of at most {plain.slots} values")
    dtype = np.uint64 if plain.words else np.int64 if plain.exact else np.float64
    out = np.zeros(plain.slots, dtype=dtype)
    out[:arr.size] = np.asarray(arr % plain.t if plain.exact and not plain.words else arr).astype(dtype)
    return out


def _rotations(prog: Program) -> list[int]:
    """The rotation steps the program asks for: the Galois keys a setup makes for it."""
    out = set()
    for s in prog.steps:
        k = (s.get("attrs") or {}).get("steps")
        if s["op"] in ("rotate", "rotate_rows") and isinstance(k, int) and k:
            out.add(k)
        if s["op"] in ("inner_sum", "inner_product"):  # a library's linear transform makes its own keys
            out.update(routine_steps(s))
    return sorted(out)
