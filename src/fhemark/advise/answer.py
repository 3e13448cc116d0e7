"""What a choice says, once `choose` has searched and measured: each candidate's figures (evaluation
key and client bytes, levels needed and available), the JSON answer, and the snippets in each
library's own API with the worst input found beside them."""

from __future__ import annotations

from pathlib import Path

from ..drivers.limits import bootstrapping
from ..errors import UserError
from ..model.requirements import Requirements
from ..model.workload import Workload
from ..store.record import Record
from .candidates import set_text
from .choose import Answer, Candidate

EVAL_KEYS = ("relin_keys", "galois_keys", "server_key", "bootstrapping_key", "keyswitching_key")


def eval_key_bytes(rec: Record) -> int | None:
    sizes = rec.sizes_bytes
    found = [sizes[k] for k in EVAL_KEYS if isinstance(sizes.get(k), int)]
    return sum(found) if found else None


def client_bytes(w: Workload, rec: Record) -> int | None:
    """Bytes a client sends (its encrypted inputs, fresh) and receives (the outputs) per evaluation."""
    sizes = rec.sizes_bytes
    prog = w.program(rec.scheme)
    sent = sum(1 for s in prog.steps if s["op"] in ("encrypt_pk", "encrypt_sk"))
    fresh = sizes.get("ciphertext")
    out = [v for k, v in sizes.items() if k.startswith("output:")]
    if fresh is None or not out:
        return None
    return sent * fresh + len(prog.outputs) * out[0]


def levels_available(c: Candidate, req: Requirements) -> int | None:
    """CKKS: the chain's levels below the top; BFV/BGV: the multiplications in sequence the set was
    proven to run (by running this program, with noise budget to spare); integers: unbounded
    (every operation bootstraps), reported as the need."""
    if not c.spec:
        return None
    if c.scheme == "ckks" and c.spec.get("preset"):  # between two bootstraps
        b = bootstrapping(c.library, "ckks", int(c.spec.get("sparse_slots") or 1), c.spec["preset"])
        return b.levels if b else None
    if c.scheme == "ckks":
        return len(c.spec["q_bits"]) - 1
    return req.depth if c.verified else None


def to_json(ans: Answer) -> dict:
    def cand(c: Candidate) -> dict:
        r = c.record
        req = ans.requirements[c.scheme]
        spec = c.spec or {}
        return {"library": c.library, "scheme": c.scheme, "origin": c.origin,
                "params": {k: spec.get(k) for k in ("N", "q_bits", "p_bits", "t_bits", "scale_bits", "preset", "bits",
                                                        "key_switching", "digit_size")
                           if spec.get(k) is not None} | ({"t": ((r.effective_params if r else None) or {}).get("t")}
                                                          if c.scheme in ("bfv", "bgv") else {}),
                "security_bits": r.security_bits if r else None, "security": r.security if r else None,
                "verified": c.verified, "levels_needed": c.levels_needed if c.levels_needed is not None else req.depth,
                "levels_available": levels_available(c, req),
                "op": (c.workload or ans.workload).name, "routine": c.routine,
                "median_ns": r.median_ns if r else None, "ci95_ns": r.ci95_ns if r else None,
                "peak_rss_bytes": r.peak_rss_bytes if r else None,
                "predicted_peak_bytes": c.predicted.bytes if c.predicted else None,  # before it was built (memory.py)
                "eval_key_bytes": eval_key_bytes(r) if r else None,
                "client_bytes": client_bytes(ans.workload, r) if r else None,
                "margin": c.margin(ans.precision), "p_fail_log2": r.p_fail_log2 if r else None,
                "within_best": c.within_best, "ratio_to_best": c.vs_best.ratio if c.vs_best else None,
                "ratio_to_best_ci95": c.vs_best.ci95 if c.vs_best else None, "snippet": c.snippet,
                "run_id": r.run_id if r else None,
                "threads": r.threads if r else None, "threads_honoured": r.threads_honoured if r else None,
                "parallelism": r.parallelism if r else None,
                **({"batch": r.batch, "throughput_per_s": r.throughput_per_s, "throughput_ci95": r.throughput_ci95}
                   if r and r.batch is not None else {}),  # a throughput measurement's
                "job_key": r.job_key if r else None, "status": r.status if r else None, "rejected_smaller": c.tried,
                "budgets_reduced": c.reduced, **({"bootstrapping": _booting(c)} if c.bootstraps else {}),
                "worst_input": ({**c.worst.to_json(), "file": c.worst_file, "inputs": None, "scalars": None}
                                if c.worst else None)}
    return {"workload": ans.workload.name, "source": ans.workload.source,
            "requirements": {s: {**r.to_json(), "precision_bits": ans.precision if s == "ckks" else None}
                             for s, r in ans.requirements.items()},
            "security": {"min_bits": ans.security, "table": ans.table}, "threads": ans.threads,
            "objective": ans.objective,
            "cost_model": "measured: each candidate ran the whole program; " + (
                "ranked by throughput at saturation (throughput_per_s; k evaluations at once)"
                if ans.objective == "throughput" else "latency is the program's median"),
            "candidates": [cand(c) for c in ans.ranked()],
            "excluded": [{**cand(c), "reason": _why_excluded(c)} for c in ans.excluded()],
            "shared": [cand(c) for c in ans.shared if c.record], "impossible": ans.impossible,
            "budgets_reduced": ans.reduced,
            "run_id": ans.run_id}


