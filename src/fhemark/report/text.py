"""The table printed at the end of a run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from .tables import fmt_time, latest


def print_results(recs: list[dict], console: Console) -> None:
    t = RichTable(title="fhemark results (median, 95% CI of the median)", show_lines=False)
    for col in ("library", "scheme", "N", "op", "median", "95% CI", "n×iters", "noise/prec bits", "check", "status"):
        t.add_column(col, justify="right" if col in ("N", "median", "95% CI", "n×iters", "noise/prec bits") else "left")
    for r in latest(recs):
        ok = r["status"] == "ok" and r.get("ci95_ns") is not None
        if "depth" in r and r["status"] == "ok":
            t.add_row(r["library"], r["scheme"].upper(), str(r["params"]["N"]), r["op"], f"depth {r['depth']}",
                      "-", "-", "-", "pass", f"[green]ok[/] {r.get('depth_limit') or ''}"[:90])
            continue
        nb = r.get("noise_budget_bits")
        pb = r.get("precision_bits")
        t.add_row(
            r["library"], r["scheme"].upper(), str(r["params"]["N"]), r["op"],
            fmt_time(r["median_ns"]) if ok else "-",
            f"{fmt_time(r['ci95_ns'][0])} – {fmt_time(r['ci95_ns'][1])}" if ok else "-",
            f"{len(r['samples_ns'])}×{r.get('iters', 1)}" if ok else "-",
            f"{nb:g}" if nb is not None else (f"{pb:.1f}" if pb is not None else "-"),
            "pass" if r.get("check_passed") else ("FAIL" if r.get("check_passed") is False else "-"),
            ("[green]ok[/]" if ok else f"[red]{r['status']}[/]: {r.get('error') or ''}"[:90])
            + (" [yellow]insecure[/]" if r.get("insecure") else ""))
    console.print(t)
