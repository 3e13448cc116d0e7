"""Start, talk to and watch one driver process: JSON lines with a timeout per
request, a memory ceiling, the stderr tail kept for crash reports, restart on
demand. Peak memory is read from the OS, never reported by the driver."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import DriverError, field_error
from .protocol import REQUESTS, RESULTS, Effective, Reply, RunResult
from .registry import Manifest

_POLL_S = 0.05


@contextmanager
def deferred_sigint(cancel: threading.Event):
    """Ctrl-C sets `cancel` instead of raising wherever the main thread happens to be.

    A KeyboardInterrupt raised between a lock's acquire and its release (a queue, the progress
    bar) leaves the lock held, and the run then hung on its way out. Driver waits and the runner
    check `cancel` and raise KeyboardInterrupt at a safe point; a second Ctrl-C interrupts at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first(signum, frame) -> None:
        cancel.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    old = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if cancel.is_set():
        # Ctrl-C came after the last safe point (the drivers' shutdown): still the user's word,
        # and a caller that goes on to more work (choose's next candidate) must not lose it
        raise KeyboardInterrupt


def _status_kb(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class Driver:
    def __init__(self, manifest: Manifest, threads: int = 1, cancel: threading.Event | None = None):
        self.manifest = manifest
        self.threads = threads
        self.cancel = cancel
        self.proc: subprocess.Popen | None = None
        self.setups: set[str] = set()
        self.pools: set[str] = set()  # ids of the pools the process keeps (PROTOCOL.md "Pool"), "<setup_id>/..."
        self._next_id = 0
        self._lines: queue.Queue = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=20)
        self.cpus: frozenset[int] | None = None  # the cores it is pinned to (pin), None: the OS chooses
        self._settled = False  # every thread of the process carries self.cpus, start-up threads included

    # -- process lifecycle -------------------------------------------------
    def start(self) -> None:
        env = dict(os.environ)
        n = str(self.threads)
        # The drivers' own numpy (encoding, checks: never timed) gets one thread: with OMP_NUM_THREADS=2
        # OpenBLAS starts a second thread that spin-waits after each call, and that CPU time landed in
        # SEAL's timed regions (parallelism 1.88 for a library without threads).
        env.update(FHEMARK_THREADS=n, OMP_NUM_THREADS=n, RAYON_NUM_THREADS=n, PYTHONUNBUFFERED="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        try:
            # errors="replace": a library printing bytes that are not UTF-8 must neither kill the
            # readers (a dead stderr reader let the pipe fill and blocked the driver until the
            # timeout) nor the run; a stray line costs the job in flight, as any stray line does.
            self.proc = subprocess.Popen(list(self.manifest.command), cwd=self.manifest.folder, env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, errors="replace", bufsize=1, start_new_session=True)
        except OSError as exc:
            raise DriverError("crashed", f"cannot start the {self.manifest.library} driver: {exc}")
        self.setups, self.pools = set(), set()
        self._settled = False
        if self.cpus is not None:
            self._apply_pin(settles=False)
        self._lines = queue.Queue()
        self._stderr.clear()
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()

    @staticmethod
    def _pump(stream, q: queue.Queue) -> None:
        try:
            for line in stream:
                q.put(line)
        except (OSError, ValueError):  # the pipe closed under the reader: the driver is gone
            pass
        finally:
            q.put(None)

    def _drain(self, stream) -> None:
        try:
            for line in stream:
                self._stderr.append(line.rstrip())
        except (OSError, ValueError):
            pass

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> None:
        if not self.alive:
            self.start()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
            self.proc.wait()
        self.setups, self.pools = set(), set()

    def stop(self) -> None:
        if self.alive:
            try:
                self.request("shutdown", timeout_s=10)
                self.proc.wait(timeout=10)
            except (DriverError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # -- CPU affinity ----------------------------------------------------------
    def pin(self, cpus: frozenset[int] | None) -> None:
        """Run the process's threads on `cpus` from now on (None: on every core this process may use)."""
        if cpus != self.cpus:
            self.cpus = cpus
            if self.alive:
                self._apply_pin(settles=self._settled)

    def _apply_pin(self, settles: bool) -> None:
        """Every thread the process has now. A runtime (Go's) starts threads of its own at start-up,
        before its first reply: request() applies it again after that reply (`settles`), and threads
        started later inherit it from their pinned parents."""
        if self.proc is None or not hasattr(os, "sched_setaffinity"):
            return
        cpus = self.cpus if self.cpus is not None else os.sched_getaffinity(0)
        try:
            for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
                os.sched_setaffinity(int(tid), cpus)
        except (OSError, ValueError):  # a thread ended meanwhile, or no /proc: the next reply tries again
            return
        self._settled = settles

    # -- memory --------------------------------------------------------------
    def reset_peak(self) -> None:
        """Reset the kernel's peak-RSS counter so the next reading covers one job."""
        if self.alive:
            try:
                Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")
            except OSError:
                pass

    def peak_rss_bytes(self) -> int | None:
        kb = _status_kb(self.proc.pid, "VmHWM") if self.alive else None
        return kb * 1024 if kb is not None else None

    # -- requests ------------------------------------------------------------
    def request(self, kind: str, timeout_s: float = 600.0, memory_limit_mb: int | None = None,
                **fields: Any) -> dict:
        self.ensure()
        self._next_id += 1
        try:
            msg = REQUESTS[kind](id=self._next_id, **fields).model_dump(mode="json", exclude_none=True)
        except ValidationError as exc:  # fhemark built it: an internal error, never sent
            field, msg = field_error(exc, top=kind)
            raise DriverError("internal", f"a {kind} request that breaks the protocol, not sent: {field}: {msg}") from None
        deadline = time.monotonic() + timeout_s
        self._send(json.dumps(msg) + "\n", kind, timeout_s, deadline)
        while True:
            try:
                line = self._lines.get(timeout=_POLL_S)
            except queue.Empty:
                line = ""
            if line is None:
                raise self._crashed()
            if line:
                if self.cpus is not None and not self._settled:
                    self._apply_pin(settles=True)
                return self._reply(kind, line)
            if self.cancel is not None and self.cancel.is_set():
                self.kill()  # the job in flight is lost; the ones already stored are not
                raise KeyboardInterrupt
            if time.monotonic() > deadline:
                self.kill()
                raise DriverError("timeout", f"{self.manifest.library} driver gave no answer to '{kind}' "
                                             f"within {timeout_s:g} s; raise policy.timeout_s or use smaller parameters")
            if memory_limit_mb is not None:
                rss = _status_kb(self.proc.pid, "VmRSS")
                if rss is not None and rss > memory_limit_mb * 1024:
                    self.kill()
                    raise DriverError("out_of_memory", f"{self.manifest.library} driver used {rss // 1024} MB, over "
                                                       f"the {memory_limit_mb} MB limit; raise policy.memory_limit_mb "
                                                       f"or use smaller parameters")

    def _send(self, text: str, kind: str, timeout_s: float, deadline: float) -> None:
        """Write a request, bounded like the wait for its answer: a driver that stopped reading
        (stopped, stuck) fills the pipe, and the write would block for good."""
        failed: list[BaseException] = []

        def write() -> None:
            try:
                self.proc.stdin.write(text)
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:  # ValueError: the pipe was closed by a kill
                failed.append(exc)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        while writer.is_alive():
            writer.join(_POLL_S)
            if self.cancel is not None and self.cancel.is_set():
                self.kill()
                raise KeyboardInterrupt
            if time.monotonic() > deadline and writer.is_alive():
                self.kill()  # closes the pipe: the blocked write ends
                writer.join(1.0)
                raise DriverError("timeout", f"{self.manifest.library} driver did not read the '{kind}' request "
                                             f"within {timeout_s:g} s (stopped or stuck; restarted)")
        if failed:
            raise self._crashed()

    def _reply(self, kind: str, line: str) -> dict:
        # A stray line or a reply to another request desynchronises the exchange: every later
        # reply would be read against the wrong request, so the driver is restarted.
        try:
            reply = Reply.model_validate_json(line)
        except ValidationError as exc:
            self.kill()
            raise DriverError("internal", f"{self.manifest.library} driver reply is not protocol v2 "
                                          f"(driver restarted): {str(exc).splitlines()[0]}: {line[:200]!r}")
        if reply.id != self._next_id:
            self.kill()
            raise DriverError("internal", f"reply id {reply.id} does not match request {self._next_id} "
                                          f"(driver restarted)")
        if not reply.ok:
            err = reply.error
            raise DriverError(err.kind if err else "internal", err.message if err else "error without detail",
                              err.refusal.model_dump() if err and err.refusal else None)
        result = reply.result or {}
        if kind in RESULTS:
            try:
                parsed = RESULTS[kind].model_validate(result)
            except ValidationError as exc:
                raise DriverError("internal", f"{self.manifest.library} driver '{kind}' result is not protocol v2: "
                                              f"{' '.join(str(exc).splitlines()[:3])}")
            if kind == "run" and result.pop("raw_decryptions", None):
                result["noise_budget_bits"] = self._budgets(parsed)
            if kind == "setup":  # what the library built, as fhemark reads it: derived from the driver's facts
                result = {**result, "effective": Effective.of(result["effective"]).model_dump()}
        return result

    def _budgets(self, res: RunResult) -> dict[str, float]:
        """The noise budgets of a run, the orchestrator's own (model/noise.py) computed from the raw
        decryptions a driver sent instead; a budget the library reported itself stays."""
        try:
            return {**{n: raw.budget() for n, raw in res.raw_decryptions.items()}, **res.noise_budget_bits}
        except ValueError as exc:
            raise DriverError("internal", f"{self.manifest.library} driver raw decryption: {exc}") from None

    def _crashed(self) -> DriverError:
        rc = self.proc.wait() if self.proc else None
        time.sleep(0.1)  # let the stderr reader catch the last lines
        self.setups, self.pools = set(), set()
        how = f"signal {-rc}" if rc is not None and rc < 0 else f"status {rc}"
        tail = " | ".join(list(self._stderr)[-3:])
        return DriverError("crashed", f"{self.manifest.library} driver exited with {how}"
                                      + (f"; stderr: {tail}" if tail else ""))
