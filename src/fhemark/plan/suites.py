"""Suites: YAML files (built-in ones in suites/, users' anywhere) validated into typed objects.

This is the boundary for user files (suites here, workloads in recommend.py): every rule a
value must meet is stated once, in the models below, and every violation becomes one line
(`UserError`) that names the file, the field and the fix.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ..errors import UserError, field_error
from ..locations import project_root
from ..model.security import TABLES
from ..model.workload import WorkloadRef

# Sane ceilings: far above any real use, low enough that a typo (an extra zero, a unit slip) is caught.
WEEK_S = 7 * 24 * 3600.0
MAX_N = 131072
MAX_FILE_BYTES = 10 * 2**20   # a suite or workload file larger than this is not a hand-written file
MAX_NODES = 200_000           # values in a file once YAML aliases are expanded (an alias bomb stays small on disk)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Policy(BaseModel):
    """How one job is measured. Suite defaults, then case overrides, then CLI flags."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    warmup: int = Field(1, ge=0, le=1000)
    min_samples: int = Field(5, ge=1, le=100_000)
    max_samples: int = Field(200, ge=1, le=1_000_000)
    target_rel_ci: float = Field(0.02, gt=0, lt=1)  # stop when the CI half-width / median reaches this
    budget_s: float = Field(2.0, gt=0, le=WEEK_S)   # or when this much wall time is spent on the job
    min_sample_us: float = Field(50.0, ge=0, le=1e7)  # faster ops: several copies per sample, each on fresh inputs
    max_iters: int = Field(32, ge=1, le=4096)        # at most this many copies in one timed region
    # hot: fresh operands per sample, each timed region warmed up by the same calls just before it
    # (as a pipeline's previous step, or a library's own benchmark loop, leaves them); cold: copies
    # of the op on operands all made before the region (README "Input state").
    inputs: Literal["hot", "cold"] = "hot"
    # Driver processes the samples are spread over (fresh process, fresh keys each, in rounds that
    # interleave libraries): their spread goes into the interval, as a second run would see it.
    processes: int = Field(1, ge=1, le=20)
    # Rounds per process: a job's samples are taken in this many slices, the libraries' jobs for
    # one op interleaved slice by slice (A B C A B C ...), so a slow minute of the machine hits
    # every library alike; the ratios between libraries get intervals from the paired rounds.
    rounds: int = Field(1, ge=1, le=50)
    # Inside a round, the libraries measured on one op take turns request by request (sample: about
    # 20 ms each, in a random order each turn), so the ratio between two libraries is read from
    # samples taken tens of milliseconds apart; slice: each library's whole slice in turn (the
    # design before 2026-11-28, whose pairs are a slice apart and share little of the host's state).
    interleave: Literal["sample", "slice"] = "sample"
    timeout_s: float = Field(600.0, gt=0, le=WEEK_S)  # per driver request
    memory_limit_mb: int = Field(20000, gt=0, le=2**24)
    min_precision_bits: float = Field(10.0, ge=0, le=60)  # CKKS results below this fail the check
    max_depth: int = Field(40, ge=1, le=1000)             # depth probes stop here at the latest
    seed: int = Field(1, ge=0, lt=2**63)                  # numpy seeds are non-negative
    # latency: one evaluation at a time. throughput: k driver processes run the job at once, k
    # growing until the host's cores are busy or the rate stops growing (measure/throughput).
    mode: Literal["latency", "throughput"] = "latency"
    max_batch: int | None = Field(None, ge=1, le=256)     # throughput: k stops here at the latest

    @field_validator("max_samples")
    @classmethod
    def _at_least_min(cls, v: int, info: ValidationInfo) -> int:
        low = info.data.get("min_samples")
        if low is not None and v < low:
            raise ValueError(f"max_samples {v} is below min_samples {low}: raise max_samples or lower min_samples")
        return v


