"""How one slice of a job is measured and checked, in one driver process: fresh inputs for every
copy, copies per timed region calibrated from a warm-up, the stop rule on the interval, the depth
probe, and every decrypted output checked against the plaintext reference.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple

import numpy as np

from ..drivers.protocol import Capabilities, Effective, Pool, RunResult, Sample, Vector
from ..drivers.supervise import Driver
from ..errors import DriverError
from ..model.checks import check
from ..model.ops import RLWE, BenchOp
from ..model.program import Program, base_name
from ..model.semantics import Plain
from ..plan.jobs import Group, Job
from ..stats import MIN_CI_SAMPLES, summarize
from .pool import POOL_NOTE, WARM_ROUND, JobPairs, Kept, pick

WARM_ROUND_NS = 20e6  # a sample shorter than this is warmed up again in every round (WARM_ROUND samples)
HOT_MAX_NS = 3e6  # inputs: hot warms up the ops faster than this (as their cold calibration sample reads)


@dataclass
class Prepared:
    """A group whose driver answered setup: what jobs of the group need."""

    group: Group
    setup_id: str
    caps: Capabilities
    effective: Effective
    sizes: dict[str, int]
    plain: Plain
    setup_s: float  # wall time of the setup request: context and every key
    pools: dict[int, Kept] = field(default_factory=dict)  # kept by the driver process, by vector length
    programs: dict[str, Program] = field(default_factory=dict)  # by job key: built once per (job, setup)


PARALLELISM_MIN_NS = 1_000_000  # samples whose timed regions are shorter say nothing of parallelism


@dataclass
class Outcome:
    """What one job measured, before it is laid out as records."""

    samples: list[dict[str, float]] = field(default_factory=list)  # per sample: timed region -> ns per copy
    process: list[int] = field(default_factory=list)  # per sample: the driver process it came from
    round: list[int] = field(default_factory=list)  # per sample: the interleaved round (over all processes)
    scalars: list[dict] = field(default_factory=list)  # per sample: the scalars of every copy (e.g. rotation steps)
    warmup: list[dict[str, float]] = field(default_factory=list)
    copies: int = 0  # copies of the op per timed region (0: not calibrated yet)
    wall_per_sample: float = 0.0  # wall time of one copy of a sample, request included: sizes the batches
    met_target: int = 0  # consecutive checks at which the interval met the target
    activity: list[dict | None] = field(default_factory=list)
    overhead_ns: list[int] = field(default_factory=list)
    noise: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    max_error: float = 0.0
    sizes: dict[str, int] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)
    stop_reason: str = ""
    elapsed_s: float = 0.0
    # CPU and wall time summed over the timed regions of every sample whose driver reported its CPU
    # time (cpu_ns): their ratio is the parallelism the library really used.
    cpu_ns: float = 0.0
    cpu_wall_ns: float = 0.0
    depth: int | None = None          # depth probes: the largest k that decrypted correctly
    depth_limit: str | None = None    # and what happened at k + 1
    noise_by_depth: list[float] = field(default_factory=list)
    precision_before: list[float] = field(default_factory=list)  # of the input, where the program outputs "z0"
    throughput: dict | None = None  # throughput mode: the rate at the best k and how it was found
    # "hot": every timed region warmed up just before it (Program.warmed), one copy per region;
    # "cold": copies on operands all made before the region. Decided at calibration ("": not yet).
    input_state: str = ""
    pairs: JobPairs | None = None  # of the kept pool, in this driver process


def copies_for(job: Job, op: BenchOp, program: Program, t_op: float) -> int:
    """Copies of a fast op per timed region, each on fresh inputs, so one region lasts min_sample_us."""
    pol = job.policy
    return max(1, min(pol.max_iters, math.ceil(pol.min_sample_us * 1e3 / max(t_op, 1.0)))) \
        if op.repeatable(program) else 1


def measure_slice(drv: Driver, job: Job, op: BenchOp, prep: Prepared, out: Outcome, p: int, s: int) -> None:
    """Round s in driver process p of a job's samples. A fast op runs as k copies in one
    timed region, each copy on fresh inputs and each copy's output checked; the stop rule
    needs the interval at the target on two checks in a row, so that stopping at the first
    lucky look does not shrink the interval's coverage."""
    pol = job.policy
    rounds = pol.processes * pol.rounds  # every limit below is shared out over them
    r = p * pol.rounds + s
    # Inputs depend on the case and the round, never on the library: every library gets the
    # same vectors and scalars in the same order.
    rng = np.random.default_rng([pol.seed, int(job.input_key, 16) % 2**32, r])
    base = prep.programs[job.key]
    pooled = base.poolable() if job.scheme in RLWE and op.gen is None else []
    if pooled:
        base = base.pooled(pooled)
        out.notes.add(POOL_NOTE)

    # Noise, sizes and levels: read once per job, in its first request. Reading one can cost a
    # driver far more than the op (OpenFHE's noise budget: 0.13 s of serialization and Python NTTs
    # per reading at N = 8192, against a 50 us add): 11 s of the quick suite at one reading per
    # process. CKKS precision still comes from every checked output.
    facts_due = not out.copies

    def batch(count: int, k: int, warm: int = 0) -> tuple[list[dict[str, float]], list[dict[str, float]], list]:
        """One request: `warm` warm-up samples (their times apart), then `count` samples."""
        nonlocal facts_due
        facts, facts_due = facts_due, False
        program = base.replicate(k) if facts else replace(base.replicate(k), noise=[], sizes=[], levels=[])
        if (out.input_state or pol.inputs) == "hot":
            program = program.warmed()
        (got, scal), wall = run_checked(drv, job, op, prep, program,
                                        draw(job, op, prep, rng, warm + count, k, pooled, out, p), out)
        if not facts or not out.wall_per_sample:  # batches are sized from the cost of a copy alone
            out.wall_per_sample = wall / ((warm + count) * k)
        return got[:warm], got[warm:], scal[warm:]

    def keep(got: list[dict[str, float]], scal: list) -> None:
        out.samples += got
        out.process += [p] * len(got)
        out.round += [r] * len(got)
        out.scalars += scal

    if s == 0:
        drv.reset_peak()
    started = time.monotonic()
    n0 = len(out.samples)  # samples from earlier rounds
    warm_n = 0  # warm-up samples leading the slice's first request
    if not out.copies:  # calibrated once, in the first process, and kept for the whole job
        # The job's very first warm-up is a request of its own: it sizes the copies.
        warm, _, warm_scalars = batch(0, 1, max(pol.warmup, 1))
        if pol.warmup == 0:  # no warm-up asked for: the first sample counts
            keep(warm, warm_scalars)
        out.warmup = warm[: pol.warmup]
        t_op = float(np.median([total(w) for w in warm]))
        # A warm-up doubles an op's cost for what it buys: 10-30% on ops under a millisecond, 1-2%
        # on slower ones in SEAL (benchmarks/fidelity_seal.py, hot against cold), but 5-25% on
        # Lattigo's 1-3 ms ops (fidelity_lattigo.py, N = 2^14: CKKS mul_into 1.35 -> 1.03 of
        # Lattigo's own loop, rescale_into 1.23 -> 1.05; a cold sample reads them above 1 ms);
        # nothing on a keygen.
        out.input_state = "hot" if pol.inputs == "hot" and t_op < HOT_MAX_NS and op.group != "keygen" else "cold"
        out.copies = 1 if out.input_state == "hot" else copies_for(job, op, base, t_op)
    elif pol.warmup:
        # A fresh process warms up as the policy asks; every round of a cheap op, hot or cold, with
        # WARM_ROUND samples at least. The other libraries ran since, and the driver woke from
        # idle: with one request a round (quick suite, 3 samples a round) the round's first sample
        # read 13% slow in median and 83% at the 90th percentile (Lattigo, hot) after no warm-up,
        # 4% and 13% (cold) after one; after two, 0-2% and 10-22%, and the median interval
        # half-width of Lattigo's cases fell from 5.4-6.5% to 3.8-4.6%.
        warm_n = max(pol.warmup if s == 0 else 0, WARM_ROUND if _cheap(out) else 0)
    k = out.copies
    min_n, max_n = math.ceil(pol.min_samples / rounds), math.ceil(pol.max_samples / rounds)
    # The budget binds for slow operations once the rounds together hold enough samples for an
    # interval: min_samples is a wish, not a reason to spend 20 s on one key generation.
    floor_n = min(min_n, math.ceil(MIN_CI_SAMPLES / rounds))
    slice_s = pol.budget_s / rounds
    t_run = time.monotonic()
    while True:
        n = len(out.samples) - n0
        if n >= min_n:
            summary = summarize([total(x) for x in out.samples], out.process, out.round)
            met = summary.rel_ci_half_width is not None and summary.rel_ci_half_width <= pol.target_rel_ci
            out.met_target = out.met_target + 1 if met else 0
            if out.met_target >= 2:
                out.stop_reason = "target_ci"
                break
        left = slice_s - (time.monotonic() - t_run)
        if n >= floor_n and left <= 0:
            out.stop_reason = "budget"
            break
        if n >= max_n:
            out.stop_reason = "max_samples"
            break
        # One request for what the slice's budget holds (a request's fixed cost, its pool and its
        # decryptions, is paid once), at least up to the floor, at most ~0.5 s and 20 samples.
        per = max(out.wall_per_sample * k, 1e-6)
        fits = int(max(left, 0) / per) - warm_n
        want = max(1, floor_n - n, min(max_n - n, fits, 20, int(0.5 / per)))
        _, got, scal = batch(want, k, warm_n)
        warm_n = 0
        keep(got, scal)
    out.elapsed_s += time.monotonic() - started

