"""Suites: YAML files (built-in ones in suites/, users' anywhere) validated into typed objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import UserError
from .locations import project_root
from .security import TABLES


class Policy(BaseModel):
    """How one job is measured. Suite defaults, then case overrides, then CLI flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warmup: int = Field(1, ge=0)
    min_samples: int = Field(5, ge=1)
    max_samples: int = Field(200, ge=1)
    target_rel_ci: float = Field(0.02, gt=0)  # stop when the CI half-width / median reaches this
    budget_s: float = Field(2.0, gt=0)        # or when this much wall time is spent on the job
    min_sample_us: float = Field(50.0, ge=0)  # faster ops: several copies per sample, each on fresh inputs
    max_iters: int = Field(32, ge=1)          # at most this many copies in one timed region
    # Driver processes the samples are spread over (fresh process, fresh keys each, in rounds that
    # interleave libraries): their spread goes into the interval, as a second run would see it.
    processes: int = Field(1, ge=1, le=20)
    timeout_s: float = Field(600.0, gt=0)     # per driver request
    memory_limit_mb: int = Field(20000, gt=0)
    min_precision_bits: float = Field(10.0, ge=0)  # CKKS results below this fail the check
    max_depth: int = Field(40, ge=1)                # depth probes stop here at the latest
    seed: int = 1


class Security(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_bits: int = 128
    table: str = "hestd2018"

    @field_validator("table")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in TABLES:
            raise ValueError(f"unknown table '{v}' (use {' or '.join(TABLES)})")
        return v


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    libraries: list[str] | Literal["all"] = "all"
    schemes: list[str]
    params: list[str | dict[str, Any]]
    ops: list[str] | Literal["all", "micro", "into", "pipelines", "depth"] = "micro"
    slots: list[int] | None = None  # vector lengths; default: every slot
    policy: dict[str, Any] = {}


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    threads: int = Field(1, ge=1)
    security: Security = Security()
    policy: Policy = Policy()
    cases: list[Case] = Field(min_length=1)
    full_cases: list[Case] = []  # added by `fhemark run --full`: the long sweep
    source: str = ""


def builtin_dir() -> Path:
    return project_root() / "suites"


def builtin_names() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.yaml"))


def read_mapping(path: Path, what: str, shape: str) -> dict:
    """A user's YAML file as a mapping, or one line naming what is wrong with it."""
    if not path.exists():
        raise UserError(f"{what} file '{path}' does not exist", "check the path")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise UserError(f"{path}: malformed YAML{where} ({getattr(exc, 'problem', exc)})",
                        "fix the YAML syntax (indentation, colons, brackets)")
    if not isinstance(data, dict):
        raise UserError(f"{path}: a {what} must be {shape}", "fix the file's top level")
    return data


def load(name_or_path: str, full: bool = False) -> Suite:
    path = Path(name_or_path)
    if not path.suffix:
        path = builtin_dir() / f"{name_or_path}.yaml"
        if not path.exists():
            raise UserError(f"suite '{name_or_path}' not found",
                            f"use one of {', '.join(builtin_names())} or a path to a .yaml file")
    data = read_mapping(path, "suite", "a mapping with 'name' and 'cases' (see suites/quick.yaml)")
    data.setdefault("name", path.stem)
    try:
        suite = Suite(**data, source=str(path))
        if full:
            suite = suite.model_copy(update={"cases": suite.cases + suite.full_cases, "name": f"{suite.name}-full"})
        return suite
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise UserError(f"{path}: field '{field}': {err['msg']}", "see suites/quick.yaml for the format")
