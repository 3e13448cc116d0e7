"""Compare a decrypted output with its plaintext reference."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .semantics import Plain


@dataclass(frozen=True)
class Check:
    passed: bool
    max_abs_error: float | None = None  # CKKS
    precision_bits: float | None = None  # CKKS: -log2(max abs error)
    mismatches: int = 0                  # BFV/BGV: slots that differ
    message: str = ""


def received(got: np.ndarray, length: int, t: int | None = None) -> np.ndarray:
    """A decoded output as the library gives it, read as the reference is written: a shorter vector
    zero-padded to `length`, BFV/BGV values (any integer dtype, centred or not) reduced into [0, t)."""
    if got.size < length:
        got = np.concatenate([got, np.zeros(length - got.size, dtype=got.dtype)])
    return np.mod(got.astype(np.int64), t) if t else got


def check(plain: Plain, expected: np.ndarray, got: np.ndarray, min_precision_bits: float) -> Check:
    if not plain.words:
        got = received(got, expected.size, plain.t if plain.exact else None)
    if got.shape != expected.shape:
        return Check(False, message=f"output has {got.size} slots, expected {expected.size}")
    if plain.exact:
        bad = int(np.count_nonzero(np.asarray(got, dtype=np.int64) != np.asarray(expected, dtype=np.int64)))
        if bad:
            i = int(np.flatnonzero(got != expected)[0])
            return Check(False, mismatches=bad,
                         message=f"{bad} of {got.size} slots wrong (slot {i}: got {int(got[i])}, expected {int(expected[i])})")
        return Check(True)
    err = float(np.max(np.abs(got - expected))) if got.size else 0.0
    if not math.isfinite(err):
        return Check(False, math.inf, 0.0, message="output is not finite")
    bits = -math.log2(err) if err > 0 else 64.0
    ok = bits >= min_precision_bits
    return Check(ok, err, bits, message="" if ok else
                 f"precision {bits:.1f} bits, below the required {min_precision_bits:g} (max error {err:.3g})")
