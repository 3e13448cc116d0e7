"""`fhemark recommend`: only measured, checked, secure results count; every exclusion says why."""

import json

import pytest
from made_records import record
from test_cli import SMALL, fhemark, one_line_error, write

from fhemark.advise.recommend import Workload, load_workload, recommend
from fhemark.errors import UserError


def rec(lib, scheme, op, median, params="c8192", status="ok", bits=128, slots=4096, q_bits=(50, 40, 40), run="r1",
        **extra):
    """A record as the store holds it; c8192's chains have 3 ciphertext primes (CKKS: 2 levels)."""
    return record(**{"library": lib, "scheme": scheme, "op": op,
                     "params": {"name": params, "N": 8192, "q_bits": list(q_bits)}, "status": status,
                     "check_passed": status == "ok", "job_key": f"{lib}{scheme}{params}{op}", "run_id": run,
                     "median_ns": median if status == "ok" else None,
                     "ci95_ns": [median * 0.98, median * 1.02] if median else None,
                     "security": {"hestd2018": {"bits": bits}}, "security_bits": bits, "slots": slots, **extra})


STORE = [
    rec("seal", "bgv", "mul_relin", 40e6), rec("seal", "bgv", "rotate_1", 30e6),
    rec("lattigo", "bgv", "mul_relin", 41e6), rec("lattigo", "bgv", "rotate_1", 29.5e6),
    rec("openfhe", "bgv", "mul_relin", 20e6, status="insecure_params"), rec("openfhe", "bgv", "rotate_1", 20e6),
    rec("fast", "bgv", "mul_relin", 1e6, bits=100), rec("fast", "bgv", "rotate_1", 1e6, bits=100),
    rec("seal", "ckks", "mul_relin", 10e6, precision_bits=18.0), rec("seal", "ckks", "rotate_1", 10e6),
    rec("seal", "bfv", "mul_relin", 50e6),
]


def by_label(cands):
    return {c.label: c for c in cands}


def test_ranks_by_cost_and_says_why_others_are_out():
    cands = recommend(STORE, Workload(ops={"mul_relin": 2, "rotate_1": 1}))
    usable = [c.label for c in cands if not c.excluded]
    assert usable == ["seal CKKS c8192", "seal BGV c8192", "lattigo BGV c8192"]
    got = by_label(cands)
    assert got["lattigo BGV c8192"].cost == pytest.approx(2 * 41e6 + 29.5e6)
    assert got["seal CKKS c8192"].within_best and not got["seal BGV c8192"].within_best
    # 110 ms [107.8, 112.2] vs 111.5 ms [109.3, 113.7]: overlapping, so without CKKS the data cannot order them.
    bgv = recommend(STORE, Workload(ops={"mul_relin": 2, "rotate_1": 1}, schemes=["bgv"]))
    assert [(c.label, c.within_best) for c in bgv[:2]] == [("seal BGV c8192", True), ("lattigo BGV c8192", True)]
    assert got["openfhe BGV c8192"].excluded == "mul_relin: insecure_params"
    assert got["fast BGV c8192"].excluded.startswith("security 100 bits < 128")
    assert got["seal BFV c8192"].excluded == "rotate_1 not measured"


def test_requirements_exclude_with_the_measured_value():
    cands = by_label(recommend(STORE, Workload(ops={"mul_relin": 1}, min_precision_bits=20, schemes=["ckks"])))
    assert cands["seal CKKS c8192"].excluded == "precision 18.0 bits < 20"
    deep = STORE + [rec("seal", "bgv", "depth_mul", None, depth=4), rec("lattigo", "bgv", "depth_mul", None, depth=2)]
    cands = by_label(recommend(deep, Workload(ops={"mul_relin": 1}, depth=3, schemes=["bgv"])))
    assert cands["seal BGV c8192"].excluded == ""
    assert cands["lattigo BGV c8192"].excluded == "measured depth 2 < 3"
    assert cands["fast BGV c8192"].excluded.startswith("security")  # checked before depth


def test_values_beyond_one_ciphertext_cost_copies():
    store = [rec("seal", "bgv", "add", 1e6, slots=8192), rec("tfhe-rs", "tfhe_int", "add", 1e7, params="default",
                                                          slots=1, security={"library": {"bits": 128}})]
    cands = by_label(recommend(store, Workload(ops={"add": 1}, slots=10000)))
    assert cands["seal BGV c8192"].copies == 2 and cands["seal BGV c8192"].cost == pytest.approx(2e6)
    assert cands["tfhe-rs TFHE_INT default"].copies == 10000


