"""`fhemark choose FILE`: for a computation of the user's own, the smallest secure parameters each
library runs it correctly at, proven by running it, then measured side by side and ranked.

1. Requirements come from the program (requirements.py): levels, multiplications in sequence,
   rotations, values per evaluation, the plaintext bits the integers need.
2. Search, per (library, scheme): the advisor's candidates, smallest first (advisor.py, its rules
   of thumb), and the library's own choice for the same depth and scale where its driver offers
   one (PROTOCOL.md auto_params: OpenFHE's); each is run with the program itself in `repeats`
   fresh driver processes (fresh keys), SEARCH_SAMPLES samples each (one after a slow evaluation:
   budgets.verify_samples); it passes only when every
   output of every sample checks (CKKS: with the precision asked plus CKKS_SEARCH_MARGIN; BFV/BGV:
   exact, with NOISE_SEARCH_MARGIN of noise budget left); then the worst input found in a budgeted search
   (worst.py: the edges of the inputs' box, then a short search) must check too, against the requirement
   itself (`hardest`; the rule at CKKS_SEARCH_MARGIN). The smallest passing set is kept. Every library's
   rings come before any bootstrapping set or own choice (`_ways`, the --budget shared among them).
3. Measurement: every chosen set, and each scheme's largest chosen set on every library (so the
   user sees how much of a gap is the library and how much its parameter constraints), in one
   run of the user's store, every sample checked against the requirement itself.
4. Ranking by median latency with the 95% interval (overlaps marked indistinguishable), with
   memory, evaluation-key and client bytes and the margin; a snippet in each library's own API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

from ..drivers.limits import bootstrapping
from ..errors import UserError
from ..model import routines, ways
from ..model.requirements import Requirements, derive, for_all
from ..model.workload import INT_SCHEMES, Workload
from ..plan.suites import Case, Suite
from ..store.record import Record
from ..store.sqlite import Store
from . import booting, measuring, memory
from .advisor import MAX_TRIES, Need, candidates, short_of
from .budgets import evaluation_s, measure_policy, share, verify_samples, worst_budget
from .candidates import Answer, Candidate, set_text
from .preset_suite import integer_set
from .steering import Steering
from .worst import EDGES, SEARCH, Worst, per_evaluation, probe, runs

def asked(precision: float, security: int, table: str, insecure: bool = False) -> Need:
    """What the user asks of every scheme's need (`_need`): precision, security, and the tests' toy rings."""
    return Need("ckks", 0, precision, None, 1, security, table, insecure=insecure)


def _need(req: Requirements, ask: Need) -> Need:
    """The program's need (its requirements) at what the user asked."""
    return replace(ask, scheme=req.scheme, depth=req.depth, precision=ask.precision if req.scheme == "ckks" else None,
                   plain_bits=req.plain_bits, slots=req.slots or 1, magnitude_bits=req.magnitude_bits)


def search_space(w: Workload, req: Requirements, need: Need) -> list[dict]:
    """Parameter specs to try, smallest first."""
    if req.scheme in INT_SCHEMES:
        return [integer_set(w)]
    return list(candidates(need))


# One rule, so that a run-to-run spread smaller than the margin cannot flip a set that holds its
# requirement: a margin is demanded once, of the search's runs on drawn inputs (`repeats` fresh-key
# processes, the least sample of all), and every check after them is judged against the requirement
# itself: the worst input found (`hardest`, WORST_MARGIN = 0) and every sample of the measurement, which
# reports the margin it found (`margin`). So the measurement cannot reject a set the search admitted unless
# its keys read a margin lower, and no threshold sits above the requirement after the search (statistics,
# OpenFHE: its worst input read 21.0008 bits in one run and 20.99 in the next against a required 20 + 1,
# verified in one run and rejected in the next, holding 20 either way). A spread still moves a reading
# that lies within it of the threshold it faces: the search's (the requirement + the margin), where the set
# or its next larger one is admitted, both holding the requirement, and the rejection says it was the
# margin (`verify`); and the worst input's, the requirement, which that input meets under some keys only.
#
# CKKS: the search's precision above the requirement. Its few samples see less of the spread than the
# measurement's many (statistics, SEAL: every search sample at >= 22 bits, then one of ~40 measured at 20.8).
CKKS_SEARCH_MARGIN = 2.0
# BFV/BGV: the noise budget the search's samples must leave: the measurement's least reads up to 2 bits
# below the search's few (vote tally, OpenFHE BFV with BV at N = 4096, q 33+33: 2 bits left in the search,
# 0 in the measurement). Their worst input is judged exact (an integer is right or wrong).
NOISE_SEARCH_MARGIN = 3.0
# The worst input found must reach the requirement itself (the search's margin covers its keys' share of
# the spread; a margin here counted it twice); the set its shortfall steers to is asked for half a bit more, as
# a step to the requirement lands where the next keys flip it (depth 60, Lattigo, N = 2^17: short at 2^37,
# 15.99 bits of 16 at 2^39).
WORST_MARGIN, WORST_STEP_ROOM = 0.0, 0.5
SEARCH_SAMPLES = 2  # per fresh-key process
NOT_PLANNED = "not planned"  # a set the plan refuses for the computation (its values do not fit it)


