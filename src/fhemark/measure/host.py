"""What else the machine did while a job ran: CPU time used by other processes and
time stolen by the hypervisor. Read-only (/proc), recorded with every result,
because a shared machine cannot be tuned from here, only watched.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

# A job is marked contended when other processes kept this much of a core busy on
# average, or the hypervisor took this share of the CPU time: either can move a median.
CONTENDED_OTHER_CORES = 0.5
CONTENDED_STEAL_SHARE = 0.05
# /proc counts in ticks (100 per second): over a shorter window one stolen tick already
# reads as 5% steal, so such jobs are not judged (contended is None).
MIN_JUDGED_WINDOW_S = 0.5


@dataclass(frozen=True)
class _Cpu:
    total: int
    busy: int
    steal: int


def _system() -> _Cpu | None:
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    total = sum(fields[:8])
    return _Cpu(total, total - idle - iowait - steal, steal)


def _process(pid: int, children: bool) -> int:
    """CPU ticks of a process (and of its waited-for children)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    f = stat.rsplit(")", 1)[1].split()  # the command name may contain spaces
    ticks = int(f[11]) + int(f[12])       # utime, stime
    return ticks + (int(f[13]) + int(f[14]) if children else 0)


class Activity:
    """Started before a job, finished after it: what the rest of the machine did meanwhile."""

    def __init__(self, *driver_pids: int | None):
        self.pids = [pid for pid in driver_pids if pid]  # the drivers measured in the window: not contention
        self.t0 = time.monotonic()
        self.sys0 = _system()
        self.extra = 0  # ticks of the job's own other processes, which ended inside the window
        self.own0 = self._own()

    def _own(self) -> int:
        return _process(os.getpid(), False) + sum(_process(pid, True) for pid in self.pids) + self.extra

    def own_process(self, pid: int) -> None:
        """A process of the job's own, started inside the window (throughput mode's other drivers):
        its CPU is the job's, not contention. Read just before it is stopped."""
        self.extra += _process(pid, True)

    def finish(self) -> dict | None:
        sys1 = _system()
        if self.sys0 is None or sys1 is None or sys1.total <= self.sys0.total:
            return None
        total = sys1.total - self.sys0.total
        wall_ticks = total / (os.cpu_count() or 1)
        others = max(0, (sys1.busy - self.sys0.busy) - (self._own() - self.own0))
        other_cores = others / wall_ticks
        steal = (sys1.steal - self.sys0.steal) / total
        judged = wall_ticks >= MIN_JUDGED_WINDOW_S * os.sysconf("SC_CLK_TCK")
        return {"window_s": round(time.monotonic() - self.t0, 3), "other_cores": round(other_cores, 3),
                "steal_share": round(steal, 4), "load_1m": round(os.getloadavg()[0], 2),
                "contended": (other_cores >= CONTENDED_OTHER_CORES or steal >= CONTENDED_STEAL_SHARE)
                if judged else None}


def merged(parts: list[dict | None]) -> dict | None:
    """One job measured in several rounds: the activity over all of them (contended if any was)."""
    rounds = len(parts)
    parts = [p for p in parts if p]  # a round too short for one /proc tick has no reading
    if not parts:
        return None
    window = sum(p["window_s"] for p in parts) or 1e-9
    other = sum(p["other_cores"] * p["window_s"] for p in parts) / window
    steal = sum(p["steal_share"] * p["window_s"] for p in parts) / window
    # Judged over the job's whole sampling time: its slices are often each too short for the tick
    # counters (302 of the quick suite's 304 jobs were never judged), their sum is not.
    judged = [p["contended"] for p in parts if p["contended"] is not None]
    if window >= MIN_JUDGED_WINDOW_S:
        judged.append(other >= CONTENDED_OTHER_CORES or steal >= CONTENDED_STEAL_SHARE)
    return {"window_s": round(window, 3), "other_cores": round(other, 3), "steal_share": round(steal, 4),
            "load_1m": max(p["load_1m"] for p in parts), "contended": any(judged) if judged else None,
            "rounds": rounds}
