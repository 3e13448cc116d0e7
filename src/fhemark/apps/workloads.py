"""Application workloads (HomomorphicEncryption.org's benchmarking suite, HEBench), each written
once with the `Circuit` builder and run unchanged on every library: the portable variant, the
fair comparison. Names carry their size: dot_<n>, matvec_<d>, poly_<deg>, tally_<n>, mean_<n>."""

from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np

from ..ops import INT, RLWE, BenchOp
from ..semantics import Plain
from .builder import Circuit

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


def _padded(plain: Plain, v: np.ndarray) -> np.ndarray:
    out = np.zeros(plain.slots, dtype=v.dtype)
    out[:v.size] = v
    return out


def _fits(size: int) -> Callable[[Plain], bool]:
    return lambda plain: size <= plain.row_length()


# ---- dot_<n>: inner product of two encrypted vectors ------------------------------------------

def dot(scheme: str, n: int) -> tuple[Circuit, str]:
    c = Circuit(scheme)
    prod = c.rescaled(c.mul(c.encrypted("x"), c.encrypted("y")))
    return c, c.rotate_sum(prod, n)


def _dot_gen(n: int):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _padded(plain, _uniform(plain, rng, n)), "y": _padded(plain, _uniform(plain, rng, n))}
    return gen


# ---- matvec_<d>: plaintext d x d matrix times an encrypted vector ------------------------------

def baby_giant(d: int) -> tuple[int, int]:
    """Baby steps b and giant steps g with b * g = d, b the power of two at or above sqrt(d)."""
    b = 1 << math.ceil(math.log2(math.isqrt(d - 1) + 1)) if d > 1 else 1
    return b, d // b


def matvec(scheme: str, d: int) -> tuple[Circuit, str]:
    """Halevi-Shoup diagonal method with baby-step giant-step rotations:
    M v = sum_g rot_{g b}( sum_j diag'_{g b + j} * rot_j(v) ), where diag'_k is diagonal k of M
    pre-rotated by -g b (done on the plaintext, outside the timed work). d + b + g - 2 rotations
    become b - 1 + g - 1; one rescale at the end (one level)."""
    b, g = baby_giant(d)
    c = Circuit(scheme)
    v = c.encrypted("v")
    babies = [v] + [c.rotate(v, j) for j in range(1, b)]
    outer = []
    for gi in range(g):
        inner = c.sum([c.mul_plain(babies[j], c.plaintext(f"m{gi * b + j}")) for j in range(b)])
        outer.append(c.rotate(inner, gi * b) if gi else inner)
    return c, c.rescaled(c.sum(outer))


def _matvec_steps(d: int) -> list[int]:
    b, g = baby_giant(d)
    return list(range(1, b)) + [i * b for i in range(1, g)]


def matvec_layout(plain: Plain, m: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of `matvec` for matrix m and vector v: v along the rows, and the pre-rotated
    generalized diagonals of m."""
    d = v.size
    b, _ = baby_giant(d)
    out = {"v": _row(plain, v)}
    idx = np.arange(d)
    for k in range(d):
        diag = m[idx, (idx + k) % d]
        out[f"m{k}"] = _row(plain, np.roll(diag, (k // b) * b))  # rot_{-gb}: out[i] = diag[i - gb]
    return out


def _matvec_gen(d: int):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return matvec_layout(plain, _uniform(plain, rng, d * d).reshape(d, d), _uniform(plain, rng, d))
    return gen


# ---- poly_<deg>: an integer polynomial (BFV/BGV), Horner's rule --------------------------------

def poly(scheme: str, deg: int) -> tuple[Circuit, str]:
    """p(x) = c_deg x^deg + ... + c_0 with fresh coefficients (server-side plaintexts) each
    sample: deg - 1 ciphertext multiplications in sequence (depth deg - 1), deg plaintext
    additions and one plaintext multiplication."""
    c = Circuit(scheme)
    x = c.encrypted("x")
    acc = c.add_plain(c.mul_plain(x, c.plaintext(f"c{deg}")), c.plaintext(f"c{deg - 1}"))
    for i in range(deg - 2, -1, -1):
        acc = c.add_plain(c.mul(acc, x), c.plaintext(f"c{i}"))
    return c, acc


def _poly_gen(deg: int):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        out = {"x": plain.random(rng)}
        out.update({f"c{i}": np.full(plain.slots, int(rng.integers(0, plain.t)), dtype=np.int64) for i in range(deg + 1)})
        return out
    return gen


# ---- tally_<n> (BFV/BGV) and mean_<n> (CKKS): statistics over encrypted records ---------------

def tally(scheme: str, n: int) -> tuple[Circuit, str]:
    c = Circuit(scheme)
    return c, c.rotate_sum(c.encrypted("x"), n)


def mean(scheme: str, n: int) -> tuple[Circuit, str]:
    """The sum by rotations, then times a plaintext 1/n (a portable constant multiply: SEAL has no
    scalar call) and one rescale."""
    c = Circuit(scheme)
    return c, c.rescaled(c.mul_plain(c.rotate_sum(c.encrypted("x"), n), c.plaintext("w")))


def _votes_gen(n: int):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _padded(plain, rng.integers(0, 2, size=n, dtype=np.int64))}
    return gen


def _mean_gen(n: int):
    def gen(plain: Plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _padded(plain, _uniform(plain, rng, n)), "w": np.full(plain.slots, 1.0 / n)}
    return gen


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


def app(name: str) -> list[BenchOp] | None:
    """The op behind an application name such as matvec_256, or None."""
    m = re.fullmatch(r"(dot|matvec|poly|tally|mean)_(\d+)", name)
    if not m:
        return None
    kind, n = m.group(1), int(m.group(2))
    build, schemes, gen, valid, title, rots = _SHAPES[kind]
    if not valid(n) or n > 1 << 15:
        return None
    size = n if kind != "poly" else 1

    def program(scheme: str):
        circ, out = build(scheme, n)
        return circ.program(out)

    def expect(plain: Plain, vecs: dict, scalars: dict) -> np.ndarray:
        circ, out = build(plain.scheme, n)
        return circ.reference(plain, vecs, out)

    facts = {"workload": kind, "size": n, "variant": "portable",
             "method": (build.__doc__ or "").split("\n")[0].strip() or title.format(n=n)}
    return [BenchOp(name, title.format(n=n) + " (portable)", schemes, program, expect, inputs=(),
                    rotations=tuple(rots(n)), group="app", gen=gen(n), facts=facts,
                    applies=lambda ps, size=size: ps.N is None or size <= ps.N // 2)]
