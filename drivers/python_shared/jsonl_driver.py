"""What every Python driver of fhemark shares, protocol v2 (protocol/PROTOCOL.md): the vector
encoding, the timed region, the rules a program's timed regions must follow, the step walk and
the request loop. A driver brings its Setup, its step preparation and its capabilities; this
module knows no library. Drivers import it from here (sys.path), each in its own virtual
environment."""

from __future__ import annotations

import base64
import gc
import inspect
import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

import numpy as np

PROTOCOL = 2
_DT = {"i64": "<i8", "f64": "<f8", "u64": "<u8"}


class Failure(Exception):
    """`refusal`: the refusal's kind and numbers, as a search reads them (PROTOCOL.md "Refusals")."""

    def __init__(self, kind: str, message: str, refusal: dict | None = None):
        super().__init__(message)
        self.kind = kind
        self.refusal = refusal


def vec_in(v: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(v["b64"]), dtype=_DT[v["dtype"]])


def vec_out(a: np.ndarray) -> dict:
    kind = "f64" if a.dtype.kind == "f" else "u64" if a.dtype.kind == "u" else "i64"
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
    """The timing's own cost: the median of 101 empty regions."""
    return int(statistics.median(time_region([])[1] for _ in range(101)))


def binding_call_ns(call: Callable) -> int:
    """The floor every op pays for crossing a binding: the median of 1001 regions around one
    trivial call through it (a method of a bound object)."""
    return int(statistics.median(time_region([call])[1] for _ in range(1001)))


def regions_of(program: dict) -> dict[int, tuple[str, int]]:
    """Index of each timed region's first step -> (region name, index after its last step). The
    orchestrator checked the rules of PROTOCOL.md (known, consecutive, independent steps, each in
    one region) before it sent the program; a region that is no {name, steps} is refused."""
    where = {st["out"]: i for i, st in enumerate(program["steps"])}
    out = {}
    for region in program.get("timed") or []:
        if not isinstance(region, dict) or not region.get("steps") or any(n not in where for n in region["steps"]):
            raise Failure("internal", f"timed region {region!r}: a region is {{name, steps}} naming steps (protocol 2)")
        idx = [where[n] for n in region["steps"]]
        out[min(idx)] = (region["name"], max(idx) + 1)
    return out


def dead_after(program: dict, inputs: set[str]) -> dict[int, list[str]]:
    """Step index -> the values (step results and sample inputs) nothing reads after that step, to free
    there: a deep program makes hundreds of ciphertexts, and keeping each until the sample ends made its
    peak memory their sum (PROTOCOL.md "Values a sample frees"). What the request reads after the last
    step (outputs, noise, sizes, levels) is kept; a program that names a value per sample (a `$` arg)
    frees nothing."""
    steps = program["steps"]
    if any(a.startswith("$") for st in steps for a in st["args"]):
        return {}
    made = set(inputs) | {st["out"] for st in steps}
    last = {name: i for i, st in enumerate(steps) for name in (st["out"],)}
    for i, st in enumerate(steps):
        for name in (*st["args"], *_names_in(st.get("attrs") or {})):
            last[name] = i
    kept = {n for key in ("outputs", "noise", "sizes", "levels") for n in program.get(key) or []}
    dies: dict[int, list[str]] = {}
    for name, i in last.items():
        if name in made and name not in kept:
            dies.setdefault(i, []).append(name)
    return dies


def _names_in(attrs) -> list[str]:
    """The strings an attrs value holds (a `like`, a key's name): any may name a value."""
    if isinstance(attrs, str):
        return [attrs]
    if isinstance(attrs, dict):
        return [n for v in attrs.values() for n in _names_in(v)]
    if isinstance(attrs, list):
        return [n for v in attrs for n in _names_in(v)]
    return []


def run_steps(steps: list, regions: dict, prepare: Callable, vals: dict, arm: Callable | None = None,
              dies: dict[int, list[str]] | None = None) -> tuple:
    """One sample: the steps in program order, each value kept in vals under its step's out.
    prepare(step) -> (call, post, ...): the library call(s) to make, with every untimed part done,
    and post(result) -> the value kept (None: the result itself); more items are the driver's own.
    A step outside every region runs untimed (a `discard` one is freed at once); at a region every
    step is prepared first, then its calls are timed together (time_region). arm(region name or
    None, prepared) runs between the preparation and the clock and may return an undo, called
    right after the calls (TenSEAL's context flags); `dies` (dead_after) the values freed after each
    step. -> ({region: ns}, {region: cpu_ns})."""
    ns: dict[str, int] = {}
    cpu: dict[str, int] = {}
    i = 0
    while i < len(steps):
        name, end = regions.get(i, (None, i + 1))
        prepared = [prepare(st) for st in steps[i:end]]
        undo = arm(name, prepared) if arm else None
        if name is None:
            outs = [prepared[0][0]()]
        else:
            outs, ns[name], cpu[name] = time_region([p[0] for p in prepared])
        if undo:
            undo()
        for st, p, out in zip(steps[i:end], prepared, outs):
            if not st.get("discard"):
                vals[st["out"]] = p[1](out) if p[1] else out
        del outs, prepared, out  # a discarded result is freed here, before the next region
        for j in range(i, end):
            for name in (dies or {}).get(j, ()):
                vals.pop(name, None)
        i = end
    return ns, cpu