def _suite(w: Workload, need: Need, cases: list[Case], policy: dict, threads: int = 1, margin: float = 0.0,
           ways: list[Workload | None] = ()) -> Suite:
    precision = {"min_precision_bits": (need.precision or 0.0) + margin if need.precision else 0.0}
    return measuring.suite(f"choose-{w.name}", cases, {**precision, **policy}, need.security, need.table, threads,
                           list({v.name: v for v in (w, *(v for v in ways if v is not None))}.values()), need.insecure)


def _case(w: Workload, library: str, scheme: str, spec: dict) -> Case:
    """The computation on one library and scheme at one parameter set."""
    return measuring.case(library, scheme, spec, [w.name])


def verify(w: Workload, need: Need, library: str, spec: dict, repeats: int,
           db: Store | None, samples: int = SEARCH_SAMPLES) -> tuple[str, Record | None]:
    """'' when the program passes its check in every repetition (fresh process, fresh keys, `samples`
    drawn inputs each) with the margin; else why not. The record says the margin reached."""
    policy = measuring.search_policy(repeats, samples)
    try:
        recs = measuring.run_suite(_suite(w, need, [_case(w, library, need.scheme, spec)], policy,
                                          margin=CKKS_SEARCH_MARGIN), [library], db)
    except UserError as exc:  # the set cannot be planned (the values do not fit it): a reason, not the end
        return f"{NOT_PLANNED}: {exc.problem}", None
    rec = next((r for r in recs if r.op == w.name), None)
    if rec is None:
        return "not run (the library does not offer this scheme here)", None
    if rec.status != "ok":
        why = f"{rec.status}: {' '.join((rec.error or '').split())}"  # whole: it attributes the refusal
        if need.precision and refusal_of(rec) == "precision_short":  # the margin's threshold, not the requirement's
            why += f" (the required {need.precision:g} + the search's margin of {CKKS_SEARCH_MARGIN:g})"
        return why, rec
    noise = rec.noise_budget_bits
    if need.scheme in ("bfv", "bgv") and noise is not None and noise < NOISE_SEARCH_MARGIN:
        return f"{noise:g} bits of noise budget left, below the search's {NOISE_SEARCH_MARGIN:g}-bit margin", rec
    return "", rec


def hardest(w: Workload, need: Need, library: str, spec: dict,
            budget: tuple[int, int] = (EDGES, SEARCH)) -> tuple[str, Worst | None, dict | None]:
    """'' when the worst input found at `spec` (worst.py: the edges of the inputs' box, then a short
    search, `budget` evaluations of each) still checks (CKKS: the precision asked, WORST_MARGIN being none;
    BFV/BGV: exact); else why not, with the refusal the search's steering reads where it is short of
    precision (as a record's would be)."""
    if need.scheme in INT_SCHEMES:
        return "", None, None
    want = (need.precision or 0.0) + WORST_MARGIN
    found = probe(w, need.scheme, library, spec, need.security, need.table, *budget, insecure=need.insecure,
                  below=want if need.scheme == "ckks" else None)
    if isinstance(found, str):
        return f"the worst input search failed: {found}", None, None
    if found.error.wrong:
        return f"wrong_result: {found.describe()}", found, None
    if need.scheme == "ckks" and found.precision_bits < want:
        return (f"precision {found.precision_bits:.1f} bits, below the required {want:g} at the worst input found "
                f"of {found.of()} ({found.how}; {found.relative_bits:.1f} bits relative, max error "
                f"{found.error.abs_error:.3g} in {found.error.output})"), found, \
            {"kind": "precision_short", "got": found.precision_bits, "need": want, "room": WORST_STEP_ROOM}
    return "", found, None


