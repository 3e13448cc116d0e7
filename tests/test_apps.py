"""Application workloads: each algorithm computes what it claims (against numpy, not against
itself), and every library runs it with every decrypted result checked."""

import numpy as np
import pytest

from fhemark.apps.workloads import baby_giant, matvec, matvec_layout
from fhemark.catalog import known, lookup
from fhemark.drivers import manifests
from fhemark.plan import build
from fhemark.run import Runner
from fhemark.semantics import Plain
from fhemark.store import Store
from fhemark.suites import Suite

CKKS, BFV = Plain("ckks", 2048), Plain("bfv", 4096, 65537)


@pytest.mark.parametrize("d", [2, 8, 32, 64, 256])
@pytest.mark.parametrize("plain", [CKKS, BFV], ids=["ckks", "bfv"])
def test_matvec_is_the_matrix_vector_product(plain, d):
    rng = np.random.default_rng(d)
    m = rng.integers(0, plain.t, (d, d)) if plain.exact else rng.uniform(-1, 1, (d, d))
    v = rng.integers(0, plain.t, d) if plain.exact else rng.uniform(-1, 1, d)
    circ, out = matvec(plain.scheme, d)
    got = circ.reference(plain, matvec_layout(plain, m, v), out)
    want = (m.astype(object) @ v.astype(object)) % plain.t if plain.exact else m @ v
    assert np.allclose(got[:d].astype(float), np.asarray(want, dtype=float))
    b, g = baby_giant(d)
    assert b * g == d and circ.counts()[("rotate_rows" if plain.exact else "rotate")] == b - 1 + g - 1


def test_the_other_workloads_compute_what_their_names_say():
    rng = np.random.default_rng(3)
    op = lookup("dot_64", "ckks")
    x = op.gen(CKKS, rng)
    assert np.isclose(op.expect(CKKS, x, {})[0], x["x"] @ x["y"])
    op = lookup("mean_128", "ckks")
    x = op.gen(CKKS, rng)
    assert np.isclose(op.expect(CKKS, x, {})[0], x["x"][:128].mean())
    op = lookup("tally_256", "bgv")
    x = op.gen(BFV, rng)
    assert op.expect(BFV, x, {})[0] == x["x"][:256].sum() and set(np.unique(x["x"])) <= {0, 1}
    op = lookup("poly_3", "bfv")
    x = op.gen(BFV, rng)
    c = [int(x[f"c{i}"][0]) for i in range(4)]
    want = [sum(c[i] * int(v) ** i for i in range(4)) % BFV.t for v in x["x"][:5]]
    assert list(op.expect(BFV, x, {})[:5]) == want
    assert lookup("poly_3", "ckks") is None and lookup("mean_8", "bfv") is None  # not offered there
    assert known("matvec_256") and not known("matvec_100") and not known("dot_1")


def test_similarity_scores_are_the_cosine_of_query_and_every_record():
    from fhemark.apps.workloads import _unit, similarity, similarity_layout
    rng = np.random.default_rng(9)
    db, q = _unit(rng.normal(size=(200, 16))), _unit(rng.normal(size=16))
    circ, outs = similarity("ckks", 200, 16, CKKS)  # 2048 slots: 128 records per plaintext, two plaintexts
    got = circ.reference(CKKS, similarity_layout(CKKS, db, q), *outs)
    scores = np.concatenate([got[f"z{j}"][::16] for j in range(len(outs))])[:200]
    assert len(outs) == 2 and np.allclose(scores, db @ q) and np.all(np.abs(scores) <= 1 + 1e-9)


def test_workloads_are_timed_as_their_steps_and_consume_the_levels_they_claim():
    prog = lookup("dot_16", "ckks").program("ckks")
    assert [s["op"] for s in prog.steps if s["out"] in prog.timed] == \
        ["mul_relin", "rescale"] + ["rotate", "add"] * 4
    assert sum(s["op"] == "rescale" for s in lookup("matvec_64", "ckks").program("ckks").steps) == 1
    horner = lookup("poly_4", "bgv").program("bgv")
    assert sum(s["op"] == "mul_relin" for s in horner.steps) == 3  # depth deg - 1
    encodes = [s for s in horner.steps if s["op"] == "encode"]
    assert not {s["out"] for s in encodes} & set(horner.timed)  # server plaintexts: encoded untimed


