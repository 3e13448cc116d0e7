"""`fhemark recommend`: only measured, checked, secure results count; every exclusion says why."""

import json

import pytest

from fhemark.errors import UserError
from fhemark.recommend import Workload, load_workload, recommend

from test_cli import SMALL, fhemark, one_line_error, write


def rec(lib, scheme, op, median, params="c8192", status="ok", bits=128, slots=4096, **extra):
    return {"library": lib, "scheme": scheme, "op": op, "params": {"name": params, "N": 8192}, "status": status,
            "check_passed": status == "ok", "job_key": f"{lib}{scheme}{params}{op}", "run_id": "r1",
            "median_ns": median if status == "ok" else None, "ci95_ns": [median * 0.98, median * 1.02] if median else None,
            "security": {"hestd2018": {"bits": bits}}, "security_bits": bits, "slots": slots, **extra}


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