def run_samples(program: dict, samples: list, prepare: Callable, output: Callable[[dict, str], dict],
                std: dict | None = None, arm: Callable | None = None, pool: dict | None = None,
                kept: dict | None = None) -> tuple[dict, dict]:
    """A `run` request's samples, in order, each on its own decoded inputs plus `std` (the setup's
    standard values: keys) and the request's pool (PROTOCOL.md "Pool": its steps run once, first,
    untimed; with an id they are kept in `kept`, the setup's kept_pools, and a pool of the id alone
    reads them): prepare(step, attrs, vals) for run_steps, attrs and `$` args with the sample's
    scalars read in; output(vals, name) -> one output on the wire. -> (the result so far: samples
    and overhead_ns; the last sample's values, for sizes, levels, noise)."""
    regions = regions_of(program)
    shared = dict(std or {})
    if pool:
        shared.update(_pool_values(pool, prepare, shared, {} if kept is None else kept))
    results, vals = [], {}
    dies = dead_after(program, {name for sample in samples for name in sample["inputs"]})
    for sample in samples:
        scalars = sample.get("scalars", {})
        vals = {}  # the last sample's values freed before this one's are made
        vals = {name: vec_in(v) for name, v in sample["inputs"].items()}
        vals.update(shared)
        ns, cpu = run_steps(program["steps"], regions,
                            lambda st: prepare(_args_of(st, scalars), resolve(st.get("attrs", {}), scalars), vals),
                            vals, arm, dies)
        for o in program.get("outputs", []):
            if o not in vals:
                raise Failure("internal", f"output {o!r} was not produced")
        results.append({"ns": ns, "cpu_ns": cpu, "outputs": {o: output(vals, o) for o in program.get("outputs", [])}})
    return {"samples": results, "overhead_ns": overhead_ns()}, vals


def _pool_values(pool: dict, prepare: Callable, std: dict, kept: dict) -> dict:
    """The values a request's pool makes, or the ones kept under its id."""
    if not pool.get("steps"):
        if pool.get("id") not in kept:
            raise Failure("internal", f"no kept pool {pool.get('id')!r} in this setup: send it with its inputs and steps")
        return kept[pool["id"]]
    made = {name: vec_in(v) for name, v in pool["inputs"].items()} | std
    run_steps(pool["steps"], {}, lambda st: prepare(st, resolve(st.get("attrs", {}), {}), made), made)
    values = {st["out"]: made[st["out"]] for st in pool["steps"]}
    if pool.get("id") is not None:
        kept[pool["id"]] = values
    return values


def _args_of(step: dict, scalars: dict) -> dict:
    """The step with every `$name` arg read from the sample's scalars (a value name picked per sample)."""
    if not any(a.startswith("$") for a in step["args"]):
        return step
    return {**step, "args": resolve({"args": step["args"]}, scalars)["args"]}


def array_out(vals: dict, name: str) -> dict:
    return vec_out(np.asarray(vals[name]))


class Run:
    """One `run` request's program on a setup, as a driver supplies it to the frame (`handle_run`); a
    context around the samples (a driver may translate its library's errors on the way out, or restore
    what the run changed). A driver supplies `prepare(step, attrs, vals)`, the step's call in
    run_steps' shape, and where its library differs from the defaults: `std` (the setup's values a
    program names: keys), `arm` (run_steps' region arming), `output`, the facts of the last sample's
    values the program asks for (`size`, `level`: None where there is none; `noise`: the result's noise
    fields) and `notes` (what the run did that the record should say)."""

    std: dict = {}
    arm: Callable | None = None

    def __init__(self, setup):
        self.s = setup
        self.notes: list[str] = []

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        return None

    def prepare(self, step: dict, attrs: dict, vals: dict):
        raise NotImplementedError

    def output(self, vals: dict, name: str) -> dict:
        return array_out(vals, name)

    def size(self, name: str, value) -> int | None:
        return None

    def level(self, name: str, value) -> int | None:
        return None

    def noise(self, names: list[str], vals: dict) -> dict:
        return {}


def handle_run(setup, req: dict) -> dict:
    """The `run` frame every Python driver shares, with the setup's Run for the program (`setup.run_of`,
    which may refuse it before anything runs)."""
    return run_request(setup.run_of(req["program"]), req, setup.kept_pools)


