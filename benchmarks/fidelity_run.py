"""What the fidelity benchmarks share: one fhemark run of one library's jobs through the Python
API (Suite, plan.build, measure, a store of the caller's); the two sides (the library's own loop,
fhemark) run alternately in rounds, each round in a random order, under the host's measuring
lease; each side's readings pooled over the rounds and judged by floors (`judge`); the within-5%
share that the issue's goal reads, and how a benchmark that did not run says so (one line, a
non-zero exit)."""

from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterator

from fhemark.measure.affinity import measuring_cpus


class Failure(Exception):
    """Something did not run: one line for the user, exit status 1 (2 for setup problems)."""

    def __init__(self, line: str, code: int = 1):
        super().__init__(line)
        self.code = code


def first_of(lines: list[str]) -> str:
    """The first problem, and how many more there are."""
    return lines[0] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")


def exit_with(main: Callable[[], int]) -> None:
    """Run a benchmark's main: its status, or a Failure's one line on stderr and its code."""
    try:
        sys.exit(main())
    except Failure as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.code)


def run_fhemark(library: str, scheme: str, params: dict | str, ops: list[str], threads: int, policy: dict, db: Path,
                env: dict, name: str, between_jobs: Callable = lambda job: None,
                allow_insecure: bool = False) -> dict[str, dict]:
    """{op: record as the export writes it}; between_jobs(job) runs after each job's record is stored;
    allow_insecure: a library's own set that fhemark's estimate puts below 128 bits runs, marked."""
    from fhemark.measure import measure
    from fhemark.plan.jobs import build
    from fhemark.plan.suites import Suite
    from fhemark.store.sqlite import Store

    suite = Suite(name=name, threads=threads, policy=policy,
                  cases=[{"libraries": [library], "schemes": [scheme], "ops": ops, "params": [params]}])
    plan = build(suite, [library], allow_insecure=allow_insecure)
    store = Store(db)

    said: list[str] = []

    def progress(job, recs):
        r = recs[0]
        said.append(f"{job.op} {r.median_ns / 1e3:,.1f}" if r.median_ns else f"{job.op} {r.status}: {r.error}")
        between_jobs(job)

    t0 = time.monotonic()
    measured = measure(plan, store, env=env, on_record=progress)
    recs = {r.op: r.model_dump(exclude_unset=True) for r in measured.records}
    store.close()
    print(f"  fhemark {library} {scheme} ({policy.get('inputs', 'hot')} inputs), medians: {', '.join(said)} us "
          f"({time.monotonic() - t0:.1f} s)", flush=True)
    return recs


def within(ratios: list[float | None], tolerance: float = 0.05) -> str:
    """'k of n cells (p%) within ±5%': the share the fidelity goal is stated in."""
    got = [r for r in ratios if r]
    k = sum(abs(r - 1) <= tolerance for r in got)
    return f"{k} of {len(got)} cells ({100 * k / max(len(got), 1):.0f}%) within ±{100 * tolerance:.0f}%"


# -- interleaved rounds, judged by floors ------------------------------------------------------
Readings = dict[str, list[float]]  # one side's readings of one round: {benchmark: [ns, ...]}


def orders(rounds: int, seed: int = 0) -> list[tuple[str, str]]:
    """Which side goes first in each round, at random: a side that always ran first (or second)
    would meet the host's state after the other's every time, and the host's speed moves on a
    scale of seconds."""
    import random
    rng = random.Random(seed)
    return [("reference", "fhemark") if rng.random() < 0.5 else ("fhemark", "reference") for _ in range(rounds)]


