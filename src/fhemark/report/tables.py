"""Lay records out as the published studies did: one table per operation,
rows = library/scheme, columns = parameter set; Study 1's stage table."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..analyse.cost import ROUTINES, predict
from ..analyse.metrics import communication, instances, per_instance_ns, throughput
from ..analyse.select import contended, latest
from ..model.catalog import CATALOG
from ..analyse import ratios
from ..stats import MIN_CI_SAMPLES
from ..store.record import Record
from .formats import ci_text, fmt_bytes, fmt_time, op_order

DEVIATION_MARK = "‡"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    caption: str = ""
    footnotes: list[str] = field(default_factory=list)  # "‡1 openfhe decrypt: also decodes ..."


class Deviations:
    """Numbered footnotes for cells whose library times different work than the protocol's
    canonical boundary (PROTOCOL.md): the same number for the same library, op and text."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def mark(self, rec: Record) -> str:
        return self.mark_work(rec.library, rec.deviations)

    def mark_work(self, library: str, deviations: dict[str, str]) -> str:
        """The marks of a library's work that differs (op -> how), numbered as they are first met."""
        found = [self.numbers.setdefault(f"{library} {op}: {text}", len(self.numbers) + 1)
                 for op, text in sorted(deviations.items())]
        return f" {DEVIATION_MARK}{','.join(map(str, found))}" if found else ""

    def lines(self) -> list[str]:
        return [f"{DEVIATION_MARK}{n} {text}" for text, n in self.numbers.items()]


def cell(rec: Record | None, devs: Deviations | None = None) -> str:
    if rec is None:
        return ""
    if rec.status != "ok":
        if rec.status == "unsupported":
            return "unsupported"
        if rec.status in ("invalid_params", "insecure_params"):  # the library refused the set
            return f"refused ({rec.status})"
        return f"FAILED ({rec.status})"
    mark = " †" if rec.insecure else ""
    mark += " ≠" if rec.params_match is False else ""
    mark += " ~" if contended(rec) else ""
    mark += devs.mark(rec) if devs is not None else ""
    if rec.depth is not None:
        return f"depth {rec.depth}{mark}"
    return f"{fmt_time(rec.median_ns)} [{ci_text(rec)}]{mark}"


def security_disagreements(recs: list[Record]) -> str:
    """"security of n8192: 128 (hestd2018), 125 (guidelines2024) bits" for every parameter set whose
    security estimates differ between the two tables: a label must not say less than the data."""
    seen: dict[str, str] = {}
    for r in recs:
        sec = r.security
        if len(sec) > 1 and len({v["bits"] for v in sec.values()}) > 1:
            # TFHE-family presets share names ("default") across libraries but not their sets
            name = params_name(r) + (f" ({r.library})" if "library" in sec else "")
            seen.setdefault(name, ", ".join(f"{v['bits']} ({t})" for t, v in sorted(sec.items(), reverse=True)))
    return "; ".join(f"security of {k}: {v} bits" for k, v in sorted(seen.items()))


def security_label(rec: Record) -> str:
    """"128 (hestd2018; est. 128.2)": the deciding table's figure and the lattice estimator's beside it;
    "128 (hestd2018; est. 131.8, by the estimate)" where the estimate decided (TFHE-family sets)."""
    entry = rec.security.get(rec.security_table or "", {})
    est = entry.get("estimated_bits")
    extra = "" if est is None else f"; est. {est:g}" + (", by the estimate" if entry.get("judged_by") == "estimate" else "")
    return f"{rec.security_bits} ({rec.security_table}{extra})"


def params_name(rec: Record) -> str:
    p = rec.params
    return p.get("name") or f"N={p['N']}"


def _col_sort(label: str, recs: list[Record]) -> tuple:
    for r in recs:
        if params_name(r) == label:
            return (r.params["N"], r.params["log_qp"], label)
    return (0, 0, label)


def _swept(recs: list[Record]) -> bool:
    """True when the records vary the vector length for one setup (Study 3's layout)."""
    seen: dict[tuple, set] = {}
    for r in recs:
        seen.setdefault((r.library, r.scheme, params_name(r), r.op), set()).add(r.vector_length)
    return any(len(v) > 1 for v in seen.values())


