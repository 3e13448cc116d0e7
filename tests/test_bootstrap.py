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
def test_lattigo_bootstrap_small_ring(tmp_path):
    suite = Suite(name="boot", policy={"min_samples": 1, "max_samples": 1, "warmup": 0, "budget_s": 1},
                  cases=[{"libraries": ["lattigo"], "schemes": ["ckks"], "ops": ["bootstrap"],
                          "params": [{"preset": "lattigo_bootstrap_default", "N": 4096}]}])
    store = Store(tmp_path / "b.db")
    run_id = store.start_run("boot", "h", True, {}, {})
    Runner(build(suite, available(), allow_insecure=True), store, run_id, {"threads": 1}).execute()
    (rec,) = store.records(run_id)
    assert rec.status == "ok", rec.error
    assert rec.insecure and rec.params_match
    assert rec.precision_bits > 15 and rec.precision_bits_before > 15
    assert rec.setup_s > 0 and rec.peak_rss_bytes > 10**8
    assert rec.levels["cz"] > 0  # bootstrapping raised the level
