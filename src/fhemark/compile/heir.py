"""HEIR as a compiler row: its pinned heir-py (installed by drivers/heir/build.sh into the fhemark
cache, never into fhemark's own venv), `heir-opt --mlir-to-ckks --scheme-to-lattigo`, then
`heir-translate --emit-lattigo`, and the emitted Go built with fhemark's harness
(drivers/heir/harness.go.in) against the Lattigo v6.2.0 that drivers/lattigo/go.mod pins.

Every step runs under a time limit, and a failure is one line: HEIR's own first error, or what is
missing and how to get it (Unavailable: the row is skipped)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..locations import cache_dir, project_root
from ..model.params import ParamSet, is_prime
from .mlir import Emitted

HEIR_PY_VERSION = "2026.11.1"  # drivers/heir/build.sh installs this one
COMPILE_TIMEOUT_S = 120.0
BUILD_TIMEOUT_S = 300.0
# heir-opt's backend-less lowering prints this diagnostic on success too (exit 0): not a failure.
_NOT_AN_ERROR = "Unable to find backend attribute"


class Unavailable(Exception):
    """HEIR or Go is not here: the row is skipped with this one line."""


class HeirError(Exception):
    """HEIR could not compile the workload (its own message), or the emitted Go did not build."""


def venv() -> Path:
    return cache_dir() / "heir" / "venv"


def tools() -> tuple[Path, Path]:
    """heir-opt and heir-translate of the pinned heir-py, or Unavailable."""
    bin_ = venv() / "bin"
    opt, translate = bin_ / "heir-opt", bin_ / "heir-translate"
    if not (opt.exists() and translate.exists()):
        raise Unavailable(f"heir->lattigo skipped: heir-py {HEIR_PY_VERSION} is not installed in {venv()}; "
                          "run: bash drivers/heir/build.sh")
    return opt, translate


def go() -> str:
    path = shutil.which("go")
    if not path:
        raise Unavailable("heir->lattigo skipped: Go toolchain not found; install Go 1.24+ (Lattigo v6.2.0 needs it)")
    return path


def _first_error(stderr: str) -> str:
    for line in stderr.splitlines():
        if "error:" in line and _NOT_AN_ERROR not in line:
            return line.split("error:", 1)[1].strip()
    tail = [ln for ln in stderr.splitlines() if ln.strip() and _NOT_AN_ERROR not in ln]
    return tail[0].strip() if tail else "no message"


def _run(cmd: list[str], what: str, stdin: str, timeout: float, env: dict | None = None) -> str:
    try:
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise HeirError(f"{what} did not finish in {timeout:.0f} s (bounded; raise the limit with "
                       "python -m fhemark.compile heir --compile-timeout)")
    if done.returncode != 0:
        raise HeirError(f"{what}: {_first_error(done.stderr)}")
    return done.stdout


@dataclass(frozen=True)
class SchemeParam:
    """What HEIR chose (or was given): ring degree, moduli, scale."""

    log_n: int
    q: tuple[int, ...]
    p: tuple[int, ...]
    log_scale: int

    def record(self) -> dict:
        bits = lambda ms: [round(m.bit_length() - 1 + (m / (1 << (m.bit_length() - 1))) - 1, 2) for m in ms]  # noqa: E731
        return {"N": 1 << self.log_n, "q": list(self.q), "p": list(self.p), "log_q": bits(self.q), "log_p": bits(self.p),
                "scale_bits": self.log_scale, "levels": len(self.q) - 1}

    def attribute(self) -> str:
        return (f"ckks.schemeParam = #ckks.scheme_param<logN = {self.log_n}, Q = [{', '.join(map(str, self.q))}], "
                f"P = [{', '.join(map(str, self.p))}], logDefaultScale = {self.log_scale}>")


# What the emitted configure builds (the parameters that run, whoever chose them).
_PARAM = re.compile(r"LogN: (\d+),\s*Q: \[\]uint64\{([\d, ]+)\},\s*P: \[\]uint64\{([\d, ]+)\},\s*LogDefaultScale: (\d+),")


def _parse_param(text: str) -> SchemeParam | None:
    m = _PARAM.search(text)
    if not m:
        return None
    ints = lambda s: tuple(int(x) for x in s.split(","))  # noqa: E731
    return SchemeParam(int(m.group(1)), ints(m.group(2)), ints(m.group(3)), int(m.group(4)))


def scheme_param(ps: ParamSet) -> SchemeParam:
    """fhemark's parameter set as HEIR's: the same N and prime sizes, NTT-friendly primes (1 mod 2N,
    the largest below each size, all distinct), as Lattigo builds for a LogQ/LogP literal."""
    if not ps.scale_bits:
        raise HeirError(f"{ps.label()}: a CKKS set with scale_bits is needed")
    m, used, out = 2 * ps.N, set(), []
    for bits in (*ps.q_bits, *ps.p_bits):
        c = ((1 << bits) - 2) // m * m + 1
        while c in used or not is_prime(c):
            c -= m
        used.add(c)
        out.append(c)
    return SchemeParam(ps.N.bit_length() - 1, tuple(out[:len(ps.q_bits)]), tuple(out[len(ps.q_bits):]), ps.scale_bits)


@dataclass(frozen=True)
class Compiled:
    func: str          # the Go name of the compiled function (HEIR capitalises the MLIR one)
    go_source: str
    param: SchemeParam
    given: bool        # the parameters were fhemark's, not HEIR's choice


def compile_ckks(e: Emitted, given: SchemeParam | None = None, timeout: float = COMPILE_TIMEOUT_S) -> Compiled:
    """HEIR's Lattigo Go for the emitted module (at `given` parameters, else at HEIR's own choice)."""
    opt, translate = tools()
    text = e.text
    if given is not None:
        text = text.replace("module {", f"module attributes {{{given.attribute()}}} {{", 1)
    # HEIR lowers loops with static indices only: unroll the sums first.
    unrolled = _run([str(opt), "--pass-pipeline=builtin.module(func.func(affine-loop-unroll{unroll-factor=-1}),canonicalize)"],
                    "heir-opt (unroll)", text, timeout)
    lowered = _run([str(opt), "--mlir-to-ckks", "--scheme-to-lattigo"], "heir-opt --mlir-to-ckks", unrolled, timeout)
    source = _run([str(translate), "--emit-lattigo", "--package-name=main"], "heir-translate --emit-lattigo", lowered, timeout)
    m, param = re.search(r"^func (\w+)__configure\(", source, re.M), _parse_param(source)
    if not m or param is None:
        raise HeirError("heir-translate emitted no configure function or no scheme parameters")
    return Compiled(m.group(1), source, param, given is not None)


# ---- the harness --------------------------------------------------------------------------------

_SIG = r"^func {name}\((.*?)\) \((.*?)\) {{"


def _signature(source: str, name: str) -> tuple[list[str], list[str]] | None:
    m = re.search(_SIG.format(name=re.escape(name)), source, re.M)
    if not m:
        return None
    params = [p.strip().split(" ", 1)[1] for p in m.group(1).split(",")]
    return params, [r.strip() for r in m.group(2).split(",")]


def harness_body(c: Compiled, e: Emitted) -> str:
    """The Go of one sample of a batch: encrypt and preprocess now (untimed), and the sample's timed
    call with its decryption as a closure the harness runs after every sample's operands are made."""
    f = c.func
    main = _signature(c.go_source, f)
    if main is None:
        raise HeirError(f"heir-translate emitted no function {f}")
    params, results = main
    args = params[3:]  # after evaluator, parameters, encoder
    if len(args) != len(e.args):
        raise HeirError(f"{f} takes {len(args)} arguments, the workload has {len(e.args)} inputs")
    lines, names = [], []
    for i, (typ, arg) in enumerate(zip(args, e.args)):
        if typ == "[]*rlwe.Ciphertext":
            lines.append(f"a{i} := {f}__encrypt__arg{i}(evaluator, param, encoder, encryptor, s.Args[{i}])")
        else:
            lines.append(f"a{i} := s.Args[{i}]")
        names.append(f"a{i}")
    outs = [f"r{j}" for j in range(len(results))]
    # HEIR's own wrapper splits the call: plaintext preprocessing (the constants' and plaintext inputs'
    # encodings, server-side: before the clock, as hand-written Lattigo has them), then the rest. Its
    # argument order is HEIR's, read from the wrapper's call (its parameters are v0, v1, ...).
    call_pre = re.search(rf"^func {f}\(.*?^  v\d+ := {f}__preprocessing\(param, encoder((?:, v\d+)*)\)$",
                         c.go_source, re.M | re.S)
    if call_pre is not None:
        plain = [f"a{int(v.strip()[1:])}" for v in call_pre.group(1).split(",") if v.strip()]
        lines.append(f"pre := {f}__preprocessing({', '.join(['param', 'encoder', *plain])})")
        call = f"{f}__preprocessed({', '.join(['evaluator', 'param', 'encoder', *names, 'pre'])})"
    else:
        call = f"{f}({', '.join(['evaluator', 'param', 'encoder', *names])})"
    inner = ["t0 := time.Now()", f"{', '.join(outs)} := {call}", "ns := time.Since(t0).Nanoseconds()",
             f"r := reply{{Ns: ns, Out: make([][]float64, {len(outs)})}}"]
    for j in range(len(outs)):
        dec = _signature(c.go_source, f"{f}__decrypt__result{j}")
        if dec is None:
            raise HeirError(f"heir-translate emitted no decryption for result {j}")
        got = f"{f}__decrypt__result{j}(evaluator, param, encoder, decryptor, r{j})"
        inner.append(f"r.Out[{j}] = widen({got})" if dec[1] == ["[]float32"] else
                     f"r.Out[{j}] = []float64{{float64({got})}}")
    body = [f"\t\t\t{ln}" for ln in lines] + ["\t\t\ttimed[k] = func() reply {"]
    body += [f"\t\t\t\t{ln}" for ln in (*inner, "return r")] + ["\t\t\t}"]
    return "\n".join(body)