def op_tables(recs: list[Record]) -> list[Table]:
    """One table per operation. Rows = library/scheme, columns = parameter set
    (Study 2); when vector lengths are swept, rows = library/scheme/parameter
    set and columns = vector length (Study 3)."""
    recs = [r for r in latest(recs) if not r.op.startswith("pipeline_") and r.depth is None
            and not r.workload]
    by_slots = _swept(recs)
    # Thread counts swept (threads: [1, 2]): each count a row of its own, never one cell for several.
    per_thread = len({r.threads or 1 for r in recs}) > 1
    if by_slots:
        col_of, row_of = (lambda r: str(r.slots)), (lambda r: (r.library, r.scheme, r.params["N"], params_name(r)))
        cols = sorted({col_of(r) for r in recs}, key=int)
        head = "library / scheme / params"
    else:
        col_of, row_of = params_name, (lambda r: (r.library, r.scheme, r.vector_length or 0))
        cols = sorted({col_of(r) for r in recs}, key=lambda c: _col_sort(c, recs))
        head = "library / scheme"
    tables = []
    for op in sorted({r.op for r in recs}, key=op_order):
        mine = [r for r in recs if r.op == op]
        rows, without, devs = [], set(), Deviations()
        for key in sorted({(*row_of(r), r.threads or 1) for r in mine}):
            by_col = {col_of(r): r for r in mine if (*row_of(r), r.threads or 1) == key}
            if all(r.status == "unsupported" for r in by_col.values()):
                without.add(key[0])
                continue
            label = (f"{key[0]} / {key[1].upper()} / {key[3]}" if by_slots else
                     f"{key[0]} / {key[1].upper()}" + (f" / {key[2]} values" if key[2] else "")) + \
                (f" / {key[-1]} thread{'s' if key[-1] > 1 else ''}" if per_thread else "")
            rows.append([label] + [cell(by_col.get(c), devs) for c in cols])
        title = CATALOG[op].title if op in CATALOG else op
        tables.append(Table(f"{title} (`{op}`)", [head] + cols, rows,
                            "median [95% CI of the median]; † below the requested security; ≠ parameters differ; "
                            "~ measured while other processes or the hypervisor took CPU; "
                            f"{DEVIATION_MARK} the library times different work (footnote)"
                            + ("; columns: vector length" if by_slots else "")
                            + (f"; not offered by {', '.join(sorted(without))}" if without else "")
                            + (f"; {disagree}" if (disagree := security_disagreements(mine)) else ""), devs.lines()))
    return tables


def ratio_table(recs: list[Record]) -> Table | None:
    """Each library against the fastest on the same scheme, parameters and op, in one run: the
    ratio of floors (analyse/ratios.py), with its interval for another run's ratio."""
    recs = [r for r in latest(recs) if r.status == "ok" and r.samples_ns and r.depth is None]
    by_case: dict[tuple, dict[str, Record]] = {}
    for r in recs:
        by_case.setdefault((r.run_id, r.scheme, params_name(r), r.vector_length, r.op), {})[r.library] = r
    libs = sorted({lib for per in by_case.values() if len(per) > 1 for lib in per})
    if not libs:
        return None
    rows, devs = [], Deviations()
    for (_, scheme, params, length, op), per in sorted(by_case.items(), key=lambda kv: kv[0][1:3] + (kv[0][4],)):
        if len(per) < 2:
            continue
        fastest = ratios.fastest(list(per.values()))
        cells = []
        for lib in libs:
            r = per.get(lib)
            if r is None:
                cells.append("")
                continue
            if r is fastest:
                cells.append(f"1 (fastest){devs.mark(r)}")
                continue
            fr = ratios.versus(r, fastest)
            cells.append(f"{fr.ratio:.2f}x{ratios.shown(fr)}{devs.mark(r)}")
        rows.append([f"{scheme.upper()} {params}" + (f" / {length} values" if length else ""), op] + cells)
    if not rows:
        return None
    return Table("Ratios to the fastest library (floors)", ["scheme / params", "op"] + libs, rows,
                 f"{ratios.METHOD} (needs {MIN_CI_SAMPLES} samples a side); the libraries took turns, request by "
                 f"request, on each op; {DEVIATION_MARK} different work (footnote)", devs.lines())


