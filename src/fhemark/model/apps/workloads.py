"""Application workloads (HomomorphicEncryption.org's benchmarking suite, HEBench), each written
once with the `Circuit` builder and run unchanged on every library: the portable variant, the
fair comparison. Names carry their size: dot_<n>, matvec_<d>, poly_<deg>, tally_<n>, mean_<n>,
logreg_<n>, similarity_<records>x<dim>, zmul_<bits>. A `_native` suffix (matvec_256_native) is the
native variant: the same workload with the library's own routines (inner_sum, inner_product,
linear_transform, poly_eval) where the portable program spells them out in primitives."""

from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np

from ..ops import INT, RLWE, BenchOp
from ..semantics import Plain
from ..workload import Uniform, Workload
from . import diagonals as diagonal_method
from .builder import Circuit

INT_WORDS = ("tfhe_int",)

# Slot layout: a workload's vector sits in the first n (or d) slots of a row; matvec repeats
# its d-vector along the whole row so that a rotation within the row is a cyclic rotation of
# every d-block (the diagonal method needs exactly that). BFV/BGV fill both rows alike.


def _pow2(n: int) -> bool:
    return n >= 2 and n & (n - 1) == 0


def _row(plain: Plain, block: np.ndarray) -> np.ndarray:
    """`block` repeated along a row (and in both BFV/BGV rows)."""
    r = plain.row_length()
    row = np.tile(block, r // block.size)
    return np.concatenate([row, row]) if plain.exact else row


def _uniform(plain: Plain, rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, plain.t, size=n, dtype=np.int64) if plain.exact else rng.uniform(-1.0, 1.0, size=n)


# ---- dot_<n>: inner product of two encrypted vectors ------------------------------------------

def dot(c: Circuit, n: int) -> str:
    if c.native:
        return c.rescaled(c.inner_product(c.encrypted("x"), c.encrypted("y"), n))
    prod = c.rescaled(c.mul(c.encrypted("x"), c.encrypted("y")))
    return c.rotate_sum(prod, n)


def _dot_gen(n: int, native: bool = False):
    """Every slot filled: slots / n instances packed in one ciphertext, every window sum checked."""
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _uniform(plain, rng, plain.slots), "y": _uniform(plain, rng, plain.slots)}
    return gen


# ---- matvec_<d>: plaintext d x d matrix times an encrypted vector ------------------------------

def baby_giant(d: int) -> tuple[int, int]:
    """Baby steps b and giant steps g with b * g = d, b the power of two at or above sqrt(d)."""
    b = 1 << math.ceil(math.log2(math.isqrt(d - 1) + 1)) if d > 1 else 1
    return b, d // b


def matvec(c: Circuit, d: int) -> str:
    """Halevi-Shoup diagonal method with baby-step giant-step rotations:
    M v = sum_g rot_{g b}( sum_j diag'_{g b + j} * rot_j(v) ), where diag'_k is diagonal k of M
    pre-rotated by -g b (done on the plaintext, outside the timed work). d + b + g - 2 rotations
    become b - 1 + g - 1; one rescale at the end (one level). Native: the library's linear
    transformation over the d plain diagonals (its own split, hoisting and pre-rotation)."""
    v = c.encrypted("v")
    if c.native:
        return c.rescaled(c.linear_transform(v, {k: f"m{k}" for k in range(d)}))
    # fhemark's linear transformation (diagonals.py), its diagonals pre-rotated by the layout
    b, _ = baby_giant(d)
    return c.rescaled(diagonal_method.evaluate(c, v, range(d), lambda k, g, like: c.plaintext(f"m{k}"), b))


def _matvec_steps(d: int) -> list[int]:
    return diagonal_method.rotations(range(d), baby_giant(d)[0])


