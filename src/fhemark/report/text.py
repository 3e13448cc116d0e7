"""The table printed at the end of a run: one row per scheme/params/op, one
column per library, so libraries read side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from ..analyse import ratios
from ..analyse.select import contended, latest
from ..store.record import Record
from .formats import ci_text, fmt_time, op_order, throughput_text
from .tables import Deviations, security_disagreements

if TYPE_CHECKING:
    from ..advise.advisor import Need, Proposal
    from ..advise.derived import Modelled
    from ..advise.recommend import Candidate, Workload
    from ..analyse.compare import Comparison


def _cell(r: Record, devs: Deviations) -> str:
    if r.status == "unsupported":
        return "[dim]unsupported[/]"
    if r.status != "ok":
        return f"[red]{r.status}[/]"
    dev = f" [magenta]{devs.mark(r).strip()}[/]" if r.deviations else ""
    if r.depth is not None:
        return f"depth {r.depth}{dev}"
    spread = f"±{r.rel_ci_half_width * 100:.0f}%" if r.rel_ci_half_width is not None else \
        f"({ci_text(r)})"
    head = throughput_text(r) if r.mode == "throughput" else f"{fmt_time(r.median_ns)} {spread}"
    extra = []
    if r.noise_budget_bits is not None:
        extra.append(f"{r.noise_budget_bits:g}b")
    if r.precision_bits is not None:
        extra.append(f"{r.precision_bits:.0f}b prec")
    mark = (" [yellow]†[/]" if r.insecure else "") + (" [yellow]≠[/]" if r.params_match is False else "")
    mark += " [yellow]~[/]" if contended(r) else ""
    par = parallelism_mark(r)
    mark += f" [cyan]{par}[/]" if par else ""
    return head + (f" ({', '.join(extra)})" if extra else "") + mark + dev


# How far the measured parallelism (CPU time / wall time in the timed regions) may sit from the
# threads asked before a result is marked: the OS counts CPU time in coarse ticks, and a library's
# serial parts keep even a well parallelised op below the count.
SERIAL_BELOW = 1.2   # at 2+ threads, less than this: the library ran on about one core
OVER_FACTOR = 1.15   # more than threads x this: it used more threads than asked


def parallelism_mark(r: Record, threads: int | None = None) -> str:
    """'1c' where the library ran on about one core although asked for more; '>t' where it used more
    threads than asked; '' otherwise (or unknown). `threads`: the count asked, where not the record's."""
    par, threads = r.parallelism, threads or r.threads or 1
    if par is None:
        return ""
    if threads > 1 and par < SERIAL_BELOW:
        return "1c"
    return ">t" if par > threads * OVER_FACTOR else ""


def _standing(by_lib: dict[str, Record]) -> dict[str, str]:
    """A row's decision: which library is fastest, and whether each other one is slower beyond
    doubt (analyse/ratios.py); nothing where fewer than two time the same work."""
    timed = [r for r in by_lib.values() if r.status == "ok" and r.samples_ns and r.depth is None
             and r.mode != "throughput" and not r.deviations]
    if len(timed) < 2:
        return {}
    best = ratios.fastest(timed)
    out = {best.library: " [bold]◆[/]"}
    for r in timed:
        if r is not best:
            fr = ratios.versus(r, best)
            out[r.library] = f" [dim]{fr.ratio:.2g}x[/]" if fr and fr.ci95 and fr.ci95[0] > 1 else " [dim]≈[/]"
    return out


