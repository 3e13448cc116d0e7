"""Protocol v2 messages as typed models: the orchestrator validates every
driver reply against these, and `protocol/schema/*.json` is generated from
them (`python -m fhemark.drivers.protocol > ...`, checked by a test), so the schema and
the code cannot drift apart."""

from __future__ import annotations

import base64
import json
import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..model.noise import noise_budget_bits

PROTOCOL_VERSION = 2

_DTYPES = {"i64": "<i8", "f64": "<f8", "u64": "<u8"}


class Vector(BaseModel):
    dtype: Literal["i64", "f64", "u64"]
    b64: str

    @classmethod
    def of(cls, a: np.ndarray) -> "Vector":
        kind = "f64" if a.dtype.kind == "f" else ("u64" if a.dtype.kind == "u" else "i64")
        return cls(dtype=kind, b64=base64.b64encode(np.ascontiguousarray(a, dtype=_DTYPES[kind]).tobytes()).decode())

    def array(self) -> np.ndarray:
        return np.frombuffer(base64.b64decode(self.b64), dtype=_DTYPES[self.dtype])


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    out: str
    op: str
    args: list[str] = []
    attrs: dict[str, Any] = {}
    # Run untimed and dropped right after: nothing reads it (a warm-up before a timed region).
    discard: bool = False


class Region(BaseModel):
    """Consecutive, independent steps timed as one region (k copies of one op, or one stage)."""
    model_config = ConfigDict(extra="forbid")
    name: str
    steps: list[str] = Field(min_length=1)


# Attrs whose value names another value of the program (what a step reads besides its args).
VALUE_ATTRS = ("key", "from", "to", "like")


class Program(BaseModel):
    """A run's program. Its timed regions are checked here, once, for every driver (PROTOCOL.md
    "Timed regions"): drivers trust them and only find where each region starts and ends."""
    model_config = ConfigDict(extra="forbid")
    steps: list[Step]
    timed: list[Region]
    outputs: list[str] = []
    noise: list[str] = []
    sizes: list[str] = []
    levels: list[str] = []

    @model_validator(mode="after")
    def _regions_follow_the_rules(self) -> "Program":
        where: dict[str, list[int]] = {}
        for i, st in enumerate(self.steps):
            where.setdefault(st.out, []).append(i)
        names: set[str] = set()
        owner: dict[str, str] = {}
        for region in self.timed:
            if region.name in names:
                raise ValueError(f"timed region name '{region.name}' is used twice")
            names.add(region.name)
            for n in region.steps:
                if len(where.get(n, ())) != 1:  # a driver finds a region by its steps' places
                    raise ValueError(f"timed region '{region.name}': '{n}' is " + (
                        f"the out of {len(where[n])} steps" if n in where else "no step's out"))
                if n in owner:
                    raise ValueError(f"timed region '{region.name}': step '{n}' is also in region '{owner[n]}'")
                owner[n] = region.name
            idx = [where[n][0] for n in region.steps]
            if idx != list(range(idx[0], idx[0] + len(idx))):
                raise ValueError(f"timed region '{region.name}': its steps are not consecutive, in order")
            inside = set(region.steps)
            for i in idx:
                st = self.steps[i]
                reads = self._reads(st)
                if reads & inside:
                    raise ValueError(f"timed region '{region.name}': step '{st.out}' reads {sorted(reads & inside)} "
                                     "made in the same region")
        dropped = {st.out for st in self.steps if st.discard}
        kept = {n for st in self.steps for n in self._reads(st)} | set(self.outputs + self.noise + self.sizes + self.levels)
        if dropped & (kept | set(owner)):
            raise ValueError(f"steps {sorted(dropped & (kept | set(owner)))} are discarded but timed or read")
        return self

    @staticmethod
    def _reads(st: Step) -> set[str]:
        return set(st.args) | {v for k, v in st.attrs.items() if k in VALUE_ATTRS and isinstance(v, str)}


class Sample(BaseModel):
    inputs: dict[str, Vector]
    scalars: dict[str, Any] = {}


