"""The report's first screen as data: per scheme and parameter set, every operation of every
library as a ratio to the fastest library, with its interval and its caveats; plus which setups
were compared on equal terms. HTML and Markdown draw it; nothing here plots."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape as _escape

from ..analyse import ratios
from ..analyse.select import contended, latest
from ..drivers.registry import manifests
from ..model.catalog import CATALOG
from ..model.security import bit_scheme_sets
from ..store.record import Record
from .formats import fmt_time
from .tables import DEVIATION_MARK, Deviations, Table, params_name, security_disagreements


def escape(text: str) -> str:
    """For Plotly's text, which reads <, > and & as markup but not HTML's quote entities."""
    return _escape(text, quote=False)


@dataclass
class Cell:
    library: str
    op: str
    rec: Record
    ratio: float                            # floor / the fastest library's floor on the same op (analyse/ratios.py)
    ci: tuple[float, float] | None          # 95% interval of the ratio; None: too few rounds, or the fastest
    how: str                                # how the interval was made, in words
    fastest: bool
    marks: str                              # the tables' † ≠ ~ marks
    deviation: str                          # " ‡1,2" (overview footnotes) or ""

    @property
    def clearly_slower(self) -> bool:
        return self.ci is not None and self.ci[0] > 1


@dataclass
class Setup:
    scheme: str
    params: str
    libraries: list[str]
    ops: list[str]                          # operation labels, catalog order
    cells: list[Cell]

    @property
    def title(self) -> str:
        return f"{self.scheme.upper()} {self.params}"

    @property
    def compared(self) -> bool:
        """Two or more libraries: a ratio to the fastest means something."""
        return len(self.libraries) > 1

    def deviating_ops(self) -> set[str]:
        return {c.op for c in self.cells if c.deviation}


@dataclass
class Overview:
    setups: list[Setup]
    glance: Table                           # per setup: parameter equivalence, security, caveats, who is fastest
    footnotes: list[str] = field(default_factory=list)  # "‡1 seal encode: ..."


def param_key(rec: Record) -> str:
    """A setup's name; libraries are set against each other at one thread count, so a count above
    one is part of it (a threads sweep makes one setup per count)."""
    threads = rec.threads or 1
    return params_name(rec) + (f", {threads} threads" if threads > 1 else "") + (
        f", one of k={rec.batch} at once" if rec.mode == "throughput" else "")


def _op_label(rec: Record) -> str:
    label = rec.op
    if rec.vector_length:
        label += f" / {rec.vector_length} values"
    variant = (rec.workload or {}).get("variant")
    if variant and variant != "portable":
        label += f" ({variant})"
    return label


def _comparable(rec: Record) -> bool:
    """A timed result of one whole operation: pipeline stages and depth probes have their own tables."""
    return (rec.status == "ok" and rec.median_ns is not None and rec.depth is None
            and not rec.op.startswith(("pipeline_", "depth_")))


def _op_order(label: str) -> tuple:
    op = label.split(" ")[0]
    order = list(CATALOG)
    return (order.index(op) if op in order else len(order), label)


def _marks(rec: Record) -> str:
    return (("†" if rec.insecure else "") + ("≠" if rec.params_match is False else "")
            + ("~" if contended(rec) else ""))


def _ratio(rec: Record, fastest: Record) -> tuple[float, tuple[float, float] | None, str]:
    if rec is fastest:
        return 1.0, None, "the fastest"
    fr = ratios.versus(rec, fastest)
    if fr is None:
        return rec.median_ns / fastest.median_ns, None, "no interval: no samples kept (ratio of medians)"
    how = "floors" + ("" if rec.run_id == fastest.run_id else ", different runs") + (
        "" if fr.ci95 else f"; no interval: {min(fr.n)} samples")
    return fr.ratio, fr.ci95, how


def setups(recs: list[Record], devs: Deviations | None = None) -> list[Setup]:
    """Per (scheme, parameter set): each op's libraries, each as a ratio to the fastest on that op."""
    devs = devs if devs is not None else Deviations()
    groups: dict[tuple[str, str], dict[str, dict[str, Record]]] = {}
    for r in sorted((r for r in latest(recs) if _comparable(r)), key=lambda r: r.timestamp or 0):
        groups.setdefault((r.scheme, param_key(r)), {}).setdefault(_op_label(r), {})[r.library] = r
    out = []
    for (scheme, params), by_op in sorted(groups.items()):
        ops = sorted(by_op, key=_op_order)
        cells = []
        for op in ops:
            per = by_op[op]
            # The reference is the fastest cell that does the protocol's work: a cell that skips part of
            # it (OpenFHE's decode, TenSEAL's encode) is shown, marked, but never the yardstick.
            same_work = [r for r in per.values() if not r.deviations]
            fastest = ratios.fastest(same_work or list(per.values()))
            for lib in sorted(per):
                r = per[lib]
                ratio, ci, how = _ratio(r, fastest)
                cells.append(Cell(lib, op, r, ratio, ci, how, r is fastest, _marks(r), devs.mark(r)))
        out.append(Setup(scheme, params, sorted({c.library for c in cells}), ops, cells))
    return out


