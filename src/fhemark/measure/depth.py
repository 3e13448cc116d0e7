"""The depth probe: x * y^k for k = 1, 2, ... until the result stops decrypting correctly (noise)
or the library refuses (levels). A measured limit, in one slice: nothing is assumed from the
parameters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..drivers.protocol import RunResult, Sample, Vector
from ..errors import DriverError
from .checked import check_copy, check_reply, inputs
from .mode import Mode, Slice
from .prepared import Outcome, total

ENDS_THE_CHAIN = ("wrong_result", "internal", "invalid_params")  # what a depth past the limit answers


@dataclass
class DepthOutcome(Outcome):
    depth: int | None = None          # the largest k that decrypted correctly
    depth_limit: str | None = None    # and what happened at k + 1
    noise_by_depth: list[float] = field(default_factory=list)


class Depth(Mode):
    """The job's op is a chain (BenchOp.chain): its samples are the one run at the largest k."""

    outcome = DepthOutcome

    def slice(self, sl: Slice) -> None:
        job, op, prep, out, drv = self.job, self.op, sl.prep, self.out, sl.drv
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
                if exc.kind not in ENDS_THE_CHAIN:
                    raise
                out.depth_limit = f"at depth {k}: {exc.kind}: {exc.message}"
                if not drv.alive or prep.setup_id not in drv.setups:
                    sl.reprepare()
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
