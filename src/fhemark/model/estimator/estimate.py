"""The estimate of one LWE set: every attack at its best block size, under one cost model, and the
cheapest of them.

Attacks covered: primal uSVP, dual, and under the `matzov` model also the two hybrids of the
MATZOV-era lattice estimator: dual-hybrid (FFT over guessed binary/ternary coordinates; for sparse
secrets, guessing zeros only) and MATZOV's dual (enumeration + FFT mod p), each with the secret
rescaled against the error. Not covered: primal BDD and primal-hybrid, MITM variants, a sparse guess
holding some nonzeros (h1 > 0), BKW, algebraic attacks. Those can matter for sparse secrets and for
small-dimension sets with binary or ternary secrets (TFHE's LWE sets); the result says so in
`upper_bound`, and its figure must then be read as "at most this many bits".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .bkz import CostModel, model
from .dual import dual
from .hybrid import dual_hybrid
from .lwe import LWE
from .matzov import dual_matzov
from .primal import MAX_BETA, usvp

ATTACKS = {"usvp": usvp, "dual": dual, "dual-hybrid": dual_hybrid, "dual-matzov": dual_matzov}
# The hybrids belong to the MATZOV-era estimator; `hestd2018` reproduces the 2018 tooling (its cost
# model and its attacks: uSVP and the scaled dual), `core-svp` the literature's primal/dual figures.
HYBRIDS = {"matzov": ("dual-hybrid", "dual-matzov"), "hestd2018": (), "core-svp": ()}

# Where the attacks not modelled here (primal BDD/hybrid, sparse guesses with nonzeros) can be
# cheaper: a sparse secret, or a small binary/ternary LWE secret of the size TFHE uses.
SMALL_N = 2048
SPARSE_FRACTION = 0.25


@dataclass(frozen=True)
class Attack:
    name: str
    beta: int
    d: int
    bits: float          # log2 of the classical cost
    quantum_bits: float  # log2 of the cost under the model's quantum variant, or the classical one if cheaper


@dataclass(frozen=True)
class Result:
    params: LWE
    model: str
    attacks: tuple[Attack, ...]
    upper_bound: str = ""  # why the figure may overstate security, when it may

    @property
    def best(self) -> Attack:
        return min(self.attacks, key=lambda a: a.bits)

    @property
    def bits(self) -> float:
        return self.best.bits

    @property
    def quantum_bits(self) -> float:
        return min(a.quantum_bits for a in self.attacks)


def _upper_bound(params: LWE) -> str:
    s = params.secret
    if s.kind == "sparse" and s.weight is not None and s.weight < SPARSE_FRACTION * params.n:
        return (f"sparse secret (h={s.weight}): hybrids that guess some of its nonzero coordinates are not modelled, "
                "the figure is an upper bound")
    if params.n <= SMALL_N and s.kind in ("binary", "ternary"):
        return (f"n={params.n} with a {s.kind} secret: primal BDD and primal-hybrid attacks are not modelled; they may be "
                "cheaper (for TFHE-rs's sets the lattice estimator finds them not to be), the figure is an upper bound")
    return ""


def _best(params: LWE, name: str, cost: CostModel, quantum: CostModel, betas: np.ndarray) -> Attack | None:
    attack = ATTACKS[name]
    bits, d = attack(params, cost, betas)
    if not np.isfinite(bits).any():
        return None
    i = int(np.argmin(bits))
    # uSVP's beta and d do not depend on the cost model; the dual's trade-off does, so it is re-optimised.
    if attack is usvp:
        qbits = float(quantum.bkz(betas[i:i + 1], d[i:i + 1])[0])
    else:
        qbits = float(attack(params, quantum, betas)[0].min())
    # A quantum attacker may run the classical algorithm: the quantum sieve's larger constant loses at small beta.
    return Attack(name, int(betas[i]), int(d[i]), float(bits[i]), min(qbits, float(bits[i])))


@lru_cache(maxsize=512)
def estimate(params: LWE, cost_model: str = "matzov") -> Result:
    """Every attack's cheapest cost on `params` (cached: the same set is judged many times)."""
    if params.n < 1 or params.log_q <= 0 or params.noise.stddev <= 0 or params.secret.stddev <= 0:
        raise ValueError(f"not an LWE set: {params.describe()}")
    if math.log2(params.noise.stddev) >= params.log_q - 1:
        raise ValueError(f"the error (sd {params.noise.stddev:g}) fills the modulus 2^{params.log_q:g}: nothing to estimate")
    classical, quantum = model(cost_model), model(cost_model, quantum=True)
    top = MAX_BETA if params.samples is None else min(MAX_BETA, params.n + params.samples + 1)
    betas = np.arange(40, max(top, 41) + 1, dtype=float)
    found = [a for a in (_best(params, name, classical, quantum, betas) for name in ("usvp", "dual")) if a is not None]
    plain = next((a for a in found if a.name == "dual"), None)
    if plain is not None:
        # Guessing lowers the block size the dual needs, never raises it: search below the plain dual's.
        window = betas[(betas >= plain.beta - 200) & (betas <= plain.beta + 8)]
        for name in HYBRIDS[cost_model]:
            hybrid = _best(params, name, classical, quantum, window)
            if hybrid is not None:
                found.append(hybrid)
    if not found:
        # Not even BKZ with the largest block size succeeds: beyond 2^512 in every model.
        found = [Attack("none", MAX_BETA, params.n, math.inf, math.inf)]
    return Result(params, cost_model, tuple(found), _upper_bound(params))
