"""`fhemark choose FILE`: for a computation of the user's own, the smallest secure parameters each
library runs it correctly at, proven by running it, then measured side by side and ranked.

1. Requirements come from the program (requirements.py): levels, multiplications in sequence,
   rotations, values per evaluation, the plaintext bits the integers need.
2. Search, per (library, scheme): the advisor's candidates, smallest first (advisor.py, its rules
   of thumb), and the library's own choice for the same depth and scale where its driver offers
   one (PROTOCOL.md auto_params: OpenFHE's); each is run with the program itself in `repeats`
   fresh driver processes (fresh keys), SEARCH_SAMPLES samples each; it passes only when every
   output of every sample checks (CKKS: with the precision asked plus CKKS_SEARCH_MARGIN; BFV/BGV:
   exact, with MARGIN_BITS of noise budget left). The smallest passing set is kept.
3. Measurement: every chosen set, and each scheme's largest chosen set on every library (so the
   user sees how much of a gap is the library and how much its parameter constraints), in one
   run of the user's store, every sample checked against the requirement itself.
4. Ranking by median latency with the 95% interval (overlaps marked indistinguishable), with
   memory, evaluation-key and client bytes and the margin; a snippet in each library's own API.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..analyse import ratios
from ..errors import UserError
from ..model.requirements import Requirements, for_all
from ..model.workload import INT_SCHEMES, Workload, WorkloadRef
from ..plan.suites import Case, Suite, add_workload
from ..stats import FloorRatio
from ..store.record import Record
from ..store.sqlite import Store
from . import measuring
from .advisor import MARGIN_BITS, MAX_TRIES, Need, candidates
from .recommend import amortised

EVAL_KEYS = ("relin_keys", "galois_keys", "server_key", "bootstrapping_key", "keyswitching_key")
# Larger sets will not help: the library lacks an op, fails on its own, or the program is wrong for it
# (internal: e.g. a scale mismatch the program made, which no parameter set changes; workload_error: the
# computation itself failed at this ring, and a larger one will not mend it).
STOP = ("unsupported", "crashed", "timeout", "out_of_memory", "internal", "workload_error")


@dataclass
class Candidate:
    library: str
    scheme: str
    spec: dict | None = None
    origin: str = "search"      # search | <library>-auto (its own choice) | shared
    verified: bool = False
    tried: list[str] = field(default_factory=list)   # why each smaller set failed
    record: Record | None = None  # the measurement at `spec`
    within_best: bool = False
    vs_best: FloorRatio | None = None    # its floor over the best's, with the interval for another run
    snippet: str | None = None

    @property
    def label(self) -> str:
        return f"{self.library} {self.scheme.upper()}"

    def log_qp(self) -> int:
        return sum(self.spec.get("q_bits", [])) + sum(self.spec.get("p_bits", [])) if self.spec else 0

    def size(self) -> tuple:
        return (self.spec.get("N") or 0, self.log_qp()) if self.spec else (math.inf,)


@dataclass
class Answer:
    workload: Workload
    requirements: dict[str, Requirements]
    precision: float
    security: int
    table: str
    chosen: list[Candidate]              # every (library, scheme) searched
    shared: list[Candidate] = field(default_factory=list)
    run_id: str | None = None
    threads: int = 1                     # the measurement's thread count (the search runs on one)
    objective: str = "latency"           # or throughput: measured k at once, ranked by the host's rate
    impossible: dict[str, str] = field(default_factory=dict)  # scheme -> why no ring here holds the program

    def timed(self, c: Candidate) -> Record:
        """What ranks a candidate: its record, or under the throughput objective its record costed at
        the host's time per evaluation at saturation (recommend.amortised)."""
        return amortised(c.record) if self.objective == "throughput" else c.record

    def ranked(self) -> list[Candidate]:
        ok = sorted((c for c in self.chosen if _ok(c)), key=lambda c: ratios.speed(self.timed(c)))
        if ok:
            best = self.timed(ok[0])
            for c in ok:
                c.within_best = ratios.within(self.timed(c), best)
                c.vs_best = ratios.versus(self.timed(c), best)
        return ok

    def excluded(self) -> list[Candidate]:
        return [c for c in self.chosen if not _ok(c)]