def build(c: Compiled, e: Emitted, timeout: float = BUILD_TIMEOUT_S) -> Path:
    """The harness binary, in the fhemark cache, keyed by what it is built from (built once)."""
    gobin = go()
    lattigo = project_root() / "drivers" / "lattigo"
    template = (project_root() / "drivers" / "heir" / "harness.go.in").read_text()
    harness = template.replace("@F@", c.func).replace("@BODY@", harness_body(c, e))
    gomod = re.sub(r"^module .*$", "module fhemark/heir/kernel", (lattigo / "go.mod").read_text(), count=1, flags=re.M)
    key = hashlib.sha256("\0".join([c.go_source, harness, gomod]).encode()).hexdigest()[:16]
    where = cache_dir() / "heir" / "build" / key
    binary = where / "kernel"
    if binary.exists():
        return binary
    where.mkdir(parents=True, exist_ok=True)
    (where / "go.mod").write_text(gomod)
    shutil.copyfile(lattigo / "go.sum", where / "go.sum")
    (where / "kernel.go").write_text(c.go_source)
    (where / "harness.go").write_text(harness)
    env = {**os.environ, "GOTOOLCHAIN": os.environ.get("GOTOOLCHAIN", "local")}
    try:
        done = subprocess.run(["nice", gobin, "build", "-trimpath", "-buildvcs=false", "-mod=readonly", "-o", "kernel.tmp", "."],
                              cwd=where, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise HeirError(f"go build of HEIR's Lattigo code did not finish in {timeout:.0f} s")
    if done.returncode != 0:
        msg = next((ln for ln in done.stderr.splitlines() if ln.strip() and not ln.startswith("#")), "no message")
        raise HeirError(f"go build of HEIR's Lattigo code failed: {msg.strip()} (sources in {where})")
    (where / "kernel.tmp").rename(binary)
    return binary
