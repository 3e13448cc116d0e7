#!/usr/bin/env python3
"""Fidelity benchmark: do fhemark's SEAL numbers agree with a hot seal-python loop on the same objects?

SEAL's own C++ harness (`sealbench`) cannot be built from a package registry, so the reference
is the loop it runs, written over seal-python (the binding fhemark's SEAL driver calls): one
operand set made once and reused by every iteration, each iteration's result dropped before the
next, so operands, code and allocator are as a tight loop leaves them. An in-place call whose
result would change its operand's size, scale or level (a product, a rescale) gets a fresh copy of
the operand first, untimed. Every cell: the reference, fhemark's job (its driver, its checks, its
statistics), the reference again: both sides within seconds, the reference's own run-to-run
spread beside the ratio. The parameters are fhemark's presets (SEAL's default moduli), built by
both sides with CoeffModulus.Create, so the primes are the same.

This reports; it asserts no timing threshold. It exits non-zero (one line on stderr) only when
something did not run.

    .venv/bin/python benchmarks/fidelity_seal.py [--n 4096,8192,16384] [--schemes bfv,ckks] [--inputs hot]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import fidelity_run
from fidelity_run import Failure, exit_with, first_of

ROOT = Path(__file__).resolve().parents[1]
OPS = ["add", "sub", "add_plain", "mul", "mul_plain", "square", "mul_relin", "relinearize", "rotate_1", "mod_switch"]
CKKS_ONLY = ["rescale"]


class Reference:
    """A seal-python context built as the driver builds it, with one operand set reused by every call."""

    def __init__(self, scheme: str, ps) -> None:
        import numpy as np
        import seal

        self.seal, self.scheme = seal, scheme
        parms = seal.EncryptionParameters({"bfv": seal.scheme_type.bfv, "bgv": seal.scheme_type.bgv,
                                           "ckks": seal.scheme_type.ckks}[scheme])
        parms.set_poly_modulus_degree(ps.N)
        parms.set_coeff_modulus(seal.CoeffModulus.Create(ps.N, list(ps.q_bits) + list(ps.p_bits)))
        if scheme != "ckks":
            parms.set_plain_modulus(ps.t)
        self.ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
        kg = seal.KeyGenerator(self.ctx)
        self.rlk, self.gk = kg.create_relin_keys(), seal.GaloisKeys()
        kg.create_galois_keys([1], self.gk)
        enc = seal.Encryptor(self.ctx, kg.create_public_key())
        self.ev = seal.Evaluator(self.ctx)
        rng = np.random.default_rng(1)
        if scheme == "ckks":
            coder, scale = seal.CKKSEncoder(self.ctx), 2.0 ** ps.scale_bits
            plain = lambda: coder.encode(rng.random(ps.N // 2), scale)  # noqa: E731
        else:
            coder = seal.BatchEncoder(self.ctx)
            plain = lambda: coder.encode(rng.integers(0, ps.t, ps.N, dtype=np.uint64))  # noqa: E731
        self.a, self.b, self.p = enc.encrypt(plain()), enc.encrypt(plain()), plain()
        self.c3 = self.ev.multiply(self.a, self.b)  # a size-3 product, what relinearize takes
        self.m = self.ev.relinearize(self.c3, self.rlk)  # a product at scale^2, what rescale takes

    def calls(self, op: str) -> tuple[Callable[[], object] | None, Callable[[], object]]:
        """(untimed preparation or None, timed call) for fhemark's op on the reused operands."""
        ev, s, a, b, p, rlk, gk = self.ev, self.seal, self.a, self.b, self.p, self.rlk, self.gk
        rot = ev.rotate_vector if self.scheme == "ckks" else ev.rotate_rows
        rot_in = ev.rotate_vector_inplace if self.scheme == "ckks" else ev.rotate_rows_inplace
        allocating = {"add": lambda: ev.add(a, b), "sub": lambda: ev.sub(a, b), "add_plain": lambda: ev.add_plain(a, p),
                      "mul": lambda: ev.multiply(a, b), "mul_plain": lambda: ev.multiply_plain(a, p),
                      "square": lambda: ev.square(a), "mul_relin": lambda: ev.relinearize(ev.multiply(a, b), rlk),
                      "relinearize": lambda: ev.relinearize(self.c3, rlk), "rotate_1": lambda: rot(a, 1, gk),
                      "mod_switch": lambda: ev.mod_switch_to_next(a), "rescale": lambda: ev.rescale_to_next(self.m)}
        if op in allocating:
            return None, allocating[op]
        base = op.removesuffix("_into")
        # In place on the reused operand where the result keeps its shape; on a fresh copy where not.
        repeatable = {"add": lambda: ev.add_inplace(a, b), "sub": lambda: ev.sub_inplace(a, b),
                      "add_plain": lambda: ev.add_plain_inplace(a, p), "rotate_1": lambda: rot_in(a, 1, gk)}
        if base in repeatable:
            return None, repeatable[base]
        src = {"relinearize": self.c3, "rescale": self.m}.get(base, a)
        box = [src]

        def prep() -> None:
            box[0] = s.Ciphertext(src)
        inplace = {"add_plain": lambda x: ev.add_plain_inplace(x, p), "mul": lambda x: ev.multiply_inplace(x, b),
                   "mul_plain": lambda x: ev.multiply_plain_inplace(x, p), "square": ev.square_inplace,
                   "mul_relin": lambda x: (ev.multiply_inplace(x, b), ev.relinearize_inplace(x, rlk)),
                   "relinearize": lambda x: ev.relinearize_inplace(x, rlk), "mod_switch": ev.mod_switch_to_next_inplace,
                   "rescale": ev.rescale_to_next_inplace}[base]
        return prep, lambda: inplace(box[0])

    def time(self, op: str, min_iters: int, min_s: float) -> list[float]:
        """ns of each call, at least min_iters of them and min_s seconds, the first (cold) one dropped."""
        prep, call = self.calls(op)
        out: list[float] = []
        started = time.monotonic()
        while len(out) <= min_iters or time.monotonic() - started < min_s:
            if prep:
                prep()
            gc.disable()
            t0 = time.perf_counter_ns()
            call()
            t1 = time.perf_counter_ns()
            gc.enable()
            out.append(t1 - t0)
        return out[1:]


