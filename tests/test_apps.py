"""Application workloads: each algorithm computes what it claims (against numpy, not against
itself), and every library runs it with every decrypted result checked."""

import json

import numpy as np
import pytest
from made_records import record

from fhemark.drivers.registry import manifests
from fhemark.locations import project_root
from fhemark.measure import measure
from fhemark.model.apps.builder import Circuit
from fhemark.model.apps.workloads import baby_giant, matvec, matvec_layout
from fhemark.model.catalog import known, lookup
from fhemark.model.semantics import Plain
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

CKKS, BFV = Plain("ckks", 2048), Plain("bfv", 4096, 65537)


@pytest.mark.parametrize("d", [2, 8, 32, 64, 256])
@pytest.mark.parametrize("plain", [CKKS, BFV], ids=["ckks", "bfv"])
def test_matvec_is_the_matrix_vector_product(plain, d):
    rng = np.random.default_rng(d)
    m = rng.integers(0, plain.t, (d, d)) if plain.exact else rng.uniform(-1, 1, (d, d))
    v = rng.integers(0, plain.t, d) if plain.exact else rng.uniform(-1, 1, d)
    circ = Circuit(plain.scheme)
    out = matvec(circ, d)
    got = circ.reference(plain, matvec_layout(plain, m, v), out)
    want = (m.astype(object) @ v.astype(object)) % plain.t if plain.exact else m @ v
    assert np.allclose(got[:d].astype(float), np.asarray(want, dtype=float))
    b, g = baby_giant(d)
    assert b * g == d and circ.counts()[("rotate_rows" if plain.exact else "rotate")] == b - 1 + g - 1


def test_the_other_workloads_compute_what_their_names_say():
    rng = np.random.default_rng(3)
    op = lookup("dot_64", "ckks")
    x = op.gen(CKKS, rng)  # slots / 64 instances side by side, each checked
    blocks = CKKS.slots // 64
    want = np.einsum("bi,bi->b", x["x"].reshape(blocks, 64), x["y"].reshape(blocks, 64))
    assert np.allclose(op.expect(CKKS, x, {})[::64], want)
    op = lookup("mean_128", "ckks")
    x = op.gen(CKKS, rng)
    assert np.allclose(op.expect(CKKS, x, {})[::128], x["x"].reshape(-1, 128).mean(axis=1))
    op = lookup("tally_256", "bgv")
    x = op.gen(BFV, rng)
    assert list(op.expect(BFV, x, {})[::256]) == list(x["x"].reshape(-1, 256).sum(axis=1)) and set(np.unique(x["x"])) <= {0, 1}
    op = lookup("poly_3", "bfv")
    x = op.gen(BFV, rng)
    c = [int(x[f"c{i}"][0]) for i in range(4)]
    want = [sum(c[i] * int(v) ** i for i in range(4)) % BFV.t for v in x["x"][:5]]
    assert list(op.expect(BFV, x, {})[:5]) == want
    assert lookup("mean_8", "bfv") is None and lookup("logreg_16", "bgv") is None  # not offered there
    assert known("matvec_256") and not known("matvec_100") and not known("dot_1")
    assert known("logreg_16") and not known("logreg_12") and known("poly_1") and lookup("poly_1", "bfv") is None


@pytest.mark.parametrize("plain", [CKKS, BFV], ids=["ckks", "bfv"])
def test_native_variants_compute_what_the_portable_ones_do(plain):
    """A native variant is the same workload through the library's routines: its reference is the
    matrix product, inner product, polynomial, ... (numpy), as the portable variant's is."""
    rng = np.random.default_rng(11)
    d = 16
    m = rng.integers(0, plain.t, (d, d)) if plain.exact else rng.uniform(-1, 1, (d, d))
    v = rng.integers(0, plain.t, d) if plain.exact else rng.uniform(-1, 1, d)
    want = (m.astype(object) @ v.astype(object)) % plain.t if plain.exact else m @ v
    circ = Circuit(plain.scheme, native=True)
    out = matvec(circ, d)
    assert circ.counts() == ({"linear_transform": 1} if plain.exact else {"linear_transform": 1, "rescale": 1})
    got = circ.reference(plain, matvec_layout(plain, m, v, native=True), out)
    assert np.allclose(got[:d].astype(float), np.asarray(want, dtype=float))
    for name in ("dot_64", "tally_64" if plain.exact else "mean_64", "similarity_100x16"):
        portable, native = lookup(name, plain.scheme), lookup(name + "_native", plain.scheme)
        x = portable.gen(plain, np.random.default_rng(5))
        assert native.facts["variant"] == "native" and portable.facts["variant"] == "portable"
        a, b = portable.expected(plain, x, {}), native.expected(plain, x, {})
        assert a.keys() == b.keys() and all(np.allclose(a[k], b[k]) for k in a)
        assert "rotate" not in str(native.build(plain.scheme, plain).steps)  # the routine, not rotations
    if not plain.exact:
        op = lookup("poly_7_native", "ckks")
        x, sc = op.gen(plain, rng), op.scalars(plain, rng)
        assert set(x) == {"x"} and len(sc) == 8
        assert np.allclose(op.expect(plain, x, sc), np.polyval([sc[f"c{i}"] for i in range(7, -1, -1)], x["x"]))
        assert [s["op"] for s in op.build("ckks", plain).steps if s["out"] in op.build("ckks", plain).timed] == ["poly_eval"]
    assert lookup("poly_3_native", "bfv") is None  # no library here evaluates BFV/BGV polynomials