def layer_table(recs: list[Record]) -> Table | None:
    """What a convenience layer costs over the library it wraps (TenSEAL over SEAL), per operation,
    in one run: the ratio of floors with its interval, as in the ratio table. A layer's
    own routine (a `_native` workload) is set against the wrapped library's portable program of the
    same workload where the wrapped library has no routine for it: what the user of each would run."""
    recs = [r for r in latest(recs) if r.status == "ok" and r.samples_ns and r.depth is None]
    by_case = {(r.run_id, r.library, r.scheme, params_name(r), r.vector_length, r.op): r for r in recs}
    rows, devs = [], Deviations()
    for (run, lib, scheme, params, length, op), r in sorted(by_case.items(), key=lambda kv: kv[0][1:]):
        if not r.wraps:
            continue
        base, label = by_case.get((run, r.wraps, scheme, params, length, op)), op
        if base is None and op.endswith("_native"):
            portable = op[: -len("_native")]
            base, label = by_case.get((run, r.wraps, scheme, params, length, portable)), f"{op} / {portable}"
        if base is None:
            continue
        fr = ratios.versus(r, base)
        rows.append([f"{lib} over {r.wraps}", f"{scheme.upper()} {params}", label, cell(r, devs), cell(base, devs),
                     f"{fr.ratio:.3g}x{ratios.shown(fr)}"])
    if not rows:
        return None
    return Table("What a layer costs over the library it wraps (one run)",
                 ["layer", "scheme / params", "op", "layer's time", "wrapped library's time", "ratio [95% CI]"], rows,
                 f"layer / wrapped library at the same parameters, same run: {ratios.METHOD}; "
                 f"{DEVIATION_MARK} different work (footnote)", devs.lines())


def depth_table(recs: list[Record]) -> Table | None:
    """Study 1's depth: sequential multiplications that still decrypt correctly."""
    recs = [r for r in latest(recs) if r.depth is not None or r.op.startswith("depth_")]
    if not recs:
        return None
    rows = []
    for r in sorted(recs, key=lambda r: (r.library, r.scheme, r.params["N"])):
        if r.status != "ok":
            rows.append([f"{r.library} / {r.scheme.upper()}", params_name(r), f"FAILED ({r.status})", "-", "-"])
            continue
        noise = (", ".join(f"{x:g}" for x in r.noise_by_depth) or
                 ", ".join(f"{x:.1f} prec" for x in r.precision_by_depth) or "-")
        rows.append([f"{r.library} / {r.scheme.upper()}", params_name(r), str(r.depth), noise,
                     r.depth_limit or "not reached"])
    return Table("Multiplicative depth (Study 1)", ["library / scheme", "params", "depth",
                 "noise budget (CKKS: precision) bits after each",
                 "what stopped it"], rows, "x * y^k with relinearization (CKKS: rescale) until the result is wrong")


def workload_table(recs: list[Record]) -> Table | None:
    """Study 4: each workload per library and method, with the study's cost model
    next to the measured gate counts and depths, and the amortized time per input bit."""
    recs = [r for r in latest(recs) if r.workload and not _app(r)]
    if not recs:
        return None
    rows, devs = [], Deviations()
    for r in sorted(recs, key=lambda r: (r.op.split("_")[0], r.workload.get("bits", 0),
                                        r.workload.get("numbers", 2), r.library, r.scheme)):
        w = r.workload
        c = w.get("circuit") or {}
        model = w.get("cost_model") or {}
        model_txt = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in model.items() if k != "note") or "-"
        nbits = w.get("bits", 0) * w.get("numbers", 2)
        rows.append([r.op, f"{r.library} / {r.scheme}", w.get("method", "-"),
                     str(c.get("bootstrapped_gates", w.get("additions", "-"))),
                     str(c.get("multiplicative", "-")), str(c.get("bootstrapped", "-")), model_txt, cell(r, devs),
                     "-" if r.noise_budget_bits is None else f"{r.noise_budget_bits:g}",
                     fmt_time(r.median_ns / nbits) if r.status == "ok" and r.median_ns and nbits else "-"])
    return Table("Study 4 workloads: cost model and measured", ["workload", "library / scheme", "method",
                 "gates (bootstrapped) / additions", "multiplicative depth", "bootstrapped depth",
                 "study's cost model", "time", "noise budget left (bits)", "time per input bit"], rows,
                 "depths are measured on the netlist that ran; word-wise methods add whole integers", devs.lines())


def _app(rec: Record) -> bool:
    return "variant" in (rec.workload or {})


