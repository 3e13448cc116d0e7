"""Compare two runs case by case, for regression tracking.

A shared host slows an operation down in some of its samples, and how often changes from one
minute to the next; what stays is the operation's time in the host's fastest state, its floor
(stats.floor). So a case is judged on its floors: new over base, after removing the machine-wide
shift, estimated from the other libraries' cases (the median of their libraries' median floor
ratios, so that one library's own change neither hides itself nor moves the others). A change is
flagged only when the bootstrap of the two runs' samples says they differ (p < alpha) *and* the
whole interval of the ratio lies beyond the noise threshold (criterion's rule). Each library's
cases together give a library-wide verdict too (a sign test over its cases' corrected ratios),
which catches a change of a few percent that single cases are too noisy to show. The two have
thresholds of their own: a single case moves between two runs of the same code by more than its
interval says (a cheap op's cache state, a fast level of the host that one run never saw), a
library's median over dozens of cases far less. Cases match on the job key (the resolved case:
library, scheme, parameters, operation, vector length, sampling policy, threads),
so a library upgrade is compared with itself and a changed sampling policy is "not comparable"
rather than a false change. Two versions of a library (lib@version, or one name whose records report
different library_version) compare the same way, case by case where the job matches except for the
version (version_pairs): what `compare --versions` and the report's versions section judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np

from ..errors import UserError
from ..stats import floor, floor_ratio
from ..store.record import Record
from .select import contended, latest
from .versions import base_library, case_key, cell, version_of, version_pairs

# Environment facts that must match for timings to be comparable at all.
HOST_KEYS = (("cpu", "model"), ("cpu", "logical_cores"), ("threads",))

SLOWER, FASTER, SAME, FAILED, STILL_FAILING, FIXED, ADDED, REMOVED, SKIPPED = (
    "slower", "faster", "same", "failed", "still failing", "fixed", "added", "removed", "not compared")
# A library without the operation, or refusing the parameter set, in both runs: nothing to compare.
NOT_MEASURED = ("unsupported", "invalid_params", "insecure_params")


@dataclass(frozen=True)
class Change:
    label: str
    verdict: str
    base: Record | None
    new: Record | None
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    p_value: float | None = None
    why: str = ""

    def ratio_text(self) -> str:
        """"0.830 [0.804, 0.856]": the ratio with its 95% interval where it has one, as every table and
        note prints it ("-": no ratio)."""
        if not self.ratio:
            return "-"
        ci = f" [{self.ratio_ci[0]:.3f}, {self.ratio_ci[1]:.3f}]" if self.ratio_ci else ""
        return f"{self.ratio:.3f}{ci}"


@dataclass(frozen=True)
class LibraryChange:
    """One library's cases together, after the machine-wide shift: their median corrected ratio,
    how many cases, and a sign test's p over them."""

    library: str
    verdict: str
    ratio: float
    cases: int
    p_value: float
    shift: float  # the machine-wide shift removed from this library's cases (1.0: none)
    why: str = ""  # what a recheck read (compare --recheck)


@dataclass
class Comparison:
    changes: list[Change]
    host_diffs: list[str] = field(default_factory=list)  # accepted with --other-host: shown with the table
    libraries: list[LibraryChange] = field(default_factory=list)
    shift_source: str = ""  # how the machine-wide shift was estimated, or why it was not
    edited: list[str] = field(default_factory=list)  # user's computations measured from different file bytes
    versions: list[str] = field(default_factory=list)  # "openfhe 1.5.1 -> 1.6.1 (12 cases)": the versions compared

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.changes)

    @property
    def geomean(self) -> float | None:
        """Geometric mean of new/base over the cases timed in both runs."""
        r = [c.ratio for c in self.changes if c.ratio]
        return float(math.exp(np.mean(np.log(r)))) if r else None

    @property
    def exit_status(self) -> int:
        """0 nothing worse, 1 a case got slower, 2 a case that passed in the baseline failed."""
        if self.count(FAILED):
            return 2
        return 1 if self.count(SLOWER) or any(lib.verdict == SLOWER for lib in self.libraries) else 0


def label(r: Record) -> str:
    p = r.params
    slots = f" {r.vector_length} values" if r.vector_length else ""
    return f"{r.library} {r.scheme.upper()} {p.get('name') or 'N=%d' % p['N']}{slots} {r.op}"


def host_diffs(base_env: dict, new_env: dict) -> list[str]:
    out = []
    for path in HOST_KEYS:
        a, b = base_env, new_env
        for k in path:
            a, b = (a or {}).get(k), (b or {}).get(k)
        if a != b:
            out.append(f"{'.'.join(path)}: {a} vs {b}")
    return out