def _ok(c: Candidate) -> bool:
    r = c.record
    return c.verified and r is not None and r.status == "ok" and r.median_ns is not None


# The common presets (params.py) a `run --workload` uses when no --params is given: the first
# whose chain holds the program (CKKS levels; BFV/BGV multiplications in sequence, t of 20 bits).
PRESET_REACH = (("c8192", 2, 2), ("c16384", 7, 5))  # (name, CKKS levels, BFV/BGV multiplications)


def preset_suite(workloads: list[Workload], params: list[str | dict] | None) -> Suite:
    """A suite that runs the loaded workloads on every library with each scheme they name: at the
    given presets, or at the smallest common preset that holds each scheme's program."""
    cases = []
    for w in workloads:
        for scheme, req in for_all(w).items():
            if scheme in INT_SCHEMES:
                sets: list = [_integer_set(w)]
            elif params:
                sets = list(params)
            else:
                reach = [name for name, lv, mu in PRESET_REACH if req.depth <= (lv if scheme == "ckks" else mu)]
                if not reach:
                    raise UserError(f"{w.source or w.name}: {w.name} on {scheme.upper()} needs depth {req.depth}, more than "
                                    "the common presets hold", f"run `fhemark choose {w.source or 'FILE'}` to find "
                                    "parameters for it, or give --params")
                sets = reach[:1]
            cases.append(Case(schemes=[scheme], params=sets, ops=[w.name]))
    found: dict[str, WorkloadRef] = {}
    for w in workloads:
        add_workload(found, w.ref)
    return Suite(name="-".join(w.name for w in workloads)[:100], threads=1,
                 policy=measuring.MEASURE, cases=cases, workloads=list(found.values()))


def _integer_set(w: Workload) -> dict:
    """TFHE-family integers: the library's default set at the workload's width (no search: the
    library's preset is its parameter choice, every operation bootstrapped)."""
    return {"preset": "default", "bits": w.bits or 32}


def _need(w: Workload, req: Requirements, precision: float, security: int, table: str) -> Need:
    return Need(req.scheme, req.depth, precision if req.scheme == "ckks" else None, req.plain_bits,
                req.slots or 1, security, table, req.magnitude_bits)


def search_space(w: Workload, req: Requirements, need: Need) -> list[dict]:
    """Parameter specs to try, smallest first."""
    if req.scheme in INT_SCHEMES:
        return [_integer_set(w)]
    return list(candidates(need))


# The search asks CKKS for this much precision above the requirement: its few samples see less of
# the spread than the measurement's many (statistics, SEAL: every search sample at >= 22 bits, then
# one of ~40 measured at 20.8), and the measurement checks every sample against the requirement.
CKKS_SEARCH_MARGIN = 2.0
SEARCH_SAMPLES = 2  # per fresh-key process
NOT_PLANNED = "not planned"  # a set the plan refuses for the computation (its values do not fit it)


def _suite(w: Workload, need: Need, cases: list[Case], policy: dict, threads: int = 1, margin: float = 0.0) -> Suite:
    precision = {"min_precision_bits": (need.precision or 0.0) + margin if need.precision else 0.0}
    return measuring.suite(f"choose-{w.name}", cases, {**precision, **policy}, need.security, need.table, threads,
                           [w])


def _case(w: Workload, library: str, scheme: str, spec: dict) -> Case:
    """The computation on one library and scheme at one parameter set."""
    return measuring.case(library, scheme, spec, [w.name])


def verify(w: Workload, need: Need, library: str, spec: dict, repeats: int,
           db: Store | None) -> tuple[str, Record | None]:
    """'' when the program passes its check in every repetition (fresh process, fresh keys) with
    the margin; else why not. The record says the margin reached."""
    policy = measuring.search_policy(repeats, SEARCH_SAMPLES)
    try:
        recs = measuring.run_suite(_suite(w, need, [_case(w, library, need.scheme, spec)], policy,
                                          margin=CKKS_SEARCH_MARGIN), [library], db)
    except UserError as exc:  # the set cannot be planned (the values do not fit it): a reason, not the end
        return f"{NOT_PLANNED}: {exc.problem}", None
    rec = next((r for r in recs if r.op == w.name), None)
    if rec is None:
        return "not run (the library does not offer this scheme here)", None
    if rec.status != "ok":
        return f"{rec.status}: {' '.join((rec.error or '').split())[:160]}", rec
    noise = rec.noise_budget_bits
    if need.scheme in ("bfv", "bgv") and noise is not None and noise < MARGIN_BITS:
        return f"{noise:g} bits of noise budget left, below the {MARGIN_BITS:g}-bit margin", rec
    return "", rec