def print_results(recs: list[Record], console: Console) -> None:
    recs = latest(recs)
    libs = sorted({r.library for r in recs})
    t = RichTable(title="fhemark: median ±95% CI half-width (noise budget bits | CKKS precision bits); "
                        "every result decrypted and checked; per row, ◆: the fastest (by floors, the host's "
                        "fastest state), 1.3x: that many times slower, beyond doubt, ≈: not told apart from it",
                  title_justify="left")
    swept = len({r.threads or 1 for r in recs}) > 1  # threads as an axis: a column of its own
    for col in ("scheme", "params", "op") + (("threads",) if swept else ()):
        t.add_column(col)
    for lib in libs:
        t.add_column(lib, justify="right")
    rows: dict[tuple, dict[str, Record]] = {}
    for r in recs:
        p = r.params
        op = r.op + (" (throughput)" if r.mode == "throughput" else "")
        key = (r.scheme.upper(), p.get("name") or f"N={p['N']}", op) + ((str(r.threads or 1),) if swept else ())
        rows.setdefault(key, {})[r.library] = r
    devs = Deviations()

    def row_order(item: tuple[tuple, dict[str, Record]]) -> tuple:
        (scheme, params, op, *threads), by_lib = item
        r = next(iter(by_lib.values()))
        return scheme, r.params.get("N") or 0, params, tuple(threads), op_order(r.op), op
    for key, by_lib in sorted(rows.items(), key=row_order):  # names are the user's text, not console markup
        standing = _standing(by_lib)
        t.add_row(*map(escape, key), *[_cell(by_lib[lib], devs) + standing.get(lib, "") if lib in by_lib else ""
                                       for lib in libs])
    console.print(t)
    for note in devs.lines():
        console.print(f"[magenta]{note[0]}[/]{escape(note[1:])}", highlight=False)  # "[sk]" is text, not a style
    if any(r.mode == "throughput" for r in recs):
        console.print("(throughput): evaluations a second [95% CI] with k evaluations at once, k grown until the "
                      "host's cores were busy (throughput_by_batch in the export has every k)", highlight=False)
    marks = {"†": any(r.insecure for r in recs), "≠": any(r.params_match is False for r in recs)}
    if marks["†"]:
        # A TFHE-family set is run on its library's own claim and marked where the estimate puts it lower.
        bits_only = all(r.security_table != "library" and "library" in r.security for r in recs if r.insecure)
        console.print("† below the suite's security level " + ("by the lattice estimator (TFHE-family sets run on their "
                      "library's own claim)" if bits_only else "(run with --allow-insecure)"))
    if marks["≠"]:
        console.print("≠ the library used different parameters than asked (see params_mismatch in the export)")
    if disagree := security_disagreements(recs):
        console.print(disagree, highlight=False)
    marked = {m: sum(parallelism_mark(r) == m for r in recs) for m in ("1c", ">t")}
    if marked["1c"]:
        console.print(f"1c {marked['1c']} result(s) asked for several threads ran on about one core (CPU time / wall "
                      f"time below {SERIAL_BELOW} in the timed regions): the library does not use them there", highlight=False)
    if marked[">t"]:
        console.print(f">t {marked['>t']} result(s) used more threads than asked (CPU time / wall time above the "
                      f"thread count x {OVER_FACTOR})", highlight=False)
    busy = sum(contended(r) for r in recs)
    if busy:
        console.print(f"~ {busy} result(s) measured while other processes or the hypervisor took CPU "
                      "(host_activity in the export): rerun them on a quieter machine before trusting small differences")


# Verdicts in the order they are listed, with their colour.
_VERDICT_STYLE = {"failed": "bold red", "slower": "red", "still failing": "yellow", "faster": "green",
                  "fixed": "green", "same": "", "added": "dim", "removed": "dim", "not compared": "dim"}