def run_request(run: Run, req: dict, kept: dict) -> dict:
    """A `run` request's samples through `run` (run_samples), then the facts of the last sample's values
    the program names under `sizes`, `levels` and `noise`, and the run's notes."""
    program = req["program"]
    with run:
        result, vals = run_samples(program, req["samples"], run.prepare, run.output, run.std, run.arm,
                                   req.get("pool"), kept)
    sizes = {n: run.size(n, vals.get(n)) for n in program.get("sizes", [])}
    levels = {n: run.level(n, vals.get(n)) for n in program.get("levels", [])}
    result.update(sizes_bytes={n: b for n, b in sizes.items() if b is not None},
                  levels={n: lv for n, lv in levels.items() if lv is not None}, **run.noise(program.get("noise", []), vals))
    if run.notes:
        result["notes"] = run.notes
    return result


def static_capabilities(folder: str | Path, ops: dict[str, list[str]]) -> dict:
    """The driver's capabilities.json (its static facts, PROTOCOL.md "capabilities") with each scheme's
    ops from the driver's own op table. Read at start-up: a file whose schemes are not the table's, or
    that names a deviation for an op the table lacks, stops the driver with the reason."""
    path = Path(folder) / "capabilities.json"
    caps = json.loads(path.read_text())
    if set(caps["schemes"]) != set(ops):
        sys.exit(f"{path}: schemes {sorted(caps['schemes'])}, but the driver's op table has {sorted(ops)}")
    for scheme, facts in caps["schemes"].items():
        if set(facts.get("deviations", {})) - set(ops[scheme]):
            sys.exit(f"{path}: {scheme} deviations for ops the driver does not offer: "
                     f"{sorted(set(facts['deviations']) - set(ops[scheme]))}")
    return {"protocol": PROTOCOL, **caps, "schemes": {s: {"ops": list(ops[s]), **caps["schemes"][s]} for s in ops}}


def merged(static: dict, facts: dict) -> dict:
    """A capabilities reply: the static facts with the ones the driver computes, objects merged key by key."""
    out = dict(static)
    for k, v in facts.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def serve(capabilities: Callable[[], dict], setup: Callable, run: Callable[[object, dict], dict] = handle_run,
          unexpected: Callable[[Exception], str] | None = None,
          optional: dict[str, Callable[[dict], dict]] | None = None) -> None:
    """Answer requests on stdin, one JSON line each, until shutdown or end of input. `setup` is
    called with (scheme, params, rotations, allow_insecure), and with the request's `ops` where it
    has an `ops` parameter, and must offer effective(params), sizes() and run_of(program) (a Run;
    it may hold setup_notes); run(setup, request): the frame (`handle_run`) unless a driver runs a
    scheme another way.
    unexpected(exc) words an exception that is no Failure (default: its type and message).
    optional: the optional requests the driver answers (PROTOCOL.md: auto_params), type ->
    handler(request) -> result; any other type is `unsupported`."""
    setups: dict = {}
    takes_ops = "ops" in inspect.signature(setup).parameters  # a driver that builds per op takes them
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = None
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise Failure("internal", "a request is one JSON object")
            rid = req.get("id")
            kind = req.get("type")
            if req.get("v") != PROTOCOL:
                raise Failure("internal", f"protocol version {req.get('v')} not supported (this driver speaks {PROTOCOL})")
            if kind == "capabilities":
                result = capabilities()
            elif kind == "setup":
                told = {"ops": req["ops"]} if "ops" in req and takes_ops else {}
                s = setup(req["scheme"], req["params"], req.get("rotations", []), req.get("allow_insecure", False), **told)
                s.kept_pools = {}  # run_samples' `kept`: the pools a request asked to keep with this setup
                setups[req["setup_id"]] = s
                result = {"effective": s.effective(req["params"]), "sizes_bytes": s.sizes()}
                if getattr(s, "setup_notes", None):
                    result["notes"] = s.setup_notes
            elif kind == "run":
                if req["setup_id"] not in setups:
                    raise Failure("internal", f"unknown setup_id '{req['setup_id']}'")
                result = run(setups[req["setup_id"]], req)
            elif kind in (optional or {}):
                result = optional[kind](req)
            elif kind == "shutdown":
                print(json.dumps({"v": PROTOCOL, "id": rid, "ok": True, "result": {}}), flush=True)
                return
            else:
                raise Failure("unsupported", f"unknown request type '{kind}'")  # as the Go and Rust drivers say
            reply = {"v": PROTOCOL, "id": rid, "ok": True, "result": result}
        except Failure as exc:
            reply = {"v": PROTOCOL, "id": rid, "ok": False, "error": {"kind": exc.kind, "message": _line(exc),
                                                                      **({"refusal": exc.refusal} if exc.refusal else {})}}
        except Exception as exc:  # never die on a bad request
            traceback.print_exc(file=sys.stderr)
            msg = unexpected(exc) if unexpected else f"{type(exc).__name__}: {exc}"
            reply = {"v": PROTOCOL, "id": rid, "ok": False, "error": {"kind": "internal", "message": _line(msg)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def _line(msg) -> str:
    """PROTOCOL.md: an error's message is one line (libraries' own messages may hold several)."""
    return str(msg).strip().replace("\n", " ")
