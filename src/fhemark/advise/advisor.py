"""From what a computation needs to the smallest secure parameters each library accepts, proven
by measurement.

Candidates come smallest first from noise-growth rules of thumb (below); none is trusted: each is
run through the depth probe with fresh keys several times, and a library accepts a candidate only
when every repetition reaches the required depth with MARGIN_BITS to spare (CKKS: precision at
least the requirement + 1 bit after the last multiplication; BFV/BGV: 1 bit of noise budget left).
A rejected candidate is counted and the next larger one tried, per library.

Rules of thumb (the starting points; measurement decides):
- CKKS: precision after a multiply-rescale is about the scale minus 14 bits at these ring sizes
  (26 bits at scale 2^40 in the quick suite, depths to 4), and a chain of d products carries d times one
  product's relative error, log2 d bits, of which the 14 hold 2: the search's scale starts at precision
  + 14 + max(0, log2 d - 2) bits (`start_scale`) and grows by 4; the first prime holds the result's
  magnitude with 10 bits to spare; one prime per level.
- BFV/BGV: each multiplication costs about log2(t) + log2(N) + 2 bits of noise budget, a fresh
  ciphertext starts log2(t) + 12 bits below q (optimistic on purpose: the smallest set is wanted,
  and measurement rejects what is too small): the chain starts at that total and grows by 20 bits.
- One 60-bit special prime (OpenFHE's hybrid key switching always uses 60-bit special primes); where
  it does not fit the ring, one as large as the chain's largest prime (SEAL's rule), so a ring is
  tried with every chain it can hold before a larger one (`special`).
- OpenFHE adds special primes of its own under HYBRID key switching, so a BFV/BGV ring it refuses as
  insecure for them is searched again under BV, which has none (`key_switching_instead`), before the
  next ring.
- A CKKS set a library refuses as insecure by its own account of log QP (OpenFHE's adds bits the
  search's does not) is tried with its first prime cut to the least that holds the result (`first_trimmed`)
  before the ring is left.
- Ring sizes from the smallest whose slots hold the values, among those the library declares it builds
  (drivers/limits.py: its capabilities' limits; Lattigo and OpenFHE to 2^17, SEAL and TenSEAL to 2^15);
  the security bound of the chosen table caps the chain (log QP) for each N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from ..drivers.limits import declared, ring_limits
from ..drivers.registry import manifests
from ..errors import UserError
from ..model.security import bound, estimates
from ..plan.suites import Suite
from ..store.record import Record
from ..store.sqlite import Store
from . import measuring

SPECIAL_BITS = 60
MAX_PRIME = 60
CKKS_LOSS_BITS = 14   # precision ~ scale - this
INT_MUL_EXTRA = 2     # bits per multiplication beyond log2(t) + log2(N)
INT_FRESH = 12        # a fresh ciphertext's noise, in bits above log2(t)
INT_STEP = 20         # a rejected BFV/BGV chain grows by this many bits
MAX_TRIES = 8         # candidates per library before giving up
DIGITS = 8            # a chain longer than this switches keys in about this many digits (`special`)
# A set passes with at least this much to spare (CKKS precision above the requirement, BFV/BGV noise
# budget left): a set that passes by a tenth of a bit fails on the next run's keys.
MARGIN_BITS = 1.0


@dataclass(frozen=True)
class Need:
    scheme: str                  # bfv | bgv | ckks
    depth: int                   # sequential multiplications
    precision: float | None = None   # CKKS: bits after the last multiplication
    plain_bits: int | None = None    # BFV/BGV: bits of the plaintext modulus t
    slots: int = 1
    security: int = 128
    table: str = "hestd2018"
    magnitude_bits: int = 0          # CKKS: bits of the largest |value| (0: values within [-1, 1])
    # The ring sizes searched: those the library declares it builds (`for_library`); a question asked of
    # no library in particular (the default), every ring some library here declares (`every_ring`).
    rings: tuple[int, ...] = ()
    special_most: int | None = None  # the most special primes the library takes (its limits; None: any)
    insecure: bool = False           # sets below `security` run, marked insecure: tests' toy rings only

    def __post_init__(self) -> None:
        if not self.rings:
            object.__setattr__(self, "rings", every_ring(self.scheme))

    def for_library(self, library: str) -> Need:
        """The same requirement searched in the rings `library` declares for its scheme (a driver that
        declares none, as the tests' fakes: every ring, as for no library in particular)."""
        lim = ring_limits(library, self.scheme)
        return replace(self, rings=lim.rings() if lim else (), special_most=lim.special_primes if lim else None)

    def for_libraries(self, libraries: list[str]) -> Need:
        """Searched in every ring one of `libraries` declares (none given: as for no library in particular)."""
        return replace(self, rings=tuple(sorted({n for lib in libraries for n in self.for_library(lib).rings})))

    def describe(self) -> str:
        what = f"{self.precision:g}-bit precision" if self.scheme == "ckks" else f"{self.plain_bits}-bit plaintexts"
        if self.magnitude_bits:
            what += f" on values up to 2^{self.magnitude_bits}"
        return (f"{self.scheme.upper()} depth {self.depth} with {what}, {self.slots} slots, "
                f"{self.security}-bit security ({self.table})")


def every_ring(scheme: str) -> tuple[int, ...]:
    """Every ring some library here declares it builds for `scheme`, smallest first."""
    return tuple(sorted({n for m in manifests().values() if (lim := ring_limits(m.base, scheme)) for n in lim.rings()}))


def _split(total: int) -> list[int]:
    """A chain of `total` bits as primes of at most 60 bits, as even as possible."""
    k = max(1, math.ceil(total / (MAX_PRIME - 2)))
    base, extra = divmod(total, k)
    return [base + (i < extra) for i in range(k)]


def _bound(n: int, need: Need) -> int:
    return bound(n, need.table, need.security)


def first_scale(need: Need) -> int:
    """The least scale the rules of thumb allow the precision at (what a ring is judged by: `short_of`)."""
    return max(20, math.ceil(need.precision + CKKS_LOSS_BITS))


def start_scale(need: Need) -> int:
    """The scale the search begins at: the least one, with the log2 d bits a chain of d products loses beyond
    the 2 that CKKS_LOSS_BITS holds (Lattigo, drawn inputs: 16.5 bits lost at depth 40 and N = 2^16, 17.5 at
    depth 60 and 2^17, where the rule predicts 17.3 and 17.9; each set below it cost a 2^17 search 4 minutes)."""
    return first_scale(need) + max(0, math.ceil(math.log2(max(1, need.depth))) - 2)


def _first_int_chain(need: Need, n: int) -> int:
    """Bits of the smallest BFV/BGV ciphertext modulus the rules of thumb try at ring size n."""
    return need.plain_bits + INT_FRESH + need.depth * (need.plain_bits + int(math.log2(n)) + INT_MUL_EXTRA)


def ckks_chain(need: Need, scale: int) -> list[int]:
    """The first prime holds the result at the scale with 10 bits to spare, or its magnitude
    (2^magnitude_bits) with 3 where that is more; one scale-sized prime per level."""
    return [min(MAX_PRIME, scale + max(10, need.magnitude_bits + 3))] + [scale] * need.depth


def _rings(need: Need) -> list[int]:
    per_ring = (lambda n: n // 2) if need.scheme == "ckks" else (lambda n: n)
    return [n for n in need.rings if per_ring(n) >= need.slots]


def candidates(need: Need) -> Iterator[dict]:
    """Parameter specs (the suite's inline form), smallest first: the ring size first, then the chain."""
    for n in _rings(need):
        limit = _bound(n, need)
        if need.scheme == "ckks":
            scale = start_scale(need)
            while (spec := at_scale(need, n, scale)) is not None:
                yield spec
                scale += 4
        else:
            total = _first_int_chain(need, n)
            while (p := special(_split(total), limit, need.special_most)) is not None:
                yield {"N": n, "q_bits": _split(total), "p_bits": p, "t_bits": need.plain_bits}
                total += INT_STEP


def at_scale(need: Need, n: int, scale: int) -> dict | None:
    """The CKKS set of ring n at this scale, as the search builds it; None where the ring cannot
    hold its chain, or the last prime cannot hold the scale and the values above it."""
    if scale > MAX_PRIME - 2 or scale + need.magnitude_bits + 2 > MAX_PRIME:
        return None
    q = ckks_chain(need, scale)
    p = special(q, _bound(n, need), need.special_most)
    return None if p is None else {"N": n, "q_bits": q, "p_bits": p, "scale_bits": scale}


def special(q: list[int], limit: int, most: int | None = None) -> list[int] | None:
    """The special primes for a chain in a ring whose security allows `limit` bits of log QP: one of 60
    bits where it fits; else one as large as the chain's largest prime (SEAL's own rule: its 128-bit
    default at N = 4096 is q 36+36, P 37), so that a chain the ring can hold is tried there before
    the ring is left. None: the ring cannot hold the chain.

    A chain of more than DIGITS primes, for a library that takes several special primes (`most`: the
    most it declares, None for any), gets as many 60-bit primes as cover a digit of ceil(L / DIGITS)
    primes, fewer where the ring cannot hold them: with one, every key switch of a depth-40 chain
    works in 41 digits, and its key of 41 digits at N = 2^16 holds 1.8 GB where P of 4 primes
    (the issue's hand set, q 60 + 40 x 35, P 4 x 60) keeps about 10."""
    if len(q) > DIGITS and (most is None or most > 1):
        digit = sum(sorted(q, reverse=True)[:math.ceil(len(q) / DIGITS)])
        for m in range(min(math.ceil(digit / SPECIAL_BITS), most or len(q)), 1, -1):
            if sum(q) + m * SPECIAL_BITS <= limit:
                return [SPECIAL_BITS] * m
    if sum(q) + SPECIAL_BITS <= limit:
        return [SPECIAL_BITS]
    return [max(q)] if sum(q) + max(q) <= limit else None


# OpenFHE's BV digit size (bits) when the search switches a ring to BV: 20 bits is what OpenFHE's own BGV choice
# at depth 1 and t of 20 bits uses at N = 4096. BV's key-switching noise grows with the digit: on a depth-1 tally
# with 10 rotations at N = 4096, t of 20 bits, one digit per RNS prime (OpenFHE's 0) decrypts BFV q 33+33 wrong and
# leaves BGV q 43+43 7 bits, where 20-bit digits leave BGV 21-22 bits and BFV 33+33 0-2 (10-bit digits: 2 as well,
# so the rest is BFV's own noise at that chain; SEAL keeps 6 bits there, Lattigo 3-4).
BV_DIGIT_BITS = 20


def key_switching_instead(library: str, spec: dict, need: Need) -> list[dict]:
    """The ring's sets under a library's other key switching (one whose driver declares `bv` among its limits'
    key_switching), where the library's own choice, not the ring, made a set insecure: OpenFHE's HYBRID adds
    60-bit special primes of its own (P covers one digit of the chain), BV has none, so log QP is the chain
    alone, and the ring holds longer chains than the search offered it with a P (from this chain up by
    INT_STEP, to the ring's bound). Empty for every other library (its P is the request's: a refusal there is
    the ring's), and for CKKS: BV's noise of a 20-bit digit times N costs a scale-sized product most of its
    precision (N = 8192, q 59+46, scale 2^46: 7.2 bits where 22 were asked), so a CKKS ring HYBRID cannot hold
    is left as before."""
    if "bv" not in declared(library).get(need.scheme, {}).get("key_switching", ()) or need.scheme == "ckks" \
            or "preset" in spec or spec.get("key_switching"):
        return []
    bv = {k: v for k, v in spec.items() if k != "p_bits"} | {"p_bits": [], "key_switching": "bv",
                                                             "digit_size": BV_DIGIT_BITS}
    return [bv | {"q_bits": _split(total)} for total in range(sum(spec["q_bits"]), _bound(spec["N"], need) + 1, INT_STEP)]


def first_trimmed(spec: dict, need: Need) -> dict | None:
    """The CKKS set with its first prime cut to the least that holds the result: scale + magnitude + 2 bits
    (|value| * 2^scale under half of it), where a library refused the set as insecure by an account of
    log QP of its own that the search's does not reproduce. OpenFHE 1.6 judges an estimate from the sizes
    asked, not the primes it makes: at N = 8192 (218 bits) with one 60-bit P it refuses q 56+45+45 (206
    bits) and 47+37+37+37 (218), and builds 55+45+45 and 45+37+37+37. The first prime carries no
    precision (the last rescale's error is the scale's), so the ring is tried at the cut chain before
    it is left. None where the prime is already that small."""
    if need.scheme != "ckks" or "preset" in spec or not spec.get("scale_bits"):
        return None
    least = spec["scale_bits"] + need.magnitude_bits + 2
    if spec["q_bits"][0] <= least:
        return None
    return spec | {"q_bits": [least, *spec["q_bits"][1:]]}


def check_possible(need: Need) -> None:
    """One clear line when no ring here can hold the requirement at the required security."""
    if need.depth < 1:
        raise UserError(f"depth {need.depth}: the advisor sizes sets for at least one multiplication", "give --depth 1 or more")
    if need.scheme == "ckks" and not (need.precision and 1 <= need.precision <= 50):
        raise UserError(f"precision {need.precision}: CKKS precision must be 1..50 bits", "give --precision, e.g. 20")
    if need.scheme != "ckks" and not (need.plain_bits and 14 <= need.plain_bits <= 59):
        raise UserError(f"plain bits {need.plain_bits}: a batching plaintext modulus has 14..59 bits here",
                        "give --plain-bits, e.g. 20")
    if not _rings(need):
        top = max(need.rings)
        raise UserError(f"{need.slots} slots: no ring here holds them ({need.scheme.upper()} on N = {top} has "
                        f"{top // (2 if need.scheme == 'ckks' else 1)})", "pack fewer values per ciphertext")
    if next(candidates(need), None) is None:
        raise UserError(f"impossible: {short_of(need, 'any library here builds')}",
                        "lower the depth (or use bootstrapping), the precision or plaintext bits, or the security level")


def short_of(need: Need, whose: str) -> str:
    """Why no ring of `need.rings` holds the requirement, with the figures: the values it packs and the
    slots of the largest ring, or the log QP it needs and what the largest ring (`whose` largest) allows."""
    n = max(need.rings)
    if not _rings(need):
        return (f"{need.slots} values per ciphertext, and the largest ring {whose} (N = {n}) has "
                f"{n // (2 if need.scheme == 'ckks' else 1)} {need.scheme.upper()} slots")
    smallest = sum(ckks_chain(need, first_scale(need))) if need.scheme == "ckks" else _first_int_chain(need, n)
    return (f"{need.describe()} needs log QP of about {smallest + SPECIAL_BITS} bits, and the largest ring {whose} "
            f"(N = {n}) allows {_bound(n, need)} bits at {need.security}-bit security under {need.table}")


@dataclass
class Proposal:
    library: str
    spec: dict | None = None                 # the accepted set; None: none found
    rejected: list[str] = field(default_factory=list)  # why each smaller candidate failed
    depth: list[int] = field(default_factory=list)     # per repetition (max_depth: depth + 1)
    margin: list[float] = field(default_factory=list)  # CKKS: precision - required; BFV/BGV: noise budget left
    trajectory: list[float] = field(default_factory=list)  # noise budget or precision after each multiplication
    records: list[Record] = field(default_factory=list)  # the latency run's records at the accepted set
    effective: dict | None = None


def _suite(need: Need, library: str, spec: dict, ops: list[str], policy: dict) -> Suite:
    return measuring.suite("params-advisor", [measuring.case(library, need.scheme, spec, ops)], policy,
                           need.security, need.table)


def _verify(need: Need, library: str, spec: dict, repeats: int, db: Store | None) -> tuple[str, list[Record]]:
    """'' when every repetition (fresh driver process, fresh keys) reaches the depth; else why not."""
    precision = float(need.precision) + MARGIN_BITS if need.scheme == "ckks" else None
    recs = []
    for i in range(repeats):
        policy = measuring.depth_probe(need.depth, precision, seed=1 + i)
        (rec,) = measuring.run_suite(_suite(need, library, spec, ["depth_mul"], policy), [library], db)
        recs.append(rec)
        if rec.status != "ok":
            return f"{rec.status}: {rec.error or ''}".strip(), recs
        if rec.depth < need.depth:
            return f"depth {rec.depth} in repetition {i + 1} ({rec.depth_limit or 'stopped'})", recs
        noise = rec.noise_by_depth[need.depth - 1:need.depth]
        if noise and noise[0] is not None and noise[0] < MARGIN_BITS:
            return f"{noise[0]:g} bits of noise budget left at depth {need.depth} in repetition {i + 1}", recs
    return "", recs


def advise(need: Need, libraries: list[str], repeats: int = 3, db: Store | None = None,
           progress: Callable[[str], None] = lambda line: None) -> list[Proposal]:
    """`db`: the store the verification runs go to (None: in memory, gone with the answer)."""
    check_possible(need)
    out = []
    for lib in libraries:
        prop, mine = Proposal(lib), need.for_library(lib)
        if next(candidates(mine), None) is None:
            prop.rejected.append(f"not searched: {short_of(mine, lib + ' builds')}")
        for spec in list(candidates(mine))[:MAX_TRIES]:
            progress(f"{lib}: trying N = {spec['N']}, q = {spec['q_bits']}")
            why, recs = _verify(need, lib, spec, repeats, db)
            if why:
                prop.rejected.append(f"N = {spec['N']}, q = {spec['q_bits']}: {why}")
                if recs and recs[-1].status in ("unsupported", "crashed", "timeout", "out_of_memory"):
                    break  # the library cannot run it at all: larger sets will not help
                continue
            prop.spec = spec
            prop.depth = [r.depth for r in recs]
            if need.scheme == "ckks":
                prop.margin = [r.precision_by_depth[need.depth - 1] - need.precision for r in recs]
                prop.trajectory = recs[-1].precision_by_depth
            else:
                prop.margin = [r.noise_by_depth[need.depth - 1] for r in recs if r.noise_by_depth]
                prop.trajectory = recs[-1].noise_by_depth
            prop.effective = recs[-1].effective_params
            progress(f"{lib}: accepted N = {spec['N']}, q = {spec['q_bits']}; timing multiply and rotate")
            prop.records = measuring.run_suite(_suite(need, lib, spec, ["mul_relin", "rotate_1"], measuring.TIMING),
                                               [lib], db)
            break
        out.append(prop)
    return out


def security_text(spec: dict) -> str:
    log_qp = sum(spec["q_bits"]) + sum(spec["p_bits"])
    # describe() puts the lattice estimator's figure beside each table's: ">= 128 (estimated 128.2: usvp, ...)".
    return ", ".join(f"{e.describe()} ({t})" for t, e in estimates(spec["N"], log_qp, with_estimator=True).items())