@pytest.mark.parametrize("deg", [1, 3, 7])
def test_ckks_poly_is_numpys_polynomial_of_the_inputs(deg):
    op = lookup(f"poly_{deg}", "ckks")
    x = op.gen(CKKS, np.random.default_rng(deg))
    coeffs = [x[f"c{i}"][0] for i in range(deg + 1)]
    assert all(np.all(x[f"c{i}"] == c) and abs(c) <= 1 / (i + 1) for i, c in enumerate(coeffs))
    assert np.allclose(op.expect(CKKS, x, {}), np.polyval(coeffs[::-1], x["x"]))
    assert np.all(np.abs(x["x"]) <= 1) and np.max(np.abs(op.expect(CKKS, x, {}))) < 4


def test_the_sigmoid_cubic_is_the_least_squares_fit_on_its_range():
    from fhemark.model.apps.workloads import SIGMOID3, SIGMOID_RANGE
    z = np.linspace(-SIGMOID_RANGE, SIGMOID_RANGE, 100001)
    fit = np.polyfit(z, 1 / (1 + np.exp(-z)), 3)[::-1]  # lowest degree first
    assert np.allclose(fit, SIGMOID3, atol=5e-6)


@pytest.mark.parametrize("n", [4, 16, 128])
def test_logreg_is_the_sigmoid_cubic_of_every_records_score(n):
    from fhemark.model.apps.workloads import SIGMOID3, logreg_layout
    rng = np.random.default_rng(n)
    per = CKKS.slots // n
    records, w, b = rng.uniform(-1, 1, (per, n)), rng.uniform(-1, 1, n) / np.sqrt(n), 0.25
    op = lookup(f"logreg_{n}", "ckks")
    got = op.expect(CKKS, logreg_layout(CKKS, records, w, b), {})
    z = records @ w + b
    assert np.allclose(got[::n], SIGMOID3[0] + SIGMOID3[1] * z + SIGMOID3[3] * z ** 3)
    gen = op.gen(CKKS, rng)  # the generator's scores stay inside the fit's range
    zs = gen["x"].reshape(per, n) @ gen["w"][:n] + gen["b"][0]
    assert np.max(np.abs(zs)) < 8 and np.all(gen["w"] == np.tile(gen["w"][:n], per))


def test_circuit_levels_mod_switches_and_plaintexts_like_a_ciphertext():
    c = Circuit("ckks")
    x = c.encrypted("x")
    y = c.rescaled(c.mul(x, x))
    y2 = c.rescaled(c.mul(y, c.down_to(x, y)))
    assert (c.level_of(x), c.level_of(y), c.level_of(y2), c.levels) == (0, 1, 2, 2)
    x2 = c.down_to(x, y2)  # reuses the level-1 copy made for y: one mod_switch per level
    assert c.level_of(x2) == 2 and c.counts()["mod_switch"] == 2 and c.down_to(x, x) == x
    with pytest.raises(ValueError):
        c.down_to(y2, x)
    pt = c.plaintext_like("k", y2)
    assert c.steps[-1] == {"out": pt, "op": "encode", "args": ["k"], "attrs": {"like": y2}}
    assert pt not in c.timed  # server plaintexts: encoded untimed
    got = c.reference(CKKS, {"x": np.full(4, 0.5), "k": np.full(4, 0.25)}, c.add_plain(y2, pt))
    assert np.allclose(got, 0.5 ** 3 + 0.25)
    b = Circuit("bfv")  # no scales: an ordinary plaintext, and nothing to switch
    assert b.plaintext_like("k", b.encrypted("x")) == "pk" and "attrs" not in b.steps[-1]


