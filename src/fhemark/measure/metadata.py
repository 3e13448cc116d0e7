"""The environment every result was measured in (read-only: nothing is tuned)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path

from .. import __version__
from ..plan.suites import Threads, thread_counts
from .affinity import describe

_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512dq", "avx512ifma", "avx512vbmi", "bmi2", "adx", "aes", "sha_ni")


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpu() -> dict:
    model, flags = platform.processor() or "unknown", set()
    info = _read("/proc/cpuinfo") or ""
    for line in info.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            model = value.strip()
        elif key.strip() == "flags":
            flags = set(value.split())
    return {"model": model, "flags": sorted(f for f in _FLAGS_OF_INTEREST if f in flags),
            "logical_cores": os.cpu_count(),
            "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "turbo_disabled": _read("/sys/devices/system/cpu/intel_pstate/no_turbo")}


def git_revision(root: Path | None) -> str | None:
    if root is None:
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def environment(threads: Threads, root: Path | None) -> dict:
    """`threads`: the run's thread axis as the suite writes it (a count, `max`, `all` or a list)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    mem = _read("/proc/meminfo") or ""
    total_kb = next((int(line.split()[1]) for line in mem.splitlines() if line.startswith("MemTotal")), None)
    return {
        "host": socket.gethostname(),  # which machine measured it: distributed sweeps mix several
        "fhemark_version": __version__,
        "git_revision": git_revision(root),
        "cpu": _cpu(),
        "memory_bytes": total_kb * 1024 if total_kb else None,
        "threads": threads,
        "driver_cpus": describe(thread_counts(threads)),
        "os": platform.system(),
        "kernel": platform.release(),
        "distribution": (_read("/etc/os-release") or "").split("PRETTY_NAME=")[-1].split("\n")[0].strip('"') or None,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average": [round(x, 2) for x in load] if load else None,
        "aslr": _read("/proc/sys/kernel/randomize_va_space"),
    }
