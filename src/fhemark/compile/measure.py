"""A compiled workload measured like a library: one harness process (keys made once, by the
compiler's own configure), fresh inputs every sample, encryption and the compiler's plaintext
preprocessing outside the timed region and before the batch's first timed call (cold inputs),
every output decrypted and checked against the workload's own cleartext replay, one thread
(GOMAXPROCS=1). Warm-ups are timed and checked, then dropped. compile/records.py makes each row a
record of the store; compile/choose.py sets the rows beside choose's.

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
from ..measure import lease
from ..measure.records import rlwe
from ..model.params import ParamSet
from ..model.security import Estimate
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
    given: ParamSet | None = None         # fhemark's set given to HEIR (None: HEIR's own choice)
    library: str = LIBRARY
    status: str = "ok"                    # a record's status (store/record.py Status)
    error: str = ""
    scheme: dict[str, Any] = field(default_factory=dict)
    security: dict[str, Estimate] = field(default_factory=dict)  # both tables' and the estimator's
    samples_ns: list[int] = field(default_factory=list)
    warmup_ns: list[int] = field(default_factory=list)
    max_abs_error: float | None = None
    precision_bits: float | None = None   # the worst sample's, -log2(max |error|)
    checked: int = 0                       # samples decrypted and checked, warm-ups included
    wrong: int = 0                         # of those, samples whose outputs missed the workload's precision
    key_bytes: dict[str, int] = field(default_factory=dict)  # relin_keys, galois_keys: as drivers name them
    peak_rss_bytes: int | None = None
    compile_s: float | None = None
    build_s: float | None = None
    setup_s: float | None = None          # the harness's start: HEIR's configure, its keys made


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


def _status(exc: Exception) -> str:
    """The record's status for a row that did not run: HEIR's refusal, its bound, a set too short."""
    msg = str(exc)
    if "did not finish in" in msg:
        return "timeout"
    if "smaller than the max level" in msg:
        return "invalid_params"
    return "internal" if msg.startswith("go build") else "unsupported"


def _checked(row: Row, w: Workload, e, refs: list, replies: list, warmup: int) -> None:
    """Every reply checked against its cleartext reference; the samples after the warm-up kept."""
    worst = 0.0
    for i, (ref, reply) in enumerate(zip(refs, replies, strict=True)):
        err = _errors(e, ref, reply["out"])
        row.checked += 1
        row.wrong += err > 2.0 ** -w.precision_bits
        if i >= warmup:
            row.samples_ns.append(int(reply["ns"]))
            worst = max(worst, err)
        else:
            row.warmup_ns.append(int(reply["ns"]))
    row.max_abs_error = worst
    row.precision_bits = round(-math.log2(worst), 1) if worst > 0 else 64.0
    if row.wrong:
        row.status = "wrong_result"
        row.error = (f"{row.wrong} of {row.checked} samples missed the workload's {w.precision_bits:g} bits "
                     f"(worst {row.precision_bits:g} bits)")


def run_row(w: Workload, given: ParamSet | None = None, samples: int = 10, warmup: int = 1, seed: int = 1,
            compile_timeout: float = heir.COMPILE_TIMEOUT_S) -> Row:
    """Compile, build and measure one row; a failure to compile or build is the row's one-line error
    (heir.Unavailable is raised: the caller skips the row and says why)."""
    row = Row(w.name, f"fhemark:{given.label()}" if given else "heir", given=given)
    t0 = time.monotonic()
    try:
        e = emit(w)
        compiled = heir.compile_ckks(e, heir.scheme_param(given) if given else None, compile_timeout)
        row.compile_s = round(time.monotonic() - t0, 2)
        t0 = time.monotonic()
        binary = heir.build(compiled, e)
        row.build_s = round(time.monotonic() - t0, 2)
    except heir.Unavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - mlir.Unsupported, heir.HeirError: the row's one line
        row.error, row.status = str(exc), _status(exc)
        # the time a refusal took is part of the answer (a bounded compile: its limit)
        if row.compile_s is None:
            row.compile_s = round(time.monotonic() - t0, 2)
        else:
            row.build_s = round(time.monotonic() - t0, 2)
        return row
    plain = Plain("ckks", _slots(e))
    rng = np.random.default_rng(seed)
    proc, t0 = start(binary, {"GOMAXPROCS": "1"})
    try:
        hello = greeted(row, proc, t0)
        row.scheme = {**compiled.param.record(), "log_qp": round(hello["log_qp"], 2), "slots": hello["slots"]}
        # HEIR picks its own N and chain: whether that is the same security as fhemark's sets, by the same tables.
        row.security = rlwe(1 << hello["logN"], row.scheme["log_qp"], {})
        row.key_bytes = hello["key_bytes"] or {}
        drawn = [w.draw(plain, rng) for _ in range(warmup + samples)]
        try:
            refs = [w.reference(plain, x, w.scalars(plain, rng) if w.scalars else {}) for x in drawn]
        except Exception as exc:  # noqa: BLE001 - the workload's own replay: its message, one line
            row.error, row.status = f"the cleartext replay failed: {exc}", "workload_error"
            return row
        # One batch: every sample's operands are made before the first timed call (cold inputs).
        batch = [{"args": [x[a.name][: a.length].tolist() for a in e.args]} for x in drawn]
        proc.stdin.write(json.dumps({"samples": batch}) + "\n")
        proc.stdin.flush()
        _checked(row, w, e, refs, json.loads(_line(proc)), warmup)
        row.peak_rss_bytes = _peak_rss(proc.pid)
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        crashed(row, proc, exc)
    finally:
        close(proc)
    return row


def start(binary: Path, env: dict[str, str]) -> tuple[subprocess.Popen, float]:
    """A harness started with `env` added (its one thread), and when (its hello's wait is its setup)."""
    t0 = time.monotonic()
    return subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env}), t0