def print_comparison(cmp: Comparison, base_id: str, new_id: str, console: Console, show_same: bool = False) -> None:
    """Changes first; unchanged and unmatched cases only on request (they are counted below the table)."""
    order = list(_VERDICT_STYLE)
    t = RichTable(title=f"fhemark compare: {base_id} -> {new_id} (ratio = new / base floor, the host's change "
                        "removed; 95% bootstrap CI and p)", title_justify="left")
    for col, just in (("case", "left"), ("base", "right"), ("new", "right"), ("ratio [95% CI]", "right"),
                      ("p", "right"), ("verdict", "left")):
        t.add_column(col, justify=just)
    for c in sorted(cmp.changes, key=lambda c: (order.index(c.verdict), -(c.ratio or 0))):
        if c.verdict in ("same", "added", "removed", "not compared") and not show_same:
            continue  # counted below the table
        ratio = c.ratio_text()
        style = _VERDICT_STYLE[c.verdict]
        verdict = f"[{style}]{c.verdict}[/]" if style else c.verdict
        t.add_row(c.label, _time(c.base), _time(c.new), ratio, "-" if c.p_value is None else f"{c.p_value:.3g}",
                  verdict + (f" ({c.why})" if c.why else ""))
    console.print(t)
    for v in cmp.versions:
        console.print(f"versions compared: {v}", highlight=False, markup=False)
    counts = ", ".join(f"{cmp.count(v)} {v}" for v in order if cmp.count(v))
    gm = cmp.geomean
    console.print(f"{len(cmp.changes)} cases: {counts}" + (f"; geometric mean of ratios {gm:.3f}" if gm else ""))
    if cmp.shift_source:
        console.print(f"machine-wide shift {cmp.shift_source}", highlight=False, markup=False)
    for e in cmp.edited:
        console.print(f"not compared: workload file {e}: its cases count as removed and added", highlight=False,
                      markup=False)
    for lib in cmp.libraries:
        style = _VERDICT_STYLE[lib.verdict]
        verdict = f"[{style}]{lib.verdict}[/]" if style else lib.verdict
        console.print(f"{escape(lib.library)}: median ratio {lib.ratio:.3f} over {lib.cases} cases (shift removed "
                      f"x{lib.shift:.3f}), sign test p {lib.p_value:.2g}: {verdict}"
                      + (f" ({escape(lib.why)})" if lib.why else ""), highlight=False)
    for d in cmp.host_diffs:
        console.print(f"[yellow]different host (accepted with --other-host):[/] {d}")


def _time(r: Record | None) -> str:
    if r is None:
        return "-"
    if r.status != "ok":
        return r.status
    if r.depth is not None:
        return f"depth {r.depth}"
    return fmt_time(r.median_ns)


