"""What changed between versions of a library: per library measured at two or more versions, each
version against the next, case by case (op and parameter set) with `compare`'s statistics and gate,
and the answer to "should I upgrade": which cases got faster or slower beyond the threshold."""

from __future__ import annotations

import re

from ..analyse.compare import CASE_THRESHOLD, FASTER, LIBRARY_THRESHOLD, SAME, SLOWER, Comparison, compare, host_diffs
from ..analyse.versions import base_library, version_of
from ..analyse.select import latest
from ..errors import UserError
from ..store.record import Record
from .formats import op_order
from .tables import Table, cell, params_name


def _order(version: str) -> tuple:
    """1.10.0 after 1.9.2: numbers by value, words (rc, dev) after the numbers they follow."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|[A-Za-z]+", version))


def version_sets(recs: list[Record]) -> dict[str, list[str]]:
    """Per library measured at two or more versions, its names (lib@version, or the bare pinned one)
    oldest first by the version each reports."""
    names: dict[str, dict[str, str]] = {}
    for r in recs:
        names.setdefault(base_library(r.library), {}).setdefault(r.library, version_of(r))
    return {lib: sorted(per, key=lambda n: (_order(per[n]), n)) for lib, per in sorted(names.items()) if len(per) > 1}


def _setup(r: Record) -> str:
    return f"{r.scheme.upper()} {params_name(r)}" + (f" / {r.vector_length} values" if r.vector_length else "")


def _ops(changes: list) -> str:
    """"CKKS n8192: mul_relin, rotate_1; BFV n4096: add": the cases' ops per setup, in catalog order."""
    by: dict[str, list[str]] = {}
    for c in sorted(changes, key=lambda c: (_setup(c.new), op_order(c.new.op))):
        by.setdefault(_setup(c.new), []).append(c.new.op)
    return "; ".join(f"{setup}: {', '.join(ops)}" for setup, ops in by.items())


def _upgrade(cmp: Comparison) -> str:
    """"faster: CKKS n8192: mul_relin. slower: ...": the cases beyond the gate, and how many stayed."""
    parts = [f"{verdict}: {_ops([c for c in cmp.changes if c.verdict == verdict])}"
             for verdict in (FASTER, SLOWER) if cmp.count(verdict)]
    rest = len(cmp.changes) - cmp.count(FASTER) - cmp.count(SLOWER)
    if not parts:
        return f"no case changed beyond the threshold ({rest} compared)"
    return ". ".join(parts + ([f"{rest} other case{'s' if rest != 1 else ''} not beyond the threshold"] if rest else []))


def _judged(recs: list[Record], old: str, new: str) -> tuple[Comparison, str] | None:
    """The two versions compared as `fhemark compare --versions old,new` would, and how: in one run
    (their turns interleaved) or in several (the host's change between them is not removed here)."""
    a, b = [r for r in recs if r.library == old], [r for r in recs if r.library == new]
    runs = {r.run_id for r in a + b}
    diffs = host_diffs(a[0].env, b[0].env)
    try:
        cmp = compare(a, b, a[0].env, b[0].env, other_host=True, versions=(old, new))
    except UserError:  # measured on no case in common: nothing to say of this pair
        return None
    how = ("measured in one run, taking turns" if len(runs) == 1 else
           f"measured in {len(runs)} runs: the host's change between them is not removed here "
           "(`fhemark compare BASE NEW --versions OLD,NEW` removes it with the other libraries' cases)")
    return cmp, how + (f"; different hosts: {'; '.join(diffs)}" if diffs else "")


def tables(recs: list[Record]) -> list[Table]:
    """The answer first (one row per pair of versions), then each pair's cases."""
    recs = latest(recs)
    summary, detail = [], []
    for lib, names in version_sets(recs).items():
        for old, new in zip(names, names[1:]):
            judged = _judged(recs, old, new)
            if judged is None:
                continue
            cmp, how = judged
            libwide = cmp.libraries[0] if cmp.libraries else None
            verdict = (f"{libwide.verdict}: median {libwide.ratio:.3f} over {libwide.cases} cases, "
                       f"sign test p {libwide.p_value:.2g}" if libwide else "-")
            v0, v1 = version_of(cmp.changes[0].base), version_of(cmp.changes[0].new)
            summary.append([lib, f"{v0} ({old})", f"{v1} ({new})", str(len(cmp.changes)), str(cmp.count(FASTER)),
                            str(cmp.count(SLOWER)), str(cmp.count(SAME)),
                            verdict, _upgrade(cmp)])
            rows = []
            for c in sorted(cmp.changes, key=lambda c: (c.new.scheme, params_name(c.new), op_order(c.new.op))):
                rows.append([_setup(c.new), c.new.op, cell(c.base), cell(c.new), c.ratio_text(),
                             "-" if c.p_value is None else f"{c.p_value:.3g}",
                             c.verdict + (f" ({c.why})" if c.why else "")])
            detail.append(Table(f"What changed between versions: {lib} {v0} -> {v1}",
                                ["scheme / params", "op", v0, v1, f"{v1} / {v0} [95% CI]", "p", "verdict"], rows,
                                f"{how}; ratio of floors, new / old, bootstrap 95% CI and p (as `fhemark compare`): "
                                f"faster or slower when p < 0.05 and the whole interval lies beyond "
                                f"{CASE_THRESHOLD:.0%}"))
    if not summary:
        return []
    return [Table("Should I upgrade? What changed between versions", ["library", "from", "to", "cases", "faster",
                                                                       "slower", "same", "library-wide", "which cases"],
                  summary, f"each version against the next one measured; a case is faster or slower when p < 0.05 and "
                           f"its whole 95% interval lies beyond {CASE_THRESHOLD:.0%}; library-wide: the median of its "
                           f"cases' ratios, a sign test over them and a {LIBRARY_THRESHOLD:.0%} threshold")] + detail
