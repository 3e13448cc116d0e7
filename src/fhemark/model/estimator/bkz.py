"""What lattice reduction costs: root-Hermite factor per block size, and three cost models.

All functions take numpy arrays of block sizes so that the attacks can try every beta at once, and
return log2 of the cost in elementary operations.

- `core-svp`: one sieve in dimension beta, 2^(0.292 beta) classical (BDGL16), 2^(0.265 beta)
  quantum (Laarhoven). No polynomial factor: the most conservative and most quoted figure.
- `hestd2018`: the model of the 2018 lattice (LWE) estimator runs behind the HomomorphicEncryption.org
  tables, `BKZ.sieve`: BKZ makes 8d SVP calls, each 2^(0.292 beta + 16.4) (the estimator's
  `BDGL16` today); the quantum columns use 0.265 beta (`BKZ.qsieve`, Laarhoven). With uSVP and the
  scaled dual it reproduces every row of the 2018 tables up to N = 32768 (tests/test_estimator.py).
- `matzov`: the lattice estimator's default since 2022 and the model of the 2024 guidelines:
  progressive BKZ, C (d - beta) sieves in dimension beta - d4f(beta) (Ducas' dimensions for free),
  each C * 2^(a beta' + b) with the list-decoding sieve's gate counts fitted by AGPS20 and improved
  by MATZOV22 (classical `list_decoding-classical`, quantum `list_decoding-dw`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MODELS = ("matzov", "hestd2018", "core-svp")

# Measured with fpylll below beta = 40, where the asymptotic formula is wrong (lattice estimator).
_SMALL_DELTA = ((2, 1.02190), (5, 1.01862), (10, 1.01616), (15, 1.01485), (20, 1.01420), (25, 1.01342),
                (28, 1.01331), (40, 1.01295))

# A sieve in dimension beta leaves about (4/3)^(beta/2) = 2^(0.2075 beta) short vectors behind.
SIEVE_OUTPUT = 0.2075


def log_delta(beta: np.ndarray) -> np.ndarray:
    """ln of the root-Hermite factor BKZ-beta reaches (Chen's formula above 40)."""
    b = np.asarray(beta, dtype=float)
    big = np.maximum(b, 41.0)
    asym = (np.log(big / (2 * math.pi * math.e)) + np.log(math.pi * big) / big) / (2 * (big - 1))
    small_b = np.array([s[0] for s in _SMALL_DELTA], dtype=float)
    small_d = np.log(np.array([s[1] for s in _SMALL_DELTA]))
    idx = np.clip(np.searchsorted(small_b, b, side="right") - 1, 0, len(small_b) - 1)
    return np.where(b > 40, asym, small_d[idx])


def _d4f(beta: np.ndarray) -> np.ndarray:
    return np.maximum(beta * math.log(4 / 3) / np.log(beta / (2 * math.pi * math.e)), 0.0)


def _log2_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logaddexp2(a, b)


@dataclass(frozen=True)
class CostModel:
    name: str
    quantum: bool = False

    @property
    def _sieve(self) -> tuple[float, float]:
        """(a, b) of the sieve cost 2^(a * dim + b) in this model."""
        if self.name == "matzov":
            return (0.2663676536352464, 25.299541499216627) if self.quantum else (0.29613500308205365, 20.387885985467914)
        return (0.265 if self.quantum else 0.292), (16.4 if self.name == "hestd2018" else 0.0)

    def bkz(self, beta: np.ndarray, d: np.ndarray) -> np.ndarray:
        """log2 of the cost of BKZ-beta on a d-dimensional basis."""
        beta = np.asarray(beta, dtype=float)
        d = np.maximum(np.asarray(d, dtype=float), beta)
        a, b = self._sieve
        if self.name == "core-svp":
            return a * beta
        if self.name == "hestd2018":
            calls = np.where(beta < d, np.log2(8 * d), 0.0)
            return _log2_sum(3 * np.log2(d), calls + a * beta + b)
        c = 1 / (1 - 2 ** -a)  # progressive BKZ: all smaller blocks together cost a constant factor more
        svp = np.log2(c * np.maximum(d - beta, 1)) + np.log2(c) + a * (beta - _d4f(beta)) + b
        return _log2_sum(3 * np.log2(d), svp)

    def short_vectors(self, beta: np.ndarray, d: np.ndarray, log2_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rho, log2 cost) of 2^log2_n short vectors: one reduction's last sieve leaves 2^(0.2075 dim)
        of them, each longer than the shortest by rho; more need more reductions. MATZOV's model sieves
        a larger first block once BKZ is done (Guo-Johansson), for as long as BKZ itself took."""
        beta = np.asarray(beta, dtype=float)
        d = np.asarray(d, dtype=float)
        a, b = self._sieve
        if self.name == "matzov":
            c = 1 / (1 - 2 ** -a)
            base = beta - np.floor(_d4f(beta))
            dim = np.where(beta < d, np.minimum(d, np.floor(base + np.log2(np.maximum(d - beta, 1) * c) / a)), base)
            extra = math.log2(c) + a * dim + b
            per_round = _log2_sum(self.bkz(beta, d), extra)
        else:
            dim = beta
            per_round = self.bkz(beta, d)
        rho = math.sqrt(4 / 3) * np.exp((dim - 1) * (log_delta(dim) - log_delta(beta)))
        rounds = np.maximum(np.ceil(np.exp2(np.minimum(log2_n - SIEVE_OUTPUT * dim, 1000))), 1)
        return rho, per_round + np.log2(rounds)


def model(name: str, quantum: bool = False) -> CostModel:
    if name not in MODELS:
        raise ValueError(f"cost model '{name}' is not one of {', '.join(MODELS)}")
    return CostModel(name, quantum)