def app_tables(recs: list[Record]) -> list[Table]:
    """One table per application workload and size: every library, scheme and variant (portable,
    native), the measured time next to the sum-of-operations model from the same run (flat and
    level-aware), native against portable, throughput, communication and what is left of the
    ciphertext."""
    recs = latest(recs)
    apps = [r for r in recs if _app(r)]
    tables = []
    for key in sorted({_workload_key(r) for r in apps}, key=lambda k: (k[0], k[1:])):
        group = [r for r in apps if _workload_key(r) == key]
        portable = {(r.library, r.scheme, params_name(r)): r for r in group
                    if r.workload.get("variant") == "portable" and r.median_ns}
        rows, devs = [], Deviations()
        for r in sorted(group, key=lambda r: (r.scheme, params_name(r), r.library, r.workload.get("variant", ""))):
            pred = predict(r, recs) if r.status == "ok" else None
            ok = r.status == "ok" and r.median_ns
            if pred is None:
                model = flat = "-"
            elif set(pred.missing) & ROUTINES:
                model, flat = "- (library routine)", "-"
            elif pred.ns is None:
                model, flat = f"no model: {', '.join(pred.missing)} not run", "-"
            else:
                model = f"{fmt_time(pred.ns_levels)} / {fmt_time(pred.ns)}"
                flat = f"{r.median_ns / pred.ns_levels:.2f} / {r.median_ns / pred.ns:.2f}" if ok else "-"
            base = portable.get((r.library, r.scheme, params_name(r)))
            vs = (f"{r.median_ns / base.median_ns:.2f}" if ok and base and base is not r else "-")
            left = r.levels
            quality = (f"{r.precision_bits:.1f} bits" if r.precision_bits is not None else
                       f"noise budget {r.noise_budget_bits:g} bits" if r.noise_budget_bits is not None else
                       "exact" if r.status == "ok" else "-")
            traffic = communication(r) if r.status == "ok" else None
            rate = throughput(r) if ok else None
            rows.append([f"{r.library} / {r.scheme.upper()}", params_name(r), r.workload.get("variant", "-"),
                         cell(r, devs), vs, model, flat,
                         "-" if rate is None else f"{rate:,.4g}/s ({instances(r)}; {fmt_time(per_instance_ns(r))} each)",
                         ", ".join(str(v) for v in left.values()) or "-", quality,
                         "-" if traffic is None else f"{fmt_bytes(traffic.up)} / {fmt_bytes(traffic.down)}",
                         fmt_bytes(r.peak_rss_bytes)])
        title = next((r.title or r.op for r in group if r.workload.get("variant") == "portable"),
                     group[0].title or group[0].op)
        tables.append(Table(f"Workload {key[0]}_{key[1]}{'x' + str(key[2]) if key[2] else ''}: "
                            f"{re.sub(r' [(](portable|native)[)]$', '', title)}",
                            ["library / scheme", "params", "variant", "time", "native / portable",
                             "model: level-aware / flat", "measured / model", "throughput (instances; time each)",
                             "levels left", "quality", "client sends / receives", "peak memory"], rows,
                            "portable: the same program of primitives on every library; native: the library's own "
                            "routines (PROTOCOL.md, Library routines). model: each timed step at the median of the "
                            "same single op in the same run (rotations: rotate_1), level-aware scaling CKKS steps by "
                            "the share of primes left; a routine has no single op, so no model. throughput: instances "
                            "packed in one run per second at the median. client sends: encrypted inputs, relinearization "
                            "key and the Galois keys of the portable rotations; receives: result ciphertexts. quality: "
                            "CKKS precision (bits, -log2 max error) or BFV/BGV noise budget. peak memory: the driver "
                            "process's peak RSS over the whole run", devs.lines()))
    return tables


def _workload_key(rec: Record) -> tuple[str, int, int]:
    w = rec.workload
    return w.get("workload", rec.op), int(w.get("size", 0)), int(w.get("dim", 0))


def expansion_table(recs: list[Record]) -> Table | None:
    """Study 3's data-expansion ratios: plaintext bytes / raw vector bytes
    (8 bytes per value), ciphertext bytes / plaintext bytes."""
    recs = [r for r in latest(recs) if r.status == "ok" and not r.op.startswith("pipeline_")]
    if not _swept(recs):
        return None
    rows = {}
    for r in recs:
        s = r.sizes_bytes
        if "plaintext" not in s or "ciphertext" not in s:
            continue
        key = (r.library, r.scheme, r.params["N"], params_name(r), r.slots)
        raw = 8 * r.slots
        rows[key] = [f"{key[0]} / {key[1].upper()}", key[3], str(key[4]), str(raw), str(s["plaintext"]),
                     str(s["ciphertext"]), f"{s['plaintext'] / raw:.1f}", f"{s['ciphertext'] / s['plaintext']:.2f}"]
    return Table("Data expansion (Study 3)", ["library / scheme", "params", "vector length", "raw bytes",
                 "plaintext bytes", "ciphertext bytes", "plaintext / raw", "ciphertext / plaintext"],
                 [rows[k] for k in sorted(rows)], "raw = 8 bytes per value; sizes are the libraries' serialized sizes")


