"""What is here: `fhemark list`, `setup` (the drivers' builds) and `env` (the environment record)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Optional

import typer

from ..drivers import build as drivers_build
from ..drivers.registry import Manifest, manifests, versions_here
from ..drivers.supervise import Driver
from ..errors import DriverError, UserError
from ..locations import project_root
from ..measure.metadata import environment
from ..model.catalog import CATALOG
from ..plan.suites import builtin_names, load
from .application import app, console, err_console


class ListWhat(str, Enum):
    libraries = "libraries"
    schemes = "schemes"
    ops = "ops"
    suites = "suites"


def _capabilities() -> dict[str, dict | str]:
    """Ask every available driver what it can do (its own answer, not a list kept here)."""
    out: dict[str, dict | str] = {}
    for name, m in manifests().items():
        if not m.available:
            out[name] = m.why_unavailable()
            continue
        d = Driver(m)
        try:
            out[name] = d.request("capabilities", timeout_s=120)
        except DriverError as exc:
            out[name] = f"{exc.kind}: {exc.message}"
        finally:
            d.stop()
    return out


@app.command("list")
def list_(what: ListWhat) -> None:
    """What is available here: libraries, schemes, ops, suites."""
    if what is ListWhat.suites:
        for name in builtin_names():
            try:
                console.print(f"{name:10} {load(name).description}", markup=False)
            except UserError as exc:  # one broken built-in suite does not hide the others
                console.print(f"{name:10} (invalid: {exc.line()})", markup=False)
        return
    caps = _capabilities()
    if what is ListWhat.libraries:
        for name, c in caps.items():
            if isinstance(c, str):
                console.print(f"{name:10} unavailable: {c}", markup=False)
            else:
                console.print(f"{name:10} {c['library_version']:12} schemes: {', '.join(c['schemes'])}; "
                              f"threads {c['threads']}; driver {c['driver_version']}", markup=False)
            _print_versions(manifests()[name])
    elif what is ListWhat.schemes:
        schemes: dict[str, list[str]] = {}
        for name, c in caps.items():
            if not isinstance(c, str):
                for sch in c["schemes"]:
                    schemes.setdefault(sch, []).append(name)
        for sch, libs in sorted(schemes.items()):
            console.print(f"{sch:8} {', '.join(libs)}")
    else:
        libs = {n: c for n, c in caps.items() if not isinstance(c, str)}
        for name, op in CATALOG.items():
            support = []
            for lib, c in libs.items():
                ok = [sch for sch in op.schemes if sch in c["schemes"]
                      and op.program(sch).primitives() <= set(c["schemes"][sch]["ops"])]
                if ok:
                    support.append(f"{lib}: {'/'.join(s.upper() for s in ok)}")
            console.print(f"{name:20} {op.title:50} {'; '.join(support) or 'no driver here'}")
        console.print("workloads (Study 4), by name: multiadd_<n>x<bits> (sum of n integers), compare_<bits> (X < Y):"
                      " tfhe_bool netlists, tfhe_int native ops, BFV/BGV word-wise additions")
        console.print("applications, by size: dot_<n> (inner product), matvec_<d> (plaintext matrix x encrypted vector),"
                      " tally_<n> (BFV/BGV), mean_<n> (CKKS), poly_<deg> (Horner), logreg_<n> (CKKS), similarity_<records>x<dim>,"
                      " zmul_<bits> (tfhe_int); n, d, dim powers of two")


def _print_versions(m: Manifest) -> None:
    """The versions a driver runs besides its pinned one, and which of them are built here."""
    here = versions_here(m)
    if len(here) > 1:
        said = [f"{m.library}@{v} " + ("(pinned, the bare name) " if i == 0 else "")
                + ("built" if built else "not built") for i, (v, built) in enumerate(here)]
        console.print(f"{'':10} versions: {'; '.join(said)} (`fhemark setup --library {m.library}@VERSION` "
                      "builds one)", markup=False, highlight=False)


@app.command()
def setup(suite: Optional[str] = typer.Option(None, help="only the drivers this suite needs (default: every driver)"),
          library: list[str] = typer.Option(None, "--library",
                                            help="only these drivers; NAME@VERSION builds that version of the "
                                                 "library into its own place in the cache (repeatable)")) -> None:
    """Build (or bring up to date) the drivers whose toolchain is here; `run` builds missing ones itself."""
    known = manifests()
    for lib in library or []:
        if lib not in known:
            raise UserError(f"--library {lib}: unknown library", f"use one of {', '.join(known) or 'none'}")
    if library:
        done = drivers_build.build_many(list({known[lib].library: known[lib] for lib in library}.values()), err_console)
    else:
        done = drivers_build.build_needed(load(suite), err_console, missing_only=False) if suite else \
            drivers_build.build_all(err_console)
    for name, m in manifests().items():
        state = "built" if m.available else (
            f"not built yet (about {m.build_estimate_s} s to build: `fhemark setup`, or the first run that needs it)"
            if m.buildable else f"not built: needs {m.requires}")
        console.print(f"{name:10} {state}", markup=False, highlight=False)
        _print_versions(m)
    if "failed" in done.values():  # a broken build is an error, a missing toolchain is not
        raise typer.Exit(1)


@app.command()
def env() -> None:
    """The environment record attached to every result."""
    print(json.dumps(environment(1, project_root()), indent=2))
