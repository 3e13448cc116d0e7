"""A lattice security estimator for LWE, RLWE and GLWE sets, written from the attack models the
lattice estimator (Albrecht et al.) implements: primal uSVP and dual, with the secret rescaled
against the error, under a stated BKZ cost model (`bkz.MODELS`). Held to published figures in
tests/test_estimator.py and data/published-estimates.tsv."""

from .bkz import MODELS
from .estimate import Attack, Result, estimate
from .lwe import (LWE, Noise, Secret, binary, gaussian, gaussian_secret, parse_secret, rlwe, sparse, ternary, tuniform,
                  uniform_noise)

__all__ = ["MODELS", "Attack", "Result", "estimate", "LWE", "Noise", "Secret", "binary", "gaussian", "gaussian_secret",
           "parse_secret", "rlwe", "sparse", "ternary", "tuniform", "uniform_noise"]