def _us(ns: float | None) -> str:
    return f"{ns / 1e3:,.1f}" if ns else "-"


def cells(schemes: list[str]) -> list[tuple[str, str]]:
    return [(s, f"{o}{v}") for s in schemes for o in OPS + (CKKS_ONLY if s == "ckks" else []) for v in ("_into", "")]


def measure_cell(ref: Reference, scheme: str, n: int, ops: list[str], args, policy: dict, db: Path, env: dict,
                 seed: int) -> tuple[list[dict], list[dict[str, dict]]]:
    """args.rounds rounds of the reference loop and fhemark's jobs, each round in a random order:
    the rounds (order and both sides' readings by op) and fhemark's records of each round."""
    records: list[dict[str, dict]] = []

    def reference(i: int) -> dict[str, list[float]]:
        t0 = time.monotonic()
        out = {op: ref.time(op, args.ref_iters, args.ref_s) for op in ops}
        print(f"  reference loop: {len(ops)} ops ({time.monotonic() - t0:.1f} s)", flush=True)
        return out

    def fhemark(i: int) -> dict[str, list[float]]:
        recs = fidelity_run.run_fhemark("seal", scheme, f"n{n}", ops, 1, policy, db, env, f"fidelity_seal_{scheme}_{n}")
        records.append(recs)
        return {op: list(r.get("samples_ns") or []) for op, r in recs.items() if r.get("status") == "ok"}

    return fidelity_run.interleave(args.rounds, {"reference": reference, "fhemark": fhemark}, seed), records


def build_rows(scheme: str, n: int, ops: list[str], rounds: list[dict], records: list[dict[str, dict]]) -> list[dict]:
    rows = []
    for op in ops:
        recs = [x.get(op) or {"status": "missing", "error": "no record"} for x in records]
        bad = next((r for r in recs if r.get("status") != "ok"), None)
        ref, fm = fidelity_run.pool(rounds, "reference", op), fidelity_run.pool(rounds, "fhemark", op)
        j = fidelity_run.judge(ref, fm)
        rows.append({"scheme": scheme, "N": n, "op": op, "status": bad.get("status") if bad else "ok",
                     "error": bad.get("error") if bad else None,
                     **fidelity_run.judged_cells(j),
                     "reference_median_ns_by_round": [statistics.median(x) if x else None for x in ref],
                     "fhemark_median_ns_by_round": [r.get("median_ns") for r in recs],
                     "input_state": recs[0].get("input_state"), "copies": recs[0].get("copies")})
    return rows