class _Request(BaseModel):
    v: Literal[2] = 2
    id: int


class CapabilitiesRequest(_Request):
    type: Literal["capabilities"] = "capabilities"


class SetupRequest(_Request):
    type: Literal["setup"] = "setup"
    setup_id: str
    scheme: str
    params: dict[str, Any]
    rotations: list[int] = []
    ops: list[str] | None = None  # every primitive the setup's jobs run (a driver may build only those)
    allow_insecure: bool = False


class Pool(BaseModel):
    """Ciphertexts made before a request's first sample, untimed (PROTOCOL.md "Pool"): every sample
    may read them, by name or through a `$scalar` arg. With an id the driver keeps them with the
    setup, and a later request names the id alone instead of making them again."""
    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    inputs: dict[str, Vector] = {}
    steps: list[Step] = []

    @model_validator(mode="after")
    def _made_or_named(self) -> "Pool":
        if not self.steps and self.id is None:
            raise ValueError("a pool without steps names a kept pool by its id")
        return self

    def named(self) -> "Pool":
        """The same pool, read from what the driver kept under its id."""
        return Pool(id=self.id)


class RunRequest(_Request):
    type: Literal["run"] = "run"
    setup_id: str
    program: Program
    samples: list[Sample]
    pool: Pool | None = None

    @model_validator(mode="after")
    def _no_sample_makes_a_region_read_itself(self) -> "RunRequest":
        """A value-naming attr given as a `$scalar` names a value per sample: it too must not be
        made in the step's own region."""
        region_of = {n: r.name for r in self.program.timed for n in r.steps}
        for st in self.program.steps:
            if st.out not in region_of:
                continue
            for k, v in st.attrs.items():
                if k not in VALUE_ATTRS or not isinstance(v, str) or v[:1] != "$":
                    continue
                named = (smp.scalars.get(v[1:]) for smp in self.samples)
                if any(isinstance(n, str) and region_of.get(n) == region_of[st.out] for n in named):
                    raise ValueError(f"timed region '{region_of[st.out]}': step '{st.out}' reads a value made in "
                                     f"the same region through {v}")
        return self


class ShutdownRequest(_Request):
    type: Literal["shutdown"] = "shutdown"


class AutoParamsRequest(_Request):
    """The library's own parameter choice for a scheme (PROTOCOL.md "auto_params"), optional: asked
    only of a driver whose capabilities offer it for the scheme."""
    type: Literal["auto_params"] = "auto_params"
    scheme: str
    depth: int = Field(ge=0)                # multiplications in sequence the chain must hold
    scale_bits: int | None = Field(None, ge=1)  # CKKS: the scale, 2^scale_bits
    first_bits: int | None = Field(None, ge=1)  # the level-0 prime's size (None: the library's own)
    security: Literal[128, 192, 256] = 128  # bits, under the library's own security table


class SchemeCaps(BaseModel):
    ops: list[str]
    limits: dict[str, Any] = {}
    # op -> what its timed work adds to or lacks from PROTOCOL.md's canonical boundary
    deviations: dict[str, str] = {}
    # The driver answers `auto_params` for this scheme: the library chooses parameters of its own.
    auto_params: bool = False


class Capabilities(BaseModel):
    protocol: int
    library: str
    library_version: str
    driver_version: str
    build: dict[str, Any] = {}
    threads: int
    # Whether the library uses the thread count it was given (FHEMARK_THREADS): false for a library
    # without threads (SEAL), null where the driver cannot tell.
    threads_honoured: bool | None = None
    schemes: dict[str, SchemeCaps]


# A prime of an RLWE modulus chain, as a driver reports it: an exact JSON integer (never a float,
# which would round a prime above 2^53), below 2^64.
Prime = Annotated[int, Field(strict=True, ge=2, lt=1 << 64)]
# What fhemark derives from the primes (Effective.of): a driver reporting primes leaves them out.
DERIVED = ("q_bits", "p_bits", "log_q", "log_qp")


