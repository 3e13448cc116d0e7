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
from ..errors import UserError
from ..measure import lease
from ..model.params import ParamSet, resolve
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
    checked: int = 0                       # samples decrypted and checked, warm-ups included
    wrong: int = 0                         # of those, samples whose outputs missed the workload's precision
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
                "checked": self.checked, "wrong": self.wrong, "eval_key_bytes": self.eval_key_bytes,
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
            row.checked += 1
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


def _security(p: dict) -> str:
    est = p["security"]["hestd2018"]
    return f"~{est['bits']} (below)" if est["below_table"] else f">={est['bits']}"


def table(rows: list[Row]) -> str:
    """The compiled rows as text: the parameters that ran, latency with its interval, the checks."""
    head = ("workload", "params from", "N", "log Q", "log P", "scale", "log QP", "security", "median ms", "95% CI ms",
            "prec bits", "checked", "eval keys MB", "peak MB")
    lines = [(f"{LIBRARY} (heir-py {heir.HEIR_PY_VERSION}, Lattigo {LATTIGO_VERSION}, 1 thread; encryption and "
              "plaintext preprocessing untimed):",), head]
    for r in rows:
        if r.error:
            lines.append((r.workload, r.params_from, f"failed: {r.error}"))
            continue
        d, p = r.record(), r.scheme
        ci = d["ci95_ns"]
        lines.append((r.workload, r.params_from, str(p["N"]), "+".join(f"{b:g}" for b in p["log_q"]),
                      "+".join(f"{b:g}" for b in p["log_p"]), f"2^{p['scale_bits']}", f"{p['log_qp']:g}", _security(p),
                      f"{d['median_ns'] / 1e6:.2f}", f"{ci[0] / 1e6:.2f}-{ci[1] / 1e6:.2f}" if ci else "-",
                      f"{d['precision_bits']:g}", f"{d['checked']}, {d['wrong']} wrong",
                      f"{d['eval_key_bytes'] / 2**20:.1f}" if d["eval_key_bytes"] else "-",
                      f"{d['peak_rss_bytes'] / 2**20:.0f}" if d["peak_rss_bytes"] else "-"))
    widths = [max(len(x[i]) for x in lines if i < len(x) and len(x) > 3) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(widths[i]) if len(x) > 3 else c for i, c in enumerate(x)).rstrip() for x in lines)


# A compiler's rows are set beside the hand-written library its code targets (`choose --compilers`).
COMPILERS = {"heir": "lattigo"}


def beside_choose(w: Workload, compiler: str, specs: list[dict], samples: int = 12, say=print) -> str:
    """`fhemark choose FILE --compilers heir`: the compiled rows at HEIR's own parameters and at each
    CKKS set choose verified for hand-written Lattigo (`specs`), as text; one line where HEIR or Go
    is missing (the rows are skipped, the fix said)."""
    sets = []
    for spec in specs:
        try:
            sets.append(resolve(spec, "ckks", "the chosen set"))
        except UserError as exc:  # a set HEIR cannot be given (e.g. OpenFHE's BV switching): said, skipped
            say(f"{LIBRARY}: not at {spec.get('N')}: {exc.line()}")
    try:
        rows = measure_rows(w, sets, samples, say=say)
    except heir.Unavailable as exc:
        return str(exc)
    hand = COMPILERS[compiler]
    note = "" if sets else f"\n(no CKKS set was verified for hand-written {hand} here: HEIR's own parameters only)"
    return table(rows) + note
