"""Throughput mode (policy mode: throughput): k driver processes run a job at once, k grows until
the host is busy, and every output of every process is checked. Small insecure rings, fake and
fault drivers: behaviour, never timing thresholds."""

import sys
from pathlib import Path

import pytest

from fhemark.drivers import registry as drivers_registry
from fhemark.drivers.registry import Manifest
from fhemark.measure import measure, throughput
from fhemark.measure import runner as run_mod
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

HERE = Path(__file__).parent
T = 12289
SET = {"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}
POLICY = {"warmup": 1, "min_samples": 4, "max_samples": 8, "budget_s": 0.5, "timeout_s": 20, "mode": "throughput"}


def registry(monkeypatch, *argv: str) -> None:
    m = Manifest("fault", HERE, (sys.executable, str(HERE / "fault_driver.py"), *argv), "nothing")
    monkeypatch.setattr(run_mod, "manifests", lambda: {"fault": m})
    monkeypatch.setattr(drivers_registry, "manifests", lambda: {"fault": m})


def records(tmp_path, ops, policy=POLICY) -> dict[str, dict]:
    suite = Suite(name="tp", policy=policy, cases=[{"schemes": ["bfv"], "params": [SET], "ops": ops}])
    store = Store(tmp_path / "t.db")
    run_id = measure(build(suite, ["fault"], allow_insecure=True), store, env={"threads": 1}).run_id
    return {r.op: r for r in store.records(run_id)}


def test_throughput_grows_k_until_the_host_is_busy_and_records_every_k(monkeypatch, tmp_path):
    registry(monkeypatch)
    monkeypatch.setattr(throughput, "host_cores", lambda: 4)  # the fault driver reports no CPU time: k to 4
    r = records(tmp_path, ["add"])["add"]
    assert r.status == "ok" and r.check_passed is True and r.mode == "throughput"
    curve = r.throughput_by_batch
    assert [b["batch"] for b in curve][:3] == [1, 2, 4][:len(curve)] and r.batch in [b["batch"] for b in curve]
    best = next(b for b in curve if b["batch"] == r.batch)
    assert r.throughput_per_s == best["throughput_per_s"] == max(b["throughput_per_s"] for b in curve)
    lo, hi = r.throughput_ci95
    assert lo <= r.throughput_per_s <= hi
    # every process's samples are the record's, tagged with the process they came from
    assert len(set(r.sample_process)) == r.batch and len(r.samples_ns) == best["samples"]
    assert r.throughput_cores == 4 and r.throughput_peak_rss_bytes is not None


def test_a_wrong_output_in_one_of_the_k_processes_fails_the_job(monkeypatch, tmp_path):
    """Process 0 answers correctly (it alone runs k = 1); the second process answers wrong: the
    job fails as wrong_result, never a fast result."""
    registry(monkeypatch, "add=wrong_second")
    monkeypatch.setenv("FAULT_CLAIM", str(tmp_path / "claim"))
    monkeypatch.setattr(throughput, "host_cores", lambda: 4)
    r = records(tmp_path, ["add"])["add"]
    assert r.status == "wrong_result" and r.check_passed is False and r.median_ns is None


def test_latency_records_say_their_mode(monkeypatch, tmp_path):
    registry(monkeypatch)
    r = records(tmp_path, ["add"], {**POLICY, "mode": "latency"})["add"]
    assert r.mode == "latency" and "throughput_per_s" not in r.model_fields_set


def test_max_batch_bounds_k(monkeypatch, tmp_path):
    registry(monkeypatch)
    monkeypatch.setattr(throughput, "host_cores", lambda: 64)
    r = records(tmp_path, ["add"], {**POLICY, "max_batch": 2})["add"]
    assert [b["batch"] for b in r.throughput_by_batch] in ([1], [1, 2]) and r.batch <= 2


@pytest.mark.parametrize("mode", ["fast", "Throughput"])
def test_an_unknown_mode_is_refused(mode):
    with pytest.raises(ValueError, match="mode"):
        Suite(name="x", policy={"mode": mode}, cases=[{"schemes": ["bfv"], "params": [SET], "ops": ["add"]}])


def test_policy_fields_added_later_keep_the_keys_of_jobs_that_do_not_use_them():
    """A baseline measured before `mode` and `max_batch` existed still matches (compare, --resume):
    the fields enter a job's key only when set; a throughput job is another case."""
    from fhemark.plan.jobs import _dump
    from fhemark.plan.suites import Policy
    assert "mode" not in _dump(Policy()) and "max_batch" not in _dump(Policy())
    case = {"schemes": ["bfv"], "params": [SET], "ops": ["add"]}
    key = {mode: build(Suite(name="k", policy={"mode": mode}, cases=[case]), ["seal"], allow_insecure=True).jobs[0].key
           for mode in ("latency", "throughput")}
    plain = build(Suite(name="k", cases=[case]), ["seal"], allow_insecure=True).jobs[0].key
    assert key["latency"] == plain != key["throughput"]


def test_throughput_processes_spread_over_the_cores_while_latency_drivers_share_one(monkeypatch, tmp_path):
    """The runner pins every driver to the measuring core (measure/affinity.py); a throughput job
    frees its process first, so that its k processes are not held to one core."""
    registry(monkeypatch)
    monkeypatch.setattr(throughput, "host_cores", lambda: 2)
    monkeypatch.setattr(run_mod, "measuring_cpus", lambda threads: frozenset({0}))
    seen, real = [], throughput.saturate

    def spy(job, op, prep, out, drv, *rest):
        seen.append(drv.cpus)
        return real(job, op, prep, out, drv, *rest)
    monkeypatch.setattr(throughput, "saturate", spy)
    assert records(tmp_path, ["add"])["add"].status == "ok"
    assert seen == [None]
