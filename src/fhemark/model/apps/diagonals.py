"""fhemark's own linear transformation, written once in the primitives every driver runs (rotate,
mul_plain, add): what a library without a linear-transform routine (SEAL, TenSEAL) runs in place of
`linear_transform`, and what the portable matvec is.

out = sum_k diag_k * rot_k(v) over the given diagonals k (Halevi-Shoup). Baby-step giant-step
splits every k as g + j with g a multiple of the baby step b and 0 <= j < b:

    out = sum_g rot_g( sum_j rot_{-g}(diag_{g+j}) * rot_j(v) )

so that the rotations are the distinct nonzero j (of v, shared by every giant step) and the distinct
nonzero g (of the inner sums), not one per diagonal; rot_{-g}(diag) is a rotation of a plaintext,
done on cleartext before it is encoded (outside the timed work). b is the power of two that needs the
fewest rotations, the largest of equals: above the largest k it is the plain diagonal method (no giant
step, nothing pre-rotated), which few diagonals keep.

Levels: none. Every product is of a ciphertext and a plaintext encoded like it; the terms share one
scale (CKKS: the input's squared, at the input's level), and the rotations keep it. The product's
level is spent by the rescale the program writes after the transform, as after the library's
routine (PROTOCOL.md: linear_transform's result is not rescaled). BFV/BGV: one plaintext product in
sequence.
"""

from __future__ import annotations

import operator
from typing import Callable, Iterable, Protocol


class Circuit(Protocol):
    """What the transformation asks of the circuit it writes into (builder.Circuit)."""

    def rotate(self, a: str, k: int) -> str: ...
    def mul_plain(self, a: str, p: str) -> str: ...
    def sum(self, cts: list[str]) -> str: ...


# (k, g, like) -> the plaintext of diagonal k rotated by -g, encoded to meet `like`
Diagonal = Callable[[int, int, str], str]


def check(ks: Iterable[int]) -> list[int]:
    """The diagonals, sorted: distinct non-negative ints (PROTOCOL.md: 0 <= k < row)."""
    given = list(ks)
    try:
        out = [operator.index(k) for k in given if not isinstance(k, bool)]
    except TypeError:
        out = []
    if not out or len(out) != len(given) or min(out) < 0:
        raise ValueError(f"linear_transform diagonals {given!r}: give at least one, each an int k >= 0 (rot_k(v))")
    return sorted(out)


def _split(ks: list[int], b: int) -> tuple[set[int], set[int]]:
    """The baby steps (of v) and giant steps (of the inner sums) baby step b needs."""
    return {k % b for k in ks} - {0}, {k - k % b for k in ks} - {0}


def baby_step(ks: Iterable[int]) -> int:
    """The baby step with the fewest rotations (a power of two; the largest of equals)."""
    ks = check(ks)
    top = 1 << max(ks).bit_length()  # above every k: the plain diagonal method
    options = [1 << i for i in range(top.bit_length())]
    return min(reversed(options), key=lambda b: sum(map(len, _split(ks, b))))


def rotations(ks: Iterable[int], b: int | None = None) -> list[int]:
    """The rotation steps the transformation uses (its Galois keys): baby steps, then giant steps."""
    ks = check(ks)
    babies, giants = _split(ks, b or baby_step(ks))
    return sorted(babies) + sorted(giants)


def evaluate(c: Circuit, v: str, ks: Iterable[int], diagonal: Diagonal, b: int | None = None) -> str:
    """sum_k diag_k * rot_k(v), not rescaled; `diagonal(k, g, like)` gives diagonal k rotated by -g
    as a plaintext that meets `like` (a rotation of v, at v's level)."""
    ks = check(ks)
    b = b or baby_step(ks)
    babies = {0: v}
    for j in sorted(_split(ks, b)[0]):
        babies[j] = c.rotate(v, j)
    groups: dict[int, list[int]] = {}
    for k in ks:
        groups.setdefault(k - k % b, []).append(k)
    outer = []
    for g, members in sorted(groups.items()):
        inner = c.sum([c.mul_plain(babies[k - g], diagonal(k, g, babies[k - g])) for k in members])
        outer.append(c.rotate(inner, g) if g else inner)
    return c.sum(outer)