def refusal_of(rec: Record | None) -> str | None:
    """The kind of a record's refusal (PROTOCOL.md "Refusals"), None where it has none."""
    return (rec.refusal or {}).get("kind") if rec is not None else None


def choose(w: Workload, libraries: dict[str, tuple[str, ...]], precision: float | None, security: int, table: str,
           repeats: int, store: Store | None = None, verify_db: Store | None = None,
           say: Callable[..., None] = lambda stage, what, sets=0, total=None: None,
           auto: Callable[[str, Need, dict | None], dict | None] | None = None, threads: int = 1,
           objective: str = "latency", polynomial: tuple[str, ...] = (),
           at: tuple[tuple[str, str, dict], ...] = (), budget_s: float | None = None, insecure: bool = False) -> Answer:
    """`libraries`: each available library and the schemes it offers; `threads`: the cores the
    answer is for (the measurement runs at that count; whether a set is correct does not depend on it);
    `objective`: latency (one evaluation alone) or throughput (the measurement in throughput mode);
    `store`: where the measurement goes, `verify_db` the search's runs (None: in memory);
    `say(stage, what, sets, total)`: where it is; `sets` 1 for a set the search begins or the measurement
    has finished, `total` the sets the measurement will take (the search's is unknown: it stops at a pass);
    `polynomial`: the ways to evaluate the program's polynomials, each searched and ranked (ways.WAYS;
    none: as the program wrote them); `budget_s`: the search's time (no set is begun after it; what it
    verified is measured); `insecure`: the tests' toy rings (a set below `security` runs, marked insecure,
    and a library's bootstrapping set is tried on its smallest ring)."""
    end = time.monotonic() + budget_s if budget_s else None
    reqs = for_all(w)
    prec = float(precision if precision is not None else w.precision_bits)
    ans = Answer(w, reqs, prec, security, table, [], threads=threads, objective=objective, insecure=insecure)
    ask = asked(prec, security, table, insecure)
    run = _Run(ask, repeats, verify_db, say, auto)
    for scheme, req in reqs.items():
        libs = [lib for lib, schemes in libraries.items() if scheme in schemes]
        need = _need(req, ask).for_libraries(libs)
        space = search_space(w, req, need)
        if not space and not any(bootstrapping(lib, scheme) for lib in libs):  # nor bootstraps (booting.py)
            whose = f"{' or '.join(libs)} builds" if libs else "any library here builds"
            ans.impossible[scheme] = f"{w.name} on {scheme.upper()}: {short_of(need, whose)}"
            continue
        ans.chosen += _ways(w, scheme, libs, polynomial, run, end)
    if len(ans.impossible) == len(reqs):  # before any set is run, --at's included: a refusal runs and writes nothing
        raise UserError(f"impossible: {'; '.join(ans.impossible.values())}",
                        "lower the depth (fewer multiplications in sequence), the precision or the security level")
    for origin, scheme, spec in at:  # `at`: (origin, scheme, set) given as they are (expert.pinned)
        for lib in (lib for lib, schemes in libraries.items() if scheme in schemes and scheme in reqs):
            ans.chosen.append(_pinned(w, lib, scheme, spec, origin, ask, repeats, verify_db, say))
    _measure(ans, store, say)
    return ans


@dataclass(frozen=True)
class _Run:
    """What every set the search tries runs with (`auto`: the library's own choice of a ring, None: none)."""
    ask: Need
    repeats: int
    db: Store | None
    say: Callable[..., None]
    auto: Callable[[str, Need, dict | None], dict | None] | None = None