def test_horner_consumes_one_level_per_degree():
    prog = lookup("poly_7", "ckks").program("ckks")
    ops = [s["op"] for s in prog.steps if s["out"] in prog.timed]
    counts = {o: ops.count(o) for o in set(ops)}
    assert counts == {"mul_plain": 1, "mul_relin": 6, "rescale": 7, "mod_switch": 6, "add_plain": 7}
    likes = [s for s in prog.steps if s["op"] == "encode" and "like" in s.get("attrs", {})]
    assert len(likes) == 8 and not {s["out"] for s in likes} & set(prog.timed)
    logreg = lookup("logreg_16", "ckks").program("ckks")
    ops = [s["op"] for s in logreg.steps if s["out"] in logreg.timed]
    assert ops.count("rescale") == 4 and ops.count("rotate") == 4 and ops.count("add_plain") == 3  # b, g1, g0
    bfv = [s["op"] for s in lookup("poly_3", "bfv").program("bfv").steps]  # BFV/BGV Horner unchanged
    assert bfv == ["encode", "encrypt_pk", "encode", "mul_plain", "encode", "add_plain", "mul_relin", "encode",
                   "add_plain", "mul_relin", "encode", "add_plain", "decrypt", "decode"]


def test_similarity_scores_are_the_cosine_of_query_and_every_record():
    from fhemark.model.apps.workloads import _unit, similarity, similarity_layout
    rng = np.random.default_rng(9)
    db, q = _unit(rng.normal(size=(200, 16))), _unit(rng.normal(size=16))
    circ = Circuit("ckks", plain=CKKS)
    outs = similarity(circ, 200, 16)  # 2048 slots: 128 records per plaintext, two plaintexts
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


def _offers(library: str, scheme: str, ops: set[str]) -> bool:
    """From the checked-in capability snapshot: the library offers these ops on the scheme, and can
    run the small insecure rings these tests use (TenSEAL cannot: SEAL's 128-bit check is always on)."""
    path = project_root() / "protocol" / "capabilities" / f"{library}.json"
    sch = json.loads(path.read_text())["schemes"].get(scheme) if path.exists() else None
    return sch is not None and ops <= set(sch["ops"]) and sch.get("insecure_params") is not False


def _libraries():
    return [lib for lib, m in manifests().items() if _offers(lib, "ckks", set()) or _offers(lib, "bfv", set())]


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
                          "ops": ["dot_8", "matvec_16", "mean_16", "similarity_40x16"]},
                         # Depth 4: Horner's constants encoded like the accumulator (encode's `like`).
                         {"libraries": [library], "schemes": ["ckks"], "params": [DEEP],
                          "ops": ["poly_4", "logreg_16"]}])
    plan = build(suite, [library], allow_insecure=True)
    store = Store(tmp_path / "a.db")
    run_id = measure(plan, store, env={"threads": 1}).run_id
    recs = list(store.records(run_id))
    assert len(recs) == 14
    # A library whose API lacks a primitive (TenSEAL: rotation by a chosen step) says so; the
    # three general-purpose libraries run every workload.
    lacking = [r for r in recs if r.status == "unsupported" and " has no " in (r.error or "")]
    assert library not in ("seal", "lattigo", "openfhe") or not lacking
    bad = [(r.scheme, r.op, r.status, r.error) for r in recs if r.status != "ok" and r not in lacking]
    assert not bad
    assert all(r.check_passed and r.median_ns > 0 and r.workload["variant"] == "portable"
               for r in recs if r not in lacking)


DEEP = {"N": 4096, "q_bits": [40, 30, 30, 30, 30], "p_bits": [40], "scale_bits": 30}  # 4 levels, insecure
ROUTINES = {"inner_sum", "inner_product", "linear_transform"}


