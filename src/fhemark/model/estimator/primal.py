"""The primal attack: embed the LWE instance as a unique-SVP instance and reduce it with BKZ-beta.

Success follows the "2016 estimate" (ADPS16, confirmed experimentally by AGVW17 and DDGR20) under
the geometric series assumption: BKZ-beta finds the embedded vector once its projection on the last
beta Gram-Schmidt vectors is shorter than the beta-th last of them,

    sqrt(sigma_e^2 (beta - 1) + tau^2)  <=  delta^(2 beta - d - 1) * Vol(L)^(1/d),

for the lattice of dimension d = n + m + 1 built from m samples, the secret's n coordinates and the
embedding coordinate tau = sigma_e. A secret narrower than the error is scaled up by
xi = sigma_e / sigma_s (Bai-Galbraith) so that both parts of the target are balanced; its volume
is then q^m * xi^n * tau. For each beta the smallest d that works is the smaller root of a
quadratic in d; the cheapest beta wins.
"""

from __future__ import annotations

import math

import numpy as np

from .bkz import CostModel, log_delta
from .lwe import LWE

# A block size of 1754 already costs 2^512 in the cheapest model: nothing beyond it is an attack.
MAX_BETA = 1754


def usvp(params: LWE, cost: CostModel, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log2 cost (inf where beta cannot succeed) and lattice dimension d, for every beta."""
    n, ln_q = params.n, params.ln_q
    sigma = params.noise.stddev
    xi = max(sigma / params.secret.stddev, 1.0)
    tau = sigma
    # The secret's coordinates stand in as extra samples once it is no wider than the error.
    m_max = (params.samples if params.samples is not None else 10 * n + 2 * MAX_BETA) + n

    ld = log_delta(betas)
    lhs = 0.5 * np.log(sigma ** 2 * (betas - 1) + tau ** 2)
    a = -ld
    b = ld * (2 * betas - 1) + ln_q - lhs
    c = math.log(tau) + n * math.log(xi) - (n + 1) * ln_q
    f_n = a * n * n + b * n + c
    disc = b * b - 4 * a * c
    root = (-b + np.sqrt(np.maximum(disc, 0))) / (2 * a)  # a < 0: the smaller root, where feasibility starts
    d = np.where(f_n >= 0, n, np.ceil(root))
    feasible = (f_n >= 0) | ((disc >= 0) & (n <= root))
    d = np.minimum(np.where(feasible, d, m_max), m_max)
    d = np.maximum(d, betas)
    # d == beta is a single SVP call rather than a BKZ tour; stepping past it keeps the cost curve smooth.
    d = np.where((d == betas) & (d < m_max), d + 1, d)
    rhs = ld * (2 * betas - d - 1) + (math.log(tau) + n * math.log(xi) + ln_q * (d - n - 1)) / d
    ok = feasible & (lhs <= rhs + 1e-12) & (betas <= d)
    return np.where(ok, cost.bkz(betas, d), np.inf), d
