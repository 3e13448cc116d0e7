"""Distributed sweeps on a local Dask cluster: the same jobs and checks as a local run, one
benchmark per host at a time, and a worker killed mid-run loses nothing already stored."""

import os
import signal

import pytest

from fhemark.measure import cluster, measure
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

SUITE = Suite(name="cluster-test", policy={"min_samples": 2, "max_samples": 2, "warmup": 0, "budget_s": 0.1},
              cases=[{"libraries": ["seal"], "schemes": ["bfv", "bgv", "ckks"],
                      "params": [{"N": 4096, "q_bits": [40, 40], "p_bits": [40], "t": 65537, "scale_bits": 30}],
                      "ops": ["add", "mul_relin", "rotate_1"]}])


@pytest.fixture(scope="module")
def client():
    c = cluster.connect("local:2")
    yield c
    c.close()
    c.cluster.close()


def _plan(driver_pool):
    driver_pool("seal")
    return build(SUITE, ["seal"], allow_insecure=True)


def _store(tmp_path, name):
    store = Store(tmp_path / f"{name}.db")
    return store, store.start_run("cluster-test", "h", True, {}, {})


def test_a_distributed_run_stores_the_jobs_and_checks_of_a_local_run(tmp_path, driver_pool, client):
    plan = _plan(driver_pool)
    local = Store(tmp_path / "local.db")
    local_id = measure(plan, local, env={"threads": 1}).run_id
    dist, dist_id = _store(tmp_path, "dist")
    seen = []
    cluster.execute(plan, client, dist_id, dist, set(), lambda job, recs: seen.append(job.key))
    want = {(r.job_key, r.op, r.status, r.check_passed) for r in local.records(local_id)}
    got = list(dist.records(dist_id))
    assert {(r.job_key, r.op, r.status, r.check_passed) for r in got} == want
    assert sorted(seen) == sorted(j.key for j in plan.jobs)
    assert all(r.env["host"] and r.env["worker_pid"] for r in got)  # who measured it
    # One benchmark per host at a time: the blocks (one per scheme) ran one after another.
    spans = {}
    for r in got:
        lo, hi = spans.get(r.scheme, (r.timestamp, r.timestamp))
        spans[r.scheme] = (min(lo, r.timestamp - r.elapsed_s), max(hi, r.timestamp))
    ordered = sorted(spans.values())
    assert all(a[1] <= b[0] + 0.05 for a, b in zip(ordered, ordered[1:])), ordered


def test_a_worker_killed_mid_run_loses_nothing_stored(tmp_path, driver_pool, client):
    plan = _plan(driver_pool)
    store, run_id = _store(tmp_path, "killed")
    stored_before_kill: list[str] = []

    def on_record(job, recs):
        if not stored_before_kill:  # the first result is in the store: kill the worker that measured it
            stored_before_kill.extend(r.job_key for r in store.records(run_id))
            os.kill(recs[0].env["worker_pid"], signal.SIGKILL)

    cluster.execute(plan, client, run_id, store, set(), on_record)
    recs = list(store.records(run_id))
    assert stored_before_kill and set(stored_before_kill) <= {r.job_key for r in recs}
    assert sorted(r.job_key for r in recs) == sorted(j.key for j in plan.jobs)  # each once, none lost
    assert all(r.status == "ok" for r in recs)
    assert len({r.env["worker_pid"] for r in recs}) >= 2  # the killed block finished on another worker


def test_a_cluster_spec_that_is_neither_local_nor_tcp_is_one_line():
    from fhemark.errors import UserError
    with pytest.raises(UserError, match="unknown"):
        cluster.connect("udp://x")
    with pytest.raises(UserError, match="local needs a worker count"):
        cluster.connect("local:zero")


def test_a_failed_worker_record_uses_the_protocols_status_words():
    """`crashed`, as the supervisor and docs/export.md spell it: the advisor and choose stop a
    library's search on it, which a record saying `crash` slipped past."""
    from typing import get_args

    from fhemark.drivers.protocol import ErrorValue
    suite = Suite(name="c", cases=[{"libraries": ["seal"], "schemes": ["bfv"], "params": ["c8192"], "ops": ["add"]}])
    job = build(suite, ["seal"]).jobs[0]
    rec = cluster._failed(job, "r1", "its worker failed twice")
    assert rec.status in get_args(ErrorValue.model_fields["kind"].annotation)


def test_a_refused_cluster_leaves_no_run_behind(tmp_path):
    """The cluster is connected before the run is started: a spec refused leaves the store without an
    empty 'unfinished' run that `latest` would then name (and `compare` judge as '24 removed')."""
    from typer.testing import CliRunner

    from fhemark.cli import app
    db = tmp_path / "c.db"
    r = CliRunner().invoke(app, ["run", "--suite", "quick", "--library", "seal", "--db", str(db), "--no-build",
                                 "--cluster", "udp://nowhere"])
    assert r.exit_code == 2 and "udp://nowhere" in r.output
    assert not db.exists() or Store(db).runs() == []


@pytest.mark.parametrize("where", [[], ["--cluster", "local:1"]], ids=["here", "dask"])
def test_the_report_goes_beside_the_store_and_the_last_line_says_where(tmp_path, monkeypatch, driver_pool, where):
    """A run with --db elsewhere wrote its report into ./report/<suite> of the folder it was started
    from: here and on Dask workers alike, it goes beside the store, and the run's last line names it."""
    from typer.testing import CliRunner

    from fhemark.cli import app
    driver_pool("seal")
    (tmp_path / "store").mkdir()
    (tmp_path / "cwd").mkdir()
    suite = tmp_path / "tiny.yaml"
    suite.write_text("name: tiny\npolicy: {warmup: 0, min_samples: 2, max_samples: 2, budget_s: 0.05}\n"
                     "cases:\n  - {libraries: [seal], schemes: [bfv], ops: [add],\n"
                     "     params: [{N: 2048, q_bits: [36, 36], p_bits: [37], t: 12289}]}\n")
    monkeypatch.chdir(tmp_path / "cwd")
    r = CliRunner().invoke(app, ["run", "--suite", str(suite), "--db", str(tmp_path / "store" / "t.db"),
                                 "--allow-insecure", "--no-build", *where], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    report = tmp_path / "store" / "report" / "tiny"
    assert (report / "report.md").is_file() and (report / "report.html").is_file()
    assert list((tmp_path / "cwd").iterdir()) == []
    assert str(report / "report.md") in r.stdout.strip().splitlines()[-1]