def interleave(rounds: int, sides: dict[str, Callable[[int], Readings]], seed: int = 0, threads: int = 1) -> list[dict]:
    """Run the two sides ('reference', 'fhemark') alternately, `rounds` times, each round in its own
    random order, the reference on the core fhemark's drivers of `threads` threads measure on;
    sides[name](round) returns that round's readings. One dict a round: its order and both sides'
    readings."""
    if rounds < 4:  # one round: 4 of 20 SEAL floor ratios within 5% where 8 rounds gave 39 of 42
        print(f"note: {rounds} round(s): each side's floor rests on that few stretches of the host, and the floor "
              "intervals (which resample readings, not rounds) read narrower than they are; use 6 or more", flush=True)
    out = []
    for i, order in enumerate(orders(rounds, seed)):
        print(f" round {i + 1} of {rounds}: {' then '.join(order)}", flush=True)
        round_: dict = {"order": list(order)}
        for name in order:
            with on_the_measuring_core(threads) if name == "reference" else nullcontext():
                round_[name] = sides[name](i)
        out.append(round_)
    return out


@contextmanager
def on_the_measuring_core(threads: int = 1) -> Iterator[None]:
    """The library's own loop on the core fhemark's drivers measure on (fhemark.measure.affinity),
    this process and what it starts (Lattigo's `go test` binary inherits it): one side pinned and
    the other free would compare two cores' states, not two loops."""
    cpus = measuring_cpus(threads)
    if cpus is None:  # not pinned: neither are fhemark's drivers
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def pool(rounds: list[dict], side: str, key: str) -> list[list[float]]:
    """One side's readings of one benchmark, round by round (a round that read nothing: [])."""
    return [list(r[side].get(key) or []) for r in rounds]


def fast_rounds(by_round: list[list[float]]) -> int:
    """In how many rounds a side read the host's fast level at all (a reading within the floor's
    band of its fastest over every round). The bootstrap behind floor_ratio resamples readings, not
    rounds: a floor that rests on one round's moment reads narrower than it is, and this says so."""
    from fhemark.stats import FLOOR_BAND
    got = [x for r in by_round for x in r]
    if not got:
        return 0
    top = min(got) * FLOOR_BAND
    return sum(1 for r in by_round if r and min(r) <= top)


def judge(reference: list[list[float]], fhemark: list[list[float]]) -> dict:
    """fhemark against the reference from their per-round readings, pooled over the rounds.

    The answer is the ratio of FLOORS (fhemark's floor over the reference's; `fhemark.stats.floor`:
    the median of the readings within 1.1x of the fastest), not of medians: this host's speed
    comes in levels about 1.6x apart that change within tenths of a second to seconds, so a median
    says how often the host was slow while a side ran, and two sides measured at different moments
    differ by that alone (Lattigo's own CKKS Rescale read 7.0 ms, then 3.4 ms, minutes apart). The
    floor reads the host's fast level, which stays put; interleaving the rounds gives both sides
    the same stretch of the host to find it in. The interval and p are `floor_ratio`'s with
    another_run=False: the question is whether these two floors differ (p: how often floors this
    far apart arise from equal ones), not where another run's ratio would fall. The old design's
    estimator, medians pooled, is kept beside it, with the spread of its round-by-round values
    (what one unpaired run could have read); and, per side, the rounds that reached the fast level
    (`fast_rounds`)."""
    from fhemark.stats import floor, floor_ratio
    ref = [x for r in reference for x in r]
    fm = [x for r in fhemark for x in r]
    if not ref or not fm:
        return {"ratio": None, "ratio_ci95": None, "p": None, "rounds": 0, "reference_floor_ns": None,
                "reference_fast_rounds": 0, "fhemark_fast_rounds": 0,
                "fhemark_floor_ns": None, "median_ratio": None, "median_ratio_by_round": [],
                "reference_readings": len(ref), "fhemark_samples": len(fm)}
    fr = floor_ratio(fm, ref, another_run=False)
    by_round = [statistics.median(f) / statistics.median(r) for r, f in zip(reference, fhemark) if r and f]
    return {"reference_floor_ns": floor(ref), "fhemark_floor_ns": floor(fm), "ratio": fr.ratio,
            "reference_fast_rounds": fast_rounds(reference), "fhemark_fast_rounds": fast_rounds(fhemark),
            "ratio_ci95": list(fr.ci95) if fr.ci95 else None, "p": fr.p,
            "rounds": sum(1 for r, f in zip(reference, fhemark) if r and f),
            "reference_readings": len(ref), "fhemark_samples": len(fm),
            "reference_median_ns": statistics.median(ref), "fhemark_median_ns": statistics.median(fm),
            "median_ratio": statistics.median(fm) / statistics.median(ref), "median_ratio_by_round": by_round}


