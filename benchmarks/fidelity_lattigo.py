#!/usr/bin/env python3
"""Fidelity benchmark: do fhemark's Lattigo numbers agree with Lattigo's own benchmarks?

Runs Lattigo v6.2.0's own Go benchmarks (schemes/ckks BenchmarkCKKS and schemes/bgv
BenchmarkBGV, their test binaries built with `go test -c` from inside drivers/lattigo so the
module's pinned version is the one tested) and fhemark's Lattigo driver on the same parameters
and the same operations, ALTERNATELY: --rounds rounds per scheme, each round Lattigo's benchmarks
(-count readings of every benchmark, -benchtime each) and fhemark's jobs (one measure, one
driver, `<op>_into` and `<op>`), in a random order per round, all under the host's measuring
lease, so that both sides sample the same stretch of the host.

Each side's readings are pooled over the rounds and judged by FLOORS (fidelity_run.judge): this
host's speed comes in levels ~1.6x apart that change within tenths of a second to seconds, so
two medians taken at different moments differ by how often the host was slow (Lattigo's own
CKKS Rescale read 7.0 ms, then 3.4 ms, around one fhemark run); the floor reads the fast level.
A Go ns/op line is itself a mean over b.N iterations: each -count line is one reading, and a
short -benchtime (default 20ms) keeps it inside one level of the host (a mean across two levels
lies between them, above the floor's 1.1x band, and drops out of the floor). fhemark's samples
are single operations, each one reading. The table: Lattigo's floor, fhemark's floor, their
ratio with a 95% interval and p (stats.floor_ratio, the ratio's own interval), the rounds, and
the old design's estimator (fhemark median / Lattigo median, pooled, with its range over the
rounds) for comparison in the same run.

This reports; it asserts no timing threshold. It exits non-zero (one line on stderr) only when
something did not run: a requested Go benchmark printed fewer `ns/op` lines than -count in any
round (status 1), a fhemark measurement failed in any round (1), the two sides did not use the
same primes (1), or the setup is missing (Go, the driver, the primes' check: 2).

    .venv/bin/python benchmarks/fidelity_lattigo.py [--out PATH] [--rounds 6] [--benchtime 20ms] [--count 5]

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


def parse_bench(stdout: str) -> dict[str, dict]:
    """`go test -bench` output by sub-benchmark name without its parameter part ('Evaluator/Rescale'):
    {key: {full_name, iterations, ns_per_op, bytes_per_op, allocs_per_op}}, one list entry per line
    (-count repetition), in order."""
    out: dict[str, dict] = {}
    for line in stdout.splitlines():
        m = _BENCH_LINE.match(line.strip())
        if not m:
            continue
        full, _cpu, n, ns, bop, allocs = m.groups()
        key_parts = []
        for part in full.split("/")[1:]:
            if "=" in part:
                break
            key_parts.append(part)
        rec = out.setdefault("/".join(key_parts), {"full_name": full, "iterations": [], "ns_per_op": [],
                                                    "bytes_per_op": [], "allocs_per_op": []})
        rec["iterations"].append(int(n))
        rec["ns_per_op"].append(float(ns))
        if bop is not None:
            rec["bytes_per_op"].append(float(bop))
        if allocs is not None:
            rec["allocs_per_op"].append(float(allocs))
    return out


def check_bench(out: dict[str, dict], matches: list[Match], count: int, what: str) -> None:
    """Every requested benchmark printed `count` ns/op lines, at LogN = LOG_N: else nothing (or
    something else) was measured, and the run stops."""
    for m in matches:
        got = out.get(m.go_name)
        if not got or len(got["ns_per_op"]) < count:
            n = len(got["ns_per_op"]) if got else 0
            raise Failure(f"Lattigo benchmark {m.top}/{m.go_name} printed {n} ns/op line(s) in {what}, expected "
                          f"{count}: nothing was measured (check the -bench pattern, and that -params reaches the "
                          f"test binary)")
        if f"ogN={LOG_N}/" not in got["full_name"]:
            raise Failure(f"Lattigo benchmark {got['full_name']} did not run at LogN={LOG_N}: the -params literal was "
                          f"not applied")


class GoBench:
    """Lattigo's own benchmark of one package, its test binary built once (`go test -c` from
    drivers/lattigo, so the pinned module is the code) and run once a round: a round then costs the
    benchmark's own setup (keys, under a second) and its loops, not a build."""

    def __init__(self, package: str, matches: list[Match], q: list[int], p: list[int], folder: Path, source: str,
                 log: list[str]):
        self.package, self.matches, self.log, self.logged = package, matches, log, False
        self.literal = json.dumps(go_params_literal(package, q, p), separators=(",", ":"))
        self.binary = folder / f"{package}.test"
        cmd = ["go", "test", "-mod=readonly", "-c", "-o", str(self.binary), f"{LATTIGO_MODULE}/schemes/{package}"]
        log.append("(cd drivers/lattigo && GOTOOLCHAIN=local " + " ".join(cmd) + ")")
        r = subprocess.run(cmd, cwd=DRIVER_DIR, env={**os.environ, "GOTOOLCHAIN": "local"}, capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            raise Failure(f"could not build Lattigo's schemes/{package} test binary: "
                          f"{r.stderr.strip().splitlines()[-1:]}", 2)
        self.dir = Path(source) / "schemes" / package  # the package's own folder, as `go test` runs it

    def run(self, keys: list[str], benchtime: str, count: int, threads: int, what: str) -> dict[str, dict]:
        ms = [m for m in self.matches if m.go_name in keys]
        cmd = [str(self.binary), "-test.run", "^$", "-test.bench", bench_pattern(ms), "-test.benchtime", benchtime,
               "-test.count", str(count), "-test.cpu", str(threads), "-test.benchmem", "-test.timeout", "30m",
               "-params", self.literal]
        if not self.logged:
            self.logged = True
            shown = " ".join(a if re.fullmatch(r"[\w./=:-]+", a) else "'" + a + "'" for a in cmd)
            self.log.append(f"(cd {self.dir} && {shown})")
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if r.returncode != 0 or re.search(r"^(FAIL|panic:|--- FAIL)", r.stdout + r.stderr, re.M):
            tail = " | ".join((r.stdout + r.stderr).strip().splitlines()[-3:])
            raise Failure(f"Lattigo's own benchmark (schemes/{self.package}) failed in {what}, exit {r.returncode}: {tail}")
        out = parse_bench(r.stdout)
        check_bench(out, ms, count, what)
        meds = [f"{k.split('/', 1)[1]} {_us(statistics.median(out[k]['ns_per_op']))}" for k in keys]
        print(f"  go {self.package}: {', '.join(meds)} us ({wall:.1f} s)", flush=True)
        return out


# -- fhemark on the same parameters ---------------------------------------------------------------
def fhemark_params(scheme: str) -> dict:
    spec: dict = {"N": 1 << LOG_N, "q_bits": Q_BITS, "p_bits": P_BITS, "name": "lattigo_bench_logn14"}
    if scheme == "ckks":
        spec["scale_bits"] = SCALE_BITS
    else:
        spec["t"] = T
    return spec


def measure_scheme(scheme: str, ms: list[Match], bench: dict[str, GoBench], args, policy: dict, db: Path,
                   env: dict) -> tuple[list[dict], list[dict[str, dict]]]:
    """args.rounds rounds, each in a random order: Lattigo's own benchmarks of the scheme (every
    match, -count readings each) and fhemark's jobs of the scheme (one measure: a driver, its setup,
    `<op>_into` and `<op>`). Returns the rounds (order and both sides' readings) and fhemark's
    records of each round."""
    ops = [o for x in ms for o in (f"{x.fhemark_op}_into", x.fhemark_op)]
    records: list[dict[str, dict]] = []
    go_runs: dict[int, dict[str, dict]] = {}

    def reference(i: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for package in dict.fromkeys(m.package for m in ms):
            got = bench[package].run([m.go_name for m in ms if m.package == package], args.benchtime, args.count,
                                     args.threads, f"{scheme} round {i + 1}")
            go_runs.setdefault(i, {}).update(got)
            out.update({m.go_name: got[m.go_name]["ns_per_op"] for m in ms if m.package == package})
        return out

    def fhemark(i: int) -> dict[str, list[float]]:
        # 390-bit QP at N=2^14: 128-bit secure
        recs = fidelity_run.run_fhemark("lattigo", scheme, fhemark_params(scheme), ops, args.threads, policy, db, env,
                                        f"fidelity_lattigo_{scheme}")
        records.append(recs)
        return {op: list(r.get("samples_ns") or []) for op, r in recs.items() if r.get("status") == "ok"}

    rounds = fidelity_run.interleave(args.rounds, {"reference": reference, "fhemark": fhemark},
                                     seed=args.seed + ["ckks", "bgv", "bfv"].index(scheme), threads=args.threads)
    for i, rnd in enumerate(rounds):  # the readings' details (iterations, memory) stay in the JSON, beside the ns/op
        rnd["go_detail"] = {m.go_name: {x: go_runs[i][m.go_name][x] for x in ("full_name", "iterations", "bytes_per_op",
                                                                             "allocs_per_op")} for m in ms}
    return rounds, records


# -- the report -------------------------------------------------------------------------
def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.1f}"


def build_rows(rounds: dict[str, list[dict]], fm: dict[str, list[dict[str, dict]]]) -> list[dict]:
    rows = []
    for m in MATCHES:
        if m.scheme not in fm or m.go_name not in rounds[m.scheme][0]["go_detail"]:
            continue
        rr = rounds[m.scheme]
        ref = fidelity_run.pool(rr, "reference", m.go_name)
        for variant in (f"{m.fhemark_op}_into", m.fhemark_op):
            recs = [x.get(variant) or {"status": "missing", "error": "no record"} for x in fm[m.scheme]]
            bad = next((r for r in recs if r.get("status") != "ok"), None)
            j = fidelity_run.judge(ref, fidelity_run.pool(rr, "fhemark", variant))
            rows.append({
                "scheme": m.scheme, "lattigo_benchmark": f"{m.top}/{m.go_name}", "lattigo_call": m.what,
                "lattigo_full_name": rr[0]["go_detail"][m.go_name]["full_name"],
                "fhemark_op": variant, "preallocated_output": variant.endswith("_into"),
                "status": bad.get("status") if bad else "ok", "error": bad.get("error") if bad else None,
                **fidelity_run.judged_cells(j, "lattigo"),
                "lattigo_ns_per_op_by_round": ref, "fhemark_samples_ns_by_round": fidelity_run.pool(rr, "fhemark", variant),
                "fhemark_median_ns_by_round": [r.get("median_ns") for r in recs],
                "fhemark_copies": recs[0].get("copies"), "fhemark_notes": recs[0].get("notes"),
            })
    return rows


def print_rows(rows: list[dict]) -> None:
    head = ("scheme", "operation (Lattigo benchmark)", "fhemark op", "Lattigo floor [us]", "fhemark floor [us]",
            "ratio [95%]", "p", "fast rounds", "median ratio (by round)")
    lines = [(r["scheme"], r["lattigo_benchmark"].split("/", 2)[2], r["fhemark_op"], _us(r["lattigo_floor_ns"]),
              _us(r["fhemark_floor_ns"]) if r["status"] == "ok" else r["status"],
              *fidelity_run.row_cells(r, "lattigo")) for r in rows]
    fidelity_run.print_table(head, lines, {3, 4, 5, 6, 7})


def check_params(fm: dict[str, list[dict[str, dict]]], log_q: float, log_p: float) -> tuple[list[str], dict | None]:
    """Both sides used the same parameters: what fhemark's driver reports it built, in every round
    (prime bit sizes; log2 of the products, rounded to 3 decimals)."""
    problems: list[str] = []
    eff_seen = None
    for scheme, rounds in fm.items():
        for recs in rounds:
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
                    problems.append(f"fhemark {scheme} {op}: the driver used other parameters than Lattigo's benchmark: "
                                    f"{eff}")
    return problems, eff_seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fidelity_lattigo.json",
                    help="where to write the table as JSON (default benchmarks/out/fidelity_lattigo.json)")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of both sides, each in a random order (default 6)")
    ap.add_argument("--benchtime", default="20ms",
                    help="Lattigo's -benchtime per reading (default 20ms: each ns/op line a mean over ~20 ms)")
    ap.add_argument("--count", type=int, default=5, help="Lattigo's -count: ns/op readings per benchmark a round (default 5)")
    ap.add_argument("--threads", type=int, default=1,
                    help="GOMAXPROCS for both sides: -test.cpu N and the fhemark suite's threads (default 1)")
    ap.add_argument("--budget-s", type=float, default=0.5, help="fhemark policy budget_s per job a round (default 0.5)")
    ap.add_argument("--schemes", default="ckks,bgv,bfv", help="comma-separated subset of ckks,bgv,bfv")
    ap.add_argument("--inputs", choices=("hot", "cold"), default="hot",
                    help="fhemark's input state (policy inputs; default hot, the state of Lattigo's own loop)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the rounds' orders")
    args = ap.parse_args()
    if args.rounds < 1 or args.count < 1:
        raise Failure("--rounds and --count must be at least 1", 2)

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
    rounds: dict[str, list[dict]] = {}
    fm: dict[str, list[dict[str, dict]]] = {}
    started = time.monotonic()
    print(f"Lattigo {goinfo['lattigo_version']} ({goinfo['go_version']}): LogN={LOG_N}, "
          f"Q bits {Q_BITS}, P bits {P_BITS}, scale 2^{SCALE_BITS} (CKKS), t={T} (BGV/BFV), threads {args.threads}; "
          f"{args.rounds} rounds, Lattigo -benchtime {args.benchtime} -count {args.count}, fhemark budget_s "
          f"{args.budget_s} a job")

    with tempfile.TemporaryDirectory(prefix="fhemark-fidelity-") as tmp, fidelity_run.lease("fidelity_lattigo"):
        db = Path(tmp) / "fidelity.db"
        wanted = [x for x in MATCHES if x.scheme in schemes]
        bench = {pk: GoBench(pk, [x for x in wanted if x.package == pk], q, p, Path(tmp),
                             goinfo["lattigo_source"], commands)
                 for pk in dict.fromkeys(x.package for x in wanted)}
        for scheme in schemes:
            print(f"{scheme.upper()}:", flush=True)
            rounds[scheme], fm[scheme] = measure_scheme(scheme, [x for x in wanted if x.scheme == scheme], bench, args,
                                                        policy, db, env)

    problems, eff_seen = check_params(fm, log_q, log_p)
    rows = build_rows(rounds, fm)
    threads_seen = sorted({r.get("threads") for rr in fm.values() for recs in rr for r in recs.values()} - {None})
    load_after = os.getloadavg()
    print()
    print(f"Parameters: N = 2^{LOG_N}, Q = {len(q)} primes {Q_BITS} bits (log Q = {log_q:.3f}), "
          f"P = {len(p)} prime {P_BITS} bits (log QP = {log_q + log_p:.3f}), "
          f"CKKS scale 2^{SCALE_BITS}, BGV/BFV t = {T}; 128-bit secure (HE standard: log QP <= 438 at N=2^14)")
    print(f"Environment: {env['cpu']['model']}, {os.cpu_count()} logical cores, threads (GOMAXPROCS) = "
          f"{args.threads} for -test.cpu and {threads_seen} reported by the driver; "
          f"{goinfo['go_version']}, Lattigo {goinfo['lattigo_version']}; "
          f"load average before {load_before}, after {[round(x, 2) for x in load_after]}")
    print(f"Floors (median of the readings within 1.1x of the fastest), pooled over {args.rounds} interleaved rounds: "
          f"Lattigo's readings are its ns/op lines ({args.count} a round, each a mean over -benchtime {args.benchtime}), "
          f"fhemark's its samples (one op each); ratio = fhemark floor / Lattigo floor, 95% interval and p from "
          f"stats.floor_ratio; median ratio = the old design's estimator, with its per-round range")
    print()
    print_rows(rows)
    into = [r for r in rows if r["preallocated_output"]]
    print(f"\nfhemark ({args.inputs} inputs) / Lattigo, floors: "
          + fidelity_run.within([r["ratio_floor"] for r in into]) + " (preallocated output, as Lattigo's benchmarks); "
          + fidelity_run.decided([{"ratio_ci95": r["ratio_floor_ci95"]} for r in into])
          + "; allocating: " + fidelity_run.within([r["ratio_floor"] for r in rows if not r["preallocated_output"]]))
    print("medians, unpaired (old estimator): " + fidelity_run.within([r["ratio_median_unpaired"] for r in into])
          + " (preallocated output)")
    moved = []
    for r in into:
        meds = [statistics.median(x) for x in r["lattigo_ns_per_op_by_round"] if x]
        if len(meds) > 1 and max(meds) / min(meds) > 1.10:
            moved.append(f"{r['scheme']} {r['lattigo_benchmark'].split('/', 2)[2]} {_us(min(meds))}-{_us(max(meds))} us")
    if moved:
        print(f"Lattigo's own per-round medians moved by more than 10% in {len(moved)} of {len(into)} benchmarks: "
              + "; ".join(moved))
    print(f"\ntotal wall time {time.monotonic() - started:.0f} s")

    result = {
        "benchmark": "fidelity_lattigo",
        "design": "interleaved rounds (random order per round), floors pooled over the rounds, stats.floor_ratio",
        "command": " ".join([".venv/bin/python", "benchmarks/fidelity_lattigo.py"] + sys.argv[1:]),
        "params": {"N": 1 << LOG_N, "log_n": LOG_N, "q_bits": Q_BITS, "p_bits": P_BITS, "q_primes": q,
                   "p_primes": p, "log_q": log_q, "log_qp": log_q + log_p, "ckks_scale_bits": SCALE_BITS,
                   "bgv_bfv_t": T, "fhemark_effective": eff_seen,
                   "go_params_literal": {pk: go_params_literal(pk, q, p) for pk in ("ckks", "bgv")}},
        "settings": {"rounds": args.rounds, "benchtime": args.benchtime, "count_per_round": args.count,
                     "threads": args.threads, "fhemark_policy": policy, "seed": args.seed},
        "environment": {**env, "load_average_before": load_before,
                        "load_average_after": [round(x, 2) for x in load_after], "go": goinfo,
                        "driver_threads": threads_seen, "python_executable": sys.executable,
                        "platform": platform.platform()},
        "go_commands": commands,
        "round_orders": {s: [r["order"] for r in rr] for s, rr in rounds.items()},
        "rows": rows,
        "problems": problems,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, allow_nan=False, default=str) + "\n")
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