@pytest.mark.parametrize("library", _libraries())
def test_native_variants_run_checked_where_the_library_has_the_routines(library, tmp_path, driver_pool):
    """Native variants: every decrypted result checked against the portable variant's reference on
    the libraries whose capabilities list the routines; the others say they lack them."""
    driver_pool(library)
    suite = Suite(name="native-test", policy={"min_samples": 2, "max_samples": 2, "warmup": 0, "budget_s": 0.1},
                  cases=[{"libraries": [library], "schemes": ["bfv", "bgv"],
                          "params": [{"N": 4096, "q_bits": [40, 40], "p_bits": [40], "t": 65537}],
                          "ops": ["dot_8_native", "matvec_8_native", "tally_16_native"]},
                         {"libraries": [library], "schemes": ["ckks"],
                          "params": [{"N": 2048, "q_bits": [40, 30], "p_bits": [40], "scale_bits": 30}],
                          "ops": ["dot_8_native", "matvec_16_native", "mean_16_native", "similarity_40x16_native"]},
                         {"libraries": [library], "schemes": ["ckks"], "params": [DEEP],
                          "ops": ["poly_3_native", "logreg_16_native"]}])
    plan = build(suite, [library], allow_insecure=True)
    store = Store(tmp_path / "n.db")
    run_id = measure(plan, store, env={"threads": 1}).run_id
    recs = list(store.records(run_id))
    assert len(recs) == 12 and all(r.workload["variant"] == "native" for r in recs)
    for r in recs:
        deep = r.op in ("poly_3_native", "logreg_16_native")
        offered = _offers(library, r.scheme, ROUTINES | ({"poly_eval"} if deep else set()))
        if offered:
            assert r.status == "ok" and r.check_passed and r.median_ns > 0, (r.scheme, r.op, r.error)
        elif r.scheme in _schemes(library):
            assert r.status == "unsupported" and " has no " in r.error, (r.scheme, r.op, r.error)


def test_tenseal_routines_run_checked_at_secure_parameters(tmp_path, driver_pool):
    """TenSEAL cannot run insecure rings: its sum, dot and polyval are run at the common chains,
    every result checked, and what it lacks (a standalone rescale, a linear transformation) is
    named."""
    driver_pool("tenseal")
    suite = Suite(name="tenseal-native", policy={"min_samples": 2, "max_samples": 2, "warmup": 0, "budget_s": 0.1},
                  cases=[{"libraries": ["tenseal"], "schemes": ["bfv"], "params": ["c8192"],
                          "ops": ["dot_64_native", "tally_64_native", "matvec_8_native"]},
                         {"libraries": ["tenseal"], "schemes": ["ckks"], "params": ["c16384"],
                          "ops": ["poly_3_native", "dot_64_native"]}])
    plan = build(suite, ["tenseal"])
    store = Store(tmp_path / "t.db")
    run_id = measure(plan, store, env={"threads": 1}).run_id
    by_op = {(r.scheme, r.op): r for r in store.records(run_id)}
    for key in (("bfv", "dot_64_native"), ("bfv", "tally_64_native"), ("ckks", "poly_3_native")):
        r = by_op[key]
        assert r.status == "ok" and r.check_passed and r.median_ns > 0, (key, r.error)
    assert "linear_transform" in by_op[("bfv", "matvec_8_native")].error
    assert "rescale" in by_op[("ckks", "dot_64_native")].error


def _schemes(library: str) -> set[str]:
    path = project_root() / "protocol" / "capabilities" / f"{library}.json"
    return set(json.loads(path.read_text())["schemes"]) if path.exists() else set()


def _ckks_libraries():
    """Those that control CKKS levels (mod_switch) and rotate: what the deep workloads need."""
    return [lib for lib in manifests() if _offers(lib, "ckks", {"mod_switch", "rotate", "rescale"})]