@dataclass
class _Way:
    """One library's way to run the program (`_plan`), before anything runs: its need there (with the levels
    the library's own routines consume: routines.py), the rings searched, its bootstrapping set (booting.py);
    `ring`, the rings' row once searched."""
    v: Workload
    lib: str
    need: Need
    space: list[dict]
    by: str | None
    placed: bool  # the program places its own bootstraps: only a bootstrapping set runs it
    boot: booting.Booted | str | None
    ring: Candidate | None = None
    booted: bool = False

    @property
    def origin(self) -> str:
        return "search" if self.by in (None, "library") else f"{self.lib}-{self.by.split('+')[0]}"

    def searches(self) -> bool:  # its rings are still to be searched
        return self.ring is None and bool(self.space) and not self.placed

    def boots(self) -> bool:
        """Its bootstrapping set is still to be tried: the program places bootstraps, or no ring at or below
        the set's holds the whole depth (the rings searched found none, or none queued is that small). At the
        same ring a bootstrapped program runs the ring's operations plus its bootstraps (Lattigo at depth 40:
        N = 2^16 holds it, 42 s an evaluation; each bootstrap there takes 17 s and gives back 9 levels)."""
        if self.booted or not isinstance(self.boot, booting.Booted):
            return False
        n = self.boot.spec["N"]
        if self.placed or self.ring is None:
            return self.placed or not any(s.get("N", 0) <= n for s in self.space)
        return not (self.ring.verified and self.ring.spec["N"] <= n)

    def costs(self) -> int:
        """The ways of it still to begin that take a share of the --budget: its rings, and its bootstrapping
        set where it is to be tried and predicted to fit this machine (else its row says so at once: OpenFHE's
        full-slot set, about 21 GB)."""
        if not self.boots():
            return int(self.searches())
        shape = memory.shape(self.boot.way, self.need.scheme)
        fits = not memory.too_large(memory.predict(self.lib, self.boot.spec, *shape), memory.available())
        return int(self.searches()) + int(fits)


def _plan(v: Workload, lib: str, scheme: str, ask: Need) -> _Way:
    req = derive(v, scheme)
    need = _need(req, ask).for_library(lib)
    if scheme == "ckks":
        need = replace(need, depth=max(need.depth, routines.levels(v.program(scheme), lib)))
    placed = booting.calls(v, scheme)
    return _Way(v, lib, need, search_space(v, req, need), ways.routine(v, scheme), placed,
                booting.way(v, lib, need, placed, CKKS_SEARCH_MARGIN))


def _ways(w: Workload, scheme: str, libs: list[str], polynomial: tuple[str, ...], run: _Run,
          end: float | None) -> list[Candidate]:
    """Every library's ways for one scheme: every library's rings first, then every bootstrapping set
    still worth trying, then each library's own choice of a ring. Under a --budget each ring search and
    bootstrapping set begun gets an even share of what is left (an unused share passes on), and the own
    choices what remains: depth 40 under 20 minutes, Lattigo's rings took the whole budget and OpenFHE's
    were never begun; depth 60 under 55, the rings took it and no bootstrapping set was begun."""
    plans = [_plan(v, lib, scheme, run.ask) for lib in libs
             for v in dict.fromkeys(ways.named(w, polynomial=p) for p in polynomial or (None,))]

    def left() -> int:
        return sum(p.costs() for p in plans)
    rows: list[Candidate] = []
    for i, p in enumerate(plans):
        found, plans[i] = _rings(p, run, share(end, left()) if p.searches() else end)
        rows += found
    for p in plans:
        rows += _booted(p, run, share(end, left()) if p.boots() else end)
    for p in plans:
        rows += _own(p, run, end)
    return rows


def _rings(way: _Way, run: _Run, deadline: float | None) -> tuple[list[Candidate], _Way]:
    """The library's rings searched for the way's program; where the library lacks a routine the program
    calls, fhemark's program of primitives in its place (ways.py), a way of its own, returned."""
    if way.placed:
        return [], way
    lib, need = way.lib, way.need
    if not way.space:
        way.ring = Candidate(lib, need.scheme, origin=way.origin, workload=way.v, routine=way.by, levels_needed=need.depth,
                             tried=[f"no ring {lib} builds holds it: {short_of(need, lib + ' builds')}"])
        return [way.ring], way
    c = _search(way.v, need, lib, way.space, run.repeats, run.db, run.say, origin=way.origin, deadline=deadline)
    c.workload, c.routine, c.levels_needed = way.v, way.by, need.depth
    if not c.verified and way.v.native and c.last_status == "unsupported" and way.by and "library" in way.by:
        run.say("searching parameters", f"{lib} {need.scheme}: fhemark's routines in place of the library's")
        found, instead = _rings(_plan(ways.named(way.v, native=False), lib, need.scheme, run.ask), run, deadline)
        if found:
            found[0].tried[:0] = [f"the library's routine: {why}" for why in c.tried]
        return found, instead
    way.ring = c
    return [c], way