def _usable(r: Record) -> bool:
    return r.status == "ok" and r.check_passed is not False


def compare_case(base: Record | None, new: Record | None, threshold: float, alpha: float, shift: float = 1.0,
                 beside: int = 0) -> Change:
    """`shift`: the host's change to remove, read from `beside` other libraries measured on the same
    op in the same turns (0: from the library's other cases, or none)."""
    lab = label(new or base)
    if base is None:
        return Change(lab, ADDED, None, new)
    if new is None:
        return Change(lab, REMOVED, base, None)
    if not _usable(new):
        why = f"{new.status}: {new.error or ''}".strip()
        if not _usable(base):  # known before: reported, but not what this comparison is judging
            return Change(lab, SKIPPED if new.status in NOT_MEASURED else STILL_FAILING, base, new, why=why)
        return Change(lab, FAILED, base, new, why=why)
    if not _usable(base):
        return Change(lab, FIXED, base, new, why=f"was {base.status}")
    if base.deviations != new.deviations:
        # The library now times different work for this op (PROTOCOL.md boundaries): another case.
        return Change(lab, SKIPPED, base, new, why=f"different work timed: {_work(base)} -> {_work(new)}")
    if new.depth is not None:  # a depth probe: the measured depth is the result, not a time
        d0, d1 = base.depth, new.depth
        verdict = SAME if d1 == d0 else FAILED if d1 < d0 else FIXED
        return Change(lab, verdict, base, new, why=f"depth {d0} -> {d1}")
    a, b = np.asarray(base.samples_ns, float), np.asarray(new.samples_ns, float) / shift
    if a.size == 0 or b.size == 0:
        return Change(lab, SKIPPED, base, new, why="no samples")
    # The shift read from k other libraries is itself uncertain: the median of k ratios each as
    # uncertain as this one has about pi/2k of its variance.
    widen = math.sqrt(1 + math.pi / 2 / beside) if beside else 1.0
    fr = floor_ratio(b, a, another_run=False, widen=widen)
    if fr.ci95 is None:
        return Change(lab, SAME, base, new, fr.ratio, None, None,
                      f"{a.size} vs {b.size} samples: too few for an interval")
    (lo, hi), p = fr.ci95, fr.p
    if p < alpha and lo > 1 + threshold:
        verdict = SLOWER
    elif p < alpha and hi < 1 - threshold:
        verdict = FASTER
    else:
        verdict = SAME
    busy = [f"{side} run on a busy host" for side, r in (("base", base), ("new", new)) if contended(r)]
    if busy and verdict != SAME:
        # Another process took a core while one of the runs measured it (the record's ~): a floor
        # read then is the host's, not the library's (A/A pairs of the quick suite with a test suite
        # running beside them: 13 of 15 flagged cases were so). Said, and left out of the gate.
        return Change(lab, SKIPPED, base, new, fr.ratio, (lo, hi), p,
                      f"read {verdict} ({fr.ratio:.3f}) but {' and '.join(busy)}: rerun on a quiet host to judge it")
    return Change(lab, verdict, base, new, fr.ratio, (lo, hi), p, "; ".join(busy))


def _work(r: Record) -> str:
    return "; ".join(f"{op}: {text}" for op, text in sorted(r.deviations.items())) or "canonical"


# Default noise thresholds, from A/A pairs of the quick suite on this project's 2-core VM (six pairs
# of two runs of the same code, 275 cases each, benchmarks/aa_compare.py): at 2% a case threshold
# flagged 1-10 cases a pair and every pair exited 1; at 5%, 0-1 a pair, and 1-5 in six later pairs
# (hot ops under 0.2 ms and Lattigo's key switching, whose run-to-run level moved 15-60%). The
# library-wide median stays at 2%: a 5% change of one library is caught there (tests/test_compare.py).
CASE_THRESHOLD = 0.05
LIBRARY_THRESHOLD = 0.02


def _names(recs: list[Record]) -> str:
    return ", ".join(sorted({r.library for r in recs})) or "none"


def _versions_line(pairs: list[tuple[Record, Record]]) -> list[str]:
    """"openfhe 1.5.1 (openfhe@1.5.1) -> 1.6.1 (openfhe@1.6.1): 12 cases" per pair of versions."""
    count: dict[tuple, int] = {}
    for b, n in pairs:
        k = (base_library(n.library), version_of(b), b.library, version_of(n), n.library)
        count[k] = count.get(k, 0) + 1
    return [f"{lib} {v0} ({name0}) -> {v1} ({name1}): {n} case{'s' if n != 1 else ''}"
            for (lib, v0, name0, v1, name1), n in sorted(count.items())]