class Security(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    # The tables' levels are 128, 192 and 256 bits; below 80 no parameter set is called secure anywhere.
    min_bits: int = Field(128, ge=80, le=256)
    table: str = "hestd2018"
    # Run sets below min_bits, each record marked insecure (as `--allow-insecure`): tests' toy rings, and a
    # search asked of such rings (advisor.Need.insecure).
    allow_insecure: bool = False

    @field_validator("table")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in TABLES:
            raise ValueError(f"unknown table '{v}' (use {' or '.join(TABLES)})")
        return v


VectorLength = Annotated[int, Field(strict=True, ge=1, le=MAX_N)]
# Threads each library may use: a count, `max` (this host's cores), `all` (every count from 1 to
# the host's cores), or a list of them: a sweep axis like N or the scheme.
ThreadCount = Annotated[int, Field(strict=True, ge=1, le=1024)] | Literal["max", "all"]
Threads = ThreadCount | Annotated[list[ThreadCount], Field(min_length=1, max_length=64)]


def host_cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the machine's): what
    `threads: max` means, and what throughput mode saturates."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def thread_counts(threads: Threads) -> list[int]:
    """The thread counts a suite or case asks for, on this host, each once, in order."""
    cores = host_cores()
    named = {"max": [cores], "all": list(range(1, cores + 1))}
    return list(dict.fromkeys(n for t in (threads if isinstance(threads, list) else [threads])
                              for n in named.get(t, [t])))


Name = Annotated[str, Field(strict=True, min_length=1, max_length=100)]


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    libraries: Annotated[list[Name], Field(min_length=1)] | Literal["all"] = "all"
    schemes: list[Name] = Field(min_length=1)
    params: list[Name | dict[str, Any]] = Field(min_length=1)
    ops: Annotated[list[Name], Field(min_length=1)] | Literal["all", "micro", "into", "pipelines", "depth"] = "micro"
    # Vector lengths; default: every slot. Checked against each scheme's slot count when planned.
    slots: list[VectorLength] | None = Field(None, min_length=1)
    threads: Threads | None = None  # overrides the suite's
    policy: dict[str, Any] = {}
    # Measured where its libraries' drivers are already built; otherwise skipped with one line saying how
    # to include them: a run never starts a long build (TFHE-rs: ~8 min) for an optional case.
    optional: bool = False


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    description: str = ""
    threads: Threads = 1
    security: Security = Security()
    policy: Policy = Policy()
    cases: list[Case] = Field(min_length=1)
    full_cases: list[Case] = []  # added by `fhemark run --full`: the long sweep
    source: str = ""
    # The user's computations the ops name (set by fhemark, not in YAML): the file each is defined in
    # and the digest of the bytes loaded (model/workload_file.py), so that any process planning the
    # suite again finds the same computation, or is told that the file changed.
    workloads: list[WorkloadRef] = []

    def refs(self) -> dict[str, WorkloadRef]:
        """The user's computations the ops name, by name."""
        return {w.name: w for w in self.workloads}

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str) -> str:
        if _CONTROL.search(v) or not v.strip():
            raise ValueError("a suite name must be printable text on one line")
        return v

    def case_policy(self, case: Case, where: str) -> Policy:
        """A case's policy: the suite's, overridden by the case's own fields, with every rule
        (ranges, min_samples <= max_samples) checked on the merged result."""
        if not case.policy:
            return self.policy
        try:
            return Policy(**{**self.policy.model_dump(), **case.policy})
        except ValidationError as exc:
            field, msg = field_error(exc, top="")
            raise UserError(f"{self.source or 'suite'}: field '{where}.policy.{field}': {msg}",
                            "see the policy fields in docs/suites.md")


def builtin_dir() -> Path:
    return project_root() / "suites"


def builtin_names() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.yaml"))


# -- reading YAML safely ---------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)."""


def _mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
            continue  # merged keys (<<) may be overridden: that is not a duplicate
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (also at line {seen[key].line + 1}): the first value would be lost",
                key_node.start_mark)
        seen[key] = key_node.start_mark
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _size(data: Any, budget: int = MAX_NODES) -> int:
    """Values in `data` with aliases expanded, stopping at the budget (shared nodes count every time)."""
    stack, n = [data], 0
    while stack and n <= budget:
        x = stack.pop()
        n += 1
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return n


def _non_string_key(data: Any, where: str = "") -> tuple[Any, str] | None:
    """The first mapping key that is not a string (YAML reads 1, yes, null, 2024-01-01 as other types)."""
    stack = [(data, where)]
    while stack:
        x, at = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                if not isinstance(k, str):
                    return k, at
                stack.append((v, f"{at}.{k}" if at else k))
        elif isinstance(x, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(x))
    return None


