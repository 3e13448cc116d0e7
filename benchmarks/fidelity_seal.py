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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fidelity_seal.json")
    ap.add_argument("--n", default="4096,8192,16384", help="ring dimensions: fhemark presets n<N> (SEAL's moduli)")
    ap.add_argument("--schemes", default="bfv,ckks", help="comma-separated subset of bfv,bgv,ckks")
    ap.add_argument("--inputs", choices=("hot", "cold"), default="hot", help="fhemark's input state (policy inputs)")
    ap.add_argument("--budget-s", type=float, default=1.0, help="fhemark policy budget_s per job (default 1.0)")
    ap.add_argument("--ref-iters", type=int, default=30, help="reference: at least this many calls per run")
    ap.add_argument("--ref-s", type=float, default=0.3, help="reference: at least this many seconds per run")
    args = ap.parse_args()

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
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fhemark-fidelity-") as tmp:
        for n in [int(x) for x in args.n.split(",") if x]:
            for scheme in schemes:
                preset = f"n{n}"
                ref = Reference(scheme, resolve(preset, scheme))
                ops = [op for s, op in cells([scheme]) if s == scheme]
                runs: dict[str, list[list[float]]] = {ops[0]: [ref.time(ops[0], args.ref_iters, args.ref_s)]}

                def between(job, ref=ref, runs=runs, ops=ops):
                    runs.setdefault(job.op, []).append(ref.time(job.op, args.ref_iters, args.ref_s))
                    nxt = ops.index(job.op) + 1
                    if nxt < len(ops):
                        runs[ops[nxt]] = [ref.time(ops[nxt], args.ref_iters, args.ref_s)]

                recs = fidelity_run.run_fhemark("seal", scheme, preset, ops, 1, policy, Path(tmp) / "f.db", env,
                                                between, f"fidelity_seal_{scheme}_{n}")
                for op in ops:
                    r, meds = recs.get(op, {}), [statistics.median(x) for x in runs.get(op, [])]
                    ok = r.get("status") == "ok" and len(meds) == 2
                    ref_ns = statistics.median([t for x in runs[op] for t in x]) if ok else None
                    rows.append({"scheme": scheme, "N": n, "op": op, "status": r.get("status"), "error": r.get("error"),
                                 "reference_ns": ref_ns, "reference_runs_ns": meds,
                                 "reference_spread": abs(meds[1] - meds[0]) / ref_ns if ok else None,
                                 "fhemark_median_ns": r.get("median_ns"), "fhemark_ci95_ns": r.get("ci95_ns"),
                                 "input_state": r.get("input_state"), "copies": r.get("copies"),
                                 "ratio": r["median_ns"] / ref_ns if ok else None})
    print(f"\n{'scheme':6} {'N':>6} {'op':16} {'reference us':>13} {'spread':>7} {'fhemark us':>11} {'state':5} {'ratio':>6}")
    for r in rows:
        spread = "-" if r["reference_spread"] is None else f"{100 * r['reference_spread']:.1f}%"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        fm = _us(r["fhemark_median_ns"]) if r["status"] == "ok" else r["status"]
        print(f"{r['scheme']:6} {r['N']:>6} {r['op']:16} {_us(r['reference_ns']):>13} {spread:>7} {fm:>11} "
              f"{r['input_state'] or '-':5} {ratio:>6}")
    print(f"\nfhemark ({args.inputs} inputs) / hot seal-python loop: " + fidelity_run.within([r["ratio"] for r in rows])
          + f"; reference spread median {100 * statistics.median([r['reference_spread'] for r in rows if r['ratio']]):.1f}%"
          f"; total wall time {time.monotonic() - started:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "fidelity_seal", "command": " ".join(
        [".venv/bin/python", "benchmarks/fidelity_seal.py"] + sys.argv[1:]), "policy": policy, "environment": env,
        "rows": rows}, indent=1, default=str) + "\n")
    print(f"written: {args.out}")
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        raise Failure(first_of([f"fhemark seal {r['scheme']} N={r['N']} {r['op']}: {r['status']}: {r['error']}"
                                for r in failed]))
    return 0


if __name__ == "__main__":
    exit_with(main)