def print_rows(rows: list[dict]) -> None:
    head = ("scheme", "N", "op", "reference floor [us]", "fhemark floor [us]", "ratio [95%]", "p", "fast rounds",
            "median ratio (by round)")
    lines = [(r["scheme"], r["N"], r["op"], _us(r["reference_floor_ns"]),
              _us(r["fhemark_floor_ns"]) if r["status"] == "ok" else r["status"],
              *fidelity_run.row_cells(r)) for r in rows]
    fidelity_run.print_table(head, lines, {1, 3, 4, 5, 6, 7})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fidelity_seal.json")
    ap.add_argument("--n", default="4096,8192,16384", help="ring dimensions: fhemark presets n<N> (SEAL's moduli)")
    ap.add_argument("--schemes", default="bfv,ckks", help="comma-separated subset of bfv,bgv,ckks")
    ap.add_argument("--inputs", choices=("hot", "cold"), default="hot", help="fhemark's input state (policy inputs)")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of both sides, each in a random order (default 6)")
    ap.add_argument("--budget-s", type=float, default=0.3, help="fhemark policy budget_s per job a round (default 0.3)")
    ap.add_argument("--ref-iters", type=int, default=10, help="reference: at least this many calls an op a round")
    ap.add_argument("--ref-s", type=float, default=0.1, help="reference: at least this many seconds an op a round")
    ap.add_argument("--seed", type=int, default=0, help="seed of the rounds' orders")
    args = ap.parse_args()
    if args.rounds < 1:
        raise Failure("--rounds must be at least 1", 2)

    sys.path.insert(0, str(ROOT / "src"))
    from fhemark.drivers.registry import manifests
    from fhemark.locations import project_root
    from fhemark.measure.metadata import environment
    from fhemark.model.params import resolve

    schemes = [s for s in args.schemes.split(",") if s]
    if set(schemes) - {"bfv", "bgv", "ckks"}:
        raise Failure(f"--schemes: unknown scheme(s) in {args.schemes}; use bfv, bgv, ckks", 2)
    m = manifests().get("seal")
    if m is None or not m.available:
        raise Failure("fhemark's SEAL driver is not available: run `make setup`", 2)
    env = environment(1, project_root())
    policy = {"budget_s": args.budget_s, "inputs": args.inputs}
    rows: list[dict] = []
    orders: dict[str, list] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fhemark-fidelity-") as tmp, fidelity_run.lease("fidelity_seal"):
        for k, n in enumerate(int(x) for x in args.n.split(",") if x):
            for scheme in schemes:
                print(f"{scheme.upper()} N={n}:", flush=True)
                ops = [op for s, op in cells([scheme]) if s == scheme]
                ref = Reference(scheme, resolve(f"n{n}", scheme))
                rounds, records = measure_cell(ref, scheme, n, ops, args, policy, Path(tmp) / "f.db", env,
                                               args.seed + 10 * k + schemes.index(scheme))
                orders[f"{scheme} {n}"] = [r["order"] for r in rounds]
                rows += build_rows(scheme, n, ops, rounds, records)
    print(f"\nFloors (median of the readings within 1.1x of the fastest), pooled over {args.rounds} interleaved rounds; "
          f"both sides' readings are single calls; ratio = fhemark floor / reference floor, 95% interval and p from "
          f"stats.floor_ratio; median ratio = the old design's estimator, with its per-round range\n")
    print_rows(rows)
    print(f"\nfhemark ({args.inputs} inputs) / hot seal-python loop, floors: "
          + fidelity_run.within([r["ratio_floor"] for r in rows]) + "; "
          + fidelity_run.decided([{"ratio_ci95": r["ratio_floor_ci95"]} for r in rows])
          + "\nmedians, unpaired (old estimator): " + fidelity_run.within([r["ratio_median_unpaired"] for r in rows])
          + f"\ntotal wall time {time.monotonic() - started:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "fidelity_seal",
        "design": "interleaved rounds (random order per round), floors pooled over the rounds, stats.floor_ratio",
        "command": " ".join([".venv/bin/python", "benchmarks/fidelity_seal.py"] + sys.argv[1:]),
        "settings": {"rounds": args.rounds, "ref_iters": args.ref_iters, "ref_s": args.ref_s, "seed": args.seed},
        "policy": policy, "environment": env, "round_orders": orders, "rows": rows}, indent=1, default=str) + "\n")
    print(f"written: {args.out}")
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        raise Failure(first_of([f"fhemark seal {r['scheme']} N={r['N']} {r['op']}: {r['status']}: {r['error']}"
                                for r in failed]))
    empty = [r for r in rows if not r["reference_readings"]]
    if empty:
        raise Failure(first_of([f"reference loop {r['scheme']} N={r['N']} {r['op']}: no readings" for r in empty]))
    return 0


if __name__ == "__main__":
    exit_with(main)
