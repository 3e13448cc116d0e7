#!/usr/bin/env python3
"""Fidelity benchmark: do fhemark's Lattigo numbers agree with Lattigo's own benchmarks?

Runs Lattigo v6.2.0's own Go benchmarks (schemes/ckks BenchmarkCKKS and
schemes/bgv BenchmarkBGV, `go test -bench`, from inside drivers/lattigo so the
module's pinned version is the one tested) and fhemark's Lattigo driver on the
same parameters and the same operations, then prints and writes a table:
Lattigo's ns/op, fhemark's median and 95% CI, and the ratio fhemark/Lattigo.

This reports; it asserts no timing threshold. It exits non-zero (one line on
stderr) only when something did not run: a requested Go benchmark printed no
`ns/op` line, a fhemark measurement failed, or the two sides did not use the
same primes.

    .venv/bin/python benchmarks/fidelity_lattigo.py [--out PATH] [--benchtime 20x] [--count 3]

See benchmarks/README.md for how to read the ratios.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import fidelity_run
from fidelity_run import Failure, exit_with, first_of

ROOT = Path(__file__).resolve().parents[1]
DRIVER_DIR = ROOT / "drivers" / "lattigo"
LATTIGO_MODULE = "github.com/tuneinsight/lattigo/v6"
LATTIGO_VERSION = "v6.2.0"

# The parameter literal of Lattigo v6.2.0's own benchmarks (identical in
# schemes/ckks/ckks_benchmarks_test.go and schemes/bgv/bgv_benchmark_test.go):
#   LogN: 14, LogQ: [50, 40 x 7], LogP: [60], LogDefaultScale: 40 (CKKS),
#   PlaintextModulus: 0x10001 (BGV; 65537 = 1 mod 2^15, so it batches all N slots).
LOG_N = 14
Q_BITS = [50] + [40] * 7
P_BITS = [60]
SCALE_BITS = 40
T = 0x10001


@dataclass(frozen=True)
class Match:
    scheme: str        # fhemark scheme
    package: str       # Lattigo package holding the Go benchmark (BFV lives in bgv)
    go_name: str       # sub-benchmark name, without the parameter part
    fhemark_op: str    # fhemark base op; its `_into` twin is measured too
    what: str          # the Lattigo call both sides time

    @property
    def top(self) -> str:
        return "BenchmarkCKKS" if self.package == "ckks" else "BenchmarkBGV"


MATCHES = [
    Match("ckks", "ckks", "Evaluator/Add/Ciphertext", "add", "Add(ct, ct, out)"),
    Match("ckks", "ckks", "Evaluator/Mul/Ciphertext", "mul", "Mul(ct, ct, out) (degree 2, no relin)"),
    Match("ckks", "ckks", "Evaluator/MulRelin/Ciphertext", "mul_relin", "MulRelin(ct, ct, out) (no rescale)"),
    Match("ckks", "ckks", "Evaluator/Rescale", "rescale", "Rescale(ct, out) (one level)"),
    Match("ckks", "ckks", "Evaluator/Rotate", "rotate_1", "Rotate(ct, 1, out)"),
    Match("bgv", "bgv", "Evaluator/Add/Ciphertext", "add", "Add(ct, ct, out)"),
    Match("bgv", "bgv", "Evaluator/Mul/Ciphertext", "mul", "Mul(ct, ct, out) (degree 2, no relin)"),
    Match("bgv", "bgv", "Evaluator/MulRelin/Ciphertext", "mul_relin", "MulRelin(ct, ct, out)"),
    Match("bgv", "bgv", "Evaluator/Rescale", "mod_switch", "Rescale(ct, out) (BGV modulus switch, one level)"),
    Match("bgv", "bgv", "Evaluator/Rotate", "rotate_1", "RotateColumns(ct, 1, out)"),
    # BFV is the bgv package with scale-invariant tensoring: fhemark's BFV
    # evaluator (ScaleInvariant=true) routes Mul/MulRelin to these calls.
    Match("bfv", "bgv", "Evaluator/MulInvariant/Ciphertext", "mul", "MulScaleInvariant(ct, ct, out)"),
    Match("bfv", "bgv", "Evaluator/MulRelinInvariant/Ciphertext", "mul_relin",
          "MulRelinScaleInvariant(ct, ct, out)"),
]

# e.g. "BenchmarkCKKS/Evaluator/Rotate/RingType=Standard/logN=14/...-2   20   8470701 ns/op   7776 B/op   169 allocs/op"
_BENCH_LINE = re.compile(r"^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)\s+([0-9.]+) ns/op"
                         r"(?:\s+([0-9.]+) B/op)?(?:\s+([0-9.]+) allocs/op)?")


# -- the primes both sides use ------------------------------------------------------------
def _is_prime(n: int) -> bool:
    from fhemark.model.params import is_prime
    return is_prime(n)


def driver_primes(log_n: int, q_bits: list[int], p_bits: list[int]) -> tuple[list[int], list[int]]:
    """The primes fhemark's Lattigo driver builds (drivers/lattigo/context.go genPrimes):
    per bit size b, Lattigo's NTTFriendlyPrimesGenerator(b, 2N).NextDownstreamPrimes,
    i.e. p = 2^b + 1 - k*2N for k = 1, 2, ..., the primes in that order, shared out
    to q_bits then p_bits. Passed to Lattigo's benchmark as explicit Q and P, so that
    both sides run on the very same moduli (Lattigo's LogQ would pick other primes
    of about the same size)."""
    two_n = 2 << log_n
    need: dict[int, int] = {}
    for b in q_bits + p_bits:
        need[b] = need.get(b, 0) + 1
    pool: dict[int, list[int]] = {}
    for b, count in need.items():
        found, c = [], (1 << b) + 1 - two_n
        while len(found) < count:
            if c.bit_length() != b:
                raise Failure(f"no {count} primes of {b} bits that are 1 mod {two_n}", 2)
            if _is_prime(c):
                found.append(c)
            c -= two_n
        pool[b] = found
    q = [pool[b].pop(0) for b in q_bits]
    p = [pool[b].pop(0) for b in p_bits]
    return q, p


_PRIMES_GO = """package main