def margin(c: Candidate, precision: float) -> float | None:
    """What the measurement left to spare: CKKS, precision bits above the requirement; BFV/BGV, noise
    budget bits (None where the record has neither)."""
    r = c.record
    if r is None:
        return None
    if c.scheme == "ckks":
        return r.precision_bits - precision if r.precision_bits is not None else None
    return r.noise_budget_bits


def choose(w: Workload, libraries: dict[str, tuple[str, ...]], precision: float | None, security: int, table: str,
           repeats: int, store: Store | None = None, verify_db: Store | None = None,
           say: Callable[..., None] = lambda stage, what, sets=0, total=None: None,
           auto: Callable[[str, Need, dict | None], dict | None] | None = None, threads: int = 1,
           objective: str = "latency") -> Answer:
    """`libraries`: each available library and the schemes it offers; `threads`: the cores the
    answer is for (the measurement runs at that count; whether a set is correct does not depend on it);
    `objective`: latency (one evaluation alone) or throughput (the measurement in throughput mode);
    `store`: where the measurement goes, `verify_db` the search's runs (None: in memory);
    `say(stage, what, sets, total)`: where it is; `sets` 1 for a set the search begins or the measurement
    has finished, `total` the sets the measurement will take (the search's is unknown: it stops at a pass)."""
    reqs = for_all(w)
    prec = float(precision if precision is not None else w.precision_bits)
    ans = Answer(w, reqs, prec, security, table, [], threads=threads, objective=objective)
    for scheme, req in reqs.items():
        need = _need(w, req, prec, security, table)
        space = search_space(w, req, need)
        if not space:
            ans.impossible[scheme] = (f"{w.name} on {scheme.upper()} needs {need.describe()}, and no ring here holds "
                                      f"it at {security}-bit security ({table})")
            continue
        for lib, schemes in libraries.items():
            if scheme not in schemes:
                continue
            c = _search(w, need, lib, space, repeats, verify_db, say)
            ans.chosen.append(c)
            extra = auto(lib, need, c.spec) if auto is not None else None  # None: the library offers none
            if extra and extra not in space:
                say("searching parameters", f"{lib} {scheme}: the library's own choice N = {extra['N']}")
                alt = _search(w, need, lib, [extra], repeats, verify_db, say, origin=f"{lib}-auto")
                ans.chosen.append(alt)
    if len(ans.impossible) == len(reqs):
        raise UserError(f"impossible: {'; '.join(ans.impossible.values())}",
                        "lower the depth (fewer multiplications in sequence), the precision or the security level")
    _measure(ans, store, say)
    return ans


def _search(w: Workload, need: Need, lib: str, space: list[dict], repeats: int, db: Store | None,
            say: Callable[..., None], origin: str = "search") -> Candidate:
    """The first set of `space` the program passes at. What a failure measured steers the search:
    a ring the library refuses as insecure (OpenFHE sizes its own special primes) is left for the
    next one, and a CKKS set short of precision by d bits moves the scale up by at least d."""
    c = Candidate(lib, need.scheme, origin=origin)
    refused: set[int] = set()
    scale_floor = 0
    for spec in space:
        if len(c.tried) >= MAX_TRIES:
            break
        if spec.get("N") in refused or (spec.get("scale_bits") or 0) < scale_floor:
            continue
        say("searching parameters", f"{lib} {need.scheme} {_short(spec)}", 1)
        why, rec = verify(w, need, lib, spec, repeats, db)
        if not why:
            c.spec, c.verified = spec, True
            break
        c.tried.append(f"{_short(spec)}: {why}")
        if why.startswith(NOT_PLANNED):
            continue  # a larger ring may hold what this one could not
        if rec is None or rec.status in STOP:
            break
        if rec.status == "insecure_params" and spec.get("N"):
            refused.add(spec["N"])
        short = PRECISION_SHORT.search(why)
        if short and spec.get("scale_bits"):
            scale_floor = spec["scale_bits"] + math.ceil(float(short.group(2)) - float(short.group(1)))
    return c