def _libraries():
    return [lib for lib, m in manifests().items() if "ckks" in m.schemes or "bfv" in m.schemes]


@pytest.mark.parametrize("library", _libraries())
def test_every_library_runs_the_workloads_checked(library, tmp_path, driver_pool):
    """Small insecure rings (N = 2048/4096): every workload, every decrypted result checked."""
    driver_pool(library)  # built here, or skipped with the reason
    suite = Suite(name="apps-test", policy={"min_samples": 2, "max_samples": 2, "warmup": 0, "budget_s": 0.1},
                  cases=[{"libraries": [library], "schemes": ["bfv", "bgv"],
                          "params": [{"N": 4096, "q_bits": [40, 40], "p_bits": [40], "t": 65537}],
                          "ops": ["dot_8", "matvec_8", "tally_16", "poly_2"]},
                         {"libraries": [library], "schemes": ["ckks"],
                          "params": [{"N": 2048, "q_bits": [40, 30], "p_bits": [40], "scale_bits": 30}],
                          "ops": ["dot_8", "matvec_16", "mean_16", "similarity_40x16"]}])
    plan = build(suite, [library], allow_insecure=True)
    store = Store(tmp_path / "a.db")
    run_id = store.start_run("apps-test", "h", True, {}, {})
    Runner(plan, store, run_id, {"threads": 1}).execute()
    recs = list(store.records(run_id))
    assert len(recs) == 12
    bad = [(r["scheme"], r["op"], r["status"], r["error"]) for r in recs if r["status"] != "ok"]
    assert not bad
    assert all(r["check_passed"] and r["median_ns"] > 0 and r["workload"]["variant"] == "portable" for r in recs)


def test_the_cost_model_adds_up_single_ops_from_the_same_run_only():
    from fhemark.apps.cost import predict
    from fhemark.report.tables import app_tables

    def rec(op, ns, run="r1", lib="seal"):
        return {"op": op, "median_ns": ns, "run_id": run, "library": lib, "scheme": "ckks", "params": {"name": "c8192"},
                "slots": 4096, "status": "ok", "title": op, "workload": {"variant": "portable"} if op.startswith("dot") else None,
                "ci95_ns": [ns * 0.9, ns * 1.1], "samples_ns": [ns] * 6, "job_key": f"{run}{lib}{op}"}
    singles = [rec("mul_relin", 3000.0), rec("rescale", 500.0), rec("rotate_1", 2000.0), rec("add", 100.0)]
    dot = rec("dot_16", 20000.0)
    p = predict(dot, [dot] + singles + [rec("add", 1e9, run="r0")])  # another run's add is not used
    assert p.steps == {"mul_relin": 1, "rescale": 1, "rotate": 4, "add": 4} and p.missing == []
    assert p.ns == 3000 + 500 + 4 * 2000 + 4 * 100
    lacking = predict(dot, [dot] + singles[:2])
    assert lacking.ns is None and lacking.missing == ["add", "rotate_1"]
    (table,) = app_tables([dot] + singles)
    row = table.rows[0]
    assert row[4] == "11.9 µs" and row[5] == f"{20000 / 11900:.2f}"


def test_integer_multiplication_runs_on_radix_integers_checked(tmp_path, driver_pool):
    from fhemark.errors import UserError
    driver_pool("tfhe-rs")

    def suite(op):
        return Suite(name="zmul-test", policy={"min_samples": 1, "max_samples": 1, "warmup": 0, "budget_s": 0.1},
                     cases=[{"libraries": ["tfhe-rs"], "schemes": ["tfhe_int"],
                             "params": [{"preset": "default", "bits": 8}], "ops": [op]}])
    with pytest.raises(UserError, match="zmul_64.*does not apply"):  # 64-bit products need 64-bit integers
        build(suite("zmul_64"), ["tfhe-rs"], allow_insecure=True)
    plan = build(suite("zmul_8"), ["tfhe-rs"], allow_insecure=True)
    store = Store(tmp_path / "z.db")
    run_id = store.start_run("zmul-test", "h", True, {}, {})
    Runner(plan, store, run_id, {"threads": 1}).execute()
    (rec,) = store.records(run_id)
    assert rec["status"] == "ok" and rec["check_passed"] and rec["workload"]["workload"] == "zmul"