def matvec_layout(plain: Plain, m: np.ndarray, v: np.ndarray, native: bool = False) -> dict[str, np.ndarray]:
    """The inputs of `matvec` for matrix m and vector v: v along the rows, and the generalized
    diagonals of m, pre-rotated for the portable giant steps (native: as they are)."""
    d = v.size
    b, _ = baby_giant(d)
    out = {"v": _row(plain, v)}
    idx = np.arange(d)
    for k in range(d):
        diag = m[idx, (idx + k) % d]
        out[f"m{k}"] = _row(plain, diag if native else np.roll(diag, (k // b) * b))  # rot_{-gb}: out[i] = diag[i - gb]
    return out


def _matvec_gen(d: int, native: bool = False):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return matvec_layout(plain, _uniform(plain, rng, d * d).reshape(d, d), _uniform(plain, rng, d), native)
    return gen


# ---- poly_<deg>: an integer polynomial (BFV/BGV), Horner's rule --------------------------------

def poly(c: Circuit, deg: int) -> str:
    """p(x) = c_deg x^deg + ... + c_0 with fresh coefficients (server-side plaintexts) each
    sample: deg - 1 ciphertext multiplications in sequence (depth deg - 1), deg plaintext
    additions and one plaintext multiplication."""
    x = c.encrypted("x")
    acc = c.add_plain(c.mul_plain(x, c.plaintext(f"c{deg}")), c.plaintext(f"c{deg - 1}"))
    for i in range(deg - 2, -1, -1):
        acc = c.add_plain(c.mul(acc, x), c.plaintext(f"c{i}"))
    return acc


def _poly_gen(deg: int, native: bool = False):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        out = {"x": plain.random(rng)}
        out.update({f"c{i}": np.full(plain.slots, int(rng.integers(0, plain.t)), dtype=np.int64) for i in range(deg + 1)})
        return out
    return gen


# ---- poly_<deg> on CKKS: a real polynomial, Horner's rule ---------------------------------------

def poly_ckks(c: Circuit, deg: int) -> str:
    """p(x) = c_deg x^deg + ... + c_0 on real slots, Horner's rule, fresh coefficients each sample:
    one plaintext multiplication, deg - 1 ciphertext multiplications, deg rescales (depth deg)
    and deg plaintext additions, each constant encoded at the accumulator's level and exact scale
    (encode's `like`), x mod-switched down to the accumulator's level before each product.
    Horner consumes deg levels, not the optimal ceil(log2(deg + 1)) of a power tree
    (Paterson-Stockmeyer, baby-step giant-step): a tree adds terms x^i c_i reached by different
    paths of rescales, whose scales differ (Delta^2 / q_i over different primes), and SEAL adds
    only terms of equal scale; Horner has one term per addition, made exactly like its constant.
    Native: the library's polynomial evaluator, the coefficients as numbers (per-sample scalars)."""
    if c.native:
        return c.poly_eval(c.encrypted("x"), [f"c{i}" for i in range(deg + 1)])
    return c.horner(c.encrypted("x"), [f"c{i}" for i in range(deg + 1)])


def _poly_ckks_coeffs(deg: int, rng: np.random.Generator) -> list[float]:
    return [float(rng.uniform(-1.0, 1.0)) / (i + 1) for i in range(deg + 1)]


def _poly_ckks_gen(deg: int, native: bool = False):
    """x uniform in [-1, 1]; c_i uniform in [-1, 1] / (i + 1), one value in every slot (native: as
    scalars, drawn by `_poly_ckks_scalars`): |p(x)| <= H_{deg+1} (2.7 at degree 7), small enough
    for the precision the check asks."""
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        out = {"x": rng.uniform(-1.0, 1.0, size=plain.slots)}
        if not native:
            out.update({f"c{i}": np.full(plain.slots, c) for i, c in enumerate(_poly_ckks_coeffs(deg, rng))})
        return out
    return gen


def _poly_ckks_scalars(deg: int):
    return lambda plain, rng: {f"c{i}": c for i, c in enumerate(_poly_ckks_coeffs(deg, rng))}


# ---- logreg_<n>: logistic-regression inference on encrypted records (CKKS) ---------------------

# The least-squares cubic fit of sigmoid(z) = 1 / (1 + e^-z) on [-8, 8] (uniform weight):
# 0.5 + 1.20096 (z/8) - 0.81562 (z/8)^3, the g3 of Kim, Song, Kim, Lee, Cheon, "Secure logistic
# regression based on homomorphic encryption: design and evaluation", JMIR Med. Inform. 6(2), 2018;
# numpy.polyfit over [-8, 8] gives the same (tests/test_apps.py). (The often quoted
# 0.5 + 0.197 z - 0.004 z^3 fits [-5, 5] instead.) Lowest degree first; 0.0 is left out.
SIGMOID3 = (0.5, 0.15012, 0.0, -0.001593)
SIGMOID_RANGE = 8.0


def logreg(c: Circuit, n: int) -> str:
    """Logistic-regression inference: slots / n records of n features each, packed one record per
    n-slot block of one ciphertext; the server holds plaintext weights w (repeated in every block)
    and a bias b: z = rotate_sum(x * w, n) + b (record i's score lands in slot i n), then the cubic
    least-squares fit of the sigmoid on [-8, 8], 0.5 + 0.15012 z - 0.001593 z^3 (Kim et al. 2018),
    by the same Horner evaluation as poly_<deg> (its zero z^2 term left out). Depth 4: the weights'
    product and three of the cubic's. Every slot is decrypted and checked; the other slots of a
    block hold the sigmoid of partial sums. Native: inner_sum and the polynomial evaluator."""
    prod = c.rescaled(c.mul_plain(c.encrypted("x"), c.plaintext("w")))
    s = c.rotate_sum(prod, n)
    z = c.add_plain(s, c.plaintext_like("b", s))
    if c.native:
        return c.poly_eval(z, list(SIGMOID3))
    return c.horner(z, [f"g{i}" if a else None for i, a in enumerate(SIGMOID3)])


def logreg_layout(plain: Plain, records: np.ndarray, w: np.ndarray, b: float) -> dict[str, np.ndarray]:
    """The inputs of `logreg` for a (slots / n) x n record matrix, weights w and bias b: records
    one per n-slot block (zero-padded), w repeated in every block, b and the sigmoid's
    coefficients in every slot."""
    n = w.size
    x = np.zeros(plain.slots)
    x[:records.size] = records.reshape(-1)
    out = {"x": x, "w": np.tile(w, plain.slots // n), "b": np.full(plain.slots, float(b))}
    out.update({f"g{i}": np.full(plain.slots, a) for i, a in enumerate(SIGMOID3) if a})
    return out


def logreg_scores(plain: Plain, inputs: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Every record's score z = x . w + b, computed directly from the inputs."""
    per = plain.slots // n
    return inputs["x"].reshape(per, n) @ inputs["w"][:n] + inputs["b"][0]


def logreg_agreement(plain: Plain, inputs: dict[str, np.ndarray], got: np.ndarray, n: int) -> float:
    """Classification agreement: the fraction of records whose decrypted prediction (slot i n) is
    >= 0.5 exactly where the true sigmoid(z) is (z >= 0). Not in the op's recorded facts: those
    are fixed when the op is made, before any sample is decrypted, and the runner's check keeps
    only precision; tests/test_apps.py computes it on every library's decrypted output."""
    return float(np.mean((got[::n] >= 0.5) == (logreg_scores(plain, inputs, n) >= 0.0)))


def _logreg_gen(n: int, native: bool = False):
    """Features uniform in [-1, 1]; weights uniform in [-4, 4] / sqrt(n) and bias in [-0.5, 0.5]:
    the score's standard deviation is 4/3 whatever n, so |z| stays well inside the fit's [-8, 8]."""
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        per = plain.slots // n
        return logreg_layout(plain, rng.uniform(-1.0, 1.0, size=(per, n)),
                             rng.uniform(-4.0, 4.0, size=n) / math.sqrt(n), rng.uniform(-0.5, 0.5))
    return gen


# ---- tally_<n> (BFV/BGV) and mean_<n> (CKKS): statistics over encrypted records ---------------

def tally(c: Circuit, n: int) -> str:
    return c.rotate_sum(c.encrypted("x"), n)


def mean(c: Circuit, n: int) -> str:
    """The sum by rotations, then times a plaintext 1/n (a portable constant multiply: SEAL has no
    scalar call) and one rescale."""
    return c.rescaled(c.mul_plain(c.rotate_sum(c.encrypted("x"), n), c.plaintext("w")))


def _votes_gen(n: int, native: bool = False):
    """Every slot a vote: slots / n tallies packed in one ciphertext."""
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.integers(0, 2, size=plain.slots, dtype=np.int64)}
    return gen


def _mean_gen(n: int, native: bool = False):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _uniform(plain, rng, plain.slots), "w": np.full(plain.slots, 1.0 / n)}
    return gen


# ---- similarity_<records>x<dim>: an encrypted query scored against a plaintext database ------

def similarity(c: Circuit, records: int, dim: int) -> tuple[str, ...]:
    """The scoring half of fetch-by-similarity: the query, unit-normalized by the client and
    repeated along the slots, times each plaintext of packed unit-normalized records, then a
    rotate-and-sum inside every dim-slot block: slot i * dim of result j holds the cosine score
    of record j * (slots / dim) + i. One result ciphertext per database plaintext (before a setup
    says the slot count, the layout-free shape: two records per plaintext)."""
    per = (c.slots or 2 * dim) // dim
    q = c.encrypted("q")
    return tuple(c.rotate_sum(c.rescaled(c.mul_plain(q, c.plaintext(f"db{j}"))), dim)
                 for j in range(math.ceil(records / per)))


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def similarity_layout(plain: Plain, db: np.ndarray, q: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of `similarity`: q along every slot, the records packed slots / dim per plaintext."""
    dim = q.size
    per = plain.slots // dim
    out = {"q": np.tile(q, per)}
    for j in range(math.ceil(len(db) / per)):
        block = np.zeros((per, dim), dtype=db.dtype)
        part = db[j * per:(j + 1) * per]
        block[:len(part)] = part
        out[f"db{j}"] = block.reshape(-1)
    return out


def _similarity_gen(records: int, dim: int):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if plain.exact:
            return similarity_layout(plain, _uniform(plain, rng, records * dim).reshape(records, dim),
                                     _uniform(plain, rng, dim))
        return similarity_layout(plain, _unit(rng.normal(size=(records, dim))), _unit(rng.normal(size=dim)))
    return gen


def _similarity_op(name: str, records: int, dim: int, native: bool) -> BenchOp:
    variant = _variant(native)
    return Workload(name, lambda c: similarity(c, records, dim), _similarity_gen(records, dim), RLWE,
                    f"similarity scores of an encrypted query against {records} x {dim} plaintext records ({variant})",
                    native=native, rotations=tuple(1 << i for i in range(int(math.log2(dim)))),
                    facts={"workload": "similarity", "size": records, "dim": dim, "variant": variant, "instances": 1,
                           "method": (similarity.__doc__ or "").split("\n")[0].strip()}
                    ).bench_op(applies=lambda ps: ps.N is None or dim <= ps.N // 2)


def _packing(kind: str, n: int) -> dict[str, int]:
    """How many instances one run serves: `block` b means slots / b independent instances side by
    side in the slots (each window sum, record or element its own); `instances` a fixed count
    (matvec's vector is repeated along the row, so one product per ciphertext)."""
    if kind in ("dot", "tally", "mean", "logreg"):
        return {"block": n}
    return {"block": 1} if kind == "poly" else {"instances": 1}


def _variant(native: bool) -> str:
    return "native" if native else "portable"


# ---- the catalog entries ------------------------------------------------------------------

_SHAPES = {
    # name: (builder, schemes, input generator, size check, title, rotation steps, what it computes)
    "dot": (dot, RLWE, _dot_gen, lambda n: _pow2(n), "inner product of two encrypted {n}-vectors",
            lambda n: [1 << i for i in range(int(math.log2(n)))]),
    "matvec": (matvec, RLWE, _matvec_gen, lambda d: _pow2(d), "plaintext {n} x {n} matrix times encrypted vector",
               lambda d: _matvec_steps(d)),
    "poly": (poly, INT, _poly_gen, lambda k: 2 <= k <= 32, "integer polynomial of degree {n} (Horner)", lambda k: []),
    "tally": (tally, INT, _votes_gen, lambda n: _pow2(n), "tally of {n} encrypted 0/1 votes",
              lambda n: [1 << i for i in range(int(math.log2(n)))]),
    "mean": (mean, ("ckks",), _mean_gen, lambda n: _pow2(n), "mean of {n} encrypted values",
             lambda n: [1 << i for i in range(int(math.log2(n)))]),
}


def zmul(bits: int) -> BenchOp:
    """Two encrypted `bits`-bit integers multiplied (mod 2^bits): TFHE-rs radix integers, the only
    library here whose integers are that wide. BFV/BGV cannot: t is below 2^60 in every library, so
    a 64-bit product wraps modulo t, not 2^64 (and t = 2^64 is no batching modulus)."""
    return Workload(f"zmul_{bits}", lambda c: c.mul(c.encrypted("x"), c.encrypted("y")),
                    {"x": Uniform(0, 2**bits - 1), "y": Uniform(0, 2**bits - 1)}, INT_WORDS,
                    f"multiply two encrypted {bits}-bit integers (radix)", bits=bits,
                    facts={"workload": "zmul", "size": bits, "variant": "portable", "instances": 1,
                           "method": "the library's integer multiply (TFHE-rs: radix blocks, carries propagated)"}
                    ).bench_op()


def _levels(ps) -> int:
    """The levels a CKKS parameter set offers (a library's preset: unknown here, taken as enough)."""
    return len(ps.q_bits) - 1 if ps.q_bits else 1 << 10


# CKKS twins of names whose BFV/BGV form is in _SHAPES, and CKKS-only workloads:
# name: (builder, input generator, size check, title, rotation steps, depth)
_CKKS_SHAPES = {
    "poly": (poly_ckks, _poly_ckks_gen, lambda k: 1 <= k <= 32, "real polynomial of degree {n} (Horner, depth {n})",
             lambda k: [], lambda k: k),
    "logreg": (logreg, _logreg_gen, lambda n: _pow2(n),
               "logistic-regression inference, {n} features per record (cubic sigmoid)",
               lambda n: [1 << i for i in range(int(math.log2(n)))], lambda n: 1 + 3),
}
# Workloads whose native variant differs from the portable program (every other shape's does via
# rotate_sum); the integer polynomial has none: no library here evaluates BFV/BGV polynomials.
_NATIVE_TITLES = {"poly": "real polynomial of degree {n} (the library's polynomial evaluator)"}


def _bench(name: str, kind: str, n: int, native: bool, build, schemes: tuple[str, ...], gen, title: str,
           rots: list[int], applies: Callable, scalars: Callable | None = None, **facts) -> BenchOp:
    """A built-in application as a Workload of the public API (fhemark.workload), as a user writes one."""
    variant = _variant(native)
    facts = {"workload": kind, "size": n, "variant": variant, **_packing(kind, n),
             "method": (build.__doc__ or "").split("\n")[0].strip() or title, **facts}
    return Workload(name, lambda c: build(c, n), gen(n, native), schemes, f"{title} ({variant})", scalars=scalars,
                    native=native, rotations=tuple(rots), facts=facts).bench_op(applies=applies)


def app(name: str) -> list[BenchOp] | None:
    """The ops behind an application name such as matvec_256 (one per scheme family), or None."""
    m = re.fullmatch(r"zmul_(8|16|32|64|128)", name)
    if m:
        return [zmul(int(m.group(1)))]
    m = re.fullmatch(r"similarity_(\d+)x(\d+)(_native)?", name)
    if m:
        records, dim = int(m.group(1)), int(m.group(2))
        return [_similarity_op(name, records, dim, bool(m.group(3)))] if _pow2(dim) and 1 <= records <= 1 << 20 else None
    m = re.fullmatch(r"(dot|matvec|poly|tally|mean|logreg)_(\d+)(_native)?", name)
    if not m:
        return None
    kind, n, native = m.group(1), int(m.group(2)), bool(m.group(3))
    if n > 1 << 15:
        return None
    ops = []
    if kind in _SHAPES and not (native and kind in _NATIVE_TITLES):
        build, schemes, gen, valid, title, rots = _SHAPES[kind]
        size = n if kind != "poly" else 1
        if valid(n):
            ops.append(_bench(name, kind, n, native, build, schemes, gen, title.format(n=n), rots(n),
                              lambda ps, size=size: ps.N is None or size <= ps.N // 2))
    if kind in _CKKS_SHAPES:
        build, gen, valid, title, rots, depth = _CKKS_SHAPES[kind]
        d, size = depth(n), n if kind == "logreg" else 1
        if native:
            title = _NATIVE_TITLES.get(kind, title)
        if valid(n):
            ops.append(_bench(name, kind, n, native, build, ("ckks",), gen, title.format(n=n), rots(n),
                              lambda ps, size=size, d=d: (ps.N is None or size <= ps.N // 2) and _levels(ps) >= d,
                              scalars=_poly_ckks_scalars(n) if native and kind == "poly" else None, depth=d))
    return ops or None