class LweProblem(BaseModel):
    """One LWE problem a bit scheme's setup rests on (PROTOCOL.md "lwe_problems"), as its driver states it:
    a secret of dimension `n` (a GLWE key as LWE of dimension k*N), modulo 2^log_q, and the noise of what is
    encrypted under it (absolute: `noise_std`, or a TUniform bound, `noise_bound_log2`); `samples`: how
    many an attacker gets (None: as many as it wants, as key-switching and bootstrapping keys give)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    n: int
    log_q: float
    secret: Literal["binary", "ternary", "gaussian"]
    secret_std: float | None = None
    noise_std: float | None = None
    noise_bound_log2: int | None = None
    samples: int | None = None

    @model_validator(mode="after")
    def _one_noise(self) -> "LweProblem":
        if (self.noise_std is None) == (self.noise_bound_log2 is None):
            raise ValueError(f"{self.name}: give noise_std or noise_bound_log2, one of them")
        if (self.secret == "gaussian") != (self.secret_std is not None):
            raise ValueError(f"{self.name}: secret_std goes with a gaussian secret, and only with it")
        return self


class _Built(BaseModel):
    """Facts of what the library built that a driver reports and a record keeps alike."""

    model_config = ConfigDict(extra="allow")
    N: int = 0
    t: int | None = None
    scale_bits: float | None = None
    slots: int = 0
    levels: int | None = None
    dnum: int | None = None
    preset: str | None = None
    p_fail: float | None = None
    security_bits_target: int | None = None
    # The largest log QP any of the setup's keys uses, where a key lives above the ciphertexts' Q·P
    # (Lattigo's bootstrapping keys: log QP 1546 beside a residual 725): the set's security is judged there.
    key_log_qp: float | None = None
    # Bit schemes: the LWE problems the setup rests on, the security estimate's input.
    lwe_problems: list[LweProblem] = []


class SetupFacts(_Built):
    """What the library really built, as a driver reports it. RLWE: the primes themselves and what
    only the library knows (N, t, scale, slots; levels and dnum where they are not the defaults of
    Effective.of); fhemark derives the rest. Bit schemes: their preset's facts."""

    q_primes: list[Prime] = []  # ciphertext primes, level 0 (lowest) first
    p_primes: list[Prime] = []  # special (key-switching) primes

    @model_validator(mode="after")
    def _primes_not_their_facts(self) -> "SetupFacts":
        told = [k for k in DERIVED if k in (self.model_extra or {})]
        if self.q_primes and told:
            raise ValueError(f"{', '.join(told)}: fhemark derives them from q_primes and p_primes")
        return self


