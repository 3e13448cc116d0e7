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

from rich.console import Console

from .drivers import Manifest, manifests
from .suites import Suite


def needed(suite: Suite, only: list[str] | None = None) -> list[str]:
    """Libraries the suite can use that are not built yet: named by a case, or (`libraries: all`)
    declaring one of the case's schemes."""
    found = manifests()
    want: list[str] = []
    for case in suite.cases:
        if case.libraries == "all":
            libs = [name for name, m in found.items() if not m.schemes or set(m.schemes) & set(case.schemes)]
        else:
            libs = [lib for lib in case.libraries if lib in found]
        want += [lib for lib in libs if (not only or lib in only) and lib not in want]
    return [lib for lib in want if not found[lib].available and found[lib].build and found[lib].buildable]


def build(m: Manifest, console: Console) -> bool:
    """Run the driver's build (its build.sh, into the cache outside the clone), showing its last
    output line and the elapsed time against the manifest's estimate. True when it is built."""
    estimate = f", first build about {m.build_estimate_s // 60} min on 2 cores" if m.build_estimate_s >= 120 else ""
    env = {**os.environ, "PYTHON": sys.executable}
    tail: deque[str] = deque(maxlen=1)
    t0 = time.monotonic()
    with console.status(f"building the {m.library} driver{estimate}") as status:
        proc = subprocess.Popen(list(m.build), cwd=m.folder, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            if line.strip():
                tail.append(line.strip()[:100])
                status.update(f"building the {m.library} driver{estimate} ({time.monotonic() - t0:.0f} s): {tail[0]}")
        proc.wait()
    took = time.monotonic() - t0
    if proc.returncode != 0 or not m.available:
        console.print(f"[yellow]{m.library} driver not built[/] ({took:.0f} s): {tail[0] if tail else 'no output'}; "
                      f"it is skipped (needs {m.requires})", highlight=False)
        return False
    console.print(f"built the {m.library} driver in {took:.0f} s", highlight=False)
    return True


def build_needed(suite: Suite, console: Console, only: list[str] | None = None) -> list[str]:
    """Build what the suite needs; the libraries that are now built."""
    return [lib for lib in needed(suite, only) if build(manifests()[lib], console)]


def build_all(console: Console) -> list[str]:
    """`fhemark setup --all`: every driver whose toolchain is here."""
    return [name for name, m in manifests().items()
            if m.build and m.buildable and not m.available and build(m, console)]
