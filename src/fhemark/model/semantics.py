"""Plaintext semantics of every operation, written once: what each decrypted
result is checked against (exact modulo t for BFV/BGV, real arithmetic for CKKS).

Slot layout is the one PROTOCOL.md fixes: BFV/BGV slots form a 2 x N/2 matrix
(rows rotate left, `rotate_columns` swaps the rows); CKKS has N/2 real slots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plain:
    scheme: str
    slots: int            # RLWE: slot count; bit schemes: array length
    t: int | None = None  # BFV/BGV plaintext modulus; bit schemes: 2, the message modulus, or 2^bits

    @property
    def exact(self) -> bool:
        return self.scheme != "ckks"

    @property
    def words(self) -> bool:
        """Bit/integer schemes: unsigned words modulo a power of two, arrays not padded."""
        return self.scheme.startswith("tfhe")

    def random(self, rng: np.random.Generator, length: int | None = None) -> np.ndarray:
        """A fresh input vector, zero-padded to the slot count as drivers pad it."""
        if self.words:
            return rng.integers(0, self.t, size=length or self.slots, dtype=np.uint64)
        n = self.slots if length is None else min(length, self.slots)
        out = np.zeros(self.slots, dtype=np.int64 if self.exact else np.float64)
        if self.exact:
            out[:n] = rng.integers(0, self.t, size=n, dtype=np.int64)
        else:
            out[:n] = rng.uniform(-1.0, 1.0, size=n)
        return out

    def full(self, v) -> np.ndarray:
        """An input as the wire carries it (PROTOCOL.md "Vectors on the wire"): RLWE vectors zero-padded
        to the slot count, BFV/BGV values reduced into [0, t); bit-scheme arrays as they are."""
        if self.words:
            return np.asarray(v)
        v, out = np.asarray(v), np.zeros(self.slots, dtype=np.int64 if self.exact else np.float64)
        out[:v.size] = np.mod(v.astype(np.int64), self.t) if self.exact else v
        return out

    def random_scalar(self, rng: np.random.Generator) -> int | float:
        return int(rng.integers(0, self.t)) if self.exact else float(rng.uniform(-1.0, 1.0))

    def _wrap(self, v: np.ndarray) -> np.ndarray:
        """Words: uint64 arithmetic wraps mod 2^64; t divides 2^64."""
        return v if self.t == 1 << 64 else v % np.uint64(self.t)

    def add(self, x, y):
        if self.words:
            return self._wrap(np.asarray(x, np.uint64) + np.asarray(y, np.uint64))
        return (x + y) % self.t if self.exact else x + y

    def sub(self, x, y):
        if self.words:
            return self._wrap(np.asarray(x, np.uint64) - np.asarray(y, np.uint64))
        return (x - y) % self.t if self.exact else x - y

    def mul(self, x, y):
        if self.words:
            return self._wrap(np.asarray(x, np.uint64) * np.asarray(y, np.uint64))
        if not self.exact:
            return x * y
        if self.t < 1 << 31:  # the product fits in int64
            return (np.asarray(x, dtype=np.int64) * y) % self.t
        xs = np.asarray(x, dtype=object)
        return np.asarray((xs * (np.asarray(y, dtype=object) if np.ndim(y) else int(y))) % self.t, dtype=np.int64)

    def rotate(self, x, steps: int):
        """Left rotation: out[i] = in[i + steps], per row for BFV/BGV."""
        if self.exact:
            return np.roll(x.reshape(2, -1), -steps, axis=1).reshape(-1)
        return np.roll(x, -steps)

    def swap_rows(self, x):
        return x.reshape(2, -1)[::-1].reshape(-1)

    def conjugate(self, x):
        return x  # real slots

    def row_length(self) -> int:
        return self.slots // 2 if self.exact else self.slots
