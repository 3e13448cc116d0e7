"""What `choose` answers with: a candidate per library and scheme (the set searched, verified and
measured, or why none was), and the answer that ranks them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..analyse import ratios
from ..model import ways
from ..model.requirements import Requirements
from ..model.workload import Workload
from ..stats import FloorRatio
from ..store.record import Record
from .memory import Prediction
from .recommend import amortised
from .worst import Worst


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
    worst: Worst | None = None           # the worst input found at `spec` (worst.py), and its error
    worst_file: str | None = None        # where it was written, beside the snippet
    snippet: str | None = None
    workload: Workload | None = None     # the way it ran (ways.py): the file's own, or Horner, or fhemark's routine
    routine: str | None = None           # its routines by: library | fhemark | horner, or a mix (None: none)
    levels_needed: int | None = None     # CKKS: with the library's routines' own levels (routines.py)
    pinned: bool = False                 # a set given (--at, expert.py), checked and measured, never searched from
    predicted: Prediction | None = None  # its peak memory as predicted before it was built (memory.py)
    eval_s: float | None = None          # one evaluation of the program at `spec`, as the search's runs measured it
    reduced: list[str] = field(default_factory=list)  # what its verification's budgets were cut to, and why
    last_status: str | None = None       # the status of the last set the search tried (None: not run, or passed)
    last_refusal: str | None = None      # the kind of its refusal (PROTOCOL.md "Refusals"; None: none)
    scale_floor: int = 0                 # CKKS: the least scale its shortfalls asked for (steering.py; 0: none)
    bootstraps: int = 0                  # CKKS at a bootstrapping set: bootstraps per evaluation (booting.py)
    boot_record: Record | None = None    # its bootstrap alone, measured at the same set in the same run

    def margin(self, precision: float) -> float | None:
        """What the measurement left to spare: CKKS, precision bits above the requirement (its least sample's);
        BFV/BGV, noise budget bits: the least over the program's outputs (every one is named for it) of what
        each run's last sample left (PROTOCOL.md: noise is reported for the last sample of a run). None where
        the record has neither."""
        r = self.record
        if r is None:
            return None
        if self.scheme == "ckks":
            return r.precision_bits - precision if r.precision_bits is not None else None
        return r.noise_budget_bits

    @property
    def label(self) -> str:
        words = ways.text(self.workload, self.scheme) if self.workload is not None and self.routine else self.routine
        by = f" ({words})" if words else ""
        return f"{self.library} {self.scheme.upper()}{by}"

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
    reduced: list[str] = field(default_factory=list)  # the measurement's budgets cut for deep sets, and by how much
    insecure: bool = False               # the tests' toy rings (choose's `insecure`): sets below `security` ran

    def timed(self, c: Candidate) -> Record:
        """What ranks a candidate: its record, or under the throughput objective its record costed at
        the host's time per evaluation at saturation (recommend.amortised)."""
        return amortised(c.record) if self.objective == "throughput" else c.record

    def ranked(self) -> list[Candidate]:
        # Latency by floors (analyse/ratios.py); a rate at saturation by its own figure and interval.
        rate = self.objective == "throughput"
        ok = sorted((c for c in self.chosen if passed(c)),
                    key=lambda c: self.timed(c).median_ns if rate else ratios.speed(self.timed(c)))
        if ok:
            best = self.timed(ok[0])
            for c in ok:
                c.within_best = ratios.within(self.timed(c), best, by_samples=not rate)
                c.vs_best = None if rate else ratios.versus(self.timed(c), best)
        return ok

    def excluded(self) -> list[Candidate]:
        return [c for c in self.chosen if not passed(c)]


def verified_specs(ans: Answer, library: str, scheme: str = "ckks") -> list[dict]:
    """The sets choose verified and measured for one library and scheme, smallest first: where a
    compiler's rows for that library run too (`--compilers`), so its code meets the hand-written at one set."""
    out: list[dict] = []
    for c in sorted((c for c in ans.chosen if passed(c) and c.library == library and c.scheme == scheme), key=Candidate.size):
        if c.spec not in out:
            out.append(c.spec)
    return out


def passed(c: Candidate) -> bool:
    r = c.record
    return c.verified and r is not None and r.status == "ok" and r.median_ns is not None


def boot_text(c: Candidate) -> str:
    """A bootstrapping set's row in words: its bootstraps, the levels between them, and what its keys
    and one bootstrap cost as measured (key generation: the setup's time, every key of the set)."""
    r, b = c.record, c.boot_record
    levels = c.levels_needed or 0
    words = [f"preset {c.spec['preset']}: {c.bootstraps} bootstrap{'s' if c.bootstraps != 1 else ''} an evaluation, "
             f"{levels} level{'s' if levels != 1 else ''} used between"]
    if r is not None and r.setup_s is not None:
        words.append(f"keys generated in {r.setup_s:.1f} s")
    if b is not None and b.median_ns is not None:
        words.append(f"a bootstrap {b.median_ns / 1e9:.2f} s" + (f" [{b.ci95_ns[0] / 1e9:.2f}, {b.ci95_ns[1] / 1e9:.2f}]"
                                                                  if b.ci95_ns else ""))
    return ", ".join(words)


def plaintext_text(spec: dict) -> str:
    """A set's plaintext side: t's bits (BFV/BGV) or the scale (CKKS)."""
    return f"t {spec['t_bits']} bits" if spec.get("t_bits") else f"scale 2^{spec.get('scale_bits')}"


def set_text(spec: dict) -> str:
    if "preset" in spec:  # TFHE-family integers at a width, or a library's bootstrapping set on a ring
        return f"preset {spec['preset']} ({spec['bits']} bits)" if spec.get("bits") else \
            f"preset {spec['preset']}, N = {spec.get('N')}"
    return (f"N = {spec['N']}, q = {'+'.join(map(str, spec['q_bits']))}, P = {'+'.join(map(str, spec['p_bits'])) or 'none'}, "
            f"{plaintext_text(spec)}{switching_text(spec)}")


def switching_text(spec: dict) -> str:
    """A library's own key switching where the set names one (OpenFHE's BV), after the set's other words."""
    if spec.get("key_switching") != "bv":
        return ""
    return f", BV key switching, digits of {spec['digit_size']} bits" if spec.get("digit_size") else ", BV key switching"
