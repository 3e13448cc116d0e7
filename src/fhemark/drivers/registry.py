"""The driver registry: one `drivers/<library>/driver.json` each (PROTOCOL.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

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
    key_switching: bool = False  # takes a set's key_switching / digit_size choice (OpenFHE: hybrid or BV)


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
    versions: Versions | None = None  # the versions it can be run at, where driver.json declares them
    version: str = ""                # the version named (`openfhe@1.5.1`: 1.5.1); "": the pinned one

    @property
    def base(self) -> str:
        """The library without a version (`openfhe@1.5.1`: openfhe)."""
        return self.library.partition("@")[0]

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


def _expand(arg: str, version: str = "") -> str:
    values = {"FHEMARK_CACHE": str(cache_dir()), "PYTHON": sys.executable, "VERSION": version}
    return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), os.environ.get(m.group(1), "")), arg)


_VERSION = r"^[0-9]+(\.[0-9]+){1,3}$"


class Versions(BaseModel):
    """The versions a driver runs (driver.json `versions`): the pinned one (the bare name and the
    default build), the others it supports, and the command that runs one of those, with
    ${VERSION} where the version goes (its own venv or binary in the cache)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    pinned: str = Field(pattern=_VERSION)
    supported: tuple[Annotated[str, Field(pattern=_VERSION)], ...] = Field(min_length=1, strict=False)
    command: tuple[str, ...] = Field(min_length=1, strict=False)

    def model_post_init(self, _context: object) -> None:
        if self.pinned not in self.supported:
            raise ValueError(f"the pinned version {self.pinned} is not among the supported ones")
        if not any("${VERSION}" in a for a in self.command):
            raise ValueError("the command names no ${VERSION}: every version would run the same build")


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
    versions: Versions | None = None


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
                    tuple(m.aliases), snippet, m.versions)


class Manifests(dict[str, Manifest]):
    """Every driver by library name. Iterating gives the bare names (the pinned versions: `libraries:
    all` means those); looking up `library@version` (or an alias with a version) gives the driver at
    that version, and a version the driver does not support is refused with the ones it does."""

    def __missing__(self, name: str) -> Manifest:
        found = self._at(name)
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (dict.__contains__(self, name) or self._at(name) is not None)

    def get(self, name: str, default: Manifest | None = None) -> Manifest | None:  # type: ignore[override]
        return self[name] if name in self else default

    def _at(self, name: str) -> Manifest | None:
        lib, at, version = name.partition("@")
        base = next((m for m in self.values() if lib.lower() in (m.library, *m.aliases)), None)
        if base is None or not at:
            return base
        vs = base.versions
        if vs is None or version not in vs.supported:
            fix = (f"use one of {', '.join(f'{base.library}@{v}' for v in vs.supported)} (or {base.library} for "
                   f"{vs.pinned})" if vs else f"use {base.library}: this checkout drives one version of it")
            raise UserError(f"library '{name}': {base.title} {version or '(no version)'} is not supported here", fix)
        command = base.command if version == vs.pinned else tuple(_expand(a, version) for a in vs.command)
        return replace(base, library=f"{base.library}@{version}", command=command,
                       version="" if version == vs.pinned else version)


def versions_here(m: Manifest) -> list[tuple[str, bool]]:
    """(version, built here) for every version a driver supports, the pinned one first."""
    if m.versions is None:
        return []
    found = Manifests({m.library: m})
    return [(v, found[f"{m.library}@{v}"].available)
            for v in sorted(m.versions.supported, key=lambda v: (v != m.versions.pinned, _numbers(v)))]


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def manifests() -> Manifests:
    out = Manifests()
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
    """The library a user's name means, as it is recorded: itself, or the library that declares it
    as an alias (compared in lower case), with the version as given (`TFHE@1.7.2`: tfhe-rs@1.7.2);
    the name in lower case where no driver declares it."""
    found = manifests()
    return found[name].library if name in found else name.lower()


def available(names: list[str] | None = None) -> list[str]:
    """The drivers built here: every library at its pin, or those `names` gives (a version, an alias:
    as recorded, `openfhe@1.5.1`)."""
    found = manifests()
    if names:
        return [lib for lib in dict.fromkeys(found[name].library for name in names) if found[lib].available]
    return [name for name, m in found.items() if m.available]