def _run_once(driver, program, inputs: dict[str, np.ndarray]) -> dict:
    from fhemark.drivers.protocol import Sample, Vector
    if "apps-deep" not in driver.setups:
        driver.request("setup", setup_id="apps-deep", scheme="ckks", params=DEEP, rotations=[1, 2, 4, 8],
                       allow_insecure=True)
        driver.setups.add("apps-deep")
    padded = {k: np.pad(np.asarray(v, dtype=np.float64), (0, DEEP["N"] // 2 - len(v))) for k, v in inputs.items()}
    sample = Sample(inputs={k: Vector.of(v) for k, v in padded.items()}, scalars={})
    return driver.request("run", setup_id="apps-deep", program=program, samples=[sample])


@pytest.mark.parametrize("library", _ckks_libraries())
def test_encrypted_logreg_classifies_as_the_sigmoid_does(library, driver_pool):
    """The quality metric of logreg: classification agreement between the decrypted predictions
    (>= 0.5) and the true sigmoid (z >= 0) over every record. It is computed here, not recorded
    with the op: a record's workload facts are fixed when the op is made, before any sample."""
    from fhemark.model.apps.workloads import logreg_agreement
    driver = driver_pool(library)
    plain = Plain("ckks", DEEP["N"] // 2)
    op = lookup("logreg_16", "ckks")
    inputs = op.gen(plain, np.random.default_rng(5))
    res = _run_once(driver, op.program("ckks").wire(), inputs)
    from fhemark.drivers.protocol import Vector
    got = Vector(**res["samples"][0]["outputs"]["z"]).array()
    assert np.max(np.abs(got - op.expect(plain, inputs, {}))) < 2 ** -10
    assert logreg_agreement(plain, inputs, got, 16) >= 0.99
    assert res["levels"]["t21"] == 0  # four levels consumed of four


@pytest.mark.parametrize("library", _ckks_libraries())
def test_encode_like_a_value_that_is_no_ciphertext_is_a_clear_error(library, driver_pool):
    from fhemark.errors import DriverError
    from fhemark.model.program import step
    driver = driver_pool(library)
    head = [step("px", "encode", "x"), step("cx", "encrypt_pk", "px")]
    tail = [step("ca", "add_plain", "cx", "pk2"), step("pz", "decrypt", "ca"), step("z", "decode", "pz")]
    for like, says in (("nope", "names no value"), ("px", "not a ciphertext"), ("pk", "not a ciphertext")):
        program = {"steps": head + [step("pk2", "encode", "x", like=like)] + tail, "timed": [
            {"name": "ca", "steps": ["ca"]}], "outputs": ["z"], "noise": [], "sizes": [], "levels": []}
        with pytest.raises(DriverError, match=f"like.*{says}") as err:
            _run_once(driver, program, {"x": np.zeros(8)})
        assert err.value.kind == "internal"
    # and the driver still answers
    program = {"steps": head + [step("pk2", "encode", "x", like="cx")] + tail,
               "timed": [{"name": "ca", "steps": ["ca"]}], "outputs": ["z"], "noise": [], "sizes": [], "levels": []}
    out = _run_once(driver, program, {"x": np.full(8, 0.5)})["samples"][0]["outputs"]["z"]
    from fhemark.drivers.protocol import Vector
    assert np.allclose(Vector(**out).array()[:8], 1.0, atol=1e-3)


def test_the_cost_model_adds_up_single_ops_from_the_same_run_only():
    from fhemark.analyse.cost import predict
    from fhemark.report.tables import app_tables

    def rec(op, ns, run="r1", lib="seal"):
        return record(op=op, median_ns=ns, run_id=run, library=lib, scheme="ckks",
                      params={"name": "c8192", "q_bits": [60, 40, 40, 60]},
                      slots=4096, status="ok", title=op,
                      workload={"workload": "dot", "size": 16, "block": 16, "variant": "portable"}
                      if op.startswith("dot") else None,
                      ci95_ns=[ns * 0.9, ns * 1.1], samples_ns=[ns] * 6, job_key=f"{run}{lib}{op}")
    singles = [rec("mul_relin", 3000.0), rec("rescale", 500.0), rec("rotate_1", 2000.0), rec("add", 100.0)]
    dot = rec("dot_16", 20000.0)
    p = predict(dot, [dot] + singles + [rec("add", 1e9, run="r0")])  # another run's add is not used
    assert p.steps == {"mul_relin": 1, "rescale": 1, "rotate": 4, "add": 4} and p.missing == []
    assert p.ns == 3000 + 500 + 4 * 2000 + 4 * 100
    # Level-aware: the rotations and additions after the rescale have 3 of the chain's 4 primes left.
    assert p.ns_levels == 3000 + 500 + 0.75 * (4 * 2000 + 4 * 100)
    lacking = predict(dot, [dot] + singles[:2])
    assert lacking.ns is None and lacking.missing == ["add", "rotate_1"]
    (table,) = app_tables([dot] + singles)
    row = dict(zip(table.columns, table.rows[0]))
    assert row["model: level-aware / flat"] == "9.8 µs / 11.9 µs"
    assert row["measured / model"] == f"{20000 / 9800:.2f} / {20000 / 11900:.2f}"
    assert row["throughput (instances; time each)"].startswith(f"{256 / 20e-6:,.4g}/s (256;")  # 4096 slots / 16


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
    run_id = measure(plan, store, env={"threads": 1}).run_id
    (rec,) = store.records(run_id)
    assert rec.status == "ok" and rec.check_passed and rec.workload["workload"] == "zmul"
