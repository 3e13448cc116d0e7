"""Application workloads (HomomorphicEncryption.org's benchmarking suite, HEBench), each written
once with the `Circuit` builder and run unchanged on every library: the portable variant, the
fair comparison. Names carry their size: dot_<n>, matvec_<d>, poly_<deg>, tally_<n>, mean_<n>."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Callable

import numpy as np

from ..bitops import static_ops
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


# ---- similarity_<records>x<dim>: an encrypted query scored against a plaintext database ------

def similarity(scheme: str, records: int, dim: int, plain: Plain | None) -> tuple[Circuit, tuple[str, ...]]:
    """The scoring half of fetch-by-similarity: the query, unit-normalized by the client and
    repeated along the slots, times each plaintext of packed unit-normalized records, then a
    rotate-and-sum inside every dim-slot block: slot i * dim of result j holds the cosine score
    of record j * (slots / dim) + i. One result ciphertext per database plaintext."""
    per = (plain.slots if plain else 2 * dim) // dim
    c = Circuit(scheme)
    q = c.encrypted("q")
    outs = tuple(c.rotate_sum(c.rescaled(c.mul_plain(q, c.plaintext(f"db{j}"))), dim)
                 for j in range(math.ceil(records / per)))
    return c, outs


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


def _similarity_op(name: str, records: int, dim: int) -> BenchOp:
    def program(scheme: str):
        circ, outs = similarity(scheme, records, dim, None)
        return circ.program(*outs)

    def sized(scheme: str, plain: Plain):
        circ, outs = similarity(scheme, records, dim, plain)
        return circ.program(*outs)

    def expect(plain: Plain, vecs: dict, scalars: dict):
        circ, outs = similarity(plain.scheme, records, dim, plain)
        return circ.reference(plain, vecs, *outs)

    return BenchOp(name, f"similarity scores of an encrypted query against {records} x {dim} plaintext records "
                         "(portable)", RLWE, program, expect, inputs=(), group="app", gen=_similarity_gen(records, dim),
                   rotations=tuple(1 << i for i in range(int(math.log2(dim)))), sized=sized,
                   applies=lambda ps: ps.N is None or dim <= ps.N // 2,
                   facts={"workload": "similarity", "size": records, "dim": dim, "variant": "portable",
                          "method": (similarity.__doc__ or "").split("\n")[0].strip()})


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
    mul = next(o for o in static_ops() if o.name == "int_mul")
    return replace(mul, name=f"zmul_{bits}", title=f"multiply two encrypted {bits}-bit integers (radix)",
                   group="app", applies=lambda ps: ps.bits == bits,
                   facts={"workload": "zmul", "size": bits, "variant": "portable",
                          "method": "the library's integer multiply (TFHE-rs: radix blocks, carries propagated)"})


def app(name: str) -> list[BenchOp] | None:
    """The op behind an application name such as matvec_256, or None."""
    m = re.fullmatch(r"zmul_(8|16|32|64|128)", name)
    if m:
        return [zmul(int(m.group(1)))]
    m = re.fullmatch(r"similarity_(\d+)x(\d+)", name)
    if m:
        records, dim = int(m.group(1)), int(m.group(2))
        return [_similarity_op(name, records, dim)] if _pow2(dim) and 1 <= records <= 1 << 20 else None
    m = re.fullmatch(r"(dot|matvec|poly|tally|mean)_(\d+)", name)
    if not m:
        return None
    kind, n = m.group(1), int(m.group(2))
    build, schemes, gen, valid, title, rots = _SHAPES[kind]
    if not valid(n) or n > 1 << 15:
        return None
    size = n if kind != "poly" else 1

    def outputs(scheme: str) -> tuple[Circuit, tuple[str, ...]]:
        circ, out = build(scheme, n)
        return circ, (out,)

    def program(scheme: str):
        circ, outs = outputs(scheme)
        return circ.program(*outs)

    def expect(plain: Plain, vecs: dict, scalars: dict) -> np.ndarray | dict[str, np.ndarray]:
        circ, outs = outputs(plain.scheme)
        return circ.reference(plain, vecs, *outs)

    facts = {"workload": kind, "size": n, "variant": "portable",
             "method": (build.__doc__ or "").split("\n")[0].strip() or title.format(n=n)}
    return [BenchOp(name, title.format(n=n) + " (portable)", schemes, program, expect, inputs=(),
                    rotations=tuple(rots(n)), group="app", gen=gen(n), facts=facts,
                    applies=lambda ps, size=size: ps.N is None or size <= ps.N // 2)]