def _versions_label(b: Record, n: Record) -> str:
    """A case of two versions names both: `openfhe 1.5.1 -> 1.6.1 CKKS ... mul`."""
    rest = label(n)[len(n.library):]
    return f"{base_library(n.library)} {version_of(b)} -> {version_of(n)}{rest}"


def compare(base_recs: list[Record], new_recs: list[Record], base_env: dict, new_env: dict,
            threshold: float = CASE_THRESHOLD, alpha: float = 0.05, other_host: bool = False,
            library_threshold: float = LIBRARY_THRESHOLD, versions: tuple[str, str] | None = None) -> Comparison:
    """`versions` (old name, new name): judge only that library's cases at those two versions (the
    other libraries' cases measured in both runs only give the machine-wide shift). Without it,
    cases of two versions of a library pair up where nothing else pairs them (version_pairs)."""
    base_l, new_l = latest(base_recs), latest(new_recs)
    base = {(r.job_key, r.op): r for r in base_l}
    new = {(r.job_key, r.op): r for r in new_l}
    pairs = version_pairs(base_l, new_l, versions)
    if versions is not None:
        # Controls: the other libraries' cases, where the runs are two (a run against itself would
        # read the shift from identical samples: 1 exactly, and say it removed something).
        controls = {k for k in base.keys() & new.keys() if base[k].run_id != new[k].run_id
                    and base_library(new[k].library) != base_library(versions[1])}
        base = {k: base[k] for k in controls}
        new = {k: new[k] for k in controls}
    judged: set[tuple] = set()  # with `versions`: the only cases judged
    for b, n in pairs:
        base.pop((b.job_key, b.op), None)  # no longer "removed" and "added": one case at two versions
        new.pop((n.job_key, n.op), None)
        k = ("versions", case_key(n), n.op)
        base[k], new[k] = b, n
        judged.add(k)
    if versions is not None and not pairs:
        raise UserError(f"no case of {versions[0]} in the baseline matches one of {versions[1]} in the new run "
                        f"(baseline: {_names(base_l)}; new run: {_names(new_l)}): the comparison would judge nothing",
                        "name two versions the runs measured on the same cases, as --versions OLD,NEW")
    # A bare name whose version moved between the runs (the pin upgraded) is a version pair too.
    pairs += [(base[k], new[k]) for k in base.keys() & new.keys()
              if k[0] != "versions" and version_of(base[k]) != version_of(new[k])]
    diffs = host_diffs(base_env, new_env)
    if diffs and not other_host:
        raise UserError(f"the runs were measured on different hosts ({'; '.join(diffs)}): their timings do not compare",
                        "rerun both on one machine, or pass --other-host to compare anyway (marked)")
    edited = edited_files(base.values(), new.values())
    _something_in_common(base, new, edited)
    # A library measured at another version changed on purpose: it tells nothing of the machine.
    upgraded = {n.library for _, n in pairs}
    shifts, source = machine_shift(base, new, upgraded)
    if pairs and not shifts and all(b.run_id == n.run_id for b, n in pairs):
        source = "none to remove: the versions were measured in one run, taking turns"
    local = case_shifts(base, new, upgraded)
    if local:
        source = _join(f"per case: the median floor ratio of the other libraries measured on the same op in the "
                       f"same turns ({len(local)} cases); elsewhere " + (source or "none"))
    keys = [k for k in list(base) + [k for k in new if k not in base] if versions is None or k in judged]
    changes = [_edited_case(compare_case(base.get(k), new.get(k), threshold, alpha,
                                         *local.get(k, (shifts.get((new.get(k) or base[k]).library, 1.0), 0))), edited)
               for k in keys]
    moved = {id(n) for _, n in pairs}
    changes = [replace(c, label=_versions_label(c.base, c.new)) if c.new is not None and id(c.new) in moved else c
               for c in changes]
    return Comparison(changes, diffs, library_changes(changes, shifts, library_threshold, alpha), source,
                      list(edited.values()), _versions_line(pairs))


def _something_in_common(base: dict, new: dict, edited: dict) -> None:
    """A gate that judged nothing must not pass: an empty run (interrupted, refused) or another suite's
    run would otherwise read "N removed", exit 0."""
    if base.keys() & new.keys():
        return
    if edited:
        raise UserError(f"the runs measured different versions of the same computation: workload file "
                        f"{'; '.join(edited.values())}: the comparison would judge nothing",
                        "compare runs of the same file contents (restore the file and run it again, or save the "
                        "edited file's run as a new baseline)")
    raise UserError(f"the runs have no case in common ({len(base)} in the baseline, {len(new)} in the new run): "
                    "the comparison would judge nothing",
                    "compare a run with one of the same suite (same library, scheme, parameters, op, policy, threads)")