def read_mapping(path: Path, what: str, shape: str) -> dict:
    """A user's YAML file as a mapping, or one line naming what is wrong with it."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{what} file '{path}' does not exist", "check the path")
    if path.is_dir():
        raise UserError(f"{what} '{path}' is a directory, not a YAML file", f"give the path of a {what} .yaml file")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise UserError(f"{what} '{path}' is not a regular file", f"give the path of a {what} .yaml file")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UserError(f"{path}: {path.stat().st_size} bytes is too large for a {what} file",
                            f"a {what} is a short YAML file (see suites/quick.yaml)")
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what} file ({exc.strerror or exc})", "check the path and its permissions")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a text file (byte {exc.start} is not UTF-8)", f"give a {what} YAML file")
    if "\x00" in text:
        raise UserError(f"{path}: not a text file (it contains NUL bytes)", f"give a {what} YAML file")
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(x for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x) \
            or str(exc).splitlines()[0]
        fix = ("remove or rename one of the two keys" if "duplicate key" in problem
               else "fix the YAML syntax (indentation, colons, brackets, quotes)")
        raise UserError(f"{path}: malformed YAML{where} ({problem})", fix)
    except RecursionError:
        raise UserError(f"{path}: YAML nested too deeply", f"a {what} is a short YAML file (see suites/quick.yaml)")
    if not isinstance(data, dict):
        got = "empty" if data is None else f"a {type(data).__name__}"
        raise UserError(f"{path}: a {what} must be {shape}, this file is {got}", "fix the file's top level")
    if _size(data) > MAX_NODES:
        raise UserError(f"{path}: more than {MAX_NODES} values once YAML aliases are expanded",
                        "write the file without alias chains (&anchor / *alias)")
    bad = _non_string_key(data)
    if bad is not None:
        key, at = bad
        kind = {bool: "a boolean", int: "a number", float: "a number", type(None): "null"}.get(type(key), "not a string")
        raise UserError(f"{path}: key {key!r} {f'in {at} ' if at else 'at the top level '}is {kind}, not a name",
                        "quote it or fix the key (YAML reads 1, yes, no, null and dates as non-strings)")
    return data


# -- suites --------------------------------------------------------------------------------------

def validation_line(path: Any, exc: ValidationError, fix: str) -> UserError:
    field, msg = field_error(exc)
    return UserError(f"{path}: field '{field}': {msg}", fix)


def resolve_path(name_or_path: str) -> Path:
    """A built-in suite's name or a path to a file."""
    path = Path(name_or_path)
    if not name_or_path or _CONTROL.search(name_or_path):
        raise UserError(f"suite {name_or_path!r} is not a name or a path", f"use one of {', '.join(builtin_names())}")
    if not path.suffix:
        builtin = builtin_dir() / f"{name_or_path}.yaml"
        if builtin.exists() and "/" not in name_or_path:
            return builtin
        if not path.is_file():
            raise UserError(f"suite '{name_or_path}' not found",
                            f"use one of {', '.join(builtin_names())} or a path to a .yaml file")
    return path


def _with_workloads(ops: list[str], folder: Path, found: dict[str, WorkloadRef]) -> list[str]:
    """A case's ops with every workload file (a path ending in .py, relative to the suite's folder)
    replaced by the names of the workloads it defines, each added to `found`."""
    from ..model.workload_file import load as load_workloads
    out: list[str] = []
    for op in ops:
        if not op.endswith(".py"):
            out.append(op)
            continue
        for w in load_workloads(folder / op):
            out.append(w.name)
            add_workload(found, w.ref)
    return out


def add_workload(found: dict[str, WorkloadRef], ref: WorkloadRef) -> None:
    """One computation per name in a suite: two files that define the same name are refused."""
    other = found.get(ref.name)
    if other is not None and other != ref:
        raise UserError(f"workload name {ref.name!r} is defined by both {other.file} and {ref.file}",
                        "rename one of them (a workload's name is its op's name in every table)")
    found[ref.name] = ref


def load(name_or_path: str, full: bool = False) -> Suite:
    path = resolve_path(name_or_path)
    data = read_mapping(path, "suite", "a mapping with 'name' and 'cases' (see suites/quick.yaml)")
    data.setdefault("name", path.stem)
    for field in ("source", "workloads"):
        if field in data:
            raise UserError(f"{path}: field '{field}': unknown field",
                            "remove it (fhemark records the suite's path and its workload files itself: list a "
                            "workload file in a case's ops)")
    try:
        suite = Suite(**data, source=str(path))
    except ValidationError as exc:
        raise validation_line(path, exc, "see suites/quick.yaml and docs/suites.md for the format")
    found: dict[str, WorkloadRef] = {}
    for what in ("cases", "full_cases"):  # merged policies meet every rule too (e.g. a case's min_samples)
        for ci, case in enumerate(getattr(suite, what)):
            suite.case_policy(case, f"{what}[{ci}]")
            if isinstance(case.ops, list) and any(o.endswith(".py") for o in case.ops):
                case.ops = _with_workloads(case.ops, path.parent, found)
    suite.workloads = list(found.values())
    if full:
        suite = suite.model_copy(update={"cases": suite.cases + suite.full_cases, "name": f"{suite.name}-full"})
    return suite