class Drawn(NamedTuple):
    draws: list        # per sample, per copy: (input vectors, op scalars), what the checks read
    samples: list[Sample]
    pool: Pool | None  # the request's pool, when inputs are pooled


def draw(job: Job, op: BenchOp, prep: Prepared, rng: np.random.Generator, count: int, k: int,
         pooled: list[str] = (), out: Outcome | None = None, p: int = 0) -> Drawn:
    """`count` samples of k copies, each copy on inputs and scalars of its own. A pooled input
    (Program.pooled) is the sum of two of the pool's vectors (pool.pick), no pair twice, so every
    copy's operands are values of their own."""
    draws = [[(inputs(op, prep, job, rng), op.scalars(prep.plain, rng)) for _ in range(k)]
             for _ in range(count)]
    picks: list[list[dict]] = [[{} for _ in range(k)] for _ in range(count)]
    pool = None
    if pooled:
        picked, out.pairs = pick(prep, job, out.pairs, p, rng, count * k * len(pooled))
        # Every operand of every copy a pair of its own (x - y of one pair would be an exact zero,
        # which SEAL refuses to return).
        copies = (c for d, pk in zip(draws, picks) for c in zip(d, pk))
        for j, ((copy, _), names) in enumerate(copies):
            for i, v in enumerate(pooled):
                a, b = picked.pairs[j * len(pooled) + i]
                copy[v] = prep.plain.add(picked.vecs[a], picked.vecs[b])
                names.update({f"{v}~a": f"cpool.{a}", f"{v}~b": f"cpool.{b}"})
        pool = picked.pool
    suffix = suffix_of(k)
    samples = [Sample(inputs={suffix(n, i): Vector.of(v) for i, (vecs, _) in enumerate(d) for n, v in vecs.items()
                              if n not in pooled},
                      scalars={suffix(n, i): x for i, (_, sc) in enumerate(d) for n, x in [*sc.items(), *pk[i].items()]})
               for d, pk in zip(draws, picks)]
    return Drawn(draws, samples, pool)


