"""Hand, compiler and expert: per workload, the hand-written rows (each library at the sets choose
measured), a compiler's rows (e.g. heir->lattigo at the compiler's own set and at fhemark's,
library_build.fhe_compiler, .params_from) and the expert's (a FHERMA challenge's published set, data/fherma.tsv,
measured by `choose --at fherma`), with the compiler's cost split in two ratios of medians:
parameters (compiler at its own set / compiler at fhemark's) and code (compiler at fhemark's set /
hand-written code of the library it targets at that set). Shown only where the store holds a
compiler's or an expert's row."""

from __future__ import annotations

import re

from ..advise.answer import eval_key_bytes
from ..advise.candidates import set_text
from ..advise.expert import rows as expert_rows
from ..analyse.select import latest
from ..store.record import Record
from .formats import fmt_bytes
from .tables import Table, cell, params_name, security_label

_SET_KEYS = ("N", "q_bits", "p_bits", "scale_bits", "t_bits")
# a compiler's row at fhemark's set with levels added for the compiler's layout (compile/measure.py)
_ADDED_LEVELS = re.compile(r"\+(\d+) levels$")


def compiler_of(r: Record) -> str | None:
    """The FHE compiler whose code the row ran (compile/records.py), or None for hand-written code."""
    return (r.library_build or {}).get("fhe_compiler")


def _set(p: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, (list, tuple)) else v for v in (p.get(k) for k in _SET_KEYS))


def _expert_sets() -> dict[tuple, str]:
    """(kernel, scheme, set) -> where the set is published, for every FHERMA row whose moduli are stated."""
    out = {}
    for row in expert_rows():
        spec = row.spec()
        if spec is not None:
            out[(row.kernel, row.scheme, _set(spec))] = f"FHERMA {row.kernel} ({row.source})"
    return out


def expert_of(r: Record, known: dict[tuple, str]) -> str | None:
    """Where `r`'s set is published, when it is an expert's set for its workload's FHERMA kernel."""
    kernel = (r.workload or {}).get("fherma")
    return known.get((kernel, r.scheme, _set(r.params))) if kernel else None


def _row(kind: str, r: Record, origin: str) -> list[str]:
    p = r.params
    levels = len(p["q_bits"]) - 1 if p.get("q_bits") else None
    log_qp = p.get("log_qp")
    prec = "-" if r.precision_bits is None else f"{r.precision_bits:.1f}"
    return [r.op, kind, r.library, origin, set_text(p) if p.get("q_bits") else params_name(r),
            "-" if log_qp is None else f"{log_qp:g}",
            "-" if levels is None else str(levels), security_label(r) if r.security_bits is not None else "-",
            cell(r), fmt_bytes(r.peak_rss_bytes), fmt_bytes(eval_key_bytes(r)), prec]


def _ratio(a: Record | None, b: Record | None) -> str:
    ok = a is not None and b is not None and a.status == b.status == "ok" and a.median_ns and b.median_ns
    return f"{a.median_ns / b.median_ns:.2f}" if ok else "-"


def _hand_at(r: Record, hand: list[Record]) -> Record | None:
    """The hand-written row at the set a compiler's row was given (without the levels it added)."""
    want = _set(r.params)
    more = _ADDED_LEVELS.search(r.params.get("name") or "")
    if more:  # the added primes are the last ones: the given set is the chain without them
        q = want[1][: len(want[1]) - int(more.group(1))]
        want = (want[0], q, *want[2:])
    return next((h for h in hand if _set(h.params) == want), None)


def tables(recs: list[Record]) -> list[Table]:
    recs = [r for r in latest(recs) if r.mode == "latency" and "/" not in r.op]
    known = _expert_sets()
    ops = sorted({r.op for r in recs if compiler_of(r) or expert_of(r, known)})
    if not ops:
        return []
    rows, gaps = [], []
    for op in ops:
        mine = [r for r in recs if r.op == op]
        hand = sorted((r for r in mine if not compiler_of(r) and not expert_of(r, known)),
                      key=lambda r: (r.library, r.params.get("log_qp") or 0))
        compiled = [r for r in mine if compiler_of(r)]
        rows += [_row("hand", r, "choose") for r in hand]
        rows += [_row("compiler", r, r.library_build.get("params_from", "-")) for r in compiled]
        rows += [_row("expert", r, expert_of(r, known)) for r in mine if expert_of(r, known)]
        for lib in sorted({r.library for r in compiled}):
            own = next((r for r in compiled if r.library == lib and r.library_build.get("params_from") ==
                        compiler_of(r)), None)
            target = lib.split("->")[-1]
            for r in compiled:
                if r.library != lib or r is own:
                    continue
                at = _hand_at(r, [h for h in hand if h.library == target])
                gaps.append([op, lib, r.library_build.get("params_from", "-"), _ratio(own, r), _ratio(r, at),
                             set_text(at.params) if at else "none measured"])
    out = [Table("Hand, compiler and expert", ["workload", "row", "library", "set from", "set", "log QP", "levels",
                                                "security", "latency [95% CI]", "peak memory", "eval keys",
                                                "precision bits"], rows,
                 "hand: each library at the sets choose measured; compiler: the compiler's generated code at its "
                 "own set and at fhemark's; expert: a published set (data/fherma.tsv); every output decrypted and "
                 "checked")]
    if gaps:
        out.append(Table("Hand, compiler and expert: what the compiler costs", ["workload", "compiler", "at fhemark's set",
                                                                                 "parameters", "code", "hand row"], gaps,
                         "parameters: the compiler's code at its own set / at fhemark's; code: the compiler's code "
                         "at fhemark's set / the hand-written code of the library it targets at that set (where "
                         "the compiler needed more levels, the hand row is at the set without them); ratios of "
                         "medians, above 1 slower"))
    return out
