"""Threads as a sweep axis (suites, plan, runner) and parallelism measured from the drivers' CPU time:
no timing thresholds, only what a user relies on (a job per thread count, the count asked recorded,
one driver process per count, the CPU/wall ratio present and marked where it says one core)."""

from __future__ import annotations

import os

from made_records import record
from typer.testing import CliRunner

from fhemark import cli as cli_mod
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite, thread_counts
from fhemark.report.text import parallelism_mark
from fhemark.store.sqlite import Store

SMALL = {"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": 12289}


def test_threads_expand_into_jobs_per_count_and_max_is_the_hosts_cores():
    assert thread_counts(1) == [1] and thread_counts([1, 2, 2]) == [1, 2]
    assert thread_counts([1, "max"]) == list(dict.fromkeys([1, os.cpu_count() or 1]))
    s = Suite(name="t", threads=[1, 2], cases=[{"libraries": ["seal"], "schemes": ["bfv"], "params": [SMALL],
                                                "ops": ["add", "mul_relin"]},
                                               {"libraries": ["seal"], "schemes": ["bgv"], "params": [SMALL],
                                                "ops": ["add"], "threads": 3}])
    plan = build(s, ["seal"], allow_insecure=True)
    got = sorted((j.scheme, j.op, j.threads) for j in plan.jobs)
    assert got == [("bfv", "add", 1), ("bfv", "add", 2), ("bfv", "mul_relin", 1), ("bfv", "mul_relin", 2),
                   ("bgv", "add", 3)]
    assert len({j.key for j in plan.jobs}) == 5  # a thread count is part of the case's identity
    assert {(g.scheme, g.threads) for g in plan.groups} == {("bfv", 1), ("bfv", 2), ("bgv", 3)}


def test_a_bad_thread_count_is_one_line(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nthreads: [1, many]\ncases:\n  - {schemes: [bfv], params: [c8192], ops: [add]}\n")
    r = CliRunner().invoke(cli_mod.app, ["run", "--suite", str(suite), "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 2 and "threads" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output


def test_each_count_runs_in_its_own_driver_process_and_is_recorded(tmp_path):
    suite = tmp_path / "s.yaml"
    # c8192: a multiplication of ~2 ms, long enough a region for its CPU time to say something (>= 1 ms)
    suite.write_text("name: s\nthreads: [1, 2]\npolicy: {min_samples: 2, max_samples: 2}\ncases:\n"
                     "  - {libraries: [seal], schemes: [bfv], params: [c8192], ops: [mul_relin, add]}\n")
    db = tmp_path / "t.db"
    r = CliRunner().invoke(cli_mod.app, ["run", "--suite", str(suite), "--allow-insecure", "--db", str(db),
                                         "--report", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    recs = sorted(Store(db).records(), key=lambda x: (x.op, x.threads))
    assert [(x.op, x.threads) for x in recs] == [("add", 1), ("add", 2), ("mul_relin", 1), ("mul_relin", 2)]
    for x in recs:  # SEAL has no threads: it says so, and the CPU time shows about one core
        assert x.threads_used == 1 and x.threads_honoured is False
        if x.op == "mul_relin":
            assert x.parallelism is not None and 0.3 < x.parallelism < 1.7
        else:  # a region of microseconds: the CPU clock's own cost would dominate, so no figure
            assert x.parallelism is None
    assert "threads" in r.stdout


def test_parallelism_marks():
    assert parallelism_mark(record(threads=2, parallelism=1.02)) == "1c"
    assert parallelism_mark(record(threads=2, parallelism=1.8)) == ""
    assert parallelism_mark(record(threads=1, parallelism=1.0)) == ""
    assert parallelism_mark(record(threads=1, parallelism=3.5)) == ">t"
    assert parallelism_mark(record(threads=2, parallelism=None)) == ""


def test_a_thread_axis_runs_pinned_as_the_shipped_threads_suite_writes_it(tmp_path):
    """`threads: all` (suites/threads.yaml) and a list reach the run's environment as an axis, not a
    count: each count's pinning is recorded, and the run completes on the pinned path (conftest pins
    every worker's drivers, as a real run does). Both ended in an internal error when the axis was
    compared with the number of cores."""
    from fhemark.measure.metadata import environment

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    for axis in ("all", [1, "max"]):
        words = environment(axis, None)["driver_cpus"]
        assert words.count("thread(s):") == len(thread_counts(axis)) or cores == 1, words
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nthreads: all\npolicy: {min_samples: 2, max_samples: 2}\ncases:\n"
                     f"  - {{libraries: [seal], schemes: [bfv], params: [{SMALL}], ops: [add]}}\n")
    db = tmp_path / "t.db"
    r = CliRunner().invoke(cli_mod.app, ["run", "--suite", str(suite), "--allow-insecure", "--db", str(db),
                                         "--report", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert sorted(x.threads for x in Store(db).records()) == thread_counts("all")
