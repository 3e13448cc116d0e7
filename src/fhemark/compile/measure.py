"""A compiled workload measured like a library: one harness process (keys made once, by the
compiler's own configure), fresh inputs every sample, encryption and the compiler's plaintext
preprocessing outside the timed region, every output decrypted and checked against the workload's
own cleartext replay, one thread (GOMAXPROCS=1). Warm-ups are timed and checked, then dropped.

The record names the parameters that ran (HEIR's choice, or fhemark's set given to HEIR), so a
table can split the compiler's cost into its parameters and its code."""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from ..model.params import ParamSet
from ..model.security import estimates
from ..model.semantics import Plain
from ..model.workload import Workload
from . import heir
from .mlir import Emitted, emit

LIBRARY = "heir->lattigo"
LATTIGO_VERSION = "v6.2.0"  # drivers/lattigo/go.mod, which the harness is built against
REPLY_TIMEOUT_S = 120.0


@dataclass
class Row:
    """One compiled row: what ran, its times and checks. `error`: the one line where it did not run."""

    workload: str
    params_from: str                      # "heir" or "fhemark:<set>"
    library: str = LIBRARY
    error: str = ""
    scheme: dict[str, Any] = field(default_factory=dict)
    samples_ns: list[int] = field(default_factory=list)
    precision_bits: float | None = None   # the worst sample's, -log2(max |error|)
    wrong: int = 0                         # samples whose outputs missed the workload's precision
    eval_key_bytes: int | None = None
    peak_rss_bytes: int | None = None
    compile_s: float | None = None
    build_s: float | None = None

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"library": self.library, "workload": self.workload, "params_from": self.params_from,
                               "compiler": {"name": "heir", "heir_py": heir.HEIR_PY_VERSION, "backend": "lattigo",
                                            "lattigo": LATTIGO_VERSION, "threads": 1}}
        if self.error:
            return {**out, "error": self.error}
        s = stats.summarize(self.samples_ns)
        return {**out, "params": self.scheme, "samples_ns": self.samples_ns, "median_ns": s.median,
                "ci95_ns": list(s.ci95) if s.ci95 else None, "precision_bits": self.precision_bits,
                "checked": len(self.samples_ns), "wrong": self.wrong, "eval_key_bytes": self.eval_key_bytes,
                "peak_rss_bytes": self.peak_rss_bytes, "compile_s": self.compile_s, "build_s": self.build_s}


def _peak_rss(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _slots(e: Emitted) -> int:
    """A slot count for the cleartext replay: every input fits with room, so slot 0's window sum
    is the sum of the input's values alone (the rest zero)."""
    return 1 << max(4, (2 * max(a.length for a in e.args) - 1).bit_length())


def _errors(e: Emitted, ref: Any, outs: list[list[float]]) -> float:
    """The largest |decrypted - reference| over every output value the compiled function returns."""
    refs = list(ref.values()) if isinstance(ref, dict) else [ref]
    worst = 0.0
    for j, (n, got) in enumerate(zip(e.reads, outs)):
        want = np.asarray(refs[j], dtype=np.float64)[: (1 if n is None else n)]
        g = np.asarray(got, dtype=np.float64)
        if g.size != want.size or not np.all(np.isfinite(g)):
            return math.inf
        worst = max(worst, float(np.max(np.abs(g - want))))
    if len(outs) != len(refs):
        return math.inf
    return worst


def run_row(w: Workload, given: ParamSet | None = None, samples: int = 10, warmup: int = 1, seed: int = 1,
            compile_timeout: float = heir.COMPILE_TIMEOUT_S) -> Row:
    """Compile, build and measure one row; a failure to compile or build is the row's one-line error
    (heir.Unavailable is raised: the caller skips the row and says why)."""
    row = Row(w.name, f"fhemark:{given.label()}" if given else "heir")
    try:
        e = emit(w)
        t0 = time.monotonic()
        compiled = heir.compile_ckks(e, heir.scheme_param(given) if given else None, compile_timeout)
        row.compile_s = round(time.monotonic() - t0, 2)
        t0 = time.monotonic()
        binary = heir.build(compiled, e)
        row.build_s = round(time.monotonic() - t0, 2)
    except heir.Unavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - mlir.Unsupported, heir.HeirError: the row's one line
        row.error = str(exc)
        return row
    plain = Plain("ckks", _slots(e))
    rng = np.random.default_rng(seed)
    env = {**os.environ, "GOMAXPROCS": "1"}
    proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        hello = json.loads(_line(proc))
        log_qp = round(hello["log_qp"], 2)
        # HEIR picks its own N and chain: whether that is the same security as fhemark's sets, by the same tables.
        security = {t: {"bits": est.bits, "below_table": est.below_table, "estimated_bits": est.estimated_bits,
                         "attack": est.attack} for t, est in estimates(1 << hello["logN"], log_qp, with_estimator=True).items()}
        row.scheme = {**compiled.param.record(), "log_qp": log_qp, "security": security}
        row.eval_key_bytes = hello["eval_key_bytes"] if hello["eval_key_bytes"] >= 0 else None
        worst = 0.0
        for i in range(warmup + samples):
            inputs = w.draw(plain, rng)
            try:
                ref = w.reference(plain, inputs, w.scalars(plain, rng) if w.scalars else {})
            except Exception as exc:  # noqa: BLE001 - the workload's own replay: its message, one line
                row.error = f"the cleartext replay failed: {exc}"
                return row
            proc.stdin.write(json.dumps({"args": [inputs[a.name][: a.length].tolist() for a in e.args]}) + "\n")
            proc.stdin.flush()
            reply = json.loads(_line(proc))
            err = _errors(e, ref, reply["out"])
            if err > 2.0 ** -w.precision_bits:
                row.wrong += 1
            if i >= warmup:
                row.samples_ns.append(int(reply["ns"]))
                worst = max(worst, err)
        row.precision_bits = round(-math.log2(worst), 1) if worst > 0 else 64.0
        row.peak_rss_bytes = _peak_rss(proc.pid)
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        row.error = f"the compiled program failed: {exc}; {proc.stderr.read()[-300:] if proc.poll() is not None else ''}".strip()
    finally:
        if proc.poll() is None:
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return row


def _line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    if not line:
        raise ValueError(f"the harness closed its output (exit {proc.wait(timeout=REPLY_TIMEOUT_S)})")
    return line