def _file(r: Record) -> tuple[str, str] | None:
    w = r.workload or {}
    return (w["workload"], w["file"]) if w.get("file") and w.get("workload") else None


def edited_files(base: Iterable[Record], new: Iterable[Record]) -> dict[tuple[str, str], str]:
    """The user's computations (by name and file) that the two runs measured from different bytes:
    their cases are no pair, whatever their names say."""
    def digests(recs: Iterable[Record]) -> dict[tuple[str, str], str]:
        return {f: r.workload.get("file_sha256") or "" for r in recs if (f := _file(r)) is not None}
    a, b = digests(base), digests(new)
    return {f: f"{f[1]} ({f[0]}: sha256 {a[f]} in the baseline, {b[f]} in the new run)"
            for f in a.keys() & b.keys() if a[f] != b[f]}


def _edited_case(c: Change, edited: dict[tuple[str, str], str]) -> Change:
    """An added or removed case of an edited computation says why it has no pair."""
    f = _file(c.new or c.base)
    if f in edited and c.verdict in (ADDED, REMOVED):
        return Change(c.label, c.verdict, c.base, c.new, why=f"workload file edited between the runs: {edited[f]}")
    return c


MIN_LIBRARY_CASES = 3  # a library's median ratio from fewer cases says little of the machine


def _timed_pair(b: Record | None, n: Record | None) -> bool:
    return b is not None and n is not None and _usable(b) and _usable(n) and n.depth is None \
        and bool(b.samples_ns) and bool(n.samples_ns) and b.deviations == n.deviations


def machine_shift(base: dict[tuple, Record], new: dict[tuple, Record], upgraded: Iterable[str] = ()
                  ) -> tuple[dict[str, float], str]:
    """Per library, the machine-wide shift to remove from its cases: the median of the other
    libraries' median log floor ratios (new / base), an `upgraded` library (another version in the
    new run) never among them. With one library only there is nothing to tell the machine from the
    library by, and nothing is removed."""
    by_lib: dict[str, list[float]] = {}
    for k in base.keys() & new.keys():
        if _timed_pair(base[k], new[k]):
            ratio = floor(new[k].samples_ns) / floor(base[k].samples_ns)
            by_lib.setdefault(new[k].library, []).append(math.log(ratio))
    medians = {lib: float(np.median(v)) for lib, v in by_lib.items() if len(v) >= MIN_LIBRARY_CASES}
    if len(medians) < 2:
        return {}, ("not removed: one library only, so a machine-wide shift cannot be told from its own change"
                    if by_lib else "")
    controls = {lib: [m for other, m in medians.items() if other != lib and other not in upgraded] for lib in by_lib}
    shifts = {lib: math.exp(float(np.median(ms))) for lib, ms in controls.items() if ms}
    if not shifts:
        return {}, "not removed: every library but one was measured at another version"
    skipped = sorted(set(upgraded) & medians.keys())
    return shifts, (f"removed: each library's cases divided by the median of the other libraries' median floor ratios "
                    f"({', '.join(f'{lib} x{math.exp(m):.3f}' for lib, m in sorted(medians.items()))})"
                    + (f", never from {', '.join(skipped)} (another version)" if skipped else ""))


def case_shifts(base: dict[tuple, Record], new: dict[tuple, Record], upgraded: Iterable[str] = ()
                ) -> dict[tuple, tuple[float, int]]:
    """Per case, the host's change between the runs as the libraries measured beside it on the same
    op saw it: the median of their floor ratios (new / base), and how many. Libraries take turns
    on an op in the same rounds, so a minute in which the host never ran fast raises every one of
    their floors together (an A/A pair of the quick suite: one library's BFV keygens 1.4-2.0x
    slower in every library at once); removing it leaves what changed in this library alone."""
    ratios: dict[tuple, dict[str, float]] = {}
    for k in base.keys() & new.keys():
        if _timed_pair(base[k], new[k]):
            r = new[k]
            ratios.setdefault(cell(r), {})[r.library] = floor(r.samples_ns) / floor(base[k].samples_ns)
    out = {}
    for k in base.keys() & new.keys():
        others = [v for lib, v in ratios.get(cell(new[k]), {}).items() if lib != new[k].library and lib not in upgraded]
        if others:
            out[k] = (math.exp(float(np.median(np.log(others)))), len(others))
    return out


