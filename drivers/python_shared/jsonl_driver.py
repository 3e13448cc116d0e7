"""What every Python driver of fhemark shares, protocol v2 (protocol/PROTOCOL.md): the vector
encoding, the timed region, the rules a program's timed regions must follow, and the request
loop. A driver brings its Setup, its run handler and its capabilities; this module knows no
library. Drivers import it from here (sys.path), each in its own virtual environment."""

from __future__ import annotations

import base64
import gc
import json
import sys
import time
import traceback
from typing import Callable

import numpy as np

PROTOCOL = 2
_DT = {"i64": "<i8", "f64": "<f8", "u64": "<u8"}


class Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def vec_in(v: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(v["b64"]), dtype=_DT[v["dtype"]])


def vec_out(a: np.ndarray) -> dict:
    kind = "f64" if a.dtype.kind == "f" else "i64"
    return {"dtype": kind, "b64": base64.b64encode(np.ascontiguousarray(a, dtype=_DT[kind]).tobytes()).decode()}


def resolve(attrs: dict, scalars: dict) -> dict:
    """Attrs with every `$name` string (an attr, or an item of a list attr) read from the sample's scalars."""
    def one(v):
        if isinstance(v, list):
            return [one(x) for x in v]
        if isinstance(v, str) and v.startswith("$"):
            if v[1:] not in scalars:
                raise Failure("internal", f"scalar {v!r} missing from the sample")
            return scalars[v[1:]]
        return v
    return {k: one(v) for k, v in attrs.items()}


def time_region(calls: list) -> tuple[list, int, int]:
    """One timed region: the prepared library calls between two reads of the monotonic clock,
    with Python's cyclic garbage collector held off (as timeit does): the driver's own untimed
    objects must not be collected inside the region. The results are returned, so freeing them
    is not timed. Also the process's CPU time (user + system, every thread: process_time_ns) over
    the same calls (PROTOCOL.md, cpu_ns), read outside the wall-clock pair (cpu, wall ... wall, cpu)
    so the wall time holds none of the CPU reads' cost (two system calls, ~0.45 us together)."""
    gc_on = gc.isenabled()
    gc.disable()
    try:
        c0 = _cpu()
        t0 = _wall()
        outs = [c() for c in calls]
        t1 = _wall()
        c1 = _cpu()
    finally:
        if gc_on:
            gc.enable()
    return outs, t1 - t0, c1 - c0


# Bound once: no attribute lookup on `time` inside a region.
_wall = time.perf_counter_ns
_cpu = time.process_time_ns


def overhead_ns() -> int:
    return int(np.median([time_region([])[1] for _ in range(101)]))


def regions_of(program: dict) -> dict[str, tuple[str, list[str]]]:
    """First step of each timed region -> (region name, its steps), after checking the rules of
    PROTOCOL.md: known, consecutive, independent steps, each in one region."""
    order = {st["out"]: i for i, st in enumerate(program["steps"])}
    seen: set[str] = set()
    out = {}
    for region in program["timed"]:
        name, names = region.get("name"), list(region.get("steps") or [])
        if not name or not names or name in {r for r, _ in out.values()}:
            raise Failure("internal", f"timed region {region!r}: needs a unique name and at least one step")
        for n in names:
            if n not in order:
                raise Failure("internal", f"timed region '{name}': '{n}' is no step's out")
            if n in seen:
                raise Failure("internal", f"timed region '{name}': step '{n}' is in two regions")
            seen.add(n)
        idx = [order[n] for n in names]
        if idx != list(range(idx[0], idx[0] + len(idx))):
            raise Failure("internal", f"timed region '{name}': its steps are not consecutive")
        inside = set(names)
        for i in idx:
            st = program["steps"][i]
            reads = set(st.get("args", [])) | {v for k, v in st.get("attrs", {}).items()
                                                if k in ("key", "from", "to", "like")}
            if reads & inside:
                raise Failure("internal", f"timed region '{name}': step '{st['out']}' reads {sorted(reads & inside)} "
                                          f"made in the same region")
        out[names[0]] = (name, names)
    return out


def run_samples(setups: dict, req: dict, run_sample: Callable, output: Callable[[dict, str], dict]) -> tuple:
    """A `run` request's samples, in order, on the setup it names: run_sample(setup, program,
    regions, sample) -> (values, ns, cpu_ns), the two dicts by region name (time_region's wall and
    CPU times); output(values, name) -> one output on the wire. Returns the setup, the program,
    the samples' results and the last sample's values (for sizes, levels, noise)."""
    s = setups.get(req["setup_id"])
    if s is None:
        raise Failure("internal", f"unknown setup_id '{req['setup_id']}'")
    program = req["program"]
    regions = regions_of(program)
    samples, vals = [], {}
    for sample in req["samples"]:
        vals, ns, cpu = run_sample(s, program, regions, sample)
        samples.append({"ns": ns, "cpu_ns": cpu, "outputs": {o: output(vals, o) for o in program.get("outputs", [])}})
    return s, program, samples, vals


def array_out(vals: dict, name: str) -> dict:
    return vec_out(np.asarray(vals[name]))


def serve(capabilities: Callable[[], dict], setup: Callable, handle_run: Callable[[dict, dict], dict]) -> None:
    """Answer requests on stdin, one JSON line each, until shutdown or end of input. `setup` is
    called with (scheme, params, rotations, rotations_pow2, allow_insecure) and must offer
    effective(params) and sizes()."""
    setups: dict = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            kind = req.get("type")
            if req.get("v") != PROTOCOL:
                raise Failure("internal", f"protocol version {req.get('v')} not supported (this driver speaks {PROTOCOL})")
            if kind == "capabilities":
                result = capabilities()
            elif kind == "setup":
                s = setup(req["scheme"], req["params"], req.get("rotations", []), req.get("rotations_pow2", False),
                          req.get("allow_insecure", False))
                setups[req["setup_id"]] = s
                result = {"effective": s.effective(req["params"]), "sizes_bytes": s.sizes()}
            elif kind == "run":
                result = handle_run(setups, req)
            elif kind == "shutdown":
                print(json.dumps({"v": PROTOCOL, "id": rid, "ok": True, "result": {}}), flush=True)
                return
            else:
                raise Failure("internal", f"unknown request type '{kind}'")
            reply = {"v": PROTOCOL, "id": rid, "ok": True, "result": result}
        except Failure as exc:
            reply = {"v": PROTOCOL, "id": rid, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
        except Exception as exc:  # never die on a bad request
            traceback.print_exc(file=sys.stderr)
            msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            reply = {"v": PROTOCOL, "id": rid, "ok": False, "error": {"kind": "internal", "message": msg}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
