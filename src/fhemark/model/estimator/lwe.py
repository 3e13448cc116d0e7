"""An LWE instance as the attacks see it: dimension, modulus, and the two distributions.

Only the standard deviations of secret and error enter the attack models below (the lattice
estimator does the same), so a bounded uniform or TUniform error is described by its standard
deviation, and a binary secret by the deviation of its centred form {-1/2, 1/2}: subtracting
A * (1/2, ..., 1/2) from b costs the attacker nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SECRETS = ("ternary", "sparse:H", "binary", "gaussian:SIGMA")


@dataclass(frozen=True)
class Secret:
    kind: str                 # ternary | sparse | binary | gaussian
    stddev: float
    weight: int | None = None  # nonzero entries of a sparse secret

    def describe(self) -> str:
        if self.kind == "sparse":
            return f"sparse ternary, h={self.weight}"
        if self.kind == "gaussian":
            return f"gaussian, sigma={self.stddev:g}"
        return {"ternary": "uniform ternary", "binary": "uniform binary"}[self.kind]


@dataclass(frozen=True)
class Noise:
    kind: str     # gaussian | uniform (a bounded uniform or TUniform error, by its deviation)
    stddev: float

    def describe(self) -> str:
        return f"{self.kind}, sd={self.stddev:.4g}"


def ternary() -> Secret:
    return Secret("ternary", math.sqrt(2 / 3))


def sparse(weight: int, n: int) -> Secret:
    # h nonzero entries of +-1 among n: per-coordinate variance h/n.
    return Secret("sparse", math.sqrt(weight / n), weight)


def binary() -> Secret:
    return Secret("binary", 0.5)


def gaussian_secret(sigma: float) -> Secret:
    return Secret("gaussian", sigma)


def gaussian(sigma: float) -> Noise:
    return Noise("gaussian", sigma)


def uniform_noise(stddev: float) -> Noise:
    return Noise("uniform", stddev)


def tuniform(bound_log2: int) -> Noise:
    """TFHE-rs's TUniform(b): uniform on [-2^b, 2^b], both ends included."""
    width = 2 ** (bound_log2 + 1) + 1
    return Noise("uniform", math.sqrt((width * width - 1) / 12))


@dataclass(frozen=True)
class LWE:
    n: int
    log_q: float           # log2 of the modulus; RLWE moduli run to thousands of bits, so never q itself
    secret: Secret
    noise: Noise
    samples: int | None = None  # None: as many as the attack wants (an LWE key-switching key gives plenty)
    name: str = ""

    @property
    def ln_q(self) -> float:
        return self.log_q * math.log(2)

    def describe(self) -> str:
        m = "unlimited" if self.samples is None else str(self.samples)
        return f"n={self.n}, log2 q={self.log_q:g}, secret {self.secret.describe()}, error {self.noise.describe()}, samples {m}"


def rlwe(ring_dim: int, log_q: float, secret: Secret, sigma: float = 3.19, name: str = "") -> LWE:
    """An RLWE (or GLWE: pass k*N) set as LWE: one ciphertext or key gives n samples, which is what
    the HE standard's tables assume (m = n)."""
    return LWE(ring_dim, log_q, secret, gaussian(sigma), ring_dim, name)


def parse_secret(text: str, n: int) -> Secret:
    """`ternary`, `binary`, `sparse:H` or `gaussian:SIGMA`, as typed on the command line."""
    kind, _, arg = text.strip().lower().partition(":")
    try:
        if kind == "ternary" and not arg:
            return ternary()
        if kind == "binary" and not arg:
            return binary()
        if kind == "sparse" and arg:
            h = int(arg)
            if 0 < h <= n:
                return sparse(h, n)
        elif kind == "gaussian" and arg:
            sigma = float(arg)
            if sigma > 0:
                return gaussian_secret(sigma)
    except ValueError:
        pass
    raise ValueError(f"secret '{text}' is not one of {', '.join(SECRETS)} (with 0 < H <= n, SIGMA > 0)")
