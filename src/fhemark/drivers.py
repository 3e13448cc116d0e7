"""The driver registry: one `drivers/<library>/driver.json` each (PROTOCOL.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .locations import cache_dir, project_root


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


def manifests() -> dict[str, Manifest]:
    out = {}
    for path in sorted((project_root() / "drivers").glob("*/driver.json")):
        data = json.loads(path.read_text())
        out[data["library"]] = Manifest(data["library"], path.parent, tuple(_expand(a) for a in data["command"]),
                                        data.get("requires", "see its README"), tuple(data.get("toolchain", ())),
                                        tuple(data.get("build", ())), tuple(data.get("schemes", ())),
                                        int(data.get("build_estimate_s", 0)))
    return out


def available() -> list[str]:
    return [name for name, m in manifests().items() if m.available]
