"""Ready-to-use parameter snippets: a short program in a library's own API that builds the context
fhemark benchmarked for one (library, scheme, parameter set) and prints ONE JSON line saying what the
library really built (ring dimension, prime bit sizes, t or scale, the security level it checked).

Each snippet builds what that library's driver (drivers/<library>) builds for the same parameters:
SEAL and TenSEAL take the bit sizes as given (the special prime last), OpenFHE derives its chain from a
multiplicative depth, a first-prime size and a scaling size with 60-bit key-switching primes, Lattigo
gets primes of exactly the asked sizes from its own generator, TFHE-rs gets the named parameter set.
`fhemark choose` hands them to users; tests/test_snippets.py runs them against the real libraries.
A library's template and its builder are its driver's (drivers/<library>/snippet.py: `build(scheme,
params, insecure)`); what else a snippet says of it (title, language, what to install, schemes, whether
it takes OpenFHE-style key-switching choices) its driver.json declares.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from pathlib import Path
from typing import Any, Callable

from ...drivers.registry import manifests, named
from ...errors import UserError
from ...model.params import SCHEMES_BITS, ParamSet, resolve

BUILDER = "snippet.py"  # in a driver's folder: its template and `build`
_SUFFIX = {"python": "py", "go": "go", "rust": "rs"}
_COMMENT = {"python": "#", "go": "//", "rust": "//"}
_SPEC_KEYS = ("N", "q_bits", "p_bits", "t", "t_bits", "scale_bits", "sigma", "name", "preset", "batching", "bits",
              "key_switching", "digit_size")
_RUN = {"python": "python {file}", "go": "go run {file}", "rust": "cargo run --release (this file as src/main.rs)"}


@dataclass(frozen=True)
class Form:
    """How one library's snippets are written: its driver.json's facts and its builder."""
    title: str
    language: str
    install: str
    schemes: tuple[str, ...]
    key_switching: bool
    build: Callable[[str, ParamSet, bool], str]


def forms() -> dict[str, Form]:
    """Every library whose driver.json declares `snippet` facts, with its folder's builder
    (tests/test_snippets.py checks that no library has one without the other)."""
    return {lib: Form(m.title, m.snippet.language, m.snippet.install, m.snippet.schemes, m.snippet.key_switching,
                      builder(lib).build)
            for lib, m in manifests().items() if m.snippet}


@cache
def builder(library: str) -> ModuleType:
    """A library's snippet module, loaded from its driver's folder."""
    path = manifests()[library].folder / BUILDER
    spec = importlib.util.spec_from_file_location(f"fhemark_snippet_{library.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Snippet:
    library: str
    scheme: str
    language: str  # "python" | "go" | "rust"
    filename: str
    text: str


def snippet(library: str, scheme: str, params: dict | ParamSet, header: str | None = None,
            allow_insecure: bool = False) -> Snippet:
    """The program for one library, scheme and parameter set (a ParamSet, the wire form or the suite
    inline form). `header`: text put on top as comments (what fhemark verified); `allow_insecure`:
    build without the library's 128-bit security check where it has one (small test rings)."""
    lib, known = named(library), forms()
    if lib not in known:
        raise UserError(f"no parameter snippet for library '{library}'", f"use one of {', '.join(known)}")
    form = known[lib]
    if scheme not in form.schemes:
        raise UserError(f"no {form.title} snippet for scheme '{scheme}'", f"{form.title} snippets: {', '.join(form.schemes)}")
    ps = _resolved(scheme, params)
    if ps.kind == "rlwe" and ps.preset:
        raise UserError(f"no snippet for the {form.title} preset '{ps.preset}'",
                        "snippets cover explicit N / q_bits / p_bits sets")
    if ps.key_switching and not form.key_switching:
        raise UserError(f"key_switching {ps.key_switching!r} is a choice {form.title} does not offer",
                        "remove key_switching and digit_size")
    language = form.language
    stem = lib.removesuffix("-rs")
    filename = f"{scheme if scheme.startswith(stem) else f'{stem}_{scheme}'}.{_SUFFIX[language]}"
    body = form.build(scheme, ps, allow_insecure)
    mark = _COMMENT[language]
    lines = header.splitlines() if header else []
    lines.append(f"fhemark parameter snippet: {form.title} {scheme}, {_describe(scheme, ps)}")
    lines += [f"Needs: {form.install}.", f"Run: {_RUN[language].format(file=filename)}; it prints one JSON line: "
              f"what {form.title} really built."]
    top = "\n".join(f"{mark} {line}".rstrip() for line in lines)
    return Snippet(lib, scheme, language, filename, f"{top}\n{body.strip()}\n")


def write(library: str, scheme: str, params: dict | ParamSet, folder: Path, header: str | None = None,
          allow_insecure: bool = False) -> Path:
    """Write the snippet into `folder` (made if missing); returns the file's path."""
    s = snippet(library, scheme, params, header, allow_insecure)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / s.filename
    path.write_text(s.text)
    return path


def _resolved(scheme: str, params: dict | ParamSet) -> ParamSet:
    """The same resolution the orchestrator applies before a driver sees the set: t from t_bits by
    params.batching_prime (an explicit t wins), validation with the suite's messages."""
    if isinstance(params, ParamSet):
        return params
    if not isinstance(params, dict):
        raise UserError(f"snippet parameters: {params!r} is not a parameter set", "give a dict such as {N: 8192, q_bits: ...}")
    spec: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v
                            for k, v in params.items() if k in _SPEC_KEYS and v is not None}
    if scheme not in SCHEMES_BITS:
        spec.pop("bits", None)
        if "t" in spec:
            spec.pop("t_bits", None)
        if scheme == "ckks":
            spec.pop("t", None)
            spec.pop("t_bits", None)
    return resolve(spec, scheme, "params")


def _describe(scheme: str, ps: ParamSet) -> str:
    if ps.kind == "bits":
        return f"preset {ps.preset}" + (f", {ps.bits}-bit integers" if ps.bits else "")
    value = f"scale 2^{ps.scale_bits}" if scheme == "ckks" else f"t={ps.t}"
    switching = f", key_switching={ps.key_switching}" + (f", digit_size={ps.digit_size}" if ps.digit_size else "") \
        if ps.key_switching else ""
    return f"N={ps.N}, q_bits={list(ps.q_bits)}, p_bits={list(ps.p_bits)}, {value}{switching}"


__all__ = ["BUILDER", "Form", "Snippet", "builder", "forms", "parse_report", "snippet", "write"]


def parse_report(stdout: str) -> dict:
    """The JSON line a snippet prints (the last line that parses as a JSON object)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError(f"no JSON line in the snippet's output: {stdout[-500:]!r}")