def run_checked(drv: Driver, job: Job, op: BenchOp, prep: Prepared, program: Program,
                drawn: Drawn, out: Outcome) -> tuple[tuple[list[dict[str, float]], list], float]:
    """One request of `draw`'s samples to one driver, every output checked (`absorb`); and the
    request's wall time, which sizes later batches."""
    draws, samples, pool = drawn
    pol = job.policy
    if pool is not None and pool.id in drv.pools:
        pool = pool.named()  # the process kept it from an earlier request
    t0 = time.monotonic()
    raw = drv.request("run", timeout_s=pol.timeout_s, memory_limit_mb=pol.memory_limit_mb,
                      setup_id=prep.setup_id, program=program.wire(), samples=samples,
                      **({"pool": pool} if pool else {}))
    wall = time.monotonic() - t0
    if pool is not None and pool.id is not None:
        drv.pools.add(pool.id)
    return absorb(job, op, prep, program, draws, RunResult(**raw), out), wall


def absorb(job: Job, op: BenchOp, prep: Prepared, program: Program, draws: list, res: RunResult,
           out: Outcome) -> tuple[list[dict[str, float]], list[dict]]:
    """A driver's answer to `_draw`'s samples: every output of every copy checked, the facts kept;
    the times per copy, and the scalars drawn."""
    count, k = len(draws), len(draws[0])
    check_reply(job, program, res, count)
    suffix = suffix_of(k)
    outputs = list(dict.fromkeys(base_name(o) for o in program.outputs)) if k > 1 else program.outputs
    for d, smp in zip(draws, res.samples):  # every output is there (_check_reply)
        for i, (vecs, sc) in enumerate(d):
            got = {o: smp.outputs[suffix(o, i)] for o in outputs}
            check_copy(job, op, prep.plain, vecs, sc, got, out)
    out.overhead_ns.append(res.overhead_ns)
    for smp in res.samples:
        # The CPU clock is read outside the wall clock, through the driver's own language
        # (a Python call, a system call): microseconds that only a region of a millisecond
        # or more makes negligible (TenSEAL's 8 us encode regions read 1.5-2.7 "threads").
        if smp.cpu_ns and set(smp.cpu_ns) == set(smp.ns) and total(smp.ns) >= PARALLELISM_MIN_NS:
            out.cpu_ns += total(smp.cpu_ns)
            out.cpu_wall_ns += total(smp.ns)
    out.noise += [res.noise_budget_bits[n] for n in program.noise if n in res.noise_budget_bits]
    out.sizes.update({base_name(n): v for n, v in res.sizes_bytes.items()})
    out.levels.update({base_name(n): v for n, v in res.levels.items()})
    out.notes.update(res.notes)
    scal = [[sc for _, sc in d] for d in draws] if any(sc for d in draws for _, sc in d) else [None] * count
    return [{k_: v / k for k_, v in smp.ns.items()} for smp in res.samples], scal