def judged_cells(j: dict, reference: str = "reference") -> dict:
    """judge()'s figures as a row's JSON fields, the reference side named `reference` (e.g. lattigo)."""
    return {f"{reference}_floor_ns": j["reference_floor_ns"], "fhemark_floor_ns": j["fhemark_floor_ns"],
            "ratio_floor": j["ratio"], "ratio_floor_ci95": j["ratio_ci95"], "p": j["p"], "rounds": j["rounds"],
            f"{reference}_fast_rounds": j["reference_fast_rounds"], "fhemark_fast_rounds": j["fhemark_fast_rounds"],
            f"{reference}_readings": j["reference_readings"], "fhemark_samples": j["fhemark_samples"],
            f"{reference}_median_ns": j.get("reference_median_ns"), "fhemark_median_ns": j.get("fhemark_median_ns"),
            "ratio_median_unpaired": j["median_ratio"], "ratio_median_by_round": j["median_ratio_by_round"]}


def fast_cell(j: dict, rounds: int) -> str:
    """'5/6' rounds at the fast level, reference then fhemark."""
    return f"{j['reference_fast_rounds']}/{j['fhemark_fast_rounds']} of {rounds}"


def ratio_cell(j: dict) -> str:
    """'1.02 [0.97-1.08]' or '-'."""
    if not j.get("ratio"):
        return "-"
    ci = j.get("ratio_ci95")
    return f"{j['ratio']:.2f}" + (f" [{ci[0]:.2f}-{ci[1]:.2f}]" if ci else " [too few]")


def median_cell(j: dict) -> str:
    """The old estimator: '1.10 (0.9-1.4)', pooled medians with the range of the per-round ones."""
    if not j.get("median_ratio"):
        return "-"
    rr = j["median_ratio_by_round"]
    return f"{j['median_ratio']:.2f}" + (f" ({min(rr):.2f}-{max(rr):.2f})" if len(rr) > 1 else "")


def row_cells(row: dict, reference: str = "reference") -> tuple[str, str, str, str]:
    """A written row's judgement as the table prints it (ratio, p, fast rounds, old median ratio); its
    reference side's fast rounds are under `<reference>_fast_rounds` (e.g. lattigo_fast_rounds)."""
    j = {"ratio": row["ratio_floor"], "ratio_ci95": row["ratio_floor_ci95"], "median_ratio": row["ratio_median_unpaired"],
         "median_ratio_by_round": row["ratio_median_by_round"], "fhemark_fast_rounds": row["fhemark_fast_rounds"],
         "reference_fast_rounds": row[f"{reference}_fast_rounds"]}
    return (ratio_cell(j), "-" if row["p"] is None else f"{row['p']:.2g}", fast_cell(j, row["rounds"]), median_cell(j))


def print_table(head: tuple[str, ...], lines: list[tuple], right: set[int]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]

    def fmt(row):
        return "  ".join(str(x).rjust(w) if i in right else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths)))
    print(fmt(head))
    print("  ".join("-" * w for w in widths))
    for ln in lines:
        print(fmt(ln))


def decided(judged: list[dict]) -> str:
    """How many ratios the interval tells from 1, and which way."""
    got = [j for j in judged if j.get("ratio_ci95")]
    slower = sum(j["ratio_ci95"][0] > 1 for j in got)
    faster = sum(j["ratio_ci95"][1] < 1 for j in got)
    return (f"{len(got) - slower - faster} of {len(got)} floor ratios' 95% intervals contain 1, "
            f"{slower} above (fhemark slower), {faster} below")


def lease(what: str):
    """The host's measuring lease, held across every round of both sides: the reference's loops
    measure too, and another fhemark run between two rounds would measure beside them."""
    from fhemark.measure.lease import hold
    return hold(what, lambda holder: print(f"waiting for the host's measuring lease ({holder}) ...", flush=True))
