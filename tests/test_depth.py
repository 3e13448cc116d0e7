"""The depth probe measures where decryption fails; nothing is assumed."""

from fhemark.measure import measure
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store


def test_depth_probe_on_seal_finds_a_finite_limit(tmp_path):
    suite = Suite(name="depth", policy={"max_depth": 12},
                  cases=[{"libraries": ["seal"], "schemes": ["bfv"], "ops": "depth",
                        "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": 12289}]},
                       {"libraries": ["seal"], "schemes": ["ckks"], "ops": "depth",
                        "params": [{"N": 2048, "q_bits": [40, 30], "p_bits": [40], "scale_bits": 30}]}])
    plan = build(suite, ["seal"], allow_insecure=True)
    store = Store(tmp_path / "d.db")
    run_id = measure(plan, store, env={"threads": 1}).run_id
    recs = {r.scheme: r for r in store.records(run_id)}
    bfv, ckks = recs["bfv"], recs["ckks"]
    assert bfv.status == "ok" and 1 <= bfv.depth < 12 and bfv.depth_limit.startswith(f"at depth {bfv.depth + 1}")
    assert len(bfv.noise_by_depth) == bfv.depth
    assert bfv.noise_by_depth == sorted(bfv.noise_by_depth, reverse=True)
    # CKKS with two ciphertext primes has one rescale: depth 1, then the library refuses.
    assert ckks.status == "ok" and ckks.depth == 1