def _sign_p(k: int, n: int) -> float:
    """Two-sided sign test: k of n cases above 1."""
    tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def library_changes(changes: list[Change], shifts: dict[str, float], threshold: float,
                    alpha: float) -> list[LibraryChange]:
    """Each library's corrected ratios together: slower (faster) when most cases moved one way (sign
    test p < alpha) and their median moved beyond the threshold."""
    by_lib: dict[str, list[float]] = {}
    for c in changes:
        if c.ratio is not None:
            by_lib.setdefault(c.new.library, []).append(c.ratio)
    out = []
    for lib, ratios in sorted(by_lib.items()):
        r = np.asarray(ratios)
        up, n = int((r > 1).sum()), int((r != 1).sum())
        p, med = _sign_p(up, n) if n else 1.0, float(np.median(r))
        verdict = SLOWER if p < alpha and med > 1 + threshold else FASTER if p < alpha and med < 1 - threshold else SAME
        out.append(LibraryChange(lib, verdict, med, len(ratios), p, shifts.get(lib, 1.0)))
    return out


RECHECK_CONTROLS = 3  # per library: unflagged cases a recheck measures again, for its machine-wide shift
RECHECK_LIBRARY = 12  # per library flagged as a whole: its cases measured again (a sign test over 12 reaches p = 5e-4)


def recheck_keys(cmp: Comparison) -> tuple[list[str], list[str]]:
    """What a recheck measures again: the job keys of the cases flagged slower or faster, and per
    library unflagged cases with the narrowest intervals in the new run: RECHECK_CONTROLS, the
    controls the recheck's machine-wide shift is estimated from (as this comparison's was from
    every case), or RECHECK_LIBRARY of a library flagged as a whole, for its verdict again."""
    flagged = list(dict.fromkeys(c.new.job_key for c in cmp.changes if c.verdict in (SLOWER, FASTER)))
    whole = {lib.library for lib in cmp.libraries if lib.verdict in (SLOWER, FASTER)}
    if not flagged and not whole:
        return [], []
    steady: dict[str, list[Record]] = {}
    for c in cmp.changes:
        if c.verdict == SAME and c.ratio is not None and c.new.job_key not in flagged:
            steady.setdefault(c.new.library, []).append(c.new)
    controls = [r.job_key for lib, recs in steady.items() for r in sorted(
        recs, key=lambda r: r.rel_ci_half_width or math.inf)[:RECHECK_LIBRARY if lib in whole else RECHECK_CONTROLS]]
    return flagged, list(dict.fromkeys(controls))


def confirmed(first: Comparison, again: Comparison, run_ref: str) -> Comparison:
    """The first comparison with each flagged case judged once more, on its recheck (the same
    baseline against a new measurement): it stays slower or faster only when the recheck says so
    too, and fails when the recheck failed; otherwise it is same, with what the recheck read. A
    single run's bad minutes on a shared host move one measurement, a real change moves both."""
    rechecked = {(c.new.job_key, c.new.op): c for c in again.changes if c.new is not None}
    out = []
    for c in first.changes:
        if c.verdict not in (SLOWER, FASTER):
            out.append(c)
            continue
        r = rechecked.get((c.new.job_key, c.new.op))
        if r is None or r.verdict == FAILED or r.ratio_ci is None:
            why = f"recheck {run_ref}: " + (f"{r.verdict} {r.why}".strip() if r else "not measured again")
            out.append(replace(c, verdict=FAILED if r and r.verdict == FAILED else c.verdict, why=_join(c.why, why)))
        else:
            read = f"recheck {run_ref} read {r.ratio_text()}"
            out.append(replace(c, why=_join(c.why, f"confirmed: {read}")) if r.verdict == c.verdict
                       else replace(c, verdict=SAME, why=_join(c.why, f"not confirmed: {read}")))
    again_libs = {lib.library: lib for lib in again.libraries}
    libs = [lib if lib.verdict not in (SLOWER, FASTER) else _library_again(lib, again_libs.get(lib.library), run_ref)
            for lib in first.libraries]
    shift = f"recheck {run_ref}: {again.shift_source}" if again.shift_source else ""
    return replace(first, changes=out, libraries=libs, shift_source=_join(first.shift_source, shift))


def _library_again(lib: LibraryChange, again: LibraryChange | None, run_ref: str) -> LibraryChange:
    if again is None:
        return replace(lib, why=f"recheck {run_ref}: not measured again")
    read = f"recheck {run_ref} read {again.ratio:.3f} over {again.cases} cases, p {again.p_value:.2g}"
    return replace(lib, why=f"confirmed: {read}") if again.verdict == lib.verdict else \
        replace(lib, verdict=SAME, why=f"not confirmed: {read}")


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
