"""FHERMA "Matrix Multiplication" (https://fherma.io/challenges/652bf669485c878710fd020b), CKKS.

What the winner's write-up states (fairmath/fherma-challenges, matrix-multiplication/solution.md,
read 2026-11-28): C = A B for two encrypted 64 x 64 matrices, each encoded row-wise in one
ciphertext (slot i*d + j holds row i, column j), multiplicative depth at most 2, 8192 slots
(so N = 16384).

Written here from that description at d = 8 (a small matrix: 64 x 64 is the same program with
~8x the rotations and products): for every j, column j of A is masked out, moved to column 0 and
copied along its row, and row j of B is masked out, moved to row 0 and copied down the columns;
C is the sum over j of their products. Masks: one level; the ciphertext products: the second.
Every decrypted C is checked against the same steps replayed on the cleartext (tests/test_fherma.py
holds that replay against numpy's A @ B).

Run it:  fhemark choose examples/fherma/matmul.py --at fherma
"""

import numpy as np

from fhemark.workload import Workload

D = 8
_slot = np.arange(D * D)
_MASKS = {**{f"col{j}": (_slot % D == j).astype(float) for j in range(D)},
          **{f"row{j}": (_slot // D == j).astype(float) for j in range(D)}}


def _spread(c, ct, step):
    """Copies a value at the first of D positions `step` apart to all D of them: log2(D) rotations."""
    k = 1
    while k < D:
        ct = c.add(ct, c.rotate(ct, -k * step))
        k *= 2
    return ct


def matmul(c):
    a, b = c.encrypted("a"), c.encrypted("b")
    terms = []
    for j in range(D):
        col = c.rescaled(c.mul_plain(a, c.plaintext_like(f"col{j}", a)))
        row = c.rescaled(c.mul_plain(b, c.plaintext_like(f"row{j}", b)))
        col = _spread(c, c.rotate(col, j) if j else col, 1)
        row = _spread(c, c.rotate(row, j * D) if j else row, D)
        terms.append(c.rescaled(c.mul(col, row)))
    return c.sum(terms)


def inputs(plain, rng):
    """A and B uniform in [-1, 1] (the challenge's range is not stated), row-wise, and the masks."""
    return {"a": rng.uniform(-1, 1, D * D), "b": rng.uniform(-1, 1, D * D), **_MASKS}


WORKLOAD = Workload(
    "fherma_matmul", matmul, title=f"C = A B for encrypted {D} x {D} matrices, row-wise, depth 2 (FHERMA)",
    inputs=inputs, schemes=("ckks",), slots=D * D,
    precision_bits=10,
    facts={"fherma": "matmul"},
)