# checks.py's words for a CKKS output short of its precision
PRECISION_SHORT = re.compile(r"precision (-?[\d.]+) bits, below the required ([\d.]+)")


def plaintext_text(spec: dict) -> str:
    """A set's plaintext side: t's bits (BFV/BGV) or the scale (CKKS)."""
    return f"t {spec['t_bits']} bits" if spec.get("t_bits") else f"scale 2^{spec.get('scale_bits')}"


def _short(spec: dict) -> str:
    if "preset" in spec:
        return f"preset {spec['preset']} ({spec.get('bits')} bits)"
    return (f"N = {spec['N']}, q = {'+'.join(map(str, spec['q_bits']))}, P = {'+'.join(map(str, spec['p_bits']))}, "
            f"{plaintext_text(spec)}")


def _measure(ans: Answer, store: Store | None, say: Callable[..., None]) -> None:
    """One run in the user's store: every verified set on its library, and every library at the
    largest verified set of its scheme (the shared set)."""
    w = ans.workload
    cases, shared = [], []
    ok = [c for c in ans.chosen if c.verified]
    for c in ok:
        cases.append(_case(w, c.library, c.scheme, c.spec))
    for scheme in dict.fromkeys(c.scheme for c in ok):
        # The libraries' own searches only: a library's automatic choice (OpenFHE's two special
        # primes) may be a set another library cannot build at all.
        mine = [c for c in ok if c.scheme == scheme and c.origin == "search"]
        if scheme in INT_SCHEMES or len(mine) < 2:
            continue
        top = max(mine, key=Candidate.size)
        for c in mine:
            if c.spec != top.spec:
                shared.append(Candidate(c.library, scheme, top.spec, "shared", verified=False))
                case = _case(w, c.library, scheme, top.spec)
                if case not in cases:
                    cases.append(case)
    if not cases:
        return
    need = Need("ckks", 0, ans.precision, None, 1, ans.security, ans.table)
    say("measuring", f"{len(cases)} sets, every sample checked", 0, len(cases))
    libs = sorted({c.libraries[0] for c in cases})
    policy = {**measuring.MEASURE, "mode": ans.objective}
    recs = measuring.run_suite(_suite(w, need, cases, policy, ans.threads), libs, store,
                     progress=lambda what: say("measuring", what, 1))  # one job a set: one op, one library
    ans.run_id = recs[0].run_id if recs else None
    for c in ok + shared:
        c.record = next((r for r in recs if r.library == c.library and r.scheme == c.scheme
                         and _same(r.params, c.spec)), None)
    ans.shared = shared


def _same(asked: dict, spec: dict) -> bool:
    return all(asked.get(k) == v for k, v in spec.items() if k not in ("t_bits",))


# -- what the answer says -------------------------------------------------------------------------

def eval_key_bytes(rec: Record) -> int | None:
    sizes = rec.sizes_bytes
    found = [sizes[k] for k in EVAL_KEYS if isinstance(sizes.get(k), int)]
    return sum(found) if found else None


def client_bytes(w: Workload, rec: Record) -> int | None:
    """Bytes a client sends (its encrypted inputs, fresh) and receives (the outputs) per evaluation."""
    sizes = rec.sizes_bytes
    prog = w.program(rec.scheme)
    sent = sum(1 for s in prog.steps if s["op"] in ("encrypt_pk", "encrypt_sk"))
    fresh = sizes.get("ciphertext")
    out = [v for k, v in sizes.items() if k.startswith("output:")]
    if fresh is None or not out:
        return None
    return sent * fresh + len(prog.outputs) * out[0]


def levels_available(c: Candidate, req: Requirements) -> int | None:
    """CKKS: the chain's levels below the top; BFV/BGV: the multiplications in sequence the set was
    proven to run (by running this program, with noise budget to spare); integers: unbounded
    (every operation bootstraps), reported as the need."""
    if not c.spec:
        return None
    if c.scheme == "ckks":
        return len(c.spec["q_bits"]) - 1
    return req.depth if c.verified else None