def stage_table(recs: list[Record]) -> Table | None:
    recs = [r for r in latest(recs) if r.op.startswith("pipeline_")]
    if not recs:
        return None
    stages = ["encode", "encrypt", "op", "decrypt", "decode", "total"]
    keys = sorted({(r.library, r.scheme, r.op.split("/")[0], r.params["N"], params_name(r)) for r in recs})
    rows, devs = [], Deviations()
    for lib, scheme, pipe, n, label in keys:
        by_stage = {r.op.split("/")[-1]: r for r in recs
                    if (r.library, r.scheme, r.op.split("/")[0], params_name(r)) == (lib, scheme, pipe, label)}
        rows.append([f"{lib} / {scheme.upper()}", pipe.removeprefix("pipeline_"), str(n)]
                    + [cell(by_stage.get(s), devs) for s in stages])
    return Table("Pipelines: time per stage (Study 1)", ["library / scheme", "operation", "N"] + stages, rows,
                 f"median [95% CI]; encode/encrypt stages cover both inputs; {DEVIATION_MARK} different work (footnote)",
                 devs.lines())


def facts_table(recs: list[Record]) -> Table:
    """Noise budget / precision and sizes next to every time."""
    rows = []
    for r in sorted(latest(recs), key=lambda r: (r.library, r.scheme, r.params["N"], r.op)):
        if r.status != "ok" or r.op.split("/")[-1] not in ("total",) and r.op.startswith("pipeline_"):
            continue
        sizes = r.sizes_bytes
        out_size = next((v for k, v in sizes.items() if k.startswith("output:")), None)
        rows.append([f"{r.library} / {r.scheme.upper()}", str(r.params["N"]), r.op,
                     "-" if r.noise_budget_bits is None else f"{r.noise_budget_bits:g}",
                     "-" if r.precision_bits is None else f"{r.precision_bits:.1f}",
                     fmt_bytes(out_size),
                     "-" if r.peak_rss_bytes is None else f"{r.peak_rss_bytes / 2**20:.0f}",
                     "-" if r.driver_overhead_ns is None else f"{r.driver_overhead_ns:.0f}"
                     + (f" (binding call {b:.0f})" if (b := (r.library_build or {}).get("binding_call_ns")) else ""),
                     security_label(r), _activity(r),
                     r.env.get("host") or "-"])
    return Table("Noise, precision, sizes, memory", ["library / scheme", "N", "op", "noise budget (bits)",
                 "precision (bits)", "output size", "peak RSS (MiB)", "driver overhead (ns)", "security",
                 "other load (cores) / steal", "measured on (host)"], rows,
                 "other load: CPU used by other processes during the job, in cores; steal: share taken by the hypervisor")


def _activity(r: Record) -> str:
    a = r.host_activity
    if not a:
        return "-"
    mark = {True: " ~", None: " (job < 0.5 s: not judged)"}.get(a["contended"], "")
    return f"{a['other_cores']:.2f} / {a['steal_share'] * 100:.1f}%{mark}"


def key_table(recs: list[Record]) -> Table:
    rows, seen = [], set()
    for r in latest(recs):
        k = (r.library, r.scheme, params_name(r))
        if k in seen or not r.sizes_bytes:
            continue
        seen.add(k)
        s = r.sizes_bytes
        rows.append([f"{r.library} / {r.scheme.upper()}", k[2]] + [fmt_bytes(s.get(x)) for x in
                    ("public_key", "secret_key", "relin_keys", "galois_keys")] + [str(s.get("galois_key_count", "-"))]
                    + [fmt_bytes(s.get(x)) for x in ("plaintext", "ciphertext")])
    rows.sort()
    return Table("Serialized sizes", ["library / scheme", "params", "public key", "secret key",
                 "relin keys", "Galois keys", "Galois key count", "plaintext", "fresh ciphertext"], rows,
                 "KiB and MiB of the library's own serialization; the export has every size in bytes (sizes_bytes)")


def all_tables(recs: list[Record]) -> list[Table]:
    """Every table the records call for, in report order."""
    tables = op_tables(recs) + app_tables(recs)
    tables += [t for t in (ratio_table(recs), layer_table(recs), stage_table(recs), depth_table(recs),
                           expansion_table(recs), workload_table(recs)) if t is not None]
    return tables + [facts_table(recs), key_table(recs)]
