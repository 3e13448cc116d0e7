"""One request of samples to a driver, every output checked: how many copies of the op one timed
region holds, fresh inputs drawn for every copy (pooled ciphertext operands included), the reply
checked for every sample, time and output it owes, and every decrypted output of every copy
checked against its plaintext reference. Every mode of measurement sends its samples through here.
"""

from __future__ import annotations

import math
import time
from typing import Callable, NamedTuple, Sequence

import numpy as np

from ..drivers.protocol import Pool, RunResult, Sample, Vector
from ..drivers.supervise import Driver
from ..errors import DriverError
from ..model.checks import check, received
from ..model.ops import BenchOp
from ..model.program import Program, base_name
from ..model.semantics import Plain
from ..plan.jobs import Job
from .pool import pick
from .prepared import Outcome, Prepared, total

PARALLELISM_MIN_NS = 1_000_000  # samples whose timed regions are shorter say nothing of parallelism


def copies_for(job: Job, op: BenchOp, program: Program, t_op: float) -> int:
    """Copies of a fast op per timed region, each on fresh inputs, so one region lasts min_sample_us."""
    pol = job.policy
    return max(1, min(pol.max_iters, math.ceil(pol.min_sample_us * 1e3 / max(t_op, 1.0)))) \
        if op.repeatable(program) else 1


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


def inputs(op: BenchOp, prep: Prepared, job: Job, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if op.gen is not None:
        return {n: prep.plain.full(v) for n, v in op.gen(prep.plain, rng).items()}
    return {n: prep.plain.random(rng, job.slots) for n in op.inputs}


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
    """A driver's answer to `draw`'s samples: every output of every copy checked, the facts kept;
    the times per copy, and the scalars drawn."""
    count, k = len(draws), len(draws[0])
    check_reply(job, program, res, count)
    suffix = suffix_of(k)
    outputs = list(dict.fromkeys(base_name(o) for o in program.outputs)) if k > 1 else program.outputs
    for d, smp in zip(draws, res.samples):  # every output is there (check_reply)
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
            short = None if c.precision_bits is None or not math.isfinite(c.max_abs_error or 0.0) else \
                {"kind": "precision_short", "got": round(c.precision_bits, 3), "need": job.policy.min_precision_bits}
            raise DriverError("wrong_result", c.message + ("" if name == "z" else f" (output {name})"), short)
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


class Error(NamedTuple):
    """How far one sample's decrypted outputs are from their reference: the output furthest off."""

    abs_error: float   # CKKS: its largest absolute error (0: exact and right)
    rel_error: float   # that error over the output's largest |reference| (the error where it is 0)
    output: str
    wrong: str = ""    # BFV/BGV: the check's words for a wrong output ('' when every output is right)


def run_given(drv: Driver, job: Job, op: BenchOp, plain: Plain, setup_id: str, program: Program,
              given: list[tuple[dict, dict]], width: int = 0, blocks: Sequence[int] = ()) -> list[list[Error]]:
    """One request of chosen inputs (each sample's vectors and scalars, one copy each), not drawn:
    every output checked against its reference, and each sample's error kept rather than judged
    (the worst input search, advise/worst.py, compares them). `width` > 0: sample i holds blocks[i]
    inputs side by side, one per `width` slots (a program that keeps slots apart computes each in its
    own), and each block's error is its own; else one error a sample. The policy's timeout holds for
    each sample of the request."""
    samples = [Sample(inputs={n: Vector.of(v) for n, v in vecs.items()}, scalars=sc) for vecs, sc in given]
    # The policy's limit is one evaluation's: a request of several (a search's round) gets it for each,
    # or a deep program's 160 s bootstrapped evaluations time out four to a request.
    raw = drv.request("run", timeout_s=job.policy.timeout_s * len(given), memory_limit_mb=job.policy.memory_limit_mb,
                      setup_id=setup_id, program=program.wire(), samples=samples)
    res = RunResult(**raw)
    check_reply(job, program, res, len(given))
    out = []
    for i, ((vecs, sc), smp) in enumerate(zip(given, res.samples)):
        want = reference(job, op, plain, vecs, sc)
        cuts = [slice(k * width, (k + 1) * width) for k in range(blocks[i])] if width else [slice(None)]
        out.append([error_of(plain, want, smp.outputs, cut) for cut in cuts])
    return out


def error_of(plain: Plain, want: dict[str, np.ndarray], outputs: dict[str, Vector], window: slice = slice(None)) -> Error:
    """The output furthest from its reference `want`, over the slots of `window`."""
    worst = Error(0.0, 0.0, "")
    for name, ref in want.items():
        if name not in outputs:
            raise DriverError("wrong_result", f"driver returned no output '{name}' to check")
        got = outputs[name].array()
        if window != slice(None):
            got, ref = received(got, ref.size)[window], ref[window]  # padded as check pads it, then cut to the block
        c = check(plain, ref, got, -math.inf)  # judged by the caller
        if not c.passed:
            return Error(math.inf, math.inf, name, c.message)
        err = c.max_abs_error or 0.0
        if err > worst.abs_error or not worst.output:
            top = float(np.max(np.abs(ref))) if ref.size else 0.0
            worst = Error(err, err / top if top > 0 else err, name)
    return worst


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
