"""The table printed at the end of a run: one row per scheme/params/op, one
column per library, so libraries read side by side."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from .tables import fmt_time, latest


def _cell(r: dict) -> str:
    if r["status"] == "unsupported":
        return "[dim]unsupported[/]"
    if r["status"] != "ok":
        return f"[red]{r['status']}[/]"
    if "depth" in r:
        return f"depth {r['depth']}"
    lo, hi = r["ci95_ns"]
    half = (hi - lo) / 2 / r["median_ns"] * 100 if r["median_ns"] else 0.0
    extra = []
    if r.get("noise_budget_bits") is not None:
        extra.append(f"{r['noise_budget_bits']:g}b")
    if r.get("precision_bits") is not None:
        extra.append(f"{r['precision_bits']:.0f}b prec")
    mark = (" [yellow]†[/]" if r.get("insecure") else "") + (" [yellow]≠[/]" if r.get("params_match") is False else "")
    return f"{fmt_time(r['median_ns'])} ±{half:.0f}%" + (f" ({', '.join(extra)})" if extra else "") + mark


def print_results(recs: list[dict], console: Console) -> None:
    recs = latest(recs)
    libs = sorted({r["library"] for r in recs})
    t = RichTable(title="fhemark: median ±95% CI half-width (noise budget bits | CKKS precision bits); "
                        "every result decrypted and checked", title_justify="left")
    for col in ("scheme", "params", "op"):
        t.add_column(col)
    for lib in libs:
        t.add_column(lib, justify="right")
    rows: dict[tuple, dict[str, dict]] = {}
    for r in recs:
        p = r["params"]
        rows.setdefault((r["scheme"].upper(), p.get("name") or f"N={p['N']}", r["op"]), {})[r["library"]] = r
    for (scheme, params, op), by_lib in rows.items():
        t.add_row(scheme, params, op, *[_cell(by_lib[lib]) if lib in by_lib else "" for lib in libs])
    console.print(t)
    marks = {"†": any(r.get("insecure") for r in recs), "≠": any(r.get("params_match") is False for r in recs)}
    if marks["†"]:
        console.print("† below the suite's security level (run with --allow-insecure)")
    if marks["≠"]:
        console.print("≠ the library used different parameters than asked (see params_mismatch in the export)")
