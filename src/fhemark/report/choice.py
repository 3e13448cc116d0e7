"""`fhemark choose` on the terminal: what the program needs, then the ranked, proven choices."""

from __future__ import annotations

import re

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..advise.answer import client_bytes, eval_key_bytes, levels_available
from ..advise.candidates import boot_text, plaintext_text, switching_text
from ..advise.choose import Answer, Candidate
from ..analyse import ratios
from ..model.requirements import Requirements
from ..store.record import Record
from .formats import fmt_bytes, fmt_rate, fmt_time, throughput_text


def _or_dash(v: object) -> str:
    return "-" if v is None else str(v)


WIDE = 120  # from here on every column of the requirements table has room for its heading's words


def print_requirements(name: str, reqs: dict[str, Requirements], console: Console) -> None:
    title = f"what {name} needs, read from its program (nothing run)"
    cols = ("depth", "levels", "mult. in sequence", "rotations", "values", "plaintext bits / largest value", "timed steps")
    rows: list[Facts] = []
    for s, r in reqs.items():
        bits = f"t {r.plain_bits} bits (largest |value| {r.largest_value})" if r.plain_bits else \
            f"largest |value| {r.largest_value:.3g} (2^{r.magnitude_bits})" if r.largest_value is not None else "-"
        values = (str(r.depth), str(r.levels), str(r.multiplications), ", ".join(map(str, r.rotations)) or "none",
                  str(r.slots or "all slots"), bits, ", ".join(f"{n} {op}" for op, n in sorted(r.counts.items())))
        rows.append((s.upper(), "needs", list(zip(cols, values))))
    t = Table(title=title, title_justify="left")
    for col in ("scheme", *cols):
        t.add_column(col)
    for key, _, facts in rows:
        t.add_row(key, *(v for _, v in facts))
    if fits(t, console) or console.width >= WIDE:  # wide, the table wraps a long cell at its spaces
        console.print(t)
    else:  # a narrow terminal: per scheme, its figures packed onto lines, none cut to '…'
        console.print(Text(title, style="table.title"))
        print_details(rows, console)
    for s, r in reqs.items():
        for note in r.notes:
            console.print(f"{s.upper()}: {escape(note)}", highlight=False)
    console.print("depth: CKKS levels consumed on the deepest path; BFV/BGV multiplications in sequence "
                  "(plaintext products counted too)", highlight=False)


def _params(c: Candidate) -> tuple[str, str, str]:
    s = c.spec or {}
    if "preset" in s and c.scheme == "ckks":  # a bootstrapping set: judged at its keys' modulus (records.judged_log_qp)
        eff = (c.record.effective_params if c.record else None) or {}
        return str(s.get("N")), _or_dash(eff.get("key_log_qp") or eff.get("log_qp")), boot_text(c)
    if "preset" in s:
        return "-", "-", f"preset {s['preset']}, {s.get('bits')}-bit integers"
    return (str(s.get("N")), str(c.log_qp()),
            f"q {'+'.join(map(str, s['q_bits']))}, P {'+'.join(map(str, s['p_bits'])) or 'none'}, {plaintext_text(s)}"
            f"{switching_text(s)}")


def _margin(ans: Answer, c: Candidate, unit: bool = True) -> str:
    """`unit` False: the bits alone, for the narrow table (its legend says which bits)."""
    m, r = c.margin(ans.precision), c.record
    if m is not None:
        bits = f"{m:+.1f} bits" if c.scheme == "ckks" else f"{m:.0f} bits"
        return bits if not unit else f"{bits} precision" if c.scheme == "ckks" else f"{bits} noise budget"
    return f"p-fail 2^{r.p_fail_log2:.0f}" if r is not None and r.p_fail_log2 is not None else "-"


def _security(c: Candidate) -> str:
    sec = c.record.security if c.record else {}
    # The lattice estimator's figure beside each table's (records made before it have none).
    return ", ".join(f"{v['bits']} ({k}" + (f"; est. {v['estimated_bits']:g}" if v.get("estimated_bits") is not None else "")
                     + (", by the estimate)" if v.get("judged_by") == "estimate" else ")") for k, v in sec.items()) or "-"


def _speed(r: Record, narrow: bool) -> str:
    """The median with its 95% interval; `narrow`: the interval in the median's unit where it shares it
    (the batch k goes below the table)."""
    if r.mode == "throughput":
        ci = r.throughput_ci95
        if not narrow:
            return throughput_text(r)
        mid = fmt_rate(r.throughput_per_s)
        return narrow_interval(mid, fmt_rate(ci[0]), fmt_rate(ci[1])) if ci else mid
    lo, hi = r.ci95_ns or (None, None)
    mid = fmt_time(r.median_ns)
    if not lo:
        return mid
    return narrow_interval(mid, fmt_time(lo), fmt_time(hi)) if narrow else f"{mid} [{fmt_time(lo)}, {fmt_time(hi)}]"


