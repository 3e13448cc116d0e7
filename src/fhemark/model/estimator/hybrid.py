"""The dual-hybrid attack: split the secret, reduce the dual lattice over its first n - zeta
coordinates only, and handle the last zeta by enumeration.

Modelled after the lattice estimator's `dual_hybrid` (Espitau-Joux-Kharchenko 2020) with its FFT
distinguisher (Guo-Johansson 2021), for the secrets where the enumeration is cheap:

- binary and ternary secrets: all 2^zeta or 3^zeta guesses are scored at once, the FFT over t more
  coordinates taken mod 2 shortening the dual vectors by 2^(t/d); distinguishing needs
  N = 4 exp(4 pi^2 sigma'^2) (ln(2^t |S|) - ln ln(1/p)) vectors and the scoring costs
  |S| (t 2^t + 4 N) operations;
- sparse secrets: guess that the last zeta coordinates are all zero (no enumeration) and repeat until
  the guess holds, 1 / Pr[no nonzero among zeta] times.

The same dual reduction as `dual.py` (rescaled secret, optimal m). Gaussian secrets are not guessed.
The three parameters (beta, zeta, t) are searched on a grid, coarse then fine (`search.minimise`);
a minimum the coarse grid misses would make the figure too high, never too low.
"""

from __future__ import annotations

import math

import numpy as np

from .bkz import CostModel, log_delta
from .lwe import LWE
from .search import minimise

_P = math.sqrt(0.99)  # success of the guess stage and of the distinguishing stage each


def _ln_guesses(params: LWE, zeta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ln |S|, ln repetitions, deviation of the reduced secret) per zeta."""
    s = params.secret
    if s.kind == "binary":
        return zeta * math.log(2), np.zeros_like(zeta), np.full_like(zeta, s.stddev)
    if s.kind == "ternary":
        return zeta * math.log(3), np.zeros_like(zeta), np.full_like(zeta, s.stddev)
    assert s.kind == "sparse" and s.weight is not None
    n, h = params.n, s.weight
    rest = n - zeta
    # Pr[all h nonzeros among the first n - zeta] = C(n - zeta, h) / C(n, h)
    ln_p = np.array([math.lgamma(r + 1) - math.lgamma(r - h + 1) if r >= h else -math.inf for r in rest.ravel()]
                    ).reshape(rest.shape) - (math.lgamma(n + 1) - math.lgamma(n - h + 1))
    return np.zeros_like(zeta), np.maximum(-ln_p, 0), np.sqrt(h / np.maximum(rest, 1))


def _cost(params: LWE, cost: CostModel, b, zeta, t):
    n, ln_q = params.n, params.ln_q
    ln_size, ln_rep, s_s = _ln_guesses(params, zeta)
    rest = n - zeta
    ld = log_delta(b)
    ln_c = np.log(s_s) + ln_q - math.log(params.noise.stddev)
    m = np.maximum(1, np.ceil(np.sqrt(rest * np.maximum(ln_c, 1e-9) / ld)) - rest)
    if params.samples is not None:
        m = np.minimum(m, params.samples)
    d = m + rest
    rho, _ = cost.short_vectors(b, 2 * b, np.ones_like(b))
    log_sigma = np.log(rho) - (t / d) * math.log(2) + np.log(s_s) + d * ld - (m / d) * ln_c
    x = 4 * math.pi ** 2 * np.exp(np.minimum(2 * log_sigma, 700))
    ln_terms = np.maximum(t * math.log(2) + ln_size - math.log(math.log(1 / _P)), 1e-9)
    log2_n = np.where(x >= 700, np.inf, (math.log(4) + x + np.log(ln_terms)) / math.log(2))
    _, red = cost.short_vectors(b, d, np.minimum(log2_n, 2000))
    ln2 = math.log(2)
    fft_work = np.where(t > 0, (ln_size + np.log(np.maximum(t, 1)) + t * ln2) / ln2, -np.inf)
    score = (ln_size + math.log(4)) / ln2 + log2_n
    total = np.logaddexp2(np.logaddexp2(red, fft_work), score) + ln_rep / ln2
    return np.where((t <= rest) & (rest >= b) & np.isfinite(log2_n), total, np.inf), d


def dual_hybrid(params: LWE, cost: CostModel, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log2 cost and lattice dimension: finite only at the best beta (with its best zeta, t); all inf
    when the secret is not one whose coordinates can be guessed."""
    if params.secret.kind not in ("binary", "ternary", "sparse"):
        return np.full(betas.shape, np.inf), np.zeros(betas.shape)
    n = params.n
    fft = params.secret.kind != "sparse"
    # Guessing zeros of a sparse secret stays cheap far further out than enumerating a dense one.
    reach = float(min(n - 40, 240 if fft else int(0.6 * n)))
    z_step = max(4.0, float(int(reach / 24)))
    lo, hi = float(betas[0]), float(betas[-1])
    bits, (beta, _, _), d = minimise(lambda b, z, t: _cost(params, cost, b, z, t),
                                     [(lo, hi, 8, 1), (0, max(reach, 0), z_step, max(1, z_step // 4)),
                                      (0, 160 if fft else 0, 16, 4)])
    return np.where(betas == beta, bits, np.inf), np.full(betas.shape, d)
