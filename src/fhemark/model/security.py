"""Security estimates of RLWE parameter sets from the published tables.

Both tables of `data/he-security-tables.tsv` are consulted for every set; the
suite names the one that decides (hestd2018 by default: it is the table SEAL
and OpenFHE enforce). Levels between table rows are not interpolated: a set
meets level L when its log QP is at most the table's bound for N and L. Below
128 bits the estimate is a rough linear extrapolation (security grows about
linearly with N / log QP), marked as such.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..errors import UserError

TABLES = ("hestd2018", "guidelines2024")
LEVELS = (128, 192, 256)


@dataclass(frozen=True)
class Estimate:
    table: str
    bits: int          # a table level met (128/192/256), or a rough estimate below 128
    below_table: bool  # True when no level of the table is met: `bits` is extrapolated
    bound_128: int     # the table's largest log QP at 128 bits for this N

    def describe(self) -> str:
        return f"~{self.bits} (below 128, extrapolated)" if self.below_table else f">= {self.bits}"


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


def estimate(n: int, log_qp: float, table: str) -> Estimate:
    try:
        bounds = _tables()[table][n]
    except KeyError:
        if table not in _tables():
            raise UserError(f"security.table: unknown table '{table}'", f"use one of {', '.join(TABLES)}")
        raise UserError(f"params.N: the {table} table has no row for N={n}", "use N between 1024 and 131072")
    met = [lvl for lvl, bound in bounds.items() if log_qp <= bound]
    if met:
        return Estimate(table, max(met), False, bounds[128])
    return Estimate(table, int(128 * bounds[128] / log_qp), True, bounds[128])


def bound(n: int, table: str, level: int) -> int:
    """The largest log QP the table allows at `level` bits for ring size n (0: the level is not in its row)."""
    return _tables()[table][n].get(level, 0)


def estimates(n: int, log_qp: float) -> dict[str, Estimate]:
    return {t: estimate(n, log_qp, t) for t in TABLES}
