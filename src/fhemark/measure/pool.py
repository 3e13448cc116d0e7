"""Fresh ciphertext operands at the cost of an addition (PROTOCOL.md "Pool"): a few random vectors
encrypted once, and every operand of every copy the sum of a pair of them, no pair twice in a
job's samples of one driver process. The plaintexts are known, so every output is still checked.

A driver process keeps one pool per setup and vector length, made by the first request that needs
it and named by its id in every later one: per request it cost three encryptions (13 ms in SEAL at
N = 8192), most of a cheap op's request. A job that needs more pairs than the kept pool has left
(many copies per region, a long policy) gets a pool of its own in each request, as before.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..drivers.protocol import Pool, Vector
from ..model.program import encrypted
from ..plan.jobs import Group, Job
from .prepared import JobPairs, Kept, Pair, Prepared

WARM_ROUND = 2  # warm-up samples leading each round of a cheap op (latency.warm_count): they take pairs too
POOL_MIN = 3  # pool ciphertexts at least (a pair needs two, and a choice of pairs three)
KEPT_MAX = 24  # ciphertexts a kept pool holds at most: 276 pairs
KEPT_BYTES = 256 << 20  # and at most this much memory in the driver (N = 2^16, 30 primes: 8 ciphertexts)
POOL_NOTE = ("inputs: each ciphertext operand is the sum of two encryptions from a pool "
             "(fresh values per sample at the cost of an addition): noise budgets read about 1 bit below a "
             "single fresh encryption's")

@dataclass
class Picked:
    """One request's pool and the pairs of it its copies take, in order."""

    vecs: list[np.ndarray]
    pairs: list[Pair]
    pool: Pool


def size_for(group: Group, ct_bytes: int) -> int:
    """Ciphertexts for a kept pool that lasts each job of the group a process's samples (a round's
    share of max_samples and its warm-ups in each round), the process's warm-ups and the
    calibration included, at one copy per region of two pooled operands."""
    def per_process(pol) -> int:
        rounds = pol.rounds * (math.ceil(pol.max_samples / (pol.processes * pol.rounds)) + WARM_ROUND)
        return rounds + max(pol.warmup, WARM_ROUND) + 1
    need = max((per_process(j.policy) for j in group.jobs), default=1)
    return max(POOL_MIN, min(_holding(2 * need), KEPT_MAX, KEPT_BYTES // max(ct_bytes, 1)))


def _holding(pairs: int) -> int:
    """The fewest ciphertexts with this many pairs."""
    return next(m for m in itertools.count(POOL_MIN) if m * (m - 1) // 2 >= pairs)


def _made(vecs: list[np.ndarray], pool_id: str | None) -> Pool:
    return Pool(id=pool_id, inputs={f"pool.{j}": Vector.of(x) for j, x in enumerate(vecs)},
                steps=[st for j in range(len(vecs)) for st in encrypted(f"pool.{j}")])  # -> cpool.<j>


def _order(m: int, rng: np.random.Generator) -> list[Pair]:
    return [tuple(c) for c in rng.permutation(list(itertools.combinations(range(m), 2)))]


def pick(prep: Prepared, job: Job, mine: JobPairs | None, p: int, rng: np.random.Generator,
         need: int) -> tuple[Picked, JobPairs | None]:
    """`need` pairs of pool ciphertexts for one request of a job in driver process p: from the kept
    pool while the job has pairs of it left in this process (`mine`, updated and returned), else
    from a pool of the request's own drawn from `rng`."""
    kept = prep.pools.get(job.slots)
    if kept is None:
        eff = prep.effective
        m = size_for(prep.group, 2 * eff.N * len(eff.q_bits) * 8)
        krng = np.random.default_rng([job.policy.seed, int(job.pool_key, 16) % 2**32, p])
        vecs = [prep.plain.random(krng, job.slots) for _ in range(m)]
        kept = prep.pools[job.slots] = Kept(_made(vecs, f"{prep.setup_id}/{job.slots}"), vecs)
    if mine is None or mine.process != p:
        mine = JobPairs(p, _order(len(kept.vecs), np.random.default_rng(
            [job.policy.seed, int(job.input_key, 16) % 2**32, p, 1])))
    if mine.used + need <= len(mine.order):
        mine.used += need
        return Picked(kept.vecs, mine.order[mine.used - need: mine.used], kept.pool), mine
    vecs = [prep.plain.random(rng, job.slots) for _ in range(_holding(need))]
    return Picked(vecs, _order(len(vecs), rng)[:need], _made(vecs, None)), mine
