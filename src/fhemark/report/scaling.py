"""Thread scaling, from stored records only: where a suite swept `threads` (e.g. [1, 2, max]), each
library's speed-up over its own 1-thread median, the efficiency (speed-up / threads) and the
parallelism it really used (CPU time / wall time in the timed regions), marked where the library
ignores the setting or uses more threads than asked. A table (in the report and on the study page)
and, per operation, a figure of speed-up against threads with the ideal y = x."""

from __future__ import annotations

from ..analyse.select import latest
from ..model.catalog import CATALOG
from ..store.record import Record
from .formats import fmt_bytes, fmt_rate, fmt_time, throughput_text
from .tables import DEVIATION_MARK, Deviations, Table, cell, params_name
from .text import OVER_FACTOR, SERIAL_BELOW, parallelism_mark

TITLE = "Thread scaling: speed-up against the thread count"
INTRO = ("Speed-up = the library's median at 1 thread / its median at t threads (the line per library), with the "
         "quotient of the two medians' 95% intervals as error bars; dashed: ideal (speed-up = threads). "
         "Hover for the numbers, click a legend entry to hide a line, drag to zoom.")

Case = tuple[str, str, str, str, int | None]  # library, scheme, params, op, vector length


def _op(op: str, length: int | None) -> str:
    return op + (f" / {length} values" if length else "")


def _counted(r: Record) -> bool:
    """Checked and ok, with a median: a failed or unchecked result says nothing about scaling."""
    return (r.status == "ok" and r.check_passed is not False and bool(r.median_ns)
            and r.depth is None and r.mode != "throughput")  # one of k at once: throughput_table


def cases(recs: list[Record]) -> dict[Case, dict[int, Record]]:
    """Per case, its record at each thread count (the newest where several runs measured one), for every
    (scheme, params, op, vector length) where some library was measured at two or more thread counts:
    the other libraries' records of such a setup come along, so one without a 1-thread record shows."""
    out: dict[Case, dict[int, Record]] = {}
    for r in sorted((r for r in latest(recs) if _counted(r)), key=lambda r: r.timestamp or 0):
        key = (r.library, r.scheme, params_name(r), r.op, r.vector_length)
        out.setdefault(key, {})[int(r.threads or 1)] = r
    swept = {k[1:] for k, by_t in out.items() if len(by_t) > 1}
    order = list(CATALOG)

    def sort_key(item: tuple[Case, dict[int, Record]]) -> tuple:
        (lib, scheme, params, op, length), by_t = item
        n = next(iter(by_t.values())).params.get("N") or 0
        return (scheme, n, params, order.index(op) if op in order else len(order), op, length or 0, lib)
    return dict(sorted(((k, v) for k, v in out.items() if k[1:] in swept), key=sort_key))


def speedup(base: Record | None, r: Record) -> tuple[float | None, tuple[float, float] | None]:
    """Median at 1 thread / median at t, and the quotient of the two 95% intervals (different driver
    processes, not interleaved: an unpaired interval)."""
    if base is None:
        return None, None
    a, b = base.ci95_ns, r.ci95_ns
    ci = (a[0] / b[1], a[1] / b[0]) if a and b and b[0] > 0 and b[1] > 0 else None
    return base.median_ns / r.median_ns, ci


def note(r: Record, threads: int, base: Record | None) -> str:
    """What the thread count really did: ignored, about one core, more than asked; no 1-thread record."""
    notes = []
    par = r.parallelism
    mark = parallelism_mark(r, threads)
    if threads > 1 and r.threads_honoured is False:
        notes.append("1c ignores the setting: the library has no threads"
                     + (f" (parallelism {par:.2f})" if par is not None else ""))
    elif mark == "1c":
        notes.append(f"1c runs on about one core (parallelism {par:.2f} < {SERIAL_BELOW})")
    if mark == ">t":
        notes.append(f">t uses more than asked (parallelism {par:.2f} > {threads} x {OVER_FACTOR})")
    used = r.threads_used
    if used is not None and used != threads and r.threads_honoured is not False:
        notes.append(f"the driver reports {used} thread(s)")
    if base is None:
        notes.append("no 1-thread record: no speed-up")
    return "; ".join(notes)


def table(recs: list[Record]) -> Table | None:
    """A row per case and thread count; None unless some case was measured at two or more counts."""
    found = cases(recs)
    if not found:
        return None
    rows, devs, without = [], Deviations(), set()
    for (lib, scheme, params, op, length), by_t in found.items():
        base = by_t.get(1)
        if base is None:
            without.add(lib)
        for t in sorted(by_t):
            r = by_t[t]
            s, ci = speedup(base, r)
            if s is None:
                up = eff = "-"
            elif r is base:
                up, eff = "1 (baseline)", "1.00"
            else:
                up = f"{s:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else " (no CI)")
                eff = f"{s / t:.2f}"
            par = r.parallelism
            rows.append([lib, scheme.upper(), params, _op(op, length), str(t), cell(r, devs), up, eff,
                         "-" if par is None else f"{par:.2f}", note(r, t, base)])
    return Table(TITLE, ["library", "scheme", "params", "op", "threads", "median [95% CI]", "speed-up [95% CI]",
                         "efficiency", "parallelism", "note"], rows,
                 "threads: as the suite asked; speed-up: median at 1 thread / median at t, interval the quotient of "
                 "the two medians' 95% intervals; efficiency: speed-up / t; parallelism: CPU time / wall time in the "
                 f"timed regions; 1c: the library ignores the setting (no threads) or ran on about one core (parallelism "
                 f"below {SERIAL_BELOW} at 2+ threads); >t: it used more than asked (above t x {OVER_FACTOR}); only "
                 "checked, ok results count" + (f"; no 1-thread record, so no speed-up: {', '.join(sorted(without))}"
                                                if without else "")
                 + f"; {DEVIATION_MARK} the library times different work (footnote)", devs.lines())