class Effective(_Built):
    """What the library really used, as a record keeps it. RLWE fields are required of RLWE schemes
    (checked in measure/runner.py); bit schemes report their preset's facts instead."""

    q_bits: list[int] = []
    p_bits: list[int] = []
    log_q: float = 0.0
    log_qp: float = 0.0

    @classmethod
    def of(cls, facts: dict) -> "Effective":
        """A setup's effective parameters from the facts its driver reported: the one definition
        of the bit lengths and log Q, log QP (log2 of the primes' products, which the security check
        reads) and of the defaults of levels (one per prime above the first) and dnum (the digits
        of a decomposition whose digits are as many primes as P)."""
        d = SetupFacts.model_validate(facts).model_dump()
        q, p = d.pop("q_primes"), d.pop("p_primes")
        if q:
            d.update(q_bits=[prime_bits(x) for x in q], p_bits=[prime_bits(x) for x in p],
                     log_q=sum(math.log2(x) for x in q), log_qp=sum(math.log2(x) for x in q + p))
            d["levels"] = len(q) - 1 if d["levels"] is None else d["levels"]
            d["dnum"] = -(-len(q) // max(len(p), 1)) if d["dnum"] is None else d["dnum"]
        return cls(**d)


def prime_bits(x: int) -> int:
    """A prime's size as a set asks for it: its bit length, or one less where it lies within 2^-10 above
    a power of two. Most libraries make a b-bit prime just below 2^b; a CKKS chain that holds the scale
    steady over many levels (OpenFHE's FLEXIBLEAUTO, the SEAL and Lattigo drivers' scaling primes) takes
    some just above it, whose modulus is the same size to within 2^-10 bits."""
    n = x.bit_length()
    return n - 1 if n > 1 and x - (1 << (n - 1)) < 1 << max(n - 11, 0) else n


class AutoParamsResult(BaseModel):
    """What the library chose (PROTOCOL.md "auto_params"): a set a `setup` request can name."""
    N: int = Field(ge=2)
    q_primes: list[Prime] = Field(min_length=1)  # ciphertext primes, level 0 (lowest) first
    p_primes: list[Prime] = []                   # special (key-switching) primes
    scale_bits: int | None = None                # CKKS: the scale the library set, 2^scale_bits
    notes: list[str] = []


class SetupResult(BaseModel):
    effective: SetupFacts
    sizes_bytes: dict[str, int] = {}


class SampleResult(BaseModel):
    ns: dict[str, int]
    # The driver process's CPU time (user + system, every thread, from the OS) between the same two
    # clock reads as `ns`: CPU / wall is the parallelism the library really used in the region.
    cpu_ns: dict[str, int] = {}
    outputs: dict[str, Vector] = {}


class RawDecryption(BaseModel):
    """[c0 + c1*s (+ c2*s^2 ...)]_Q of a BFV/BGV ciphertext, from a driver whose library has no noise
    budget of its own: the orchestrator computes the budget (model/noise.py, PROTOCOL.md "Raw decryptions")."""
    form: Literal["msb", "lsb"]  # msb: x = Delta*m + v or t^-1*m + e, the noise is [t*x]_Q; lsb: x = m + t*e
    t: int
    primes: list[int]  # the ciphertext's level, in the library's order
    residues: list[str]  # per prime: base64 of N little-endian u64 coefficients (coefficient form), in [0, prime)

    def budget(self) -> int:
        res = [np.frombuffer(base64.b64decode(r), dtype="<u8") for r in self.residues]
        return noise_budget_bits(self.primes, res, self.t, self.form)


class RunResult(BaseModel):
    samples: list[SampleResult]
    overhead_ns: int
    noise_budget_bits: dict[str, float] = {}
    raw_decryptions: dict[str, RawDecryption] = {}
    sizes_bytes: dict[str, int] = {}
    levels: dict[str, int] = {}
    notes: list[str] = []


class Refusal(BaseModel):
    """Why a library refused a set, as a search reads it (PROTOCOL.md "Refusals"): a kind and its
    numbers, beside the sentence a person reads, so that no search matches a library's words."""

    model_config = ConfigDict(extra="allow")
    kind: Literal["prime_unavailable", "t_too_wide", "precision_short"]


class ErrorValue(BaseModel):
    kind: Literal["unsupported", "invalid_params", "insecure_params", "wrong_result",
                  "timeout", "crashed", "out_of_memory", "internal", "workload_error"]
    message: str
    refusal: Refusal | None = None


class Reply(BaseModel):
    v: Literal[2]
    id: int
    ok: bool
    result: dict[str, Any] | None = None
    error: ErrorValue | None = None


REQUESTS = {"capabilities": CapabilitiesRequest, "setup": SetupRequest, "run": RunRequest,
            "shutdown": ShutdownRequest, "auto_params": AutoParamsRequest}
RESULTS = {"capabilities": Capabilities, "setup": SetupResult, "run": RunResult, "auto_params": AutoParamsResult}


def schemas() -> dict[str, dict]:
    """The JSON schemas published in protocol/schema/."""
    from typing import Union

    from pydantic import TypeAdapter

    req = Annotated[Union[tuple(REQUESTS.values())], Field(discriminator="type")]
    return {
        "request.json": TypeAdapter(req).json_schema(),
        "reply.json": Reply.model_json_schema(),
        "results.json": {"$defs": {name: m.model_json_schema() for name, m in RESULTS.items()}},
    }


if __name__ == "__main__":
    import sys
    from pathlib import Path

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "protocol/schema")
    for name, schema in schemas().items():
        (out / name).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