def print_recommendation(cands: list[Candidate], w: Workload, console: Console) -> None:
    """The ranking, then what the costs model (and the model's error measured in the store), which
    workloads were modelled from which runs and jobs, every exclusion, what was checked of depth."""
    from ..advise.recommend import depth_note
    from ..analyse.cost import METHOD
    usable = [c for c in cands if not c.excluded]
    ops = ", ".join(f"{n} x {op}" for op, n in w.ops.items())
    t = RichTable(title=f"fhemark recommend: {w.name} = {ops}"
                        + (f", {w.slots} values" if w.slots else "")
                        + f"; >= {w.min_security_bits} bits ({w.security_table})"
                        + (f", precision >= {w.min_precision_bits:g} bits" if w.min_precision_bits is not None else "")
                        + (f", depth >= {w.depth}" if w.depth else "")
                        + ("; ranked by throughput" if w.objective == "throughput" else ""), title_justify="left")
    devs = Deviations()
    rows = [_ranked_row(i, c, w, devs) for i, c in enumerate(usable, 1)]
    for col, just in (("rank", "right"), ("library / scheme / params", "left"), ("cost per evaluation [95%]", "right"),
                      ("ciphertexts", "right"), ("security", "right"), ("worst op: noise left / precision", "right"),
                      ("depth", "right"), ("eval keys", "right")):
        t.add_column(col, justify=just)
    for cells, _, _ in rows:
        t.add_row(*cells)
    _print_ranking(t, rows, console)
    for note in devs.lines():
        console.print(f"{escape(note)} (this candidate's cost times different work: compare with care)", highlight=False)
    err = getattr(cands, "model_error", None)  # recommend's Ranking carries it
    if w.objective == "throughput":
        cores = f" on {w.threads} cores" if w.threads else ""
        console.print(f"objective: throughput{cores}: each op costed at the host's time per evaluation at saturation "
                      "(1 / evaluations a second with k at once, records of mode: throughput; interval inverted), "
                      "not the time of one evaluation alone", highlight=False, markup=False)
    console.print(METHOD, highlight=False, markup=False)
    if err is not None:
        console.print(err.text(), highlight=False, markup=False)
    for c in usable:
        for op in c.modelled:
            console.print(f"{c.label}: {op} not measured: costed by the sum of its steps' single-operation medians "
                          f"({_sources(c.by_op[op])})", highlight=False, markup=False)
    for c in cands:
        if c.excluded:
            console.print(f"[dim]excluded:[/] {escape(c.label)}: {escape(c.excluded)}", highlight=False)
    if not usable:
        console.print("[yellow]no measured candidate meets the workload:[/] run a suite that measures its ops "
                      + ("in mode: throughput (e.g. `fhemark run --suite threads`)" if w.objective == "throughput"
                         else "(e.g. `fhemark run --suite quick`)") + ", or relax the requirements")
        return
    if note := depth_note(cands, w):
        console.print(note, highlight=False, markup=False)
    schemes = {c.scheme for c in usable}
    if "ckks" in schemes and len(schemes) > 1:
        console.print("note: CKKS is approximate (its precision is shown), BFV/BGV exact: pass --scheme or "
                      "--precision to state what your data needs")
    best = usable[0]
    ties = [c.label + (f" {c.vs_best.ratio:.2f}x{ratios.shown(c.vs_best)}" if c.vs_best else "")
            for c in usable[1:] if c.within_best]
    per = "per evaluation at saturation" if w.objective == "throughput" else "per evaluation"
    console.print(f"[bold]recommended:[/] {escape(best.label)}, {fmt_time(best.cost)} {per} "
                  f"[{fmt_time(best.cost_ci[0])}, {fmt_time(best.cost_ci[1])}]"
                  + (f"; indistinguishable on this data (*): {escape(', '.join(ties))}" if ties else "")
                  + (f" ({escape(', '.join(best.modelled))} modelled)" if best.modelled else "")
                  + f". Evidence: runs {escape(', '.join(best.runs) or '-')}.", highlight=False)


def _ranked_row(i: int, c: Candidate, w: Workload, devs: Deviations) -> tuple[tuple[str, ...], tuple[str, ...], list]:
    """A usable candidate's cells in the full table, in the narrow one, and the figures the narrow one
    leaves out, worded to stand alone."""
    from .choice import narrow_interval
    noise, prec = c.worst_noise_budget, c.worst_precision
    quality = f"{noise:g} bits" if noise is not None else f"{prec:.1f} bits prec" if prec is not None else "-"
    worded = f"{noise:g} bits noise left" if noise is not None else f"{prec:.1f} bits precision" \
        if prec is not None else "-"
    sizes = c.evidence[0].sizes_bytes
    keys = sum(sizes.get(k) or 0 for k in ("relin_keys", "galois_keys", "server_key"))
    depth = str(c.depth_rec.depth) if c.depth_rec and c.depth_rec.status == "ok" else "-"
    mark = "[green]*[/]" if c.within_best else ""
    dev = "".join(devs.mark_work(c.library, {k: v}) for k, v in sorted(c.deviations.items()))
    cost, lo, hi = fmt_time(c.cost), fmt_time(c.cost_ci[0]), fmt_time(c.cost_ci[1])
    full = (f"{i}{mark}", c.label + dev, f"{cost} [{lo}, {hi}]", str(c.copies), str(c.security_bits(w.security_table)),
            quality, depth, f"{keys / 2**20:.1f} MiB" if keys else "-")
    return full, (*full[:2], narrow_interval(cost, lo, hi)), [("ciphertexts", full[3]), ("security bits", full[4]),
                                                              ("worst op", worded), ("depth", depth),
                                                              ("eval keys", full[7])]


