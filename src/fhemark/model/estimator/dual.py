"""The dual attack: find many short vectors w of the dual lattice {(x, y) : x A = y mod q} and
test whether <w, (b, 0)> mod q looks Gaussian (LWE) or uniform.

Following the lattice estimator's `dual` (Albrecht 2017 for small secrets, Espitau-Joux-Kharchenko
2020 for the optimal number of samples): the secret's coordinates are rescaled by
c = sigma_s * q / sigma_e so that secret and error weigh alike; BKZ-beta on the resulting
(m + n)-dimensional lattice gives vectors whose inner product with the sample is a Gaussian of
deviation

    sigma' = rho * sigma_s * delta^(m + n) / c^(m / (m + n))      (relative to q),

with m = sqrt(n ln c / ln delta) - n samples (fewer if fewer are given). Telling that apart from
uniform takes N ~ 8 exp(4 pi^2 sigma'^2) vectors (advantage exp(-2 pi^2 sigma'^2), 99 %, majority
vote); their cost is that of `CostModel.short_vectors`. The secret is not guessed (no hybrid), so
for sparse or very small secrets the figure is an upper bound.
"""

from __future__ import annotations

import math

import numpy as np

from .bkz import CostModel, log_delta
from .lwe import LWE


def _log2_samples_needed(log_sigma: np.ndarray) -> np.ndarray:
    """log2 of the vectors a majority vote needs to reach 99 % against advantage exp(-2 pi^2 sigma^2)."""
    x = 2 * math.pi ** 2 * np.exp(np.minimum(2 * log_sigma, 700))  # -ln(advantage)
    adv2 = np.exp(-2 * np.minimum(x, 700))
    # 2 ln(0.02) / ln(1 - adv^2); for tiny advantages ln(1 - a) ~ -a, which keeps it finite in floats.
    denom = np.where(adv2 > 1e-12, -np.log1p(-np.minimum(adv2, 1 - 1e-16)), np.maximum(adv2, 1e-300))
    exact = np.log2(np.maximum(-2 * math.log(0.02) / denom, 1.0))
    return np.where(x >= 300, (2 * x) / math.log(2) + math.log2(-2 * math.log(0.02)), exact)


def dual(params: LWE, cost: CostModel, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log2 cost and lattice dimension for every beta."""
    n, ln_q = params.n, params.ln_q
    s_s, s_e = params.secret.stddev, params.noise.stddev
    ld = log_delta(betas)
    ln_c = math.log(s_s) + ln_q - math.log(s_e)
    m = np.maximum(1, np.ceil(np.sqrt(n * max(ln_c, 1e-9) / ld)) - n)
    if params.samples is not None:
        m = np.minimum(m, params.samples)
    d = m + n
    rho, _ = cost.short_vectors(betas, 2 * betas, np.zeros_like(betas, dtype=float) + 1.0)
    log_sigma = np.log(rho) + math.log(s_s) + d * ld - (m / d) * ln_c
    log2_n = _log2_samples_needed(log_sigma)
    _, red = cost.short_vectors(betas, d, log2_n)
    total = np.logaddexp2(red, log2_n)
    return np.where(np.isfinite(total), total, np.inf), d
