"""HEIR's TFHE-rs backend as a compiler row, `heir->tfhe-rs`, for integer (tfhe_int) workloads:
the workload's program as one MLIR function over iN, `heir-opt --mlir-to-cggi --scheme-to-tfhe-rs`
(gates mapped to 3-input lookup tables by HEIR's yosys/abc), `heir-translate --emit-tfhe-rust`,
and the Rust built with fhemark's harness (drivers/heir/harness.rs.in) against the tfhe that
drivers/tfhe pins, with its features, profile, lock and target directory, so tfhe is compiled once
for both. Measured as the Lattigo row is (compile/measure.py): keys once, fresh inputs each sample,
encryption untimed and before the batch's first timed call, every output decrypted and checked
against the workload's cleartext replay, one thread (RAYON_NUM_THREADS=1)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from .. import stats
from ..drivers.protocol import Effective
from ..locations import cache_dir, project_root
from ..measure import lease
from ..measure.records import security_of
from ..model.semantics import Plain
from ..model.workload import Workload
from . import heir
from .measure import LIBRARY as heir_lattigo
from .measure import Row, _line, _peak_rss, close, crashed, greeted, start
from .mlir import Unsupported

LIBRARY = "heir->tfhe-rs"
FUNC = "kernel"
# The shortint set HEIR's own tfhe-rust tests give its CGGI code (tests/Examples/tfhe_rust): a
# 3-bit message space holds a 3-input LUT's index, 4a+2b+c, before each bootstrap.
PARAMS = "V1_1_PARAM_MESSAGE_3_CARRY_1_KS_PBS_GAUSSIAN_2M128"
BUILD_TIMEOUT_S = 600.0
COLD_NOTE = ("cold inputs: every sample's bits encrypted before the first timed call of its batch "
             "(drivers/heir/harness.rs.in); one thread (RAYON_NUM_THREADS=1)")
# The workload's integer steps as HEIR's input (arith on iN, wrapping as tfhe_int does).
_OPS = {"int_add": "addi", "int_sub": "subi", "int_mul": "muli", "int_max": "maxui", "int_min": "minui"}


def _tfhe_version() -> str:
    m = re.search(r'^tfhe = \{ version = "=([^"]+)"', (project_root() / "drivers" / "tfhe" / "Cargo.toml").read_text(),
                  re.M)
    return m.group(1) if m else "unknown"


TFHE_VERSION = _tfhe_version()


def handles(w: Workload) -> bool:
    """A workload this row is for: integers only (a CKKS one is heir->lattigo's)."""
    return "tfhe_int" in w.schemes and "ckks" not in w.schemes


def _bits(w: Workload) -> int:
    if w.bits is None:
        raise Unsupported(f"{w.name}: {LIBRARY} needs the integers' width; give the Workload bits=8")
    return w.bits


def emit(w: Workload) -> tuple[str, list[str]]:
    """The MLIR module of the workload's integer program, and its encrypted inputs in argument order."""
    bits = _bits(w)
    circ, outs = w.circuit("tfhe_int", Plain("tfhe_int", 1, 1 << bits))
    if len(outs) != 1:
        raise Unsupported(f"{w.name}: {LIBRARY} takes one output, the program returns {len(outs)}")
    ty, names, args, body = f"i{bits}", {}, [], []
    for k, s in enumerate(circ.steps):
        if s["op"] == "encrypt_sk":
            names[s["out"]] = f"%{s['args'][0]}"
            args.append(s["args"][0])
        elif s["op"] in _OPS:
            names[s["out"]] = f"%v{k}"
            body.append(f"  %v{k} = arith.{_OPS[s['op']]} {', '.join(names[a] for a in s['args'])} : {ty}")
        else:
            raise Unsupported(f"{w.name}: {s['op']} has no integer meaning here for {LIBRARY} "
                              f"(it takes {', '.join(sorted(_OPS))})")
    params = ", ".join(f"%{a}: {ty} {{secret.secret}}" for a in args)
    text = (f"func.func @{FUNC}({params}) -> {ty} {{\n" + "\n".join(body)
            + f"\n  return {names[outs[0]]} : {ty}\n}}\n")
    return text, args


def compile_rust(text: str, timeout: float = heir.COMPILE_TIMEOUT_S) -> str:
    """HEIR's TFHE-rs Rust for the module. heir-opt's CGGI lowering runs yosys and abc, which it
    finds only through these two variables (heir-py's own pipeline sets them)."""
    opt, translate = tools()
    site = next(heir.venv().glob("lib/python3*/site-packages/heir"), None)
    if site is None:
        raise heir.Unavailable(f"{LIBRARY} skipped: heir-py's package is missing from {heir.venv()}; "
                               "run: bash drivers/heir/build.sh")
    env = {**os.environ, "HEIR_ABC_BINARY": str(site / "abc_bin"), "HEIR_YOSYS_SCRIPTS_DIR": str(site / "techmaps")}
    lowered = heir._run([str(opt), "--mlir-to-cggi", "--scheme-to-tfhe-rs"], "heir-opt --mlir-to-cggi", text,
                        timeout, env)
    return heir._run([str(translate), "--emit-tfhe-rust"], "heir-translate --emit-tfhe-rust", lowered, timeout)


def tools() -> tuple[Path, Path]:
    """heir.tools(), its line naming this row."""
    try:
        return heir.tools()
    except heir.Unavailable as exc:
        raise heir.Unavailable(str(exc).replace(heir_lattigo, LIBRARY)) from None


def pbs_count(source: str) -> int:
    """Programmable bootstraps in the emitted code: its lookup-table applications (straight-line
    code for a fixed-width program, so each runs once a call)."""
    return source.count(".apply_lookup_table(")


def _manifest(name: str) -> str:
    """drivers/tfhe's manifest under another package name: the same dependencies, features and
    profile, so cargo finds tfhe already compiled in the shared target directory."""
    text = (project_root() / "drivers" / "tfhe" / "Cargo.toml").read_text()
    deps = text[text.index("[dependencies]"):]
    return f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n{deps}'


def cargo() -> str:
    path = shutil.which("cargo")
    if not path:
        raise heir.Unavailable(f"{LIBRARY} skipped: cargo not found; install Rust 1.91+ (https://rustup.rs)")
    target = cache_dir() / "cargo-target"
    if not (target / "release" / "fhemark-tfhe").exists():
        raise heir.Unavailable(f"{LIBRARY} skipped: TFHE-rs is not built in {target} (the harness reuses it); "
                               "run: bash drivers/tfhe/build.sh")
    return path


def build(source: str, args: list[str], bits: int, timeout: float = BUILD_TIMEOUT_S) -> Path:
    """The harness binary, keyed by what it is built from (built once; the crate in the cache)."""
    sig = re.search(rf"pub fn {FUNC}\(\s*v0: &ServerKey,(.*?)\) -> \[Ciphertext; (\d+)\]", source, re.S)
    if sig is None:
        raise heir.HeirError(f"heir-translate emitted no function {FUNC}(&ServerKey, ...) -> [Ciphertext; N]")
    params = [p.strip() for p in sig.group(1).split(",") if p.strip()]
    if len(params) != len(args) or any(not p.endswith(f"&[Ciphertext; {bits}]") for p in params) \
            or int(sig.group(2)) != bits:
        raise heir.HeirError(f"{FUNC} takes {', '.join(params)}; fhemark gives {len(args)} arrays of {bits} bits")
    template = (project_root() / "drivers" / "heir" / "harness.rs.in").read_text()
    main = (template.replace("@PARAMS@", PARAMS).replace("@WIDTH@", str(bits)).replace("@FN@", FUNC)
            .replace("@CALL@", ", ".join(f"&a[{i}]" for i in range(len(args)))))
    lock = (project_root() / "drivers" / "tfhe" / "Cargo.lock").read_text()
    key = hashlib.sha256("\0".join([source, main, _manifest(""), lock]).encode()).hexdigest()[:16]
    name = f"fhemark-heir-tfhe-{key}"
    target = cache_dir() / "cargo-target"
    binary = cache_dir() / "heir" / "tfhe" / key / name
    if binary.exists():
        return binary
    where = binary.parent
    (where / "src").mkdir(parents=True, exist_ok=True)
    (where / "Cargo.toml").write_text(_manifest(name))
    (where / "Cargo.lock").write_text(lock)  # the pinned versions, so tfhe's compiled artifacts match
    (where / "src" / "compiled.rs").write_text("#![allow(unused)]\n" + source)
    (where / "src" / "main.rs").write_text(main)
    env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    try:
        done = subprocess.run(["nice", cargo(), "build", "--release", "--quiet"], cwd=where, capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise heir.HeirError(f"cargo build of HEIR's TFHE-rs code did not finish in {timeout:.0f} s (sources in {where})")
    if done.returncode != 0:
        msg = next((ln for ln in done.stderr.splitlines() if ln.startswith("error")), "no message")
        raise heir.HeirError(f"cargo build of HEIR's TFHE-rs code failed: {msg.strip()} (sources in {where})")
    shutil.copy2(target / "release" / name, binary)
    return binary


def _outputs(reply: dict) -> int:
    return int(reply["out"][0][0])


def run_row(w: Workload, samples: int = 10, warmup: int = 1, seed: int = 1,
            compile_timeout: float = heir.COMPILE_TIMEOUT_S) -> Row:
    """Compile, build and measure the workload's row; a failure is the row's one line (heir.Unavailable
    is raised: the caller skips the row and says why)."""
    row = Row(w.name, "heir", library=LIBRARY)
    t0 = time.monotonic()
    try:
        text, args = emit(w)
        bits = _bits(w)
        source = compile_rust(text, compile_timeout)
        row.compile_s = round(time.monotonic() - t0, 2)
        t0 = time.monotonic()
        binary = build(source, args, bits)
        row.build_s = round(time.monotonic() - t0, 2)
    except heir.Unavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - Unsupported, heir.HeirError: the row's one line
        row.error, row.status = str(exc), "internal" if "cargo build" in str(exc) else "unsupported"
        return row
    plain, rng = Plain("tfhe_int", 1, 1 << bits), np.random.default_rng(seed)
    proc, t0 = start(binary, {"RAYON_NUM_THREADS": "1"})
    try:
        hello = greeted(row, proc, t0)
        row.scheme = {**hello["effective"], "bits": bits, "pbs": pbs_count(source)}
        row.security = security_of("bits", Effective.model_validate(hello["effective"]))
        row.key_bytes = hello["key_bytes"]
        drawn = [w.draw(plain, rng) for _ in range(warmup + samples)]
        try:
            refs = [int(np.asarray(w.reference(plain, x, {})).ravel()[0]) % (1 << bits) for x in drawn]
        except Exception as exc:  # noqa: BLE001 - the workload's own replay: its message, one line
            row.error, row.status = f"the cleartext replay failed: {exc}", "workload_error"
            return row
        batch = [{"args": [[int(x[a][0])] for a in args]} for x in drawn]
        proc.stdin.write(json.dumps({"samples": batch}) + "\n")
        proc.stdin.flush()
        replies = json.loads(_line(proc))
        for i, (want, reply) in enumerate(zip(refs, replies, strict=True)):
            row.checked += 1
            row.wrong += _outputs(reply) != want
            (row.samples_ns if i >= warmup else row.warmup_ns).append(int(reply["ns"]))
        row.max_abs_error = 0.0 if not row.wrong else None
        row.peak_rss_bytes = _peak_rss(proc.pid)
        if row.wrong:
            row.status = "wrong_result"
            row.error = f"{row.wrong} of {row.checked} samples decrypted to another {bits}-bit value than the replay's"
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        crashed(row, proc, exc)
    finally:
        close(proc)
    return row


def measure_rows(w: Workload, samples: int = 12, warmup: int = 1, compile_timeout: float = heir.COMPILE_TIMEOUT_S,
                 say=print) -> list[Row]:
    """The workload's row under the host's lease; heir.Unavailable propagates (the caller says why)."""
    tools()
    cargo()
    with lease.hold(LIBRARY, lambda who: say(f"waiting for the host: {who} is measuring")):
        row = run_row(w, samples, warmup, compile_timeout=compile_timeout)
    say(f"{LIBRARY} {w.name}: {row.error or 'done'}")
    return [row]


def record_fields(row: Row) -> dict:
    """What a heir->tfhe-rs record says that a heir->lattigo one says otherwise (compile/records.py);
    `library_build`: the backend's facts, beside the compile's that every compiled record carries."""
    sp = row.scheme
    return {"library_build": {"backend": "tfhe-rs", "tfhe": TFHE_VERSION, "pbs_per_call": sp.get("pbs")},
            "scheme": "tfhe_int", "params": {"preset": PARAMS, "name": PARAMS, "bits": sp.get("bits")},
            "effective_params": {k: v for k, v in sp.items() if k not in ("bits", "pbs")} or None,
            "slots": None}


def table(rows: list[Row]) -> str:
    """The rows as text: the set that ran, latency with its interval, HEIR's bootstraps, the checks."""
    head = ("workload", "bits", "params", "security", "PBS/call", "median ms", "95% CI ms", "checked",
            "server key MB", "peak MB")
    lines = [(f"{LIBRARY} (heir-py {heir.HEIR_PY_VERSION}, TFHE-rs {TFHE_VERSION}, 1 thread; encryption untimed, "
              "cold inputs):",), head]
    for r in rows:
        if not r.samples_ns:
            lines.append((r.workload, f"failed: {r.error}"))
            continue
        s, keys = stats.summarize(r.samples_ns), sum(r.key_bytes.values())
        lib = r.security.get("library")
        ci = s.ci95
        lines.append((r.workload, str(r.scheme["bits"]), r.scheme["preset"], f"{lib.bits} (library's)" if lib else "-",
                      str(r.scheme["pbs"]), f"{s.median / 1e6:.1f}", f"{ci[0] / 1e6:.1f}-{ci[1] / 1e6:.1f}" if ci else "-",
                      f"{r.checked}, {r.wrong} wrong", f"{keys / 2**20:.0f}",
                      f"{r.peak_rss_bytes / 2**20:.0f}" if r.peak_rss_bytes else "-"))
    widths = [max(len(x[i]) for x in lines if i < len(x) and len(x) > 3) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(widths[i]) if len(x) > 3 else c for i, c in enumerate(x)).rstrip() for x in lines)