def probe_depth(drv: Driver, job: Job, op: BenchOp, prep: Prepared, out: Outcome,
                reprepare: Callable[[], None]) -> None:
    """Run x * y^k for k = 1, 2, ... until the result stops decrypting
    correctly (noise) or the library refuses (levels): a measured limit."""
    rng = np.random.default_rng([job.policy.seed, int(job.input_key, 16) % 2**32])
    out.stop_reason = "depth_limit"
    drv.reset_peak()
    started = time.monotonic()
    out.depth = 0
    for k in range(1, job.policy.max_depth + 1):
        program = op.chain(job.scheme, k)
        vecs = inputs(op, prep, job, rng)
        sample = Sample(inputs={n: Vector.of(v) for n, v in vecs.items()})
        try:
            res = RunResult(**drv.request("run", timeout_s=job.policy.timeout_s,
                                          memory_limit_mb=job.policy.memory_limit_mb, setup_id=prep.setup_id,
                                          program=program.wire(), samples=[sample]))
            check_reply(job, program, res, 1)
            check_copy(job, op, prep.plain, vecs, {"depth": k}, res.samples[0].outputs, out)
        except DriverError as exc:
            if exc.kind not in ("wrong_result", "internal", "invalid_params"):
                raise
            out.depth_limit = f"at depth {k}: {exc.kind}: {exc.message}"
            if not drv.alive or prep.setup_id not in drv.setups:
                reprepare()
            break
        out.depth = k
        out.samples = [{"chain": total(res.samples[0].ns)}]
        out.noise_by_depth += [res.noise_budget_bits.get(n) for n in program.noise if n in res.noise_budget_bits]
        out.overhead_ns.append(res.overhead_ns)
    else:
        out.stop_reason = "max_depth"
    if out.depth == 0 and out.depth_limit is not None:
        # Not even one multiplication decrypts correctly: that is a failure, not depth 0.
        raise DriverError("wrong_result", f"no multiplication decrypted correctly ({out.depth_limit})")
    out.noise = out.noise_by_depth[-1:]
    out.elapsed_s = time.monotonic() - started


