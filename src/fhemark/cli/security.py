"""`fhemark security`: the estimated security of a parameter set the user types, attack by attack."""

from __future__ import annotations

import math
from typing import Optional

import typer
from rich.table import Table

from ..errors import UserError
from ..model import security as tables
from ..model.estimator import LWE, MODELS, estimate, gaussian, parse_secret, uniform_noise
from ..model.estimator.lwe import SECRETS
from .application import app, console


def _params(n: int, log_q: float, secret: str, sigma: Optional[float], noise_std: Optional[float], lwe: bool,
            samples: Optional[int]) -> LWE:
    if n < 2:
        raise UserError(f"--n {n}: the dimension must be at least 2",
                        "give the ring dimension N (or the LWE dimension with --lwe)")
    if not 0 < log_q <= 100_000:
        raise UserError(f"--log-q {log_q:g}: not a modulus size",
                        "give log2 of the modulus (log QP for a key-switching set), e.g. 881")
    if sigma is not None and noise_std is not None:
        raise UserError("--sigma and --noise-std both given",
                        "use --sigma for a Gaussian error, --noise-std for a bounded uniform error's standard deviation")
    if samples is not None and samples < 1:
        raise UserError(f"--samples {samples}: must be at least 1", "leave it out for unlimited (LWE) or n (RLWE) samples")
    width = noise_std if noise_std is not None else sigma if sigma is not None else 3.19
    if not width > 0 or not math.isfinite(width):
        raise UserError(f"error width {width:g}: must be a positive number", "e.g. --sigma 3.19")
    try:
        sec = parse_secret(secret, n)
    except ValueError:
        raise UserError(f"--secret {secret}: unknown secret distribution",
                        f"use one of {', '.join(SECRETS)}, with 0 < H <= n and SIGMA > 0") from None
    if math.log2(width) >= log_q - 1:
        raise UserError(f"error width {width:g} fills the modulus 2^{log_q:g}",
                        "give the error's width in integers, not relative to q")
    noise = uniform_noise(width) if noise_std is not None else gaussian(width)
    if lwe:
        return LWE(n, log_q, sec, noise, samples)
    return LWE(n, log_q, sec, noise, samples if samples is not None else n)


@app.command("security")
def security(n: int = typer.Option(..., "--n", help="ring dimension N (RLWE; k*N for GLWE) or LWE dimension with --lwe"),
             log_q: float = typer.Option(..., "--log-q", help="log2 of the modulus (log QP with key switching)"),
             secret: str = typer.Option("ternary", help=f"secret distribution: {', '.join(SECRETS)}"),
             sigma: Optional[float] = typer.Option(None, help="Gaussian error standard deviation (default 3.19)"),
             noise_std: Optional[float] = typer.Option(None, "--noise-std",
                                                       help="standard deviation of a bounded uniform / TUniform error"),
             lwe: bool = typer.Option(False, "--lwe", help="plain LWE (unlimited samples) instead of RLWE (n samples)"),
             samples: Optional[int] = typer.Option(None, help="samples the attacker gets (default: n; LWE: unlimited)"),
             model: str = typer.Option("matzov", help=f"BKZ cost model: {', '.join(MODELS)}"),
             level: int = typer.Option(128, help="the security level to judge against")) -> None:
    """Estimate the security of a parameter set: each attack's block size and cost, and the verdict."""
    if model not in MODELS:
        raise UserError(f"--model {model}: unknown cost model", f"use one of {', '.join(MODELS)}")
    params = _params(n, log_q, secret, sigma, noise_std, lwe, samples)
    result = estimate(params, model)
    console.print(params.describe(), markup=False, highlight=False)
    table = Table(title=f"attacks ({model} cost model)", title_justify="left")
    for col in ("attack", "beta", "d", "bits classical", "bits quantum"):
        table.add_column(col, justify="left" if col == "attack" else "right")
    for a in sorted(result.attacks, key=lambda a: a.bits):
        table.add_row(a.name, str(a.beta), str(a.d), f"{a.bits:.1f}", f"{a.quantum_bits:.1f}")
    console.print(table)
    best = result.best
    verdict = "meets" if result.bits >= level else "falls short of"
    console.print(f"estimated security: {result.bits:.1f} bits classical, {result.quantum_bits:.1f} quantum "
                  f"(best attack {best.name}, beta={best.beta}); {verdict} {level}", markup=False, highlight=False)
    if result.upper_bound:
        console.print(f"note: {result.upper_bound}", markup=False, highlight=False)
    judged = tables.judge(params)
    if judged.judged_by == "table":
        for name, est in tables.estimates(n, log_q).items():
            console.print(f"table {name}: {est.describe()}", markup=False, highlight=False)
    else:
        console.print(f"tables: {judged.note.split('; ')[0]}", markup=False, highlight=False)