def greeted(row: Row, proc: subprocess.Popen, t0: float) -> dict:
    """The harness's hello line (keys made, parameters stated); its wait is the row's setup time."""
    hello = json.loads(_line(proc))
    row.setup_s = round(time.monotonic() - t0, 3)
    return hello


def crashed(row: Row, proc: subprocess.Popen, exc: Exception) -> None:
    """A harness that died or answered out of protocol: the row's status and its one line."""
    row.status = "crashed"
    row.error = f"the compiled program failed: {exc}; {proc.stderr.read()[-300:] if proc.poll() is not None else ''}".strip()


def close(proc: subprocess.Popen) -> None:
    """End a harness: its input closed (it exits), killed if it does not within 10 s."""
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    if not line:
        raise ValueError(f"the harness closed its output (exit {proc.wait(timeout=REPLY_TIMEOUT_S)})")
    return line


def measure_rows(w: Workload, sets: list[ParamSet], samples: int = 12, warmup: int = 1,
                 compile_timeout: float = heir.COMPILE_TIMEOUT_S, say=print) -> list[Row]:
    """The compiled rows of one workload, at HEIR's own parameters and at each of fhemark's `sets`,
    under the host's lease (so they never share the host with another measurement); heir.Unavailable
    propagates (the caller skips the rows with its line)."""
    heir.tools()
    heir.go()
    rows: list[Row] = []
    with lease.hold(LIBRARY, lambda who: say(f"waiting for the host: {who} is measuring")):
        for given in (None, *sets):
            rows.append(run_row(w, given, samples, warmup, compile_timeout=compile_timeout))
            say(f"{LIBRARY} {w.name} at {rows[-1].params_from}: {rows[-1].error or 'done'}")
            longer = _with_heirs_levels(given, rows[0], rows[-1])
            if longer is not None:
                rows.append(run_row(w, longer, samples, warmup, compile_timeout=compile_timeout))
                say(f"{LIBRARY} {w.name} at {rows[-1].params_from}: {rows[-1].error or 'done'}")
    return rows


def _with_heirs_levels(given: ParamSet | None, own: Row, row: Row) -> ParamSet | None:
    """Where HEIR's code needs more levels than fhemark's set holds (a set chosen for the hand-written
    program: HEIR's layout spends levels on masks), that set with scale-sized primes added up to HEIR's
    levels: the same ring, primes and scale, so the row still tells fhemark's parameters from HEIR's."""
    if given is None or own.error or "smaller than the max level" not in row.error:
        return None
    more = own.scheme["levels"] - (len(given.q_bits) - 1)
    if more <= 0:
        return None
    return given.model_copy(update={"q_bits": (*given.q_bits, *(given.scale_bits,) * more),
                                    "name": f"{given.label()}+{more} levels"})


def _security(r: Row) -> str:
    est = r.security["hestd2018"]
    return f"~{est.bits} (below)" if est.below_table else f">={est.bits}"


def table(rows: list[Row]) -> str:
    """The compiled rows as text: the parameters that ran, latency with its interval, the checks."""
    head = ("workload", "params from", "N", "log Q", "log P", "scale", "log QP", "security", "median ms", "95% CI ms",
            "prec bits", "checked", "eval keys MB", "peak MB")
    lines = [(f"{LIBRARY} (heir-py {heir.HEIR_PY_VERSION}, Lattigo {LATTIGO_VERSION}, 1 thread; encryption and "
              "plaintext preprocessing untimed, cold inputs):",), head]
    for r in rows:
        if not r.samples_ns:
            lines.append((r.workload, r.params_from, f"failed: {r.error}"))
            continue
        s, p, keys = stats.summarize(r.samples_ns), r.scheme, sum(r.key_bytes.values())
        ci = s.ci95
        lines.append((r.workload, r.params_from, str(p["N"]), "+".join(f"{b:g}" for b in p["log_q"]),
                      "+".join(f"{b:g}" for b in p["log_p"]), f"2^{p['scale_bits']}", f"{p['log_qp']:g}", _security(r),
                      f"{s.median / 1e6:.2f}", f"{ci[0] / 1e6:.2f}-{ci[1] / 1e6:.2f}" if ci else "-",
                      f"{r.precision_bits:g}", f"{r.checked}, {r.wrong} wrong",
                      f"{keys / 2**20:.1f}" if keys else "-",
                      f"{r.peak_rss_bytes / 2**20:.0f}" if r.peak_rss_bytes else "-"))
    widths = [max(len(x[i]) for x in lines if i < len(x) and len(x) > 3) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(widths[i]) if len(x) > 3 else c for i, c in enumerate(x)).rstrip() for x in lines)