def _booted(way: _Way, run: _Run, deadline: float | None) -> list[Candidate]:
    """The library's bootstrapping set's row (booting.py), or why it was not tried."""
    if way.boot is None:
        return []
    lib, scheme = way.lib, way.need.scheme
    if isinstance(way.boot, booting.Booted) and not way.boots():
        return [Candidate(lib, scheme, origin=f"{lib}-bootstrap", tried=[
            f"{set_text(way.boot.spec)}: not tried, {lib}'s ring of N = {way.ring.spec['N']} holds the whole depth "
            f"(bootstrapping pays where the depth needs a ring larger than its own)"])]
    way.booted = True
    # its program holds the ring's products and the bootstraps: at least as slow as the ring's evaluation
    slow = way.ring.eval_s if way.ring is not None else None
    return [booting.searched(way.boot, lib, scheme, way.by, lambda bw, bn, spec: _search(
        bw, bn, lib, [spec], run.repeats, run.db, run.say, origin=f"{lib}-bootstrap", deadline=deadline, eval_s=slow))]


def _own(way: _Way, run: _Run, deadline: float | None) -> list[Candidate]:
    """The library's own choice of a ring (PROTOCOL.md auto_params), where it offers one the search did not
    try; where the search found no set, it starts at the least scale its shortfalls asked."""
    c = way.ring
    if run.auto is None or c is None or not way.space:
        return []
    found = c.spec or ({"scale_bits": c.scale_floor} if c.scale_floor else None)
    extra = run.auto(way.lib, way.need, found)  # None: the library offers none
    if not extra or extra in way.space:
        return []
    run.say("searching parameters", f"{way.lib} {way.need.scheme}: the library's own choice N = {extra['N']}")
    x = _search(way.v, way.need, way.lib, [extra], run.repeats, run.db, run.say, origin=f"{way.lib}-auto",
                deadline=deadline)
    x.workload, x.routine, x.levels_needed = way.v, way.by, way.need.depth
    return [x]


def _pinned(w: Workload, lib: str, scheme: str, spec: dict, origin: str, ask: Need, repeats: int, db: Store | None,
            say: Callable[..., None]) -> Candidate:
    """A given set checked as a searched one is (verify, then the worst input found), and nothing
    else tried: where it fails, the reason is its row's."""
    need = _need(derive(w, scheme), ask)
    say("searching parameters", f"{lib} {scheme} {set_text(spec)} ({origin})", 1)
    why, _ = verify(w, need, lib, spec, repeats, db)
    worst = None
    if not why:
        why, worst, _ = hardest(w, need, lib, spec)
    return Candidate(lib, scheme, spec, origin, verified=not why, tried=[f"{set_text(spec)}: {why}"] if why else [],
                     worst=worst, workload=w, levels_needed=need.depth, pinned=True)