// Written by benchmarks/fidelity_lattigo.py into a temporary folder and run with
// `go run` from drivers/lattigo: the primes of drivers/lattigo/context.go genPrimes.
import (
	"encoding/json"
	"os"
	"strconv"

	"github.com/tuneinsight/lattigo/v6/ring"
)

func main() {
	logN, _ := strconv.Atoi(os.Args[1])
	out := map[string][]uint64{}
	for _, a := range os.Args[2:] { // "bits:count"
		var b, n int
		for i := range a {
			if a[i] == ':' {
				b, _ = strconv.Atoi(a[:i])
				n, _ = strconv.Atoi(a[i+1:])
			}
		}
		g := ring.NewNTTFriendlyPrimesGenerator(uint64(b), uint64(2)<<uint(logN))
		ps, err := g.NextDownstreamPrimes(n)
		if err != nil {
			panic(err)
		}
		out[strconv.Itoa(b)] = ps
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
"""


def lattigo_primes(log_n: int, q_bits: list[int], p_bits: list[int]) -> tuple[list[int], list[int]]:
    """The same primes from Lattigo's own generator (go run), checked against driver_primes."""
    need: dict[int, int] = {}
    for b in q_bits + p_bits:
        need[b] = need.get(b, 0) + 1
    with tempfile.TemporaryDirectory(prefix="fhemark-primes-") as tmp:
        src = Path(tmp) / "primes.go"
        src.write_text(_PRIMES_GO)
        r = subprocess.run(["go", "run", "-mod=readonly", str(src), str(log_n), *[f"{b}:{n}" for b, n in need.items()]],
                           cwd=DRIVER_DIR, env={**os.environ, "GOTOOLCHAIN": "local"}, capture_output=True, text=True,
                           timeout=300)
    if r.returncode != 0:
        raise Failure(f"could not generate the primes with Lattigo's generator: {r.stderr.strip().splitlines()[-1:]}", 2)
    pool = {int(b): list(ps) for b, ps in json.loads(r.stdout).items()}
    q = [pool[b].pop(0) for b in q_bits]
    p = [pool[b].pop(0) for b in p_bits]
    if (q, p) != driver_primes(log_n, q_bits, p_bits):
        raise Failure("Lattigo's NTTFriendlyPrimesGenerator disagrees with this script's copy of the driver's prime "
                      "choice (drivers/lattigo/context.go genPrimes): fix driver_primes", 2)
    return q, p


# -- Lattigo's own benchmarks ---------------------------------------------------------------
def go_env() -> dict:
    go = shutil.which("go")
    if go is None:
        raise Failure("Go toolchain not found: install Go 1.24+ to run Lattigo's own benchmarks", 2)
    env = {**os.environ, "GOTOOLCHAIN": "local"}

    def q(*args: str) -> str:
        r = subprocess.run(["go", *args], cwd=DRIVER_DIR, env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Failure(f"`go {' '.join(args)}` failed in {DRIVER_DIR}: {r.stderr.strip().splitlines()[-1:]}", 2)
        return r.stdout.strip()

    version = q("env", "GOVERSION")
    mod = q("list", "-mod=readonly", "-m", "-f", "{{.Version}} {{.Dir}}", LATTIGO_MODULE).split(" ", 1)
    if mod[0] != LATTIGO_VERSION:
        raise Failure(f"drivers/lattigo/go.mod resolves {LATTIGO_MODULE} to {mod[0]}, expected {LATTIGO_VERSION}", 2)
    return {"go_version": version, "lattigo_module": LATTIGO_MODULE, "lattigo_version": mod[0],
            "lattigo_source": mod[1] if len(mod) > 1 else None}


def bench_pattern(matches: list[Match]) -> str:
    """A -bench pattern selecting exactly these sub-benchmarks. `go test` splits the
    pattern on '/' and matches level by level; Lattigo's names are
    Evaluator/<Op>[/Ciphertext]/<param>=.../..., so level 4 is either
    'Ciphertext' or the first parameter field."""
    tops = sorted({m.top for m in matches})
    ops = sorted({m.go_name.split("/")[1] for m in matches})
    level3 = sorted({m.go_name.split("/")[2] for m in matches if m.go_name.count("/") >= 2})
    alt3 = "|".join(level3 + ["[A-Za-z]+=.*"])
    return f"^({'|'.join(tops)})$/^Evaluator$/^({'|'.join(ops)})$/^({alt3})$"


def go_params_literal(package: str, q: list[int], p: list[int]) -> dict:
    lit: dict = {"LogN": LOG_N, "Q": q, "P": p}
    if package == "ckks":
        lit["LogDefaultScale"] = SCALE_BITS
    else:
        lit["PlaintextModulus"] = T
    return lit


def run_go_bench(package: str, matches: list[Match], q: list[int], p: list[int], benchtime: str, count: int,
                 threads: int, log: list[str]) -> dict[str, dict]:
    """Run Lattigo's own benchmark; return {go_name: {ns_per_op: [...], ...}}.
    Fails loudly when a requested benchmark printed no ns/op line."""
    literal = json.dumps(go_params_literal(package, q, p), separators=(",", ":"))
    # The package's own flags (-params) go AFTER the package path and -args:
    # placed before, `go test` would not pass them to the test binary.
    cmd = ["go", "test", "-mod=readonly", "-run", "^$", "-bench", bench_pattern(matches),
           "-benchtime", benchtime, "-count", str(count), "-cpu", str(threads), "-benchmem", "-timeout", "30m",
           f"{LATTIGO_MODULE}/schemes/{package}", "-args", "-params", literal]
    shown = " ".join(a if re.fullmatch(r"[\w./=:-]+", a) else "'" + a + "'" for a in cmd)
    log.append(f"(cd drivers/lattigo && GOTOOLCHAIN=local {shown})")
    print(f"  go test -bench {','.join(m.go_name for m in matches)} (schemes/{package}, benchtime {benchtime}, "
          f"count {count}, -cpu {threads})", flush=True)
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=DRIVER_DIR, env={**os.environ, "GOTOOLCHAIN": "local"},
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    out: dict[str, dict] = {}
    for line in r.stdout.splitlines():
        m = _BENCH_LINE.match(line.strip())
        if not m:
            continue
        full, _cpu, n, ns, bop, allocs = m.groups()
        parts = full.split("/")
        key_parts = []
        for part in parts[1:]:
            if "=" in part:
                break
            key_parts.append(part)
        key = "/".join(key_parts)
        rec = out.setdefault(key, {"full_name": full, "iterations": [], "ns_per_op": [], "bytes_per_op": [],
                                   "allocs_per_op": []})
        rec["iterations"].append(int(n))
        rec["ns_per_op"].append(float(ns))
        if bop is not None:
            rec["bytes_per_op"].append(float(bop))
        if allocs is not None:
            rec["allocs_per_op"].append(float(allocs))
    if r.returncode != 0 or re.search(r"^(FAIL|panic:|--- FAIL)", r.stdout + r.stderr, re.M):
        tail = " | ".join((r.stdout + r.stderr).strip().splitlines()[-3:])
        raise Failure(f"Lattigo's own benchmark (schemes/{package}) failed, exit {r.returncode}: {tail}")
    for m in matches:
        got = out.get(m.go_name)
        if not got or len(got["ns_per_op"]) < count:
            n = len(got["ns_per_op"]) if got else 0
            raise Failure(f"Lattigo benchmark {m.top}/{m.go_name} printed {n} ns/op line(s), expected {count}: "
                          f"nothing was measured (check the -bench pattern, and that -params comes after the "
                          f"package path and -args)")
        name = got["full_name"]
        if f"ogN={LOG_N}/" not in name:
            raise Failure(f"Lattigo benchmark {name} did not run at LogN={LOG_N}: the -params literal was not applied")
    for rec in out.values():
        rec["wall_s"] = wall
    return out


# -- fhemark on the same parameters ---------------------------------------------------------------
def fhemark_params(scheme: str) -> dict:
    spec: dict = {"N": 1 << LOG_N, "q_bits": Q_BITS, "p_bits": P_BITS, "name": "lattigo_bench_logn14"}
    if scheme == "ckks":
        spec["scale_bits"] = SCALE_BITS
    else:
        spec["t"] = T
    return spec


def run_fhemark(scheme: str, ops: list[str], threads: int, policy: dict, db: Path, env: dict,
                between_jobs) -> dict[str, dict]:
    # 390-bit QP at N=2^14: 128-bit secure
    return fidelity_run.run_fhemark("lattigo", scheme, fhemark_params(scheme), ops, threads, policy, db, env,
                                    between_jobs, f"fidelity_lattigo_{scheme}")


def measure_scheme(scheme: str, ms: list[Match], q: list[int], p: list[int], args, policy: dict, db: Path,
                   env: dict, go: dict, commands: list[str]) -> dict[str, dict]:
    """Interleave, per operation: Lattigo's own benchmark, fhemark's `<op>_into` and
    `<op>`, Lattigo's own benchmark again, so that both sides of every ratio are
    measured within seconds of each other (this machine's load drifts). One fhemark
    run (one driver setup) for the scheme; the Go benchmarks run from its per-job
    callback, while the driver waits between jobs."""
    def go_for(m: Match) -> dict:
        return run_go_bench(m.package, [m], q, p, args.benchtime, args.count, args.threads, commands)[m.go_name]

    before: dict[str, dict] = {ms[0].go_name: go_for(ms[0])}
    after: dict[str, dict] = {}

    def between_jobs(job) -> None:
        for i, m in enumerate(ms):
            if job.op == m.fhemark_op:  # the allocating variant runs last of the pair
                after[m.go_name] = go_for(m)
                if i + 1 < len(ms):
                    before[ms[i + 1].go_name] = go_for(ms[i + 1])

    ops = [o for x in ms for o in (f"{x.fhemark_op}_into", x.fhemark_op)]
    recs = run_fhemark(scheme, ops, args.threads, policy, db, env, between_jobs)
    for m in ms:
        if m.go_name not in before or m.go_name not in after:
            raise Failure(f"{scheme}: the Lattigo benchmark {m.top}/{m.go_name} was not run around fhemark's "
                          f"{m.fhemark_op} (fhemark ran its jobs in another order than {ops})")
        go[(m.package, m.go_name)] = {"before": before[m.go_name], "after": after[m.go_name]}
    return recs


# -- the report -------------------------------------------------------------------------
def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.1f}"


def _median_or_none(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def build_rows(go: dict[tuple[str, str], dict], fm: dict[str, dict[str, dict]]) -> list[dict]:
    rows = []
    for m in MATCHES:
        if m.scheme not in fm:
            continue
        g = go[(m.package, m.go_name)]
        all_ns = g["before"]["ns_per_op"] + g["after"]["ns_per_op"]
        go_med = statistics.median(all_ns)
        for variant in (f"{m.fhemark_op}_into", m.fhemark_op):
            r = fm[m.scheme].get(variant) or {"status": "missing", "error": "no record"}
            ok = r.get("status") == "ok"
            med = r.get("median_ns") if ok else None
            rows.append({
                "scheme": m.scheme, "lattigo_benchmark": f"{m.top}/{m.go_name}", "lattigo_call": m.what,
                "lattigo_ns_per_op": go_med, "lattigo_ns_per_op_runs": all_ns,
                "lattigo_ns_per_op_before": statistics.median(g["before"]["ns_per_op"]),
                "lattigo_ns_per_op_after": statistics.median(g["after"]["ns_per_op"]),
                "lattigo_iterations_per_run": g["before"]["iterations"] + g["after"]["iterations"],
                "lattigo_bytes_per_op": _median_or_none(g["before"]["bytes_per_op"]),
                "lattigo_allocs_per_op": _median_or_none(g["before"]["allocs_per_op"]),
                "lattigo_full_name": g["before"]["full_name"],
                "fhemark_op": variant, "preallocated_output": variant.endswith("_into"),
                "status": r.get("status"), "error": r.get("error"),
                "fhemark_median_ns": med, "fhemark_ci95_ns": r.get("ci95_ns") if ok else None,
                "fhemark_samples": len(r.get("samples_ns") or []), "fhemark_copies": r.get("copies"),
                "fhemark_stop_reason": r.get("stop_reason"),
                "fhemark_driver_overhead_ns": r.get("driver_overhead_ns"),
                "fhemark_notes": r.get("notes"),
                "ratio_fhemark_over_lattigo": med / go_med if med else None,
                "ratio_ci95": [r["ci95_ns"][0] / go_med, r["ci95_ns"][1] / go_med] if ok else None,
            })
    return rows


def print_table(rows: list[dict]) -> None:
    head = ("scheme", "operation (Lattigo benchmark)", "Lattigo ns/op [us]", "runs min - max [us]", "fhemark op",
            "fhemark median [us]", "95% CI [us]", "ratio")
    lines = []
    for r in rows:
        ci = r["fhemark_ci95_ns"]
        runs = r["lattigo_ns_per_op_runs"]
        lines.append((r["scheme"], r["lattigo_benchmark"].split("/", 2)[2], _us(r["lattigo_ns_per_op"]),
                      f"{_us(min(runs))} - {_us(max(runs))}", r["fhemark_op"],
                      _us(r["fhemark_median_ns"]) if r["status"] == "ok" else r["status"],
                      f"{_us(ci[0])} - {_us(ci[1])}" if ci else "-",
                      f"{r['ratio_fhemark_over_lattigo']:.3f}" if r["ratio_fhemark_over_lattigo"] else "-"))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    right = {2, 3, 5, 6, 7}

    def fmt(row):
        return "  ".join(str(x).rjust(w) if i in right else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths)))
    print(fmt(head))
    print("  ".join("-" * w for w in widths))
    for ln in lines:
        print(fmt(ln))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fidelity_lattigo.json",
                    help="where to write the table as JSON (default benchmarks/out/fidelity_lattigo.json)")
    ap.add_argument("--benchtime", default="20x", help="go test -benchtime for Lattigo's benchmarks (default 20x)")
    ap.add_argument("--count", type=int, default=3,
                    help="go test -count, run once before and once after fhemark's measurements (default 3)")
    ap.add_argument("--threads", type=int, default=1,
                    help="GOMAXPROCS for both sides: go test -cpu N and the fhemark suite's threads (default 1)")
    ap.add_argument("--budget-s", type=float, default=2.0, help="fhemark policy budget_s per job (default 2.0)")
    ap.add_argument("--schemes", default="ckks,bgv,bfv", help="comma-separated subset of ckks,bgv,bfv")
    ap.add_argument("--inputs", choices=("hot", "cold"), default="hot",
                    help="fhemark's input state (policy inputs; default hot, the state of Lattigo's own loop)")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from fhemark.drivers.registry import manifests
    from fhemark.locations import project_root
    from fhemark.measure.metadata import environment

    schemes = [s for s in args.schemes.split(",") if s]
    unknown = set(schemes) - {"ckks", "bgv", "bfv"}
    if unknown:
        raise Failure(f"--schemes: unknown scheme(s) {', '.join(sorted(unknown))}; use ckks, bgv, bfv", 2)
    m = manifests().get("lattigo")
    if m is None or not m.available:
        raise Failure("fhemark's Lattigo driver is not built: run `bash drivers/lattigo/build.sh` (needs Go 1.24+)", 2)

    goinfo = go_env()
    q, p = lattigo_primes(LOG_N, Q_BITS, P_BITS)
    log_q, log_p = sum(math.log2(x) for x in q), sum(math.log2(x) for x in p)
    env = environment(args.threads, project_root())
    load_before = env.get("load_average")
    policy = {"budget_s": args.budget_s, "inputs": args.inputs}
    commands: list[str] = []
    go: dict[tuple[str, str], dict] = {}
    fm: dict[str, dict[str, dict]] = {}
    started = time.monotonic()
    print(f"Lattigo {goinfo['lattigo_version']} ({goinfo['go_version']}): LogN={LOG_N}, "
          f"Q bits {Q_BITS}, P bits {P_BITS}, scale 2^{SCALE_BITS} (CKKS), t={T} (BGV/BFV), threads {args.threads}")
    if load_before and load_before[0] > 0.5 * (os.cpu_count() or 1):
        print(f"note: load average {load_before} on {os.cpu_count()} cores: other processes are running, "
              f"numbers may be noisy")

    with tempfile.TemporaryDirectory(prefix="fhemark-fidelity-") as tmp:
        db = Path(tmp) / "fidelity.db"
        for scheme in schemes:
            print(f"{scheme.upper()}:", flush=True)
            ms = [x for x in MATCHES if x.scheme == scheme]
            fm[scheme] = measure_scheme(scheme, ms, q, p, args, policy, db, env, go, commands)

    # Both sides must have used the same parameters: what fhemark's driver reports
    # it built (prime bit sizes; log2 of the products, rounded to 3 decimals).
    problems: list[str] = []
    eff_seen = None
    for scheme, recs in fm.items():
        for op, r in recs.items():
            eff = r.get("effective_params")
            if not eff:
                continue
            eff_seen = eff
            if r.get("params_match") is False:
                problems.append(f"fhemark {scheme} {op}: parameters not as asked: {r.get('params_mismatch')}")
            if (eff["N"] != 1 << LOG_N or list(eff["q_bits"]) != Q_BITS or list(eff["p_bits"]) != P_BITS
                    or abs(eff["log_q"] - log_q) > 6e-4 or abs(eff["log_qp"] - (log_q + log_p)) > 6e-4
                    or (scheme != "ckks" and eff["t"] != T) or (scheme == "ckks" and eff["scale_bits"] != SCALE_BITS)):
                problems.append(f"fhemark {scheme} {op}: the driver used other parameters than Lattigo's benchmark: {eff}")

    rows = build_rows(go, fm)
    threads_seen = sorted({r.get("threads") for recs in fm.values() for r in recs.values()} - {None})
    load_after = os.getloadavg()
    print()
    print(f"Parameters: N = 2^{LOG_N}, Q = {len(q)} primes {Q_BITS} bits (log Q = {log_q:.3f}), "
          f"P = {len(p)} prime {P_BITS} bits (log QP = {log_q + log_p:.3f}), "
          f"CKKS scale 2^{SCALE_BITS}, BGV/BFV t = {T}; 128-bit secure (HE standard: log QP <= 438 at N=2^14)")
    print(f"Environment: {env['cpu']['model']}, {os.cpu_count()} logical cores, threads (GOMAXPROCS) = "
          f"{args.threads} for go test -cpu and {threads_seen} reported by the driver; "
          f"{goinfo['go_version']}, Lattigo {goinfo['lattigo_version']}; "
          f"load average before {load_before}, after {[round(x, 2) for x in load_after]}")
    print(f"Lattigo ns/op: median of {2 * args.count} go test runs ({args.count} before, {args.count} after "
          f"fhemark), each the mean of -benchtime {args.benchtime}; fhemark: median of samples, bootstrap 95% CI")
    print()
    print_table(rows)
    print(f"\nfhemark ({args.inputs} inputs) / Lattigo: "
          + fidelity_run.within([r["ratio_fhemark_over_lattigo"] for r in rows if r["preallocated_output"]])
          + " (preallocated output, as Lattigo's benchmarks); allocating: "
          + fidelity_run.within([r["ratio_fhemark_over_lattigo"] for r in rows if not r["preallocated_output"]]))
    drift = [(r["lattigo_benchmark"], r["lattigo_ns_per_op_before"], r["lattigo_ns_per_op_after"])
             for r in rows if r["preallocated_output"]]
    noisy = [d for d in drift if abs(d[2] / d[1] - 1) > 0.10]
    if noisy:
        print("\nnote: Lattigo's own ns/op moved by more than 10% between the runs before and after fhemark "
              "(machine load):")
        for name, b, a in noisy:
            print(f"  {name}: {_us(b)} us before, {_us(a)} us after")
    print(f"\ntotal wall time {time.monotonic() - started:.0f} s")

    result = {
        "benchmark": "fidelity_lattigo",
        "command": " ".join([".venv/bin/python", "benchmarks/fidelity_lattigo.py"] + sys.argv[1:]),
        "params": {"N": 1 << LOG_N, "log_n": LOG_N, "q_bits": Q_BITS, "p_bits": P_BITS, "q_primes": q,
                   "p_primes": p, "log_q": log_q, "log_qp": log_q + log_p, "ckks_scale_bits": SCALE_BITS,
                   "bgv_bfv_t": T, "fhemark_effective": eff_seen,
                   "go_params_literal": {pk: go_params_literal(pk, q, p) for pk in ("ckks", "bgv")}},
        "settings": {"benchtime": args.benchtime, "count_before": args.count, "count_after": args.count,
                     "threads": args.threads, "fhemark_policy": policy},
        "environment": {**env, "load_average_before": load_before,
                        "load_average_after": [round(x, 2) for x in load_after], "go": goinfo,
                        "driver_threads": threads_seen, "python_executable": sys.executable,
                        "platform": platform.platform()},
        "go_commands": commands,
        "rows": rows,
        "problems": problems,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, allow_nan=False, default=str) + "\n")
    print(f"written: {args.out}")

    failed = [r for r in rows if r["status"] != "ok"]
    if problems:
        raise Failure(first_of(problems))
    if failed:
        raise Failure(first_of([f"fhemark lattigo {r['scheme']} {r['fhemark_op']}: {r['status']}: {r['error']}"
                                for r in failed]))
    return 0


if __name__ == "__main__":
    exit_with(main)