def inputs(op: BenchOp, prep: Prepared, job: Job, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if op.gen is not None:
        return {n: prep.plain.full(v) for n, v in op.gen(prep.plain, rng).items()}
    return {n: prep.plain.random(rng, job.slots) for n in op.inputs}

def _cheap(out: Outcome) -> bool:
    """A sample short enough that cold caches show in it (slower ones warm themselves up)."""
    return float(np.median([total(x) for x in out.samples or out.warmup])) * out.copies < WARM_ROUND_NS

def total(sample: dict[str, float]) -> float:
    """A sample's time: its timed regions summed (a pipeline's stages, a circuit's depths)."""
    return float(sum(sample.values()))

def check_copy(job: Job, op: BenchOp, plain: Plain, vecs: dict, scalars: dict, outputs: dict[str, Vector],
               out: Outcome) -> None:
    """Every checked output of one copy against its plaintext reference."""
    expected = reference(job, op, plain, vecs, scalars)
    for name, want in expected.items():
        if name not in outputs:
            raise DriverError("wrong_result", f"driver returned no output '{name}' to check")
        c = check(plain, want, outputs[name].array(), job.policy.min_precision_bits)
        if c.precision_bits is not None:
            out.precision.append(c.precision_bits)
            out.max_error = max(out.max_error, c.max_abs_error or 0.0)
        if not c.passed:
            raise DriverError("wrong_result", c.message + ("" if name == "z" else f" (output {name})"))
    if "z0" in outputs and "z0" not in expected:  # e.g. bootstrapping: how precise the input was
        before = check(plain, expected["z"], outputs["z0"].array(), 0.0)
        if before.precision_bits is not None:
            out.precision_before.append(before.precision_bits)


def reference(job: Job, op: BenchOp, plain: Plain, vecs: dict, scalars: dict) -> dict:
    """The plaintext reference of every checked output. A user's computation replays its own code
    here: what fails in it fails the job (workload_error), never the run."""
    if not (op.facts or {}).get("file"):
        return op.expected(plain, vecs, scalars)
    try:
        return op.expected(plain, vecs, scalars)
    except Exception as exc:  # noqa: BLE001 - the user's code
        raise DriverError("workload_error", f"{op.facts['file']}: {type(exc).__name__} while replaying {job.op} on "
                                            f"cleartext at {job.params.label()}: {' '.join(str(exc).split())[:200]}")


def suffix_of(k: int) -> Callable[[str, int], str]:
    """The name of copy i of a value when a region holds k copies (Program.replicate's naming)."""
    return (lambda n, i: f"{n}.{i}") if k > 1 else (lambda n, i: n)


def check_reply(job: Job, program: Program, res: RunResult, count: int) -> None:
    """A reply that lacks a sample, a region's time or an output is an error of the job: a
    missing time must never read as zero, a missing output never as unchecked."""
    if len(res.samples) != count:
        raise DriverError("internal", f"{job.library} returned {len(res.samples)} samples for {count}")
    want_ns, want_out = set(program.timed), set(program.outputs)
    for i, s in enumerate(res.samples):
        if set(s.ns) != want_ns:
            raise DriverError("internal", f"{job.library} sample {i}: times for {sorted(s.ns)}, "
                                          f"expected one per timed region {sorted(want_ns)}")
        # A region made at least one library call: no clock reads zero or less for it, and a result
        # timed at 0 ns would be ranked as free (recommend picked one "at 0 ns per evaluation").
        if any(v <= 0 for v in s.ns.values()) or any(v < 0 for v in s.cpu_ns.values()):
            raise DriverError("internal", f"{job.library} sample {i}: an impossible time {s.ns} (cpu {s.cpu_ns}): "
                                          "a region of library calls cannot take zero or negative time")
        if missing := want_out - set(s.outputs):
            raise DriverError("internal", f"{job.library} sample {i}: no output {sorted(missing)}")