def _library(c: Candidate) -> str:
    # The library's own choice sits beside its searched set: the narrow table has no set column to tell them apart.
    return c.library if c.origin in ("search", "shared") else f"{c.library} ({c.origin.removeprefix(c.library + '-')})"


def _table(ans: Answer, cands: list[Candidate], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("#", "library", "scheme", "set", "N", "log QP", "chain", "security bits", _speed_header(ans),
                "peak memory", "eval keys", "client bytes", "margin", "levels need/have"):
        t.add_column(col)
    for i, c in enumerate(cands, 1):
        r = c.record
        t.add_row(str(i), c.library, c.scheme.upper(), c.origin, *_params(c), _security(c),
                  _speed(r, False) + (" *" if c.within_best else ""), *_sizes(ans, c), _margin(ans, c), _levels(ans, c))
    return t


def _speed_header(ans: Answer) -> str:
    return "throughput (95% CI)" if ans.objective == "throughput" else "latency (95% CI)"


def _sizes(ans: Answer, c: Candidate) -> tuple[str, str, str]:
    """Peak memory measured, with what was predicted before the set was built (advise/memory.py) beside it."""
    r = c.record
    peak = fmt_bytes(r.peak_rss_bytes) + (f" (predicted {fmt_bytes(c.predicted.bytes)})" if c.predicted else "")
    return peak, fmt_bytes(eval_key_bytes(r)), fmt_bytes(client_bytes(ans.workload, r))


def _levels(ans: Answer, c: Candidate) -> str:
    """Needed / available: needed with the routines the row ran (OpenFHE's EvalPoly takes a level
    more than the program's tree; Horner takes d), not the program's own count."""
    req = ans.requirements[c.scheme]
    need = c.levels_needed if c.levels_needed is not None else req.depth
    return f"{need}/{_or_dash(levels_available(c, req))}"


def _narrow_table(ans: Answer, cands: list[Candidate], title: str, console: Console) -> Table:
    """The columns a choice is made on; every other figure goes on the lines below (_details)."""
    t = narrow_table(title, console)
    for col, just in (("#", "right"), ("library", "left"), ("scheme", "left"), ("N", "right"), ("log QP", "right"),
                      (_speed_header(ans), "left"), ("margin", "right")):
        t.add_column(col, justify=just, no_wrap=col not in ("library", "scheme"))
    for i, c in enumerate(cands, 1):
        n, lqp, _ = _params(c)
        t.add_row(str(i), _library(c), c.scheme.upper(), n, lqp, _speed(c.record, True) + (" *" if c.within_best else ""),
                  _margin(ans, c, unit=False))
    return t


def _details(ans: Answer, cands: list[Candidate]) -> list[Facts]:
    rows = []
    for i, c in enumerate(cands, 1):
        peak, keys, client = _sizes(ans, c)
        facts = [("chain", _params(c)[2]), ("security bits", _security(c)), ("peak memory", peak), ("eval keys", keys),
                 ("client bytes", client), ("levels need/have", _levels(ans, c))]
        if ans.objective == "throughput":
            facts.append(("k at once", _or_dash(c.record.batch)))
        rows.append((str(i), f"{_library(c)} {c.scheme.upper()}", facts))
    return rows


def _ranking(ans: Answer, cands: list[Candidate], title: str, console: Console) -> None:
    """The full table where it fits the terminal whole; else the decisive columns, the rest below."""
    full = _table(ans, cands, title)
    if fits(full, console):
        console.print(full)
        return
    console.print(_narrow_table(ans, cands, title, console))
    schemes = {c.scheme for c in cands}
    legend = (["CKKS, precision above the requirement"] if "ckks" in schemes else []) + \
        (["BFV/BGV, noise budget left"] if schemes & {"bfv", "bgv"} else [])
    if legend:
        console.print(f"margin bits: {'; '.join(legend)}", highlight=False)
    print_details(_details(ans, cands), console)


# -- narrow terminals: shared with `recommend` (report/text.py) ------------------------------------

# A row's key (its rank), what it is, and its further figures as (column, value).
Facts = tuple[str, str, list[tuple[str, str]]]


def fits(table: Table, console: Console) -> bool:
    """Whether the table's every cell fits on one line at the terminal's width. Rich squeezes a table
    too wide by narrowing its widest columns below their longest word, cutting figures to '…'."""
    return console.measure(table, options=console.options.update_width(10 ** 6)).maximum <= console.width


def narrow_table(title: str, console: Console) -> Table:
    """A table of two spaces between columns and no side borders (the borders of a 14-column table
    take a third of 80 columns), its title printed first: as a table's own it would wrap at the
    table's width, not the terminal's."""
    if title:
        console.print(Text(title, style="table.title"))
    return Table(box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, show_edge=False)


def narrow_interval(mid: str, lo: str, hi: str) -> str:
    """'12.3 ms [12.1, 12.5]': the interval's ends without the unit where they share the median's."""
    parts = [re.fullmatch(r"([-+\d.e]+)(\D*)", x) for x in (mid, lo, hi)]
    if all(parts) and len({m.group(2) for m in parts}) == 1:
        return f"{mid} [{parts[1].group(1)}, {parts[2].group(1)}]"
    return f"{mid} [{lo}, {hi}]"


def print_details(rows: list[Facts], console: Console) -> None:
    """The figures a narrow table leaves out: a second table where that fits whole, else per row its
    figures packed onto lines beside its key, each moved whole to the next line rather than broken
    between a number and its unit (one wider than a line alone wraps at its spaces)."""
    if not rows:
        return
    t = narrow_table("", console)
    for col in ("#", *(label for label, _ in rows[0][2])):
        t.add_column(col, justify="right" if col == "#" else "left")
    for key, _, facts in rows:
        t.add_row(Text(key), *(Text(value) for _, value in facts))
    if fits(t, console):
        console.print(t)
        return
    width = max(console.width - max(cell_len(key) for key, _, _ in rows) - 1, 20)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column()
    for key, what, facts in rows:
        lines = [f"{what}:"]
        for label, value in facts:
            fact = f"{label} {value}"
            joined = f"{lines[-1]}{' ' if lines[-1] == f'{what}:' else '; '}{fact}"
            if cell_len(joined) <= width:
                lines[-1] = joined
            else:
                lines.append(fact)
        grid.add_row(Text(key), Text("\n".join(lines)))
    console.print(grid)


def _separation(ranked: list) -> str:
    """Which candidates the data separates from the best, and by how much (floors, analyse/ratios)."""
    best, parts = ranked[0], []
    for c in ranked[1:]:
        fr = c.vs_best
        if fr is not None:
            parts.append(f"{c.library} {c.scheme.upper()} {fr.ratio:.2f}x{ratios.shown(fr)}"
                         + (" *" if c.within_best else ""))
    if not parts:
        return f"best: {best.library} {best.scheme.upper()}, alone"
    return (f"against the best ({best.library} {best.scheme.upper()}), time in the host's fastest state "
            f"with a 95% interval for another run: " + "; ".join(parts))


def print_answer(ans: Answer, console: Console) -> None:
    ranked = ans.ranked()
    if ranked:
        _ranking(ans, ranked, f"{ans.workload.name}: the smallest secure set each library runs it correctly "
                              f"at (proven: every output of every repetition checked), ranked by "
                              + ("throughput with the host's cores busy (k evaluations at once), "
                                 if ans.objective == "throughput" else "latency ")
                              + f"at {ans.threads} thread(s) each; * = indistinguishable from the best", console)
        console.print(_separation(ranked), highlight=False, markup=False)
        if ans.threads > 1 and ans.objective == "latency":  # k processes at once share the cores by design
            for c in ranked:
                par = c.record.parallelism
                if c.record.threads_honoured is False or (par is not None and par < 1.2):
                    console.print(f"{c.label}: ran on about one core of the {ans.threads} asked "
                                  f"(parallelism {par:.2f})" if par is not None else f"{c.label}: has no threads",
                                  highlight=False)
        for c in ranked:
            if c.snippet:
                console.print(f"{c.label} ({c.origin}): {escape(c.snippet)}", highlight=False)
        for c in ranked:
            for cut in c.reduced:
                console.print(f"{c.label}: reduced {escape(cut)}", highlight=False)
        for cut in ans.reduced:
            console.print(f"reduced {escape(cut)}", highlight=False)
    measured_shared = [c for c in ans.shared if c.record and c.record.status == "ok"]
    if measured_shared:
        _ranking(ans, sorted(measured_shared, key=lambda c: ans.timed(c).median_ns),
                 "the same program with every library at its scheme's largest chosen set: the gap left is "
                 "the library's, not its parameters'", console)
    for c in ans.excluded():
        why = "; ".join(c.tried[-2:]) if not c.verified else f"{c.record.status}: {c.record.error}" \
            if c.record else "not measured"
        console.print(f"not chosen: {c.label} ({c.origin}): {escape(why)}", highlight=False)
    for why in ans.impossible.values():
        console.print(f"impossible: {escape(why)}", highlight=False)
    if ans.run_id:
        console.print(f"measured in run {ans.run_id}", highlight=False)
