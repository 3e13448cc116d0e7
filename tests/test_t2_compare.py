"""Study 4's claim, measured: the bitwise comparison in BFV with t = 2 works
until the noise budget runs out, then stops decrypting correctly."""

from fhemark.measure import measure
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store


def test_bfv_t2_comparison_fails_at_a_measured_depth(tmp_path):
    suite = Suite(name="t2", policy={"warmup": 0, "min_samples": 2, "max_samples": 2, "budget_s": 0.1},
                  cases=[{"libraries": ["seal"], "schemes": ["bfv"],
                          "params": [{"N": 4096, "q_bits": [36, 36], "p_bits": [37], "t": 2, "batching": False}],
                          "ops": ["compare_1", "compare_2", "compare_4", "compare_8"]}])
    store = Store(tmp_path / "t.db")
    run_id = measure(build(suite, ["seal"]), store, env={"threads": 1}).run_id
    recs = {r.op: r for r in store.records(run_id)}
    order = ["compare_1", "compare_2", "compare_4", "compare_8"]
    status = [recs[o].status for o in order]
    assert status[0] == "ok" and "wrong_result" in status
    first_bad = status.index("wrong_result")
    assert all(s == "wrong_result" for s in status[first_bad:])  # deeper circuits fail too
    depths = [recs[o].workload["circuit"]["multiplicative"] for o in order]
    assert depths == sorted(depths)
    noise = [recs[o].noise_budget_bits for o in order[:first_bad]]
    assert noise == sorted(noise, reverse=True)
