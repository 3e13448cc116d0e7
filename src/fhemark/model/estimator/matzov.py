"""MATZOV's dual attack (MATZOV 2022, Theorem 7.6; after Guo-Johansson 2021), the lattice
estimator's `dual_hybrid` in `LWE.estimate` since 2022, and what TFHE-rs's and OpenFHE's published
figures rest on.

The secret is split three ways: k_lat coordinates go into the lattice, k_enum are enumerated, k_fft
are handled by an FFT modulo a small p. With m = n samples, the dual vectors from one sieve in
dimension beta after BKZ-beta have length

    ell = sigma_e^(m/(m+k_lat)) (sigma_s q)^(k_lat/(m+k_lat)) sqrt(4/3) sqrt(beta/(2 pi e)) delta^(m+k_lat-beta),

distinguishing needs N = exp(4 (ell pi/q)^2) exp(k_fft/3 (sigma_s pi/p)^2) (k_enum H + k_fft ln p + ln 2)
of them (H: the secret's entropy per coordinate, Gaussian approximation), and the guessing costs
coeff (2a/sqrt(e))^k_enum 2^(k_enum H) (32^2 k_fft p^(k_fft+1) + 640 N) operations. The search is
a grid: p in 2..6, k_enum and k_fft in steps of 10 (as the estimator's), beta in steps of 1 near the
plain dual's block size (`search.minimise`: coarse, then fine around the coarse optimum).
"""

from __future__ import annotations

import math

import numpy as np

from .bkz import SIEVE_OUTPUT, CostModel, log_delta
from .lwe import LWE
from .search import minimise

C_MUL = 32 ** 2
C_ADD = 5 * 32


def _entropy_bits(sd: float) -> float:
    return (0.5 + math.log(math.sqrt(2 * math.pi) * sd) + math.log(1 / math.tanh(math.pi ** 2 * sd ** 2))) / math.log(2)


def _cost(params: LWE, cost: CostModel, beta, p, k_enum, k_fft):
    """log2 cost for broadcast arrays of (beta, p, k_enum, k_fft)."""
    n, ln_q = params.n, params.ln_q
    s_s, s_e = params.secret.stddev, params.noise.stddev
    m = float(n if params.samples is None else min(params.samples, n))
    k_lat = n - k_fft - k_enum
    ld = log_delta(beta)
    dim = m + k_lat
    ln_ell = ((m / dim) * math.log(s_e) + (k_lat / dim) * (math.log(s_s) + ln_q) + 0.5 * math.log(4 / 3)
              + 0.5 * np.log(beta / (2 * math.pi * math.e)) + (dim - beta) * ld)
    x = 4 * math.pi ** 2 * np.exp(np.minimum(2 * (ln_ell - ln_q), 700))
    h = _entropy_bits(s_s)
    ln_n = x + (k_fft / 3) * (s_s * math.pi / p) ** 2 + np.log(np.maximum(k_enum * h + k_fft * np.log(p) + math.log(2), 1e-9))
    log2_n = ln_n / math.log(2)
    # One BKZ-beta plus one sieve in dimension beta per 2^(0.2075 beta) vectors.
    a, b = cost._sieve
    c = 1 / (1 - 2 ** -a)
    per_round = np.logaddexp2(cost.bkz(beta, dim), math.log2(c) + a * beta + b)
    rounds = np.log2(np.maximum(np.ceil(np.exp2(np.minimum(log2_n - SIEVE_OUTPUT * beta, 1000))), 1))
    sample = per_round + rounds
    alpha = math.pi ** 2 * s_s ** 2
    ta = math.exp(8 * alpha * math.exp(-2 * alpha) * math.tanh(alpha))
    coeff = 1 / (1 - math.exp(-1 / (2 * s_s ** 2)))
    fft_table = np.logaddexp2(math.log2(C_MUL) + np.log2(np.maximum(k_fft, 1e-300)) + (k_fft + 1) * np.log2(p),
                              math.log2(4 * C_ADD) + log2_n)
    guess = math.log2(coeff) + k_enum * (math.log2(2 * ta / math.sqrt(math.e)) + h) + fft_table
    total = np.logaddexp2(sample, guess)
    ok = (k_lat >= 1) & (beta <= dim) & (x < 700)
    return np.where(ok, total, np.inf), np.broadcast_to(dim, np.shape(total))


def dual_matzov(params: LWE, cost: CostModel, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log2 cost and lattice dimension: finite only at the best beta (with its best p, k_enum, k_fft)."""
    n = params.n
    lo, hi = float(betas[0]), float(betas[-1])
    bits, (beta, _, _, _), d = minimise(
        lambda b, p, ke, kf: _cost(params, cost, b, p, ke, kf),
        [(lo, hi, 8, 1), (2, 6, 1, 1), (0, min(n - 1, 300), 20, 10), (0, min(n - 1, 400), 20, 10)])
    out = np.where(betas == beta, bits, np.inf)
    return out, np.full(betas.shape, d)