def to_json(ans: Answer) -> dict:
    def cand(c: Candidate) -> dict:
        r = c.record
        req = ans.requirements[c.scheme]
        spec = c.spec or {}
        return {"library": c.library, "scheme": c.scheme, "origin": c.origin,
                "params": {k: spec.get(k) for k in ("N", "q_bits", "p_bits", "t_bits", "scale_bits", "preset", "bits")
                           if spec.get(k) is not None} | ({"t": ((r.effective_params if r else None) or {}).get("t")}
                                                          if c.scheme in ("bfv", "bgv") else {}),
                "security_bits": r.security_bits if r else None, "security": r.security if r else None,
                "verified": c.verified, "levels_needed": req.depth, "levels_available": levels_available(c, req),
                "median_ns": r.median_ns if r else None, "ci95_ns": r.ci95_ns if r else None,
                "peak_rss_bytes": r.peak_rss_bytes if r else None,
                "eval_key_bytes": eval_key_bytes(r) if r else None,
                "client_bytes": client_bytes(ans.workload, r) if r else None,
                "margin": margin(c, ans.precision), "p_fail_log2": r.p_fail_log2 if r else None,
                "within_best": c.within_best, "ratio_to_best": c.vs_best.ratio if c.vs_best else None,
                "ratio_to_best_ci95": c.vs_best.ci95 if c.vs_best else None, "snippet": c.snippet,
                "run_id": r.run_id if r else None,
                "threads": r.threads if r else None, "threads_honoured": r.threads_honoured if r else None,
                "parallelism": r.parallelism if r else None,
                **({"batch": r.batch, "throughput_per_s": r.throughput_per_s, "throughput_ci95": r.throughput_ci95}
                   if r and r.batch is not None else {}),  # a throughput measurement's
                "job_key": r.job_key if r else None, "status": r.status if r else None, "rejected_smaller": c.tried}
    return {"workload": ans.workload.name, "source": ans.workload.source,
            "requirements": {s: {**r.to_json(), "precision_bits": ans.precision if s == "ckks" else None}
                             for s, r in ans.requirements.items()},
            "security": {"min_bits": ans.security, "table": ans.table}, "threads": ans.threads,
            "objective": ans.objective,
            "cost_model": "measured: each candidate ran the whole program; " + (
                "ranked by throughput at saturation (throughput_per_s; k evaluations at once)"
                if ans.objective == "throughput" else "latency is the program's median"),
            "candidates": [cand(c) for c in ans.ranked()],
            "excluded": [{**cand(c), "reason": _why_excluded(c)} for c in ans.excluded()],
            "shared": [cand(c) for c in ans.shared if c.record], "impossible": ans.impossible,
            "run_id": ans.run_id}


def _why_excluded(c: Candidate) -> str:
    if not c.verified:
        return "no set passed: " + "; ".join(c.tried[-2:]) if c.tried else "not searched"
    r = c.record
    if r is None:
        return "not measured"
    return f"{r.status}: {r.error or ''}".strip()


def write_snippets(ans: Answer, folder: Path) -> None:
    """A ready-to-use context for every ranked candidate, in its library's own API (snippets.py)."""
    from . import snippets
    ranked = ans.ranked()
    if not ranked:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {folder}: cannot create the folder ({exc.strerror or exc})", "choose another --out")
    for c in ranked:
        r = c.record
        params = {**c.spec, **({"t": r.effective_params["t"]} if (r.effective_params or {}).get("t") else {})}
        header = (f"fhemark choose {ans.workload.source or ans.workload.name}: {c.label}, {_short(c.spec)}; "
                  f"verified by running the program in fresh-key processes, every output checked; "
                  f"run {ans.run_id}, median {r.median_ns / 1e6:.3f} ms")
        try:
            where = folder if c.origin == "search" else folder / c.origin  # one file name per library and scheme
            c.snippet = str(snippets.write(c.library, c.scheme, params, where, header=header))
        except (KeyError, ValueError, NotImplementedError):  # a library without a snippet form here
            c.snippet = None