def _equivalence(recs: list[Record]) -> str:
    off = sorted({(r.library, "; ".join(map(str, r.params_mismatch)) or "differs")
                  for r in recs if r.params_match is False})
    if not off:
        return "same in every library"
    return "≠ " + "; ".join(f"{lib}: {why}" for lib, why in off)


def _parameters(recs: list[Record], p: dict) -> str:
    """A ring set's N and log QP, the same in every library or not; a TFHE-family set has no ring of
    fhemark's choosing (each library builds its own preset): its LWE and GLWE sizes, per library."""
    if p.get("N"):
        return f"N = {p['N']}, log QP = {_num(p.get('log_qp'))}: {_equivalence(recs)}"
    sizes = {r.library: ", ".join(f"{x.name}, log q {round(x.log_q, 1):g}" for x in bit_scheme_sets(r.effective_params or {}))
             for r in recs}
    own = "; ".join(f"{lib}: {text}" for lib, text in sorted(sizes.items()) if text)
    return f"{p.get('name') or p.get('preset') or 'preset'}, each library's own set" + (f" ({own})" if own else "")


def _security(recs: list[Record]) -> str:
    seen = sorted({(r.security_bits, r.security_table) for r in recs if r.security_bits is not None},
                  key=str)
    text = ", ".join(f"{bits} bits ({table})" for bits, table in seen) or "not estimated"
    if disagree := security_disagreements(recs):  # "security of n8192: 128 (hestd2018), 125 (guidelines2024) bits"
        text = disagree.split(": ", 1)[1]
    if estimated := _estimated(recs):
        text += f"; estimated {estimated}"
    return ("† below the requested level: " if any(r.insecure for r in recs) else "") + text


def _estimated(recs: list[Record]) -> str:
    """"128.2 bits (usvp, beta=325, hestd2018 model)": the lattice estimator's figure for the setup in the
    deciding table, per library where they differ (each library's TFHE-family set is its own)."""
    seen = {}
    for r in recs:
        e = r.security.get(r.security_table or "", {})
        if e.get("estimated_bits") is not None:
            seen.setdefault(f"{e['estimated_bits']:g} bits ({e.get('attack', '')})", set()).add(r.library)
    if len(seen) == 1:
        return next(iter(seen))
    return ", ".join(f"{', '.join(sorted(libs))}: {text}" for text, libs in sorted(seen.items()))


def _standing(s: Setup, lib: str) -> str:
    """"1.34x · fastest 19/29 like-for-like (10 clearly)": the geometric mean of the library's ratios
    to the fastest, then how often it was the fastest, over the ops that two or more libraries time
    the same way: cells timing different work (‡) are left out, and a library alone in doing the
    protocol's work on an op won nothing there."""
    if not s.compared:
        return "ran alone" if lib in s.libraries else ""
    shared = {op for op in s.ops if sum(c.op == op and not c.deviation for c in s.cells) > 1}
    mine = [c for c in s.cells if c.library == lib and c.op in shared and not c.deviation]
    if not mine:
        return ""
    wins = [c for c in mine if c.fastest]
    clear = sum(all(o.clearly_slower for o in s.cells if o.op == c.op and o is not c) for c in wins)
    gmean = math.exp(sum(math.log(c.ratio) for c in mine) / len(mine))
    return f"{gmean:.2f}x · fastest {len(wins)}/{len(mine)} like-for-like ({clear} clearly)"


