#!/usr/bin/env python3
"""Fidelity of bootstrapping: fhemark's Lattigo bootstrap against Lattigo's own benchmark of it.

Lattigo v6.2.0's circuits/ckks/bootstrapping BenchmarkConcurrentBootstrap (its BenchmarkBootstrap
starts with b.Skip()) bootstraps a ciphertext at level 0 with DefaultParametersDense[0],
bootstrapping.N16QP1767H32768H32, in b.RunParallel: run with -test.cpu 1 that is one goroutine, one
bootstrap after another, on the same input each time (a zero ciphertext: the work of a bootstrap does
not depend on the values). fhemark measures its `bootstrap` op at the driver's preset of the same set
(lattigo_bootstrap_dense), each sample on a fresh encryption, its output decrypted and checked. The
two sides take turns, --rounds rounds in a random order each, on the measuring core, and are judged
as benchmarks/fidelity_lattigo.py judges them (fidelity_run.judge: floors, ratio with a 95% interval).

Heavy: a round is two key generations (about 2 minutes each) and 2 x (1 + --boots) bootstraps of
about 33 s (2026-12-07, 2-core VM): 10 minutes a round; one process at a time holds the keys (about
10 GB). Run it alone on the machine. It asserts no timing threshold; it exits non-zero (one line) only where a side
did not run.

    .venv/bin/python benchmarks/fidelity_bootstrap.py [--rounds 3] [--boots 3] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fidelity_run
from fidelity_lattigo import DRIVER_DIR, LATTIGO_MODULE, ROOT, _us, go_env, parse_bench
from fidelity_run import Failure, exit_with

PRESET = "lattigo_bootstrap_dense"
GO_SET = "bootstrapping.N16QP1767H32768H32"
GO_BENCH = "Bootstrap"  # parse_bench's key: the parts of the name after its top, before its parameters


def go_binary(folder: Path, log: list[str]) -> Path:
    """Lattigo's bootstrapping test binary, built from drivers/lattigo (its pinned module)."""
    binary = folder / "bootstrapping.test"
    cmd = ["go", "test", "-mod=readonly", "-c", "-o", str(binary), f"{LATTIGO_MODULE}/circuits/ckks/bootstrapping"]
    log.append("(cd drivers/lattigo && GOTOOLCHAIN=local " + " ".join(cmd) + ")")
    r = subprocess.run(cmd, cwd=DRIVER_DIR, env={**os.environ, "GOTOOLCHAIN": "local"}, capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0:
        raise Failure(f"could not build Lattigo's bootstrapping test binary: {r.stderr.strip().splitlines()[-1:]}", 2)
    return binary


def go_side(binary: Path, source: str, boots: int, log: list[str]):
    def run(i: int) -> dict[str, list[float]]:
        # One reading a round, the mean of `boots` bootstraps (-benchtime Nx, after Go's first call of b.N = 1):
        # each -count would generate the keys again (they are made in the benchmark's outer function).
        cmd = [str(binary), "-test.run", "^$", "-test.bench", "^BenchmarkConcurrentBootstrap$", "-test.benchtime",
               f"{boots}x", "-test.count", "1", "-test.cpu", "1", "-test.timeout", "60m"]
        if i == 0:
            log.append(f"(cd {source}/circuits/ckks/bootstrapping && {' '.join(cmd)})")
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=Path(source) / "circuits" / "ckks" / "bootstrapping", capture_output=True, text=True)
        got = parse_bench(r.stdout).get(GO_BENCH)
        if r.returncode != 0 or not got or got["iterations"][0] != boots:
            tail = " | ".join((r.stdout + r.stderr).strip().splitlines()[-3:])
            raise Failure(f"Lattigo's BenchmarkConcurrentBootstrap did not read {boots} bootstraps in round {i + 1} "
                          f"(exit {r.returncode}): {tail}")
        print(f"  go: {got['full_name']}: {_us(got['ns_per_op'][0])} us a bootstrap, the mean of {boots} "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
        return {"bootstrap": got["ns_per_op"]}
    return run


def fhemark_side(boots: int, db: Path, env: dict, records: list):
    # cold: a fresh encryption each sample (the state fhemark measures in; a bootstrap's gigabytes of keys
    # and temporaries leave no input cache-hot either way)
    policy = {"warmup": 1, "min_samples": boots, "max_samples": boots, "budget_s": 1, "timeout_s": 3600,
              "memory_limit_mb": 23000, "inputs": "cold"}

    def run(i: int) -> dict[str, list[float]]:
        # Lattigo documents the set as 128-bit; fhemark judges it at its bootstrapping keys' modulus (log QP 1767)
        # with their secret (h = 192), where its estimate may read less: the record says which, and it runs.
        recs = fidelity_run.run_fhemark("lattigo", "ckks", {"preset": PRESET, "N": 65536}, ["bootstrap"], 1, policy, db,
                                        env, "fidelity_bootstrap", allow_insecure=True)
        records.append(recs["bootstrap"])
        r = recs["bootstrap"]
        if r.get("status") != "ok":
            raise Failure(f"fhemark lattigo bootstrap at {PRESET}: {r.get('status')}: {r.get('error')}")
        return {"bootstrap": list(r.get("samples_ns") or [])}
    return run


def summary(j: dict, rec: dict, took_s: float) -> str:
    """Both floors, their ratio with its interval and p where the readings give them, and what fhemark's
    record says of the set."""
    eff = rec.get("effective_params") or {}
    sizes, sec = rec.get("sizes_bytes") or {}, (rec.get("security") or {}).get("hestd2018") or {}
    p = f"p {j['p']:.2g}" if j.get("p") is not None else "no p: too few readings"
    return (f"\nLattigo's own floor {_us(j['reference_floor_ns'])} us, fhemark's {_us(j['fhemark_floor_ns'])} us: "
            f"ratio {fidelity_run.ratio_cell(j)} ({p}); medians' ratio {fidelity_run.median_cell(j)}\n"
            f"fhemark's record: set {(eff.get('bootstrap') or {}).get('lattigo_parameters')}, security "
            f"{sec.get('bits')} bits (estimate {sec.get('estimated_bits')}), key log QP {eff.get('key_log_qp')}, "
            f"secret {eff.get('secret')} (h = {eff.get('hamming_weight')}), bootstrapping keys "
            f"{(sizes.get('bootstrapping_key') or 0) / 2**30:.1f} GiB, setup {rec.get('setup_s') or 0:.0f} s, peak "
            f"{(rec.get('peak_rss_bytes') or 0) / 2**30:.1f} GiB, precision {rec.get('precision_bits')} bits; "
            f"total {took_s:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fidelity_bootstrap.json")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of both sides, each in a random order (default 3)")
    ap.add_argument("--boots", type=int, default=3, help="bootstraps a side times a round (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from fhemark.drivers.registry import manifests
    from fhemark.locations import project_root
    from fhemark.measure.metadata import environment
    m = manifests().get("lattigo")
    if m is None or not m.available:
        raise Failure("fhemark's Lattigo driver is not built: run `bash drivers/lattigo/build.sh` (needs Go 1.24+)", 2)
    goinfo, env, log, records = go_env(), environment(1, project_root()), [], []
    started = time.monotonic()
    print(f"Lattigo {goinfo['lattigo_version']} ({goinfo['go_version']}): {GO_SET} both ways, 1 thread; "
          f"{args.rounds} rounds of {args.boots} bootstraps a side", flush=True)
    with tempfile.TemporaryDirectory(prefix="fhemark-fidelity-boot-") as tmp, fidelity_run.lease("fidelity_bootstrap"):
        binary = go_binary(Path(tmp), log)
        rounds = fidelity_run.interleave(args.rounds, {
            "reference": go_side(binary, goinfo["lattigo_source"], args.boots, log),
            "fhemark": fhemark_side(args.boots, Path(tmp) / "f.db", env, records)}, seed=args.seed)
    j = fidelity_run.judge(fidelity_run.pool(rounds, "reference", "bootstrap"),
                           fidelity_run.pool(rounds, "fhemark", "bootstrap"))
    # the readings are written before anything is said of them: a summary that fails loses nothing
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "fidelity_bootstrap", "command": " ".join([".venv/bin/python", "benchmarks/fidelity_bootstrap.py"]
                                                              + sys.argv[1:]),
        "lattigo_set": GO_SET, "fhemark_preset": PRESET, "go": goinfo, "go_commands": log, "judged": j,
        "rounds": rounds, "fhemark_records": records, "environment": env}, indent=1, default=str) + "\n")
    print(f"written: {args.out}")
    print(summary(j, records[-1], time.monotonic() - started))
    return 0


if __name__ == "__main__":
    exit_with(main)
