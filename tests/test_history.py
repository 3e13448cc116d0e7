"""`fhemark report --history`: every run of one or more stores, case by case in time order, each run
judged against the previous run of the same job on the same host only."""

import time

from fhemark.report.history import collect, write
from fhemark.store.record import checked
from fhemark.store.sqlite import Store


def _rec(median, host, job="j1", op="mul_relin", version="4.4.0"):
    samples = [median * (1 + 0.001 * i) for i in range(12)]
    return {"library": "seal", "scheme": "bfv", "op": op, "params": {"N": 8192, "name": "c8192"}, "status": "ok",
            "check_passed": True, "job_key": job, "median_ns": median, "ci95_ns": [median * 0.99, median * 1.01],
            "samples_ns": samples, "env": {"host": host}, "library_version": version, "timestamp": time.time(),
            "vector_length": None, "suite": "s", "run_id": "r"}


def _run(store, rec):
    run_id = store.start_run("s", "h", False, {}, {})
    store.add(run_id, rec["job_key"], checked(rec))
    store.finish_run(run_id)
    time.sleep(0.01)  # runs are ordered by their start
    return run_id


def test_history_orders_runs_and_flags_a_regression_on_the_same_host_only(tmp_path):
    a, b = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    r1 = _run(a, _rec(1e6, "h1"))
    r2 = _run(a, _rec(2e6, "h1", version="4.5.0"))      # twice as slow on the same host: slower
    r3 = _run(b, _rec(5e5, "h2"))                       # another machine: shown, not compared
    r4 = _run(a, _rec(2e6, "h1", job="j2"))             # the job changed (e.g. its sampling policy)
    (series,) = collect([a, b])
    assert [p.run_id for p in series.points] == [r1, r2, r3, r4]
    verdicts = [p.verdict for p in series.points]
    assert verdicts == ["", "slower", "", "not compared"]
    page = write([a, b], tmp_path / "out").read_text()
    assert "Regressions (1)" in page and "seal BFV c8192 mul_relin" in page and "4.5.0" in page
    assert page.count("Plotly.newPlot('h") == 1  # one figure per op
    assert "<a href='#op0'>seal BFV c8192 mul_relin</a>" in page  # the regression links to its case
    assert "4 runs, 1 case</h1>" in page


def test_history_of_one_run_reads(tmp_path):
    """One run: '1 run', and a category axis (a date axis zoomed into sub-millisecond ticks)."""
    a = Store(tmp_path / "a.db")
    _run(a, _rec(1e6, "h1"))
    page = write([a], tmp_path / "out").read_text()
    assert "1 run, 1 case</h1>" in page and '"xaxis": {"type": "category"}' in page