def test_workload_input_errors_are_one_line(tmp_path):
    with pytest.raises(UserError, match="OP or OP=COUNT"):
        load_workload(None, ["mul_relin=ten"], {})
    with pytest.raises(UserError, match="field ops"):
        load_workload(None, [], {})
    bad = tmp_path / "w.yaml"
    bad.write_text("ops: {mul_relin: 2}\nprecison: 20\n")
    with pytest.raises(UserError, match="precison"):
        load_workload(bad, [], {})
    one_line_error(fhemark("recommend", write(tmp_path, "ops: [\n", "m.yaml"), "--db", str(tmp_path / "x.db")),
                   "malformed YAML")
    one_line_error(fhemark("recommend", "--op", "add", "--scheme", "rsa", "--db", str(tmp_path / "x.db")), "rsa")


def test_recommend_from_a_real_run(tmp_path):
    db = str(tmp_path / "w.db")
    assert fhemark("run", "--suite", write(tmp_path, SMALL), "--db", db, "--allow-insecure",
                   "--report", str(tmp_path / "r"), cwd=tmp_path).returncode == 0
    # The run was insecure on purpose: nothing may be recommended, and the reason is the security level.
    out = fhemark("recommend", "--op", "mul_relin=3", "--op", "add", "--db", db, "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1 and "excluded: seal BFV" in out.stdout and "security" in out.stdout
    ranking = json.loads((tmp_path / "r.json").read_text())
    assert {c["scheme"] for c in ranking["candidates"]} == {"bfv", "ckks"}
    assert all(c["excluded"] for c in ranking["candidates"])


def test_a_candidate_timed_on_different_work_is_marked_and_never_tied_with_the_best():
    dev = {"mul_scalar": "multiply_plain by a constant plaintext"}
    store = [rec("seal", "bgv", "mul_relin", 40e6), rec("lattigo", "bgv", "mul_relin", 40.1e6, deviations=dev)]
    cands = by_label(recommend(store, Workload(ops={"mul_relin": 1})))
    odd = cands["lattigo BGV c8192"]
    assert odd.deviations == {"mul_relin/mul_scalar": dev["mul_scalar"]}
    assert not odd.within_best  # its interval overlaps, but it timed other work


def test_an_application_workload_uses_its_measurement_and_falls_back_to_the_model_saying_so():
    """matvec_4 on CKKS: 4 plaintext products, 3 additions, 2 rotations, 1 rescale. SEAL ran the
    workload itself: its measurement counts. Lattigo did not: the sum of its single ops stands in,
    and the candidate says so. OpenFHE lacks rescale: no model, excluded with the reason."""
    singles = {"mul_plain": 100.0, "add": 10.0, "rotate_1": 1000.0, "rescale": 50.0}
    store = [rec(lib, "ckks", op, ns) for lib in ("seal", "lattigo") for op, ns in singles.items()]
    store += [rec("openfhe", "ckks", op, ns) for op, ns in singles.items() if op != "rescale"]
    store.append(rec("seal", "ckks", "matvec_4", 9000.0))
    got = by_label(recommend(store, Workload(ops={"matvec_4": 1})))
    seal, lattigo, openfhe = got["seal CKKS c8192"], got["lattigo CKKS c8192"], got["openfhe CKKS c8192"]
    assert seal.cost == 9000.0 and not seal.modelled
    assert lattigo.modelled == ["matvec_4"] and lattigo.cost == pytest.approx(4 * 100 + 3 * 10 + 2 * 1000 + 50)
    assert lattigo.cost_ci[0] < lattigo.cost < lattigo.cost_ci[1]
    assert openfhe.excluded == "matvec_4 not measured"


POLY_OPS = {"mul_plain": 100.0, "rescale": 50.0, "add_plain": 10.0, "mod_switch": 20.0, "mul_relin": 1000.0}
DEEP = (50,) + (40,) * 7  # c16384's CKKS chain: 7 levels


def test_a_workload_deeper_than_the_chain_is_excluded_measured_or_modelled():
    """poly_7 on CKKS needs 7 levels (Horner: 7 rescales). c8192 has 3 primes, 2 levels: excluded
    whether its poly_7 was modelled (SEAL) or measured (Lattigo); c16384 has 7: ranked, its cost
    the level-aware sum of its steps."""
    store = [rec("seal", "ckks", op, ns) for op, ns in POLY_OPS.items()]
    store += [rec("lattigo", "ckks", op, ns) for op, ns in POLY_OPS.items()] + [rec("lattigo", "ckks", "poly_7", 9e3)]
    store += [rec("seal", "ckks", op, ns, params="c16384", q_bits=DEEP) for op, ns in POLY_OPS.items()]
    cands = recommend(store, Workload(ops={"poly_7": 1}, schemes=["ckks"]))
    got = by_label(cands)
    assert got["seal CKKS c8192"].excluded == "poly_7 needs 7 levels, c8192 has 2"
    assert got["lattigo CKKS c8192"].excluded == "poly_7 needs 7 levels, c8192 has 2"
    deep = got["seal CKKS c16384"]
    assert [c.label for c in cands if not c.excluded] == ["seal CKKS c16384"]
    assert deep.modelled == ["poly_7"] and deep.needs == {"poly_7": 7}
    # Step i of the chain's 8 primes costs (8 - levels consumed) / 8 of the single op: never below 1/8.
    from fhemark.analyse.cost import predict
    assert deep.cost == pytest.approx(predict(store[-1].model_copy(update={"op": "poly_7"}), store, same_run=False).ns_levels)
    assert POLY_OPS["mul_relin"] * 6 / 8 < deep.cost < sum(POLY_OPS[op] * n for op, n in
                                                          {"mul_plain": 1, "rescale": 7, "add_plain": 7,
                                                           "mod_switch": 6, "mul_relin": 6}.items())


def test_predict_has_no_price_for_a_program_the_chain_cannot_hold():
    from fhemark.analyse.cost import predict, requirement
    singles = [rec("seal", "ckks", op, ns) for op, ns in POLY_OPS.items()]
    p = predict(singles[0].model_copy(update={"op": "poly_7"}), singles, same_run=False)
    assert p.ns is None and p.ns_levels is None and p.missing == [] and (p.levels, p.chain) == (7, 2)
    assert requirement("poly_7", "ckks") == 7 and requirement("poly_7_native", "ckks") == 3  # the power tree's
    assert requirement("poly_7", "bfv") == 7  # 1 plaintext and 6 ciphertext products in sequence
    assert requirement("dot_4096", "bgv") == 1 and requirement("tally_4096", "bfv") == 0
    assert requirement("logreg_16", "ckks") == 4 and requirement("mul_relin", "ckks") is None
    assert requirement("zmul_64", "tfhe_int") is None


def test_bfv_workloads_need_their_depth_shown():
    """BFV/BGV: poly_7 needs 7 multiplications in sequence. Shown by depth_mul, by a measured and
    checked workload that needs as many, or (depth 1) by one checked multiplication; else excluded."""
    ops = {"mul_plain": 100.0, "add_plain": 10.0, "mul_relin": 1000.0}
    store = [rec(lib, "bfv", op, ns) for lib in ("seal", "lattigo", "openfhe") for op, ns in ops.items()]
    store += [rec("lattigo", "bfv", "depth_mul", None, depth=8), rec("openfhe", "bfv", "depth_mul", None, depth=3)]
    got = by_label(recommend(store, Workload(ops={"poly_7": 1})))
    assert got["seal BFV c8192"].excluded == "poly_7 needs depth 7, measured depth 1"  # its mul_relin was checked
    assert got["openfhe BFV c8192"].excluded == "poly_7 needs depth 7, measured depth 3"
    assert got["lattigo BFV c8192"].excluded == "" and got["lattigo BFV c8192"].modelled == ["poly_7"]
    # A measured poly_7 shows its own depth; a lone poly_7 with nothing else needs depth_mul.
    measured = by_label(recommend([rec("seal", "bfv", "poly_7", 5e3), rec("tfhe", "bgv", "poly_7", 5e3, status="wrong_result")],
                                  Workload(ops={"poly_7": 1})))
    assert measured["seal BFV c8192"].excluded == ""
    assert measured["tfhe BGV c8192"].excluded == "poly_7: wrong_result"
    bare = by_label(recommend([rec("seal", "bfv", "add_plain", 10.0), rec("seal", "bfv", "poly_7", None, status="wrong_result")],
                              Workload(ops={"poly_3": 1})))
    assert bare["seal BFV c8192"].excluded == "poly_3 not measured"  # no model without its single ops
    # A measured, checked poly_6 shows depth 6: enough for a modelled poly_3 on the same set, not for poly_7.
    six = [rec("seal", "bgv", op, ns) for op, ns in ops.items()] + [rec("seal", "bgv", "poly_6", 4e3)]
    assert by_label(recommend(six, Workload(ops={"poly_3": 1})))["seal BGV c8192"].excluded == ""
    assert by_label(recommend(six, Workload(ops={"poly_7": 1})))["seal BGV c8192"].excluded == \
        "poly_7 needs depth 7, measured depth 6"


def _printed(cands, w) -> str:
    from rich.console import Console

    from fhemark.report.text import print_recommendation
    console = Console(record=True, width=300)
    print_recommendation(cands, w, console)
    return " ".join(console.export_text().split())  # lines as the terminal would wrap them, joined


DOT_BFV = {"mul_relin": 1000.0, "rotate_1": 200.0, "add": 10.0}


def test_a_modelled_workload_names_the_runs_and_jobs_it_was_summed_from():
    """dot_4096 on BFV, never run as a workload: its evidence is the single ops it adds up (here from
    two runs), in the text and the JSON; no run or job is ever null."""
    from fhemark.advise.recommend import ranking_json
    store = [rec("seal", "bfv", op, ns, run="r1" if op == "mul_relin" else "r2") for op, ns in DOT_BFV.items()]
    w = Workload(ops={"dot_4096": 1}, schemes=["bfv"])
    cands = recommend(store, w)
    (seal,) = cands
    assert seal.excluded == "" and seal.modelled == ["dot_4096"] and seal.runs == ["r1", "r2"]
    assert seal.cost == pytest.approx(1000 + 12 * 200 + 12 * 10)
    ev = seal.by_op["dot_4096"]
    assert ev.run_ids == ["r1", "r2"] and ev.job_keys == [f"sealbfvc8192{op}" for op in DOT_BFV]
    assert {(s.op, s.count) for s in ev.sources} == {("mul_relin", 1), ("rotate_1", 12), ("add", 12)}
    text = _printed(cands, w)
    assert "recommended: seal BFV c8192" in text and "Evidence: runs r1, r2." in text
    assert "1 x mul_relin, 12 x rotate_1, 12 x add; runs r1, r2; jobs sealbfvc8192mul_relin" in text
    out = ranking_json(cands, w)
    evidence = out["candidates"][0]["evidence"]["dot_4096"]
    assert evidence["modelled"] and None not in evidence["run_id"] and None not in evidence["job_key"]
    assert all(s["run_id"] and s["job_key"] for s in evidence["sources"])
    assert "added up" in out["cost_model"]["method"] and out["cost_model"]["checked_workloads"] == 0


def test_the_cost_model_states_its_error_on_the_stores_own_workloads():
    """dot_16 on CKKS measured beside its single ops in run r1: predicted (level-aware) 9.8 µs against
    12.25 µs measured, -20%. A dot_16 whose single ops ran in another run is not a check."""
    from fhemark.advise.recommend import ranking_json
    from fhemark.analyse.cost import model_error
    singles = {"mul_relin": 3000.0, "rescale": 500.0, "rotate_1": 2000.0, "add": 100.0}
    store = [rec("seal", "ckks", op, ns, q_bits=(60, 40, 40, 60)) for op, ns in singles.items()]
    store += [rec("seal", "ckks", "dot_16", 12250.0, q_bits=(60, 40, 40, 60)),
              rec("lattigo", "ckks", "dot_16", 5000.0, q_bits=(60, 40, 40, 60), run="r9")]
    store += [rec("lattigo", "ckks", op, ns, q_bits=(60, 40, 40, 60)) for op, ns in singles.items()]
    err = model_error(store)
    assert [(c.library, c.op) for c in err.checks] == [("seal", "dot_16")]
    assert err.checks[0].ratio == pytest.approx(9800 / 12250)
    w = Workload(ops={"dot_16": 1})
    text = _printed(recommend(store, w), w)
    assert "count x median of each operation, added up" in text
    assert "the model's error on the 1 application workload measured in this store: -20% .. -20%, median -20%" in text
    assert ranking_json(recommend(store, w), w)["cost_model"]["error_median"] == pytest.approx(-0.2)
    plain = [rec("seal", "bgv", "mul_relin", 40e6)]
    assert "the model's error cannot be checked here" in _printed(recommend(plain, Workload(ops={"mul_relin": 1})),
                                                                   Workload(ops={"mul_relin": 1}))


def test_without_a_depth_the_recommendation_says_depth_was_not_checked():
    w = Workload(ops={"mul_relin": 10})
    text = _printed(recommend(STORE, w), w)
    assert "depth: not checked (no depth given)" in text
    deep = STORE + [rec("seal", "bgv", "depth_mul", None, depth=4)]
    w3 = Workload(ops={"mul_relin": 10}, depth=3, schemes=["bgv"])
    assert "depth: 3 multiplications in sequence checked" in _printed(recommend(deep, w3), w3)


def test_recommend_a_modelled_workload_from_the_cli(tmp_path):
    """The user's case: poly_7 on CKKS from a store of single ops (c8192 and c16384), and dot_4096 on
    BFV: no crash, c8192 excluded with the reason, the JSON's evidence never a null run."""
    from fhemark.store.sqlite import Store
    db = tmp_path / "s.db"
    store = Store(db)
    run_id = store.start_run("apps", "h", False, {}, {})
    recs = [rec("seal", "ckks", op, ns) for op, ns in POLY_OPS.items()]
    recs += [rec("seal", "ckks", op, ns, params="c16384", q_bits=DEEP) for op, ns in POLY_OPS.items()]
    recs += [rec("seal", "bfv", op, ns) for op, ns in DOT_BFV.items()]
    for r in recs:
        store.add(run_id, r.job_key, r.model_copy(update={"run_id": run_id, "suite": "apps"}))
    store.close()
    for op, scheme in (("poly_7=1", "ckks"), ("dot_4096=1", "bfv")):
        out = fhemark("recommend", "--op", op, "--scheme", scheme, "--db", str(db), "--json", str(tmp_path / "r.json"))
        assert out.returncode == 0 and "internal error" not in out.stdout + out.stderr, out.stdout + out.stderr
        assert f"Evidence: runs {run_id}." in out.stdout and "the model's error" in out.stdout
        ranking = json.loads((tmp_path / "r.json").read_text())
        runs = [ev["run_id"] for c in ranking["candidates"] for ev in c["evidence"].values()]
        assert runs and all(r == [run_id] for r in runs)
    assert "excluded: seal CKKS c8192: poly_7 needs 7 levels, c8192 has 2" in \
        fhemark("recommend", "--op", "poly_7=1", "--scheme", "ckks", "--db", str(db)).stdout


def tp(lib, per_s, cores=2, **extra):
    """A throughput record: its median is one evaluation's time under the load of k at once."""
    return rec(lib, "ckks", "mul_relin", 20e6, mode="throughput", batch=2, throughput_per_s=per_s,
               throughput_ci95=[per_s * 0.97, per_s * 1.03], throughput_cores=cores, job_key=f"tp{lib}{cores}", **extra)


def test_throughput_objective_ranks_from_throughput_records_and_says_so(capsys):
    """At one evaluation alone OpenFHE (10 ms) beats SEAL (12 ms); with 2 cores busy SEAL's two processes
    give 160/s against OpenFHE's 110/s: the objective decides, and the answer names it."""
    store = [rec("openfhe", "ckks", "mul_relin", 10e6), rec("seal", "ckks", "mul_relin", 12e6),
             tp("openfhe", 110.0), tp("seal", 160.0), tp("lattigo", 500.0, cores=64)]
    lat = [c.label for c in recommend(store, Workload(ops={"mul_relin": 1})) if not c.excluded]
    assert lat == ["openfhe CKKS c8192", "seal CKKS c8192"]  # throughput records never mix into latency
    w = Workload(ops={"mul_relin": 1}, objective="throughput", threads=2)
    cands = recommend(store, w)
    assert [c.label for c in cands if not c.excluded] == ["seal CKKS c8192", "openfhe CKKS c8192"]  # 64 cores: out
    assert cands[0].cost == pytest.approx(1e9 / 160) and cands[0].by_op["mul_relin"].latency_ns == 20e6
    lo, hi = cands[0].cost_ci
    assert lo == pytest.approx(1e9 / (160 * 1.03)) and hi == pytest.approx(1e9 / (160 * 0.97))
    from rich.console import Console

    from fhemark.advise.recommend import ranking_json
    from fhemark.report.text import print_recommendation
    print_recommendation(cands, w, Console(width=200))
    out = capsys.readouterr().out
    assert "ranked by throughput" in out and "objective: throughput on 2 cores" in out and "at saturation" in out
    assert ranking_json(cands, w)["ranked_by"].startswith("throughput")


def test_throughput_objective_without_throughput_records_says_what_to_run(capsys):
    from rich.console import Console

    from fhemark.report.text import print_recommendation
    w = Workload(ops={"mul_relin": 1}, objective="throughput")
    cands = recommend(STORE, w)
    assert not [c for c in cands if not c.excluded]
    print_recommendation(cands, w, Console(width=200))
    assert "mode: throughput" in capsys.readouterr().out