THROUGHPUT_TITLE = "Throughput at saturation: evaluations a second with k at once"


def throughput_table(recs: list[Record]) -> Table | None:
    """A row per throughput record: the rate at the best k beside the rate one at a time (k = 1) and
    the latency alone (the same case's latency record, where the run has one)."""
    done = [r for r in latest(recs) if r.mode == "throughput" and r.status == "ok"]
    if not done:
        return None
    alone = {(r.library, r.scheme, params_name(r), r.op, r.vector_length, r.threads): r
             for r in latest(recs) if _counted(r)}
    rows = []
    for r in sorted(done, key=lambda r: (r.scheme, r.params.get("N") or 0, r.op, r.library)):
        one = next((b for b in r.throughput_by_batch if b["batch"] == 1), None)
        gain = r.throughput_per_s / one["throughput_per_s"] if one else None
        lat = alone.get((r.library, r.scheme, params_name(r), r.op, r.vector_length, r.threads))
        par = r.throughput_parallelism
        rows.append([r.library, r.scheme.upper(), params_name(r), _op(r.op, r.vector_length),
                     str(r.threads or 1), throughput_text(r), fmt_rate(one["throughput_per_s"]) if one else "-",
                     "-" if gain is None else f"{gain:.2f}x", "-" if par is None else f"{par:.2f}",
                     f"{fmt_time(r.median_ns)}" + (f" (alone {fmt_time(lat.median_ns)})" if lat else ""),
                     fmt_bytes(r.throughput_peak_rss_bytes)])
    cores = {r.throughput_cores for r in done}
    return Table(THROUGHPUT_TITLE, ["library", "scheme", "params", "op", "threads each", "throughput [95% CI]",
                                    "k = 1", "gain", "cores busy", "time of one under load", "memory at k"], rows,
                 "k driver processes of the library ran the job at once, each with its own keys and inputs, every "
                 "output checked; k grew 1, 2, 4, ... until the measured parallelism reached 95% of the host's "
                 f"cores ({', '.join(str(c) for c in sorted(cores, key=str))}) or the rate grew less than 5%; "
                 "throughput = k / median time of one evaluation under that load, its interval from the median's; "
                 "gain: over k = 1; cores busy: CPU time / wall time in the timed regions, summed over the k "
                 "processes; memory: peak resident memory of the k processes together", [])


def _hover(r: Record, t: int, s: float, ci: tuple[float, float] | None, base: Record) -> str:
    med = r.ci95_ns
    par = r.parallelism
    mark = note(r, t, base)
    return (f"{r.library} {r.scheme.upper()} {params_name(r)} {_op(r.op, r.vector_length)}, {t} thread(s)<br>"
            f"speed-up {s:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else " (no interval)")
            + f", efficiency {s / t:.2f}<br>{fmt_time(r.median_ns)}"
            + (f" [{fmt_time(med[0])}, {fmt_time(med[1])}]" if med else " (no interval)")
            + f"<br>parallelism {'-' if par is None else f'{par:.2f}'}" + (f"<br>{mark}" if mark else "")
            + f"<br>run {r.run_id}")


def figures(recs: list[Record]) -> list[dict]:
    """Per scheme, parameter set and operation: a line per library (its speed-up over its own 1-thread
    median against the thread count) and the ideal y = x; log axes, so ideal scaling is a diagonal."""
    setups: dict[tuple, dict[str, dict[int, Record]]] = {}
    for (lib, scheme, params, op, length), by_t in cases(recs).items():
        setups.setdefault((scheme, params, op, length), {})[lib] = by_t
    figs = []
    for (scheme, params, op, length), libs in setups.items():
        traces, counts = [], set()
        for lib, by_t in sorted(libs.items()):
            base = by_t.get(1)
            if base is None:
                continue
            pts = [(t, r, *speedup(base, r)) for t, r in sorted(by_t.items())]
            counts.update(t for t, *_ in pts)
            traces.append({"type": "scatter", "mode": "lines+markers", "name": lib, "x": [t for t, *_ in pts],
                           "y": [s for _, _, s, _ in pts], "hoverinfo": "text",
                           "hovertext": [_hover(r, t, s, ci, base) for t, r, s, ci in pts],
                           "error_y": {"type": "data", "symmetric": False,
                                       "array": [ci[1] - s if ci else 0 for _, _, s, ci in pts],
                                       "arrayminus": [s - ci[0] if ci else 0 for _, _, s, ci in pts]}})
        if not traces:
            continue  # no library has a 1-thread record here: the table says so
        top = max(counts)
        traces.append({"type": "scatter", "mode": "lines", "name": "ideal (y = x)", "x": [1, top], "y": [1, top],
                       "line": {"dash": "dash", "color": "#888"}, "hoverinfo": "skip"})
        missing = sorted(set(libs) - {t["name"] for t in traces})
        title = f"Thread scaling: {_op(op, length)}, {scheme.upper()} {params}" + (
            f" (no 1-thread record: {', '.join(missing)})" if missing else "")
        figs.append({"data": traces, "layout": {
            "title": {"text": title}, "height": 380, "margin": {"l": 60, "r": 10, "t": 40, "b": 50},
            "xaxis": {"title": {"text": "threads"}, "type": "log", "tickvals": sorted(counts)},
            "yaxis": {"title": {"text": "speed-up over 1 thread"}, "type": "log"}, "legend": {"font": {"size": 10}}}})
    return figs
