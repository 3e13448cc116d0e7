"""Build a driver the first time a suite needs it, not before: the README's first command then
builds only what the quick suite uses, and a driver with a long build (TFHE-rs) is built when a
suite first asks for one of its schemes, with a progress line and an estimate.

What a driver could offer is declared in its driver.json (`schemes`), so the decision needs no
built driver; what it really offers is still its own capabilities answer once built.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from rich.console import Console

from ..plan.suites import Suite
from .registry import Manifest, manifests


def needed(suite: Suite, only: list[str] | None = None, missing_only: bool = True) -> list[str]:
    """Libraries the suite can use (named by a case, or, for `libraries: all`, declaring one of the
    case's schemes) whose toolchain is here: those not built yet, or all of them (a build is
    incremental: it brings a driver built from older sources up to date)."""
    found = manifests()
    want: list[str] = []
    for case in suite.cases:
        if case.optional and not only:  # measured where built: a run never starts its (long) build
            continue
        if case.libraries == "all":
            libs = [name for name, m in found.items() if not m.schemes or set(m.schemes) & set(case.schemes)]
        else:  # `openfhe@1.5.1` is a driver of its own, with its own build
            libs = [found[lib].library for lib in case.libraries if lib in found]
        only_named = [found[lib].library for lib in only or [] if lib in found]
        want += [lib for lib in libs if (not only or lib in only_named) and lib not in want]
    return [lib for lib in want if found[lib].build and found[lib].buildable
            and not (missing_only and found[lib].available)]


def build(m: Manifest, console: Console) -> str:
    """Run the driver's build (its build.sh, into the cache outside the clone), showing its last
    output line and the elapsed time against the manifest's estimate. Returns "built", "skipped"
    (the build said what is missing here and exited 0) or "failed"."""
    return build_many([m], console)[m.library]


def build_many(ms: list[Manifest], console: Console) -> dict[str, str]:
    """The builds side by side, one status line naming each running one: on a fresh machine the quick
    suite's Go compile (27 s) and three pip installs (33 s) took 60 s one after another. Library ->
    built / skipped / failed."""
    running: dict[str, str] = {}
    with console.status("building drivers") as status:
        def show(lib: str, line: str) -> None:
            running[lib] = line
            status.update("building " + "; ".join(f"{k} ({v})" for k, v in running.items()))

        def one(m: Manifest) -> str:
            try:
                return _build(m, console, lambda line: show(m.library, line))
            finally:
                running.pop(m.library, None)
        with ThreadPoolExecutor(max(1, len(ms))) as pool:
            done = dict(zip((m.library for m in ms), pool.map(one, ms)))
    return done


def _build(m: Manifest, console: Console, show: Callable[[str], None]) -> str:
    estimate = f", first build about {m.build_estimate_s // 60} min on 2 cores" if m.build_estimate_s >= 120 else ""
    # The version to build ("": the pinned one), set either way so no value from outside leaks in.
    env = {**os.environ, "PYTHON": sys.executable, "FHEMARK_LIB_VERSION": m.version}
    tail: deque[str] = deque(maxlen=1)
    t0 = time.monotonic()
    console.print(f"building the {m.library} driver{estimate}", highlight=False)
    try:
        proc = subprocess.Popen(list(m.build), cwd=m.folder, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        console.print(f"[yellow]{m.library} driver not built[/]: cannot start {m.build[0]}: {exc.strerror}",
                      highlight=False)
        return "failed"
    for line in proc.stdout:
        if line.strip():
            tail.append(line.strip()[:100])
            show(f"{time.monotonic() - t0:.0f} s: {tail[0]}")
    proc.wait()
    took = time.monotonic() - t0
    last = tail[0] if tail else "no output"
    if proc.returncode != 0:
        console.print(f"[red]{m.library} driver build failed[/] (exit {proc.returncode}, {took:.0f} s): {last}",
                      highlight=False)
        return "failed"
    if not m.available:  # the build said what this machine lacks
        console.print(f"[yellow]{m.library} driver not built[/]: {last}; it is skipped (needs {m.requires})",
                      highlight=False)
        return "skipped"
    console.print(f"{m.library} driver up to date ({took:.0f} s)", highlight=False)
    return "built"


def build_needed(suite: Suite, console: Console, only: list[str] | None = None,
                 missing_only: bool = True) -> dict[str, str]:
    """Build what the suite needs: library -> built / skipped / failed."""
    return build_many([manifests()[lib] for lib in needed(suite, only, missing_only)], console)


def build_all(console: Console) -> dict[str, str]:
    """`fhemark setup`: every driver with a build, brought up to date (a build without its
    toolchain says so and is skipped)."""
    return build_many([m for m in manifests().values() if m.build], console)