def _search(w: Workload, need: Need, lib: str, space: list[dict], repeats: int, db: Store | None,
            say: Callable[..., None], origin: str = "search", deadline: float | None = None,
            eval_s: float | None = None) -> Candidate:
    """The first set of `space` the program passes at, none begun after `deadline` (time.monotonic(): the
    search's --budget); what a failure measured steers the rest (steering.py). `eval_s`: an evaluation
    of the program as measured before this search (its first set's drawn samples follow from it)."""
    c = Candidate(lib, need.scheme, origin=origin)
    shape = memory.shape(w, need.scheme)
    steer = Steering(lib, need, list(space))
    samples, slow = verify_samples(eval_s or 0.0, SEARCH_SAMPLES)  # a set's drawn samples, and why fewer (budgets.py)
    while (spec := steer.next()) is not None and len(c.tried) < MAX_TRIES:
        if deadline is not None and time.monotonic() > deadline:
            c.tried.append(f"{set_text(spec)} and larger: not tried, the search's --budget was spent")
            break
        pred = memory.predict(lib, spec, *shape)
        if too_large := memory.too_large(pred, memory.available()):
            c.tried.append(f"{set_text(spec)}: {too_large}")
            # The ring's sets after it are larger; the next ring's need not be: its modulus holds more special
            # primes, so fewer key-switching digits (OpenFHE at depth 40: 41 digits at N = 2^16, 9 at 2^17).
            steer.unfit.add(spec["N"])
            continue
        say("searching parameters", f"{lib} {need.scheme} {set_text(spec)}", 1)
        t0, cut = time.monotonic(), slow
        why, rec = verify(w, need, lib, spec, repeats, db, samples)
        samples, slow = verify_samples(evaluation_s(rec, time.monotonic() - t0, repeats * samples), SEARCH_SAMPLES)
        refusal = rec.refusal if rec is not None and rec.status != "ok" else None
        if not why:
            c.eval_s = rec.median_ns / 1e9 if rec is not None and rec.median_ns else None
            per = per_evaluation(w, need.scheme, spec)
            budget, smaller = worst_budget(c.eval_s, per)
            say("searching parameters", f"{lib} {need.scheme} {set_text(spec)}: the worst input, "
                f"{runs(*budget, per)} evaluations")
            why, c.worst, refusal = hardest(w, need, lib, spec, budget)
            c.reduced = [x for x in (cut, smaller) if x]
        if not why:
            c.spec, c.verified, c.predicted = spec, True, pred
            break
        c.tried.append(f"{set_text(spec)}: {why}")
        c.last_status = rec.status if rec is not None else None
        c.last_refusal = (refusal or {}).get("kind")
        if not why.startswith(NOT_PLANNED) and steer.failed(spec, rec, refusal):
            break  # else a larger ring may hold what this one could not
    c.scale_floor = steer.scale_floor
    return c


def _measure(ans: Answer, store: Store | None, say: Callable[..., None]) -> None:
    """One run in the user's store: every verified set on its library, and every library at the
    largest verified set of its scheme (the shared set)."""
    w = ans.workload
    cases, shared = [], []
    ok = [c for c in ans.chosen if c.verified]
    for c in ok:
        cases += [_case(c.workload or w, c.library, c.scheme, c.spec)] + \
            ([measuring.case(c.library, c.scheme, c.spec, ["bootstrap"])] if c.bootstraps else [])  # one bootstrap alone
    for scheme, name in dict.fromkeys((c.scheme, (c.workload or w).name) for c in ok):
        # The libraries' own searches only, of one way: a library's automatic choice (OpenFHE's two special
        # primes) may be a set another library cannot build at all.
        mine = [c for c in ok if c.scheme == scheme and not c.origin.endswith("-auto") and not c.pinned
                and (c.workload or w).name == name]
        # nor is a set under a library's own key switching (OpenFHE's BV) one the others can build
        common = [c for c in mine if not c.spec.get("key_switching") and not c.spec.get("preset")]
        if scheme in INT_SCHEMES or len(mine) < 2 or not common:
            continue
        top = max(common, key=Candidate.size)
        for c in mine:
            if c.spec != top.spec:
                shared.append(Candidate(c.library, scheme, top.spec, "shared", verified=False, workload=c.workload,
                                        routine=c.routine, levels_needed=c.levels_needed))
                case = _case(c.workload or w, c.library, scheme, top.spec)
                if case not in cases:
                    cases.append(case)
    if not cases:
        return
    need = asked(ans.precision, ans.security, ans.table, ans.insecure)
    say("measuring", f"{len(cases)} sets, every sample checked", 0, len(cases))
    libs = sorted({c.libraries[0] for c in cases})
    policy, cut = measure_policy(ans)
    if cut:
        ans.reduced.append(cut)
    recs = measuring.run_suite(_suite(w, need, cases, policy, ans.threads, ways=[c.workload for c in ok]), libs, store,
                     progress=lambda what: say("measuring", what, 1))  # one job a set: one op, one library
    ans.run_id = recs[0].run_id if recs else None
    for c in ok + shared:
        c.record = next((r for r in recs if r.library == c.library and r.scheme == c.scheme
                         and r.op == (c.workload or w).name and _same(r.params, c.spec)), None)
        c.boot_record = next((r for r in recs if r.library == c.library and r.op == "bootstrap" and c.bootstraps
                              and _same(r.params, c.spec)), None)
    ans.shared = shared


def _same(asked: dict, spec: dict) -> bool:
    return all(asked.get(k) == v for k, v in spec.items() if k not in ("t_bits",))