def _print_ranking(full: RichTable, rows: list[tuple], console: Console) -> None:
    """The full table where it fits the terminal whole; else rank, candidate and cost, the rest below."""
    from .choice import fits, narrow_table, print_details
    if fits(full, console):
        console.print(full)
        return
    t = narrow_table(str(full.title), console)
    for col, just in (("rank", "right"), ("library / scheme / params", "left"), ("cost per evaluation [95%]", "left")):
        t.add_column(col, justify=just, no_wrap=col != "library / scheme / params")
    for _, narrow, _ in rows:
        t.add_row(*narrow)
    console.print(t)
    print_details([(str(i), narrow[1], facts) for i, (_, narrow, facts) in enumerate(rows, 1)], console)


def _sources(m: Modelled) -> str:
    """A modelled workload's evidence: the single ops it adds up, with their runs and jobs."""
    ops = ", ".join(f"{s.count} x {s.op}" for s in m.sources)
    return f"{ops}; runs {', '.join(m.run_ids) or '-'}; jobs {', '.join(j for j in m.job_keys if j) or '-'}"


def _size(n: int | None) -> str:
    return "-" if not n else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def print_proposals(need: "Need", props: list["Proposal"], console: Console) -> None:
    """`fhemark params`: per library the smallest set that passed every repetition, what it measured."""
    from ..advise.advisor import security_text
    t = RichTable(title=f"fhemark params: {need.describe()}", title_justify="left")
    for col in ("library", "N", "q bits", "p", "t / scale", "security", "depth (each run)", "margin",
                "mul_relin", "rotate_1", "keys (pk, relin, Galois)", "ciphertext", "rejected"):
        t.add_column(col, justify="left" if col in ("library", "q bits", "security") else "right")
    for p in props:
        if p.spec is None:
            t.add_row(p.library, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", str(len(p.rejected)))
            continue
        ops = {r.op: r for r in p.records}
        sizes = next((r.sizes_bytes for r in p.records if r.sizes_bytes), {})
        margin = (f"{min(p.margin):+.1f} bits precision" if need.scheme == "ckks" else
                  f"{min(p.margin):g} bits noise budget") if p.margin else "-"
        tval = f"2^{p.spec['scale_bits']}" if "scale_bits" in p.spec else f"{p.spec['t_bits']} bits"
        keys = ", ".join(_size(sizes.get(k)) for k in ("public_key", "relin_keys", "galois_keys"))
        t.add_row(p.library, str(p.spec["N"]), "+".join(map(str, p.spec["q_bits"])), str(p.spec["p_bits"][0]), tval,
                  security_text(p.spec), ", ".join(map(str, p.depth)), margin,
                  *(fmt_time(ops[o].median_ns) if o in ops and ops[o].median_ns else "-"
                    for o in ("mul_relin", "rotate_1")),
                  keys, _size(sizes.get("ciphertext")), str(len(p.rejected)))
    console.print(t)
    for p in props:
        if p.trajectory:
            what = "precision" if need.scheme == "ckks" else "noise budget"
            console.print(f"{p.library}: {what} after each multiplication: "
                          + ", ".join(f"{x:.1f}" if isinstance(x, float) else str(x) for x in p.trajectory) + " bits",
                          highlight=False, markup=False)
        for why in p.rejected:
            console.print(f"{p.library}: rejected {why}", highlight=False, markup=False)
        if p.spec is None:
            console.print(f"{p.library}: no set found within {len(p.rejected)} candidates", highlight=False, markup=False)
        elif p.effective and p.effective.get("q_bits") != p.spec["q_bits"]:
            console.print(f"{p.library}: built q = {p.effective.get('q_bits')} for the asked {p.spec['q_bits']}",
                          highlight=False, markup=False)
