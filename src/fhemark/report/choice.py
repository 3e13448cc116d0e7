"""`fhemark choose` on the terminal: what the program needs, then the ranked, proven choices."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..advise.choose import Answer, Candidate, client_bytes, eval_key_bytes, levels_available, margin, plaintext_text
from ..model.requirements import Requirements
from .formats import fmt_bytes, fmt_time, throughput_text


def _or_dash(v: object) -> str:
    return "-" if v is None else str(v)


def print_requirements(name: str, reqs: dict[str, Requirements], console: Console) -> None:
    t = Table(title=f"what {name} needs, read from its program (nothing run)", title_justify="left")
    for col in ("scheme", "depth", "levels", "mult. in sequence", "rotations", "values", "plaintext bits / largest value",
                "timed steps"):
        t.add_column(col)
    for s, r in reqs.items():
        bits = f"t {r.plain_bits} bits (largest |value| {r.largest_value})" if r.plain_bits else \
            f"largest |value| {r.largest_value:.3g} (2^{r.magnitude_bits})" if r.largest_value is not None else "-"
        t.add_row(s.upper(), str(r.depth), str(r.levels), str(r.multiplications),
                  ", ".join(map(str, r.rotations)) or "none", str(r.slots or "all slots"), bits,
                  ", ".join(f"{n} {op}" for op, n in sorted(r.counts.items())))
    console.print(t)
    for s, r in reqs.items():
        for note in r.notes:
            console.print(f"{s.upper()}: {escape(note)}", highlight=False)
    console.print("depth: CKKS levels consumed on the deepest path; BFV/BGV multiplications in sequence "
                  "(plaintext products counted too)", highlight=False)


def _params(c: Candidate) -> tuple[str, str, str]:
    s = c.spec or {}
    if "preset" in s:
        return "-", "-", f"preset {s['preset']}, {s.get('bits')}-bit integers"
    return (str(s.get("N")), str(c.log_qp()),
            f"q {'+'.join(map(str, s['q_bits']))}, P {'+'.join(map(str, s['p_bits']))}, {plaintext_text(s)}")


def _margin(ans: Answer, c: Candidate) -> str:
    m, r = margin(c, ans.precision), c.record
    if m is not None:
        return f"{m:+.1f} bits precision" if c.scheme == "ckks" else f"{m:.0f} bits noise budget"
    return f"p-fail 2^{r.p_fail_log2:.0f}" if r is not None and r.p_fail_log2 is not None else "-"


def _security(c: Candidate) -> str:
    sec = c.record.security if c.record else {}
    return ", ".join(f"{v['bits']} ({k})" for k, v in sec.items()) or "-"


def _table(ans: Answer, cands: list[Candidate], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    speed = "throughput (95% CI)" if ans.objective == "throughput" else "latency (95% CI)"
    for col in ("#", "library", "scheme", "set", "N", "log QP", "chain", "security bits", speed,
                "peak memory", "eval keys", "client bytes", "margin", "levels need/have"):
        t.add_column(col)
    for i, c in enumerate(cands, 1):
        r = c.record
        lo, hi = r.ci95_ns or (None, None)
        lat = (throughput_text(r) if r.mode == "throughput" else
               fmt_time(r.median_ns) + (f" [{fmt_time(lo)}, {fmt_time(hi)}]" if lo else "")) + (" *" if c.within_best else "")
        n, lqp, chain = _params(c)
        req = ans.requirements[c.scheme]
        t.add_row(str(i), c.library, c.scheme.upper(), c.origin, n, lqp, chain, _security(c), lat,
                  fmt_bytes(r.peak_rss_bytes), fmt_bytes(eval_key_bytes(r)),
                  fmt_bytes(client_bytes(ans.workload, r)),
                  _margin(ans, c), f"{req.depth}/{_or_dash(levels_available(c, req))}")
    return t


def print_answer(ans: Answer, console: Console) -> None:
    ranked = ans.ranked()
    if ranked:
        console.print(_table(ans, ranked, f"{ans.workload.name}: the smallest secure set each library runs it correctly "
                                          f"at (proven: every output of every repetition checked), ranked by "
                                          + ("throughput with the host's cores busy (k evaluations at once), "
                                             if ans.objective == "throughput" else "latency ")
                                          + f"at {ans.threads} thread(s) each; * = indistinguishable from the best"))
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
    measured_shared = [c for c in ans.shared if c.record and c.record.status == "ok"]
    if measured_shared:
        console.print(_table(ans, sorted(measured_shared, key=lambda c: ans.timed(c).median_ns),
                             "the same program with every library at its scheme's largest chosen set: the gap left is "
                             "the library's, not its parameters'"))
    for c in ans.excluded():
        why = "; ".join(c.tried[-2:]) if not c.verified else f"{c.record.status}: {c.record.error}" \
            if c.record else "not measured"
        console.print(f"not chosen: {c.label} ({c.origin}): {escape(why)}", highlight=False)
    for why in ans.impossible.values():
        console.print(f"impossible: {escape(why)}", highlight=False)
    if ans.run_id:
        console.print(f"measured in run {ans.run_id}", highlight=False)