def _booting(c: Candidate) -> dict:
    """A bootstrapping set's own figures: bootstraps an evaluation, key generation (the setup's time, every
    key of the set), one bootstrap measured alone at the same set in the same run."""
    r, b = c.record, c.boot_record
    return {"bootstraps": c.bootstraps, "levels_between": levels_available(c, None),
            "key_generation_s": r.setup_s if r else None, "eval_key_bytes": eval_key_bytes(r) if r else None,
            "bootstrap_ns": b.median_ns if b else None, "bootstrap_ci95_ns": b.ci95_ns if b else None,
            "bootstrap_precision_bits": b.precision_bits if b else None}


def _why_excluded(c: Candidate) -> str:
    if not c.verified and c.pinned:  # a set given (--at): nothing else was tried
        return "the set given fails a check: " + "; ".join(c.tried)
    if not c.verified:
        return "no set passed: " + "; ".join(c.tried[-2:]) if c.tried else "not searched"
    r = c.record
    if r is None:
        return "not measured"
    return f"{r.status}: {r.error or ''}".strip()


def _write_worst(ans: Answer, c: Candidate, where: Path) -> Path:
    """The worst input found at a candidate's set, beside its snippet: the input itself (each input up
    to its last nonzero slot), its error in absolute and relative bits, and the search's budget."""
    where.mkdir(parents=True, exist_ok=True)
    about = {"workload": ans.workload.name, "source": ans.workload.source, "library": c.library, "scheme": c.scheme,
             "params": c.spec, "required_precision_bits": ans.precision if c.scheme == "ckks" else None,
             "uniform_precision_bits": c.record.precision_bits if c.record else None}
    return c.worst.write(where / f"{c.library}_{c.scheme}.worst.json", about)


def write_snippets(ans: Answer, folder: Path) -> None:
    """A ready-to-use context for every ranked candidate, in its library's own API (snippets.py)."""
    from . import snippets
    ranked = ans.ranked()
    if not ranked:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {folder}: cannot create the folder ({exc.strerror or exc})", "choose another --out")
    for c in ranked:
        r = c.record
        params = {**c.spec, **({"t": r.effective_params["t"]} if (r.effective_params or {}).get("t") else {})}
        header = (f"fhemark choose {ans.workload.source or ans.workload.name}: {c.label}, {set_text(c.spec)}; "
                  f"verified by running the program in fresh-key processes, every output checked; "
                  f"run {ans.run_id}, median {r.median_ns / 1e6:.3f} ms"
                  + (f"; {c.worst.describe()}" if c.worst else ""))
        try:
            where = folder if c.origin == "search" else folder / c.origin  # one file name per library and scheme
            c.snippet = str(snippets.write(c.library, c.scheme, params, where, header=header))
        except (KeyError, ValueError, NotImplementedError, UserError):  # a library without a snippet form here (Concrete)
            c.snippet = None
        if c.worst:
            c.worst_file = str(_write_worst(ans, c, where))
