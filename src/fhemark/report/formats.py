"""How numbers read in every table: times, rates, sizes, intervals, and the order operations are
listed in."""

from __future__ import annotations

from ..model.catalog import CATALOG
from ..store.record import Record


def fmt_time(ns: float | None) -> str:
    if ns is None:
        return "-"
    ns = float(f"{ns:.3g}")  # rounded before the unit is chosen: 999.5 us is 1 ms, not "1e+03 us"
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


def fmt_rate(per_s: float | None) -> str:
    """Evaluations a second, to three figures."""
    if per_s is None:
        return "-"
    per_s = float(f"{per_s:.3g}")  # rounded before the unit is chosen, as fmt_time
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if per_s >= div:
            return f"{per_s / div:.3g}{unit}/s"
    return f"{per_s:.3g}/s"


def throughput_text(r: Record) -> str:
    """'802/s [787/s, 830/s] k=2': the rate at saturation, its interval and the k that gave it."""
    ci = r.throughput_ci95
    spread = f" [{fmt_rate(ci[0])}, {fmt_rate(ci[1])}]" if ci else ""
    return f"{fmt_rate(r.throughput_per_s)}{spread} k={r.batch}"


def ci_text(rec: Record) -> str:
    ci = rec.ci95_ns
    if not ci:
        return f"n = {len(rec.samples_ns)}, no CI"
    return f"{fmt_time(ci[0])}, {fmt_time(ci[1])}"


def fmt_bytes(n: int | None) -> str:
    return "-" if not n else f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


# Operations in the order a computation runs them: keys, encode, encrypt, arithmetic, key
# switching (and what rides on it), decrypt, decode; then depth probes, pipelines, the rest.
_KEY_SWITCHING = ("mul_relin", "square_relin", "relinearize", "rescale", "mod_switch", "key_switch", "rotate",
                  "conjugate", "bootstrap")


def op_order(op: str) -> tuple[int, int, str]:
    base = op.split("/")[0].removesuffix("_into")
    stage = (0 if base.startswith("keygen") else 1 if base.startswith("encode") else 2 if base.startswith("encrypt")
             else 5 if base.startswith("decrypt") else 6 if base.startswith("decode")
             else 4 if base.startswith(_KEY_SWITCHING)
             else 3 if base in CATALOG and not base.startswith(("depth", "pipeline")) else 7)
    order = list(CATALOG)
    return stage, order.index(base) if base in order else len(order), op
