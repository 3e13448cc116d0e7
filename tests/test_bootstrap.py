"""CKKS bootstrapping through the same pipeline, on a small ring: INSECURE on
purpose (the secure N = 2^16 set needs ~21 GB and lives in the opt-in suite)."""

import pytest

from fhemark.drivers.registry import available
from fhemark.measure.runner import Runner
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite, load
from fhemark.store.sqlite import Store


def test_bootstrap_suite_is_opt_in_and_secure():
    suite = load("bootstrap")
    assert suite.cases[0].params[0]["N"] == 65536
    assert "Opt-in" in suite.description


@pytest.mark.skipif("lattigo" not in available(), reason="lattigo driver not built here")
# lattigo_bootstrap_dense: the set of Lattigo's own bootstrapping benchmark (benchmarks/fidelity_bootstrap.py),
# whose residual secret is dense (N/2 nonzero); its bootstrapping keys live under the bootstrapping
# parameters' own secret (Lattigo's default, h = 192), which the record reports with their modulus.
@pytest.mark.parametrize("preset", ["lattigo_bootstrap_default", "lattigo_bootstrap_dense"])
def test_lattigo_bootstrap_small_ring(tmp_path, preset):
    suite = Suite(name="boot", policy={"min_samples": 1, "max_samples": 1, "warmup": 0, "budget_s": 1},
                  cases=[{"libraries": ["lattigo"], "schemes": ["ckks"], "ops": ["bootstrap"],
                          "params": [{"preset": preset, "N": 4096}]}])
    store = Store(tmp_path / "b.db")
    run_id = store.start_run("boot", "h", True, {}, {})
    Runner(build(suite, available(), allow_insecure=True), store, run_id, {"threads": 1}).execute()
    (rec,) = store.records(run_id)
    assert rec.status == "ok", rec.error
    assert rec.insecure and rec.params_match
    assert rec.precision_bits > 15 and rec.precision_bits_before > 15
    assert rec.setup_s > 0 and rec.peak_rss_bytes > 10**8
    assert rec.levels["cz"] > 0  # bootstrapping raised the level
    eff = rec.effective_params  # judged where its bootstrapping keys live, with the secret as drawn
    assert eff["key_log_qp"] > eff["log_qp"] and eff["secret"] == "sparse_ternary" and eff["hamming_weight"] == 192
    assert f"log QP {eff['key_log_qp']:g}" in rec.security["hestd2018"]["note"]


def test_a_bootstrapping_set_is_judged_at_its_keys_modulus_with_its_sparse_secret():
    """Lattigo's N16QP1546H192H32 as its driver reports it at N = 2^16: the ciphertexts' residual
    modulus (log QP 725) with a dense secret would read 256 bits; its bootstrapping keys live at log QP
    1546 under a secret of Hamming weight 192, which is what an attacker faces (Lattigo documents 128)."""
    from fhemark.drivers.protocol import Effective
    from fhemark.measure.records import security_of

    eff = Effective(N=65536, q_bits=[60] + [40] * 9, p_bits=[61] * 5, log_q=420.0, log_qp=725.0,
                    preset="lattigo_bootstrap_default", secret="sparse_ternary", hamming_weight=192, key_log_qp=1546.0)
    sec = security_of("rlwe", eff)["hestd2018"]
    assert sec.bits == 128 and 130 < sec.estimated_bits < 160, sec.describe()
    assert "log QP 1546" in sec.note and "h=192" in sec.note
    dense_residual = security_of("rlwe", eff.model_copy(update={"key_log_qp": None, "secret": None}))["hestd2018"]
    assert dense_residual.bits == 256  # what the record said when judged on the residual modulus alone


CHAIN_THEN_BOOTSTRAP = '''
from fhemark.workload import Uniform, Workload

def compute(c):
    x, y = c.encrypted("x"), c.encrypted("y")
    for _ in range(8):
        x = c.rescaled(c.mul(x, y))
    return c.bootstrap(x)

W = Workload("chain_then_bootstrap", compute, schemes=("ckks",), precision_bits=5.0,
             inputs={"x": Uniform(-1, 1, length=16), "y": Uniform(-1, 1, length=16)})
'''


@pytest.mark.skipif("lattigo" not in available(), reason="lattigo driver not built here")
def test_a_bootstrap_after_products_keeps_the_precision_of_a_fresh_one(tmp_path):
    """Lattigo's Bootstrap hands back its output at the default scale whatever its input's; a product
    rescaled by a chain prime leaves a scale a little off 2^40, and the ratio it drops read 21 bits here
    (16 at N = 2^16) where a fresh input reads 25. The driver carries the ratio in the output's scale.
    N = 4096: INSECURE, marked so."""
    from fhemark.advise import measuring
    from fhemark.model.workload_file import load as load_workload
    path = tmp_path / "chain.py"
    path.write_text(CHAIN_THEN_BOOTSTRAP)
    (w,) = load_workload(path)
    spec = {"preset": "lattigo_bootstrap_default", "N": 4096}
    suite = measuring.suite("boot-chain", [measuring.case("lattigo", "ckks", spec, [w.name, "bootstrap"])],
                            measuring.search_policy(1, 2), 128, "hestd2018", 1, [w], insecure=True)
    recs = {r.op: r for r in measuring.run_suite(suite, ["lattigo"], None)}
    chained, fresh = recs[w.name], recs["bootstrap"]
    assert chained.status == "ok" and fresh.status == "ok" and chained.insecure, chained.error
    assert chained.precision_bits > fresh.precision_bits - 1.5, (chained.precision_bits, fresh.precision_bits)