def _glance(recs: list[Record], found: list[Setup]) -> Table:
    libs = sorted({lib for s in found for lib in s.libraries})
    rows = []
    for s in found:
        mine = [r for r in latest(recs) if r.scheme == s.scheme and param_key(r) == s.params]
        p = mine[0].params
        failed = sum(r.status not in ("ok", "unsupported") for r in mine)
        caveats = [f"{DEVIATION_MARK} {n} cells: different work" if (n := sum(bool(c.deviation) for c in s.cells)) else "",
                   f"~ {n} cells under load" if (n := sum("~" in c.marks for c in s.cells)) else "",
                   f"{failed} failed or refused" if failed else ""]
        rows.append([s.title, _parameters(mine, p), _security(mine),
                     "; ".join(c for c in caveats if c) or "none"] + [_standing(s, lib) for lib in libs])
    return Table("At a glance: setups compared, who is fastest", ["scheme / params", "parameters", "security", "caveats"]
                 + libs, rows,
                 "per library: geometric mean of its floor / the fastest library's floor over the ops it shares "
                 "(1.00x: fastest on every op), then on how many ops it was the fastest; clearly: every other library's "
                 "95% interval lies above 1. ≠ a library could not use the same parameters. One figure per row below")


def build(recs: list[Record]) -> Overview:
    devs = Deviations()
    found = setups(recs, devs)
    return Overview(found, _glance(recs, found), devs.lines())


_MARKS = {"†": "† below the requested security", "≠": "≠ parameters differ", "~": "~ measured while other processes took CPU"}


def hover(cell: Cell, footnotes: dict[str, str], compared: bool = True) -> str:
    """What a reader sees on a point: the figure's number, how sure it is, and whose run it came from."""
    r = cell.rec
    n = len(r.samples_ns)
    lines = [f"<b>{escape(cell.library)}</b> {escape(cell.op)}"]
    if compared:
        lines.append("the fastest" if cell.fastest else f"{cell.ratio:.2f}x the fastest"
                     + (f" [{cell.ci[0]:.2f}, {cell.ci[1]:.2f}]" if cell.ci else "") + f"; {cell.how}")
    ci = r.ci95_ns
    lines += [f"median {fmt_time(r.median_ns)}" + (f" [{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else " (no interval)")
              + f", {n} samples" + (f" x {r.copies} copies" if (r.copies or 1) > 1 else ""),
              escape(f"run {r.run_id}, job {r.job_key}")]
    lines += [_MARKS[m] for m in cell.marks]
    for mark in cell.deviation.strip().removeprefix(DEVIATION_MARK).split(","):
        if mark:
            lines.append(_wrap(escape(footnotes.get(mark, f"{DEVIATION_MARK}{mark}"))))
    return "<br>".join(lines)


def _wrap(text: str, width: int = 70) -> str:
    out, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) > width:
            out.append(line)
            line = ""
        line += (" " if line else "") + word
    return "<br>".join(out + [line])


def footnote_texts(lines: list[str]) -> dict[str, str]:
    """"‡3 seal encode: ..." -> {"3": "‡3 seal encode: ..."}"""
    return {line.split(" ", 1)[0].removeprefix(DEVIATION_MARK): line for line in lines}


def _num(x) -> str:
    return f"{x:.0f}" if isinstance(x, (int, float)) else "?"


# A library keeps its colour in every figure, interactive and static, whatever subset a figure shows:
# the one its driver.json declares, else one of these, by name among the figure's undeclared ones.
_PALETTE = ["#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


def library_colours(ov: Overview) -> dict[str, str]:
    declared = {lib: m.colour for lib, m in manifests().items() if m.colour}
    others = sorted({lib for s in ov.setups for lib in s.libraries} - set(declared))
    return {**declared, **{lib: _PALETTE[i % len(_PALETTE)] for i, lib in enumerate(others)}}
