"""The driver registry: one `drivers/<library>/driver.json` each (PROTOCOL.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import UserError, field_error
from ..locations import cache_dir, project_root


class Snippet(BaseModel):
    """A library's parameter snippets (docs/snippets.md): the language their template is in, what a
    user installs to run one, and the schemes they cover (default: every scheme of the driver)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    language: str = Field(min_length=1)
    install: str = Field(min_length=1)
    schemes: tuple[str, ...] = Field((), strict=False)  # a JSON list


@dataclass(frozen=True)
class Manifest:
    library: str
    folder: Path
    command: tuple[str, ...]
    requires: str
    toolchain: tuple[str, ...] = ()  # commands whose presence means the driver can be built here
    build: tuple[str, ...] = ()      # the build command, run in the driver folder (empty: nothing to build)
    schemes: tuple[str, ...] = ()    # what it can offer, declared so a suite's needs are known before a build
    build_estimate_s: int = 0        # a first build's duration on 2 cores, shown while building
    wraps: str = ""                  # the library this one is a layer over (TenSEAL: seal), for the layer's cost
    title: str = ""                  # the library's own spelling (OpenFHE), for what users read
    colour: str = ""                 # its colour in every figure ("": one of the report's palette)
    aliases: tuple[str, ...] = ()    # other names a user may give it (tfhe-rs: tfhe)
    snippet: Snippet | None = None   # how fhemark's parameter snippets are written for it (advise/snippets)

    @property
    def buildable(self) -> bool:
        """The toolchain exists here: an unbuilt driver is then a failure of the build, not a skip."""
        return all(shutil.which(t) for t in self.toolchain)

    @property
    def available(self) -> bool:
        prog = self.command[0]
        return Path(prog).exists() if os.sep in prog else shutil.which(prog) is not None

    def why_unavailable(self) -> str:
        return f"{self.command[0]} not found; needs {self.requires}"


def _expand(arg: str) -> str:
    values = {"FHEMARK_CACHE": str(cache_dir()), "PYTHON": sys.executable}
    return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), os.environ.get(m.group(1), "")), arg)


class ManifestFile(BaseModel):
    """What a driver.json may say (PROTOCOL.md): checked, so a broken file is named, not a traceback."""

    model_config = ConfigDict(extra="ignore", strict=True)
    library: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    command: list[str] = Field(min_length=1)
    requires: str = "see its README"
    toolchain: list[str] = []
    build: list[str] = []
    schemes: list[str] = []
    build_estimate_s: int = Field(0, ge=0)
    wraps: str = ""
    title: str = ""
    colour: str = Field("", pattern=r"^(#[0-9a-fA-F]{6})?$")
    aliases: list[str] = []
    snippet: Snippet | None = None


def _manifest(path: Path) -> Manifest:
    fix = "fix the file (see protocol/PROTOCOL.md: driver.json) or remove that driver's folder"
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"{path}: cannot read the driver manifest ({exc.strerror or exc})", fix)
    except UnicodeDecodeError:
        raise UserError(f"{path}: the driver manifest is not UTF-8 text", fix)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: the driver manifest is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                        f"{exc.msg})", fix)
    try:
        m = ManifestFile.model_validate(data)
    except ValidationError as exc:
        field, msg = field_error(exc)
        raise UserError(f"{path}: driver manifest field '{field}': {msg}", fix)
    snippet = m.snippet.model_copy(update={"schemes": m.snippet.schemes or tuple(m.schemes)}) if m.snippet else None
    return Manifest(m.library, path.parent, tuple(_expand(a) for a in m.command), m.requires, tuple(m.toolchain),
                    tuple(m.build), tuple(m.schemes), m.build_estimate_s, m.wraps, m.title or m.library, m.colour,
                    tuple(m.aliases), snippet)


def manifests() -> dict[str, Manifest]:
    out: dict[str, Manifest] = {}
    names: dict[str, Manifest] = {}  # every name and alias -> the manifest that declares it
    for path in sorted((project_root() / "drivers").glob("*/driver.json")):
        m = _manifest(path)
        for name in (m.library, *m.aliases):
            if name in names:
                raise UserError(f"{path}: the name '{name}' is also declared by {names[name].folder / 'driver.json'}",
                                "give each driver its own library name and aliases")
            names[name] = m
        out[m.library] = m
    return out


def named(name: str) -> str:
    """The library a user's name means: itself, or the library that declares it as an alias
    (compared in lower case); the name as given where no driver declares it."""
    low = name.lower()
    return next((lib for lib, m in manifests().items() if low == lib or low in m.aliases), low)


def available() -> list[str]:
    return [name for name, m in manifests().items() if m.available]
