"""Security estimates of RLWE parameter sets from the published tables, and beside them the
lattice estimator's figure (`model.estimator`) for the same set.

Both tables of `data/he-security-tables.tsv` are consulted for every set; the
suite names the one that decides (hestd2018 by default: it is the table SEAL
and OpenFHE enforce). Levels between table rows are not interpolated: a set
meets level L when its log QP is at most the table's bound for N and L. Below
128 bits the table's figure is a rough linear extrapolation (security grows about
linearly with N / log QP), marked as such.

`estimate(..., with_estimator=True)` adds the estimator's figure under the table's
own model (`table_model`). `judge` decides a set the tables cannot (a sparse,
binary or Gaussian secret, another error width, a plain LWE set, an N with no
row, a set below 128 bits) by the estimator's figure, and says so.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from ..errors import UserError
from . import estimator as lattice

TABLES = ("hestd2018", "guidelines2024")
LEVELS = (128, 192, 256)

# The error width both tables assume (8 / sqrt(2 pi)); a set with another width is judged by the estimate.
TABLE_SIGMA = 3.19


def table_model(table: str, n: int) -> str:
    """The estimator's cost model (and attacks) that reproduce `table`'s row for N: the 2018 standard's
    own tooling up to N = 32768, where its tables stop; the MATZOV model for the guidelines of 2024
    and for the rows above 32768 (OpenFHE's additions, equal to the 2024 ones)."""
    return "hestd2018" if table == "hestd2018" and n <= 32768 else "matzov"


@dataclass(frozen=True)
class Estimate:
    table: str
    bits: int          # a table level met (128/192/256), or a rough estimate below 128
    below_table: bool  # True when no level of the table is met: `bits` is extrapolated
    bound_128: int     # the table's largest log QP at 128 bits for this N (0: judged without a table row)
    estimated_bits: float | None = None  # the lattice estimator's classical figure for the same set, when asked
    attack: str = ""                     # the attack that decides it, e.g. "usvp, beta=318"
    judged_by: str = "table"             # "table", or "estimate" where the tables cannot judge the set
    note: str = ""                       # why the estimate decides, or why its figure is an upper bound

    def describe(self) -> str:
        if self.judged_by == "estimate":
            return f"~{self.estimated_bits:.1f} (estimated: {self.attack}; {self.note})"
        text = f"~{self.bits} (below 128, extrapolated)" if self.below_table else f">= {self.bits}"
        if self.estimated_bits is not None:
            text += f" (estimated {self.estimated_bits:.1f}: {self.attack})"
        return text


@lru_cache(maxsize=1)
def _tables() -> dict[str, dict[int, dict[int, int]]]:
    text = resources.files("fhemark").joinpath("data/he-security-tables.tsv").read_text()
    rows = csv.reader((line for line in text.splitlines() if line and not line.startswith("#")), delimiter="\t")
    header = next(rows)
    out: dict[str, dict[int, dict[int, int]]] = {}
    for row in rows:
        rec = dict(zip(header, row))
        levels = {lvl: int(rec[f"{lvl}_classical"]) for lvl in LEVELS if rec[f"{lvl}_classical"] != "-"}
        out.setdefault(rec["table"], {})[int(rec["N"])] = levels
    return out


def estimate(n: int, log_qp: float, table: str, with_estimator: bool = False) -> Estimate:
    """The table's verdict on a ternary-secret RLWE set; with `with_estimator`, the estimator's figure
    for the same set (under `table_model`) beside it."""
    try:
        bounds = _tables()[table][n]
    except KeyError:
        if table not in _tables():
            raise UserError(f"security.table: unknown table '{table}'", f"use one of {', '.join(TABLES)}")
        raise UserError(f"params.N: the {table} table has no row for N={n}", "use N between 1024 and 131072")
    met = [lvl for lvl, bound in bounds.items() if log_qp <= bound]
    if met:
        out = Estimate(table, max(met), False, bounds[128])
    else:
        out = Estimate(table, int(128 * bounds[128] / log_qp), True, bounds[128])
    if not with_estimator:
        return out
    result = lattice.estimate(lattice.rlwe(n, log_qp, lattice.ternary(), TABLE_SIGMA), table_model(table, n))
    return replace(out, estimated_bits=round(result.bits, 1), attack=_attack(result), note=result.upper_bound)


def _attack(result: lattice.Result) -> str:
    return f"{result.best.name}, beta={result.best.beta}, {result.model} model"


@lru_cache(maxsize=None)
def bound(n: int, table: str, level: int) -> int:
    """The largest log QP the table allows at `level` bits for ring size n (0: the level is not in its row).
    A level between or below its rows (160, 100) has no row: the largest log QP whose estimate, under the
    table's own model, meets it, as `at_level` judges a set there (a dozen estimates, once per ring)."""
    if level in LEVELS:
        return _tables()[table][n].get(level, 0)

    def meets(log_qp: int) -> bool:
        result = lattice.estimate(lattice.rlwe(n, log_qp, lattice.ternary(), TABLE_SIGMA), table_model(table, n))
        return round(result.bits, 1) >= level

    lo, hi = 0, 2 * _tables()[table][n][128] * 128 // level  # security falls about as 1 / log QP: hi fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


def estimates(n: int, log_qp: float, with_estimator: bool = False) -> dict[str, Estimate]:
    return {t: estimate(n, log_qp, t, with_estimator) for t in TABLES}


LEVEL_SLACK = 0.5  # bits


def judge(params: lattice.LWE, table: str = "hestd2018") -> Estimate:
    """The verdict on any LWE/RLWE/GLWE set: the table's, with the estimate beside it, where the table
    has the set (a ternary-secret RLWE set with the table's error width, its N in the table, at least
    128 bits); otherwise the estimate's, saying why (below a row: under the table's model; elsewhere:
    MATZOV, all attacks). `bits` is then the
    highest level the estimate meets, or the estimate itself below 128, so that a `--security BITS`
    check reads it like a table's figure."""
    if table not in TABLES:
        raise UserError(f"security.table: unknown table '{table}'", f"use one of {', '.join(TABLES)}")
    is_ring = params.samples == params.n
    table_error = params.noise.kind == "gaussian" and abs(params.noise.stddev - TABLE_SIGMA) < 0.05
    in_table = is_ring and params.secret.kind == "ternary" and table_error and params.n in _tables()[table]
    why = ""
    if not in_table:
        why = ("plain LWE" if not is_ring else
               f"{params.secret.describe()} secret" if params.secret.kind != "ternary" else
               f"error {params.noise.describe()}" if not table_error else f"N={params.n}")
        why += f": not in the {table} table"
    else:
        tab = estimate(params.n, params.log_q, table, with_estimator=True)
        if not tab.below_table:
            return tab
        why = f"below the {table} table's 128-bit row"
    try:
        # Below a row, the table's own model continues it; elsewhere the estimator's current default decides.
        result = lattice.estimate(params, table_model(table, params.n) if in_table else "matzov")
    except ValueError as exc:
        raise UserError(f"security: {exc}", "check the modulus size and the error width") from None
    # A figure that rounds to a level meets it: Concrete's sets are fitted to exactly 128 bits by the
    # same model (127.9 here), and the estimator is no closer than that to the published figures.
    met = [lvl for lvl in LEVELS if result.bits >= lvl - LEVEL_SLACK]
    note = f"judged by the estimate ({why})" + (f"; {result.upper_bound}" if result.upper_bound else "")
    bound_128 = _tables()[table][params.n][128] if in_table else 0
    return Estimate(table, max(met) if met else int(result.bits), not met, bound_128, round(result.bits, 1),
                    _attack(result), "estimate", note)


def at_level(est: Estimate, min_bits: int) -> Estimate:
    """A verdict read against `--security min_bits`: a table's figure says only which of its rows a set
    meets, so a level between its rows (160) is placed by the estimate, saying so."""
    if est.judged_by != "table" or min_bits in LEVELS or est.estimated_bits is None:
        return est
    return replace(est, bits=int(est.estimated_bits), below_table=est.estimated_bits < 128, judged_by="estimate",
                   note=f"judged by the estimate ({min_bits} bits lies between the {est.table} table's levels)")


def deciding(verdicts: dict[str, Estimate], table: str, min_bits: int) -> tuple[str, Estimate | None]:
    """The verdict a built set is held to, by the run's gate and in its record alike: the suite's
    table's (the estimate's where the table cannot judge the set or the level), else the library's own
    word where nothing else judges it (a driver that reports no dimensions); None when nothing does."""
    name = table if table in verdicts else "library"
    est = verdicts.get(name)
    return name, at_level(est, min_bits) if est is not None else None


def ring_secret(facts: dict, n: int) -> lattice.Secret:
    """The secret a ring set states (`secret`, and `hamming_weight` where it is sparse), as a parameter
    set asks for it or a driver reports what it built; a library's own spelling of uniform ternary
    (OpenFHE's UNIFORM_TERNARY) is the tables' ternary."""
    if "sparse" in str(facts.get("secret") or "").lower():
        return lattice.sparse(int(facts["hamming_weight"]), n)
    return lattice.ternary()


def bit_scheme_sets(facts: dict) -> list[lattice.LWE]:
    """The LWE problems a TFHE-family setup rests on, as its driver states them (`lwe_problems`,
    drivers/protocol.py LweProblem); empty where it states none."""
    def secret(p: dict) -> lattice.Secret:
        return lattice.gaussian_secret(p["secret_std"]) if p["secret"] == "gaussian" else \
            lattice.binary() if p["secret"] == "binary" else lattice.ternary()
    return [lattice.LWE(p["n"], p["log_q"], secret(p), lattice.gaussian(p["noise_std"]) if p.get("noise_std") is not None
                        else lattice.tuniform(p["noise_bound_log2"]), p.get("samples"), p["name"])
            for p in facts.get("lwe_problems") or []]


def judge_weakest(sets: list[lattice.LWE], table: str = "hestd2018") -> Estimate | None:
    """The verdict on a scheme that rests on several problems: the weakest one's, naming it."""
    if not sets:
        return None
    judged = [(judge(s, table), s) for s in sets]
    est, weakest = min(judged, key=lambda pair: (pair[0].estimated_bits or math.inf, pair[0].bits))
    return replace(est, note=f"weakest of {len(sets)}: {weakest.name}; {est.note}" if est.note else
                   f"weakest of {len(sets)}: {weakest.name}")
