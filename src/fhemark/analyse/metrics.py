"""What an application workload costs besides its latency, as the HomomorphicEncryption.org
benchmarking suite counts it: throughput (instances a run serves, per second, and the time per
instance) and communication (the bytes a client sends: its encrypted inputs and the evaluation
keys the server needs; and receives: the result ciphertexts)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model.apps.workloads import baby_giant
from ..store.record import Record
from .cost import program

_RELIN = ("mul_relin", "square_relin", "relinearize", "inner_product", "poly_eval")


def instances(rec: Record) -> int:
    """Independent instances one run serves (packed side by side in the slots)."""
    w = rec.workload or {}
    if w.get("block") and rec.slots:
        return max(1, rec.slots // w["block"])
    return int(w.get("instances", 1))


def per_instance_ns(rec: Record) -> float | None:
    return rec.median_ns / instances(rec) if rec.median_ns else None


def throughput(rec: Record) -> float | None:
    """Instances per second at the median latency, one run at a time on the threads recorded."""
    return instances(rec) / (rec.median_ns / 1e9) if rec.median_ns else None


@dataclass(frozen=True)
class Traffic:
    up: int                 # bytes the client sends
    down: int               # bytes it receives
    rotation_keys: int      # Galois keys counted in `up`


def _rotation_keys(prog) -> int:
    """Distinct rotation keys the program's steps use: a portable rotation one per step; a routine
    the keys of the portable program it replaces (inner_sum: log2 n; a linear transformation: its
    baby and giant steps). The library's routine may ask for others; the count stays comparable."""
    steps: set[int] = set()
    extra = 0
    for s in prog.steps:
        a = s.get("attrs") or {}
        if s["op"] in ("rotate", "rotate_rows") and isinstance(a.get("steps"), int | list):
            steps.update(a["steps"] if isinstance(a["steps"], list) else [a["steps"]])  # a list: keyed steps
        elif s["op"] in ("inner_sum", "inner_product"):
            steps.update(1 << i for i in range(int(math.log2(a["n"]))))
        elif s["op"] == "linear_transform":
            b, g = baby_giant(max(a["diagonals"]) + 1)
            extra = max(extra, b - 1 + g - 1)
    return max(len(steps), extra)


def communication(rec: Record) -> Traffic | None:
    """From the setup's serialized sizes (fresh ciphertext, relinearization key, Galois keys) and
    the result's: None where the library did not report them."""
    sizes = rec.sizes_bytes
    prog = program(rec)
    ct = sizes.get("ciphertext")
    out = next((v for k, v in sizes.items() if k.startswith("output:")), None)
    if prog is None or not ct or not out:
        return None
    uploads = sum(1 for s in prog.steps if s["op"] in ("encrypt_pk", "encrypt_sk"))
    keys = 0
    if any(s["op"] in _RELIN for s in prog.steps):
        keys += sizes.get("relin_keys") or 0
    n_rot = _rotation_keys(prog)
    if n_rot and sizes.get("galois_key_count"):
        keys += n_rot * sizes["galois_keys"] // sizes["galois_key_count"]
    return Traffic(uploads * ct + keys, len(prog.outputs) * out, n_rot)
