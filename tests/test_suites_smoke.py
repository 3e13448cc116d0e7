"""Every shipped suite runs as a user runs it, in its smoke form (`fhemark run --suite X --smoke`): the
command line in a process of its own, its drivers pinned as in a real run (conftest.py: each xdist
worker's to a core of its own), the thread axis as written, every case, library, scheme and op, one
sample per slice at each case's smallest ring. What a smoke run cannot do here is said in one line,
and each such line must give an expected reason (a case above the smoke form's ring, a library or
version not built here), never hide a crash. Nothing here judges a time.

The whole set costs about 40 minutes of one core (measured below), above what the CI run can add:
`make test` runs the suites whose smoke run takes at most SMOKE_CI_S (every one but threads, apps and
study4, whose TenSEAL keys, 64-bit TFHE-rs multiply and netlists take 35 of the 40 minutes), and
FHEMARK_SMOKE=all runs every one (each skipped one says so, with its measured time). Threads' own
axis is run here by the thread-list test below."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fhemark.drivers.registry import manifests
from fhemark.measure import affinity
from fhemark.plan.smoke import SMOKE_MAX_N
from fhemark.plan.suites import builtin_names, thread_counts
from fhemark.store.sqlite import Store

# A line of the run's stderr that leaves something out: the smoke form's, or a library's not built here.
_SMOKE_SKIP = re.compile(rf"smoke: skipped (\w+) cases\[\d+\] \(.*\): its smallest ring is N = (\d+), above the "
                         rf"smoke form's largest, N = {SMOKE_MAX_N} \(.*\); run the suite without --smoke to measure it")
_NOT_BUILT = re.compile(r"skipped (\S+): (.*)")
_OPTIONAL = re.compile(r"skipped (\S+) \(optional in this suite: its driver is not built\); `make drivers` includes it.*")
# study4's BFV/BGV netlists at t = 2 are there to show the depth at which decryption fails: a full run
# records the same wrong results (and exits 1), so its smoke form must fail them the same way and no other.
_EXPECTED_FAILURES = {"study4": re.compile(r"failed: \S+ b[fg]v N=\d+ compare_\d+: wrong_result: .*")}

# Seconds each suite's smoke run took on this project's 2-core VM (2026-12-06, the longest of 1-3 runs,
# other tests running beside it): what dominates is each suite's own heaviest part (apps: TFHE-rs's
# 64-bit multiply, 80 s a sample; study4: TFHE-rs netlists of 1411 gates and BFV netlists at N = 16384;
# threads and headline: TenSEAL's keys at N = 16384, 18 s a setup, once per process and thread count;
# quick and apps: 300 jobs of 6 slices each), not its samples.
SMOKE_S = {"bootstrap": 2, "heir": 5, "study1": 18, "study3": 23, "tenseal": 58, "study2": 72, "versions": 137,
           "headline": 130, "quick": 253, "threads": 331, "study4": 810, "apps": 941}
SMOKE_CI_S = 260


def selected(name: str) -> None:
    took = SMOKE_S.get(name, 0)  # a suite not measured yet runs
    if took > SMOKE_CI_S and os.environ.get("FHEMARK_SMOKE", "").lower() != "all":
        pytest.skip(f"the smoke run of a suite above {SMOKE_CI_S} s (here ~{took} s) runs with FHEMARK_SMOKE=all")


def smoke_run(tmp_path: Path, suite: str) -> tuple[subprocess.CompletedProcess, Store]:
    """`fhemark run --suite SUITE --smoke`, building nothing (make setup did), into a store of its own."""
    db = tmp_path / "smoke.db"
    proc = subprocess.run([sys.executable, "-m", "fhemark.cli", "run", "--suite", suite, "--smoke", "--no-build",
                           "--db", str(db)], capture_output=True, text=True, cwd=tmp_path, timeout=1200,
                          env={**os.environ, "COLUMNS": "4000"})  # a line is one line
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc, Store(db)


def check_skips(name: str, stderr: str) -> list[str]:
    """Every line that leaves something out gives one of the expected reasons; the libraries left out."""
    known, left_out = manifests(), []
    for line in (x.strip() for x in stderr.splitlines()):
        if m := _SMOKE_SKIP.fullmatch(line):
            assert m.group(1) == name and int(m.group(2)) > SMOKE_MAX_N, line
        elif line.startswith("smoke: nothing of suite"):
            assert line == f"smoke: nothing of suite {name} is left to run in its smoke form (every case is skipped above)"
        elif m := _OPTIONAL.fullmatch(line):
            assert not known[m.group(1)].available, line
            left_out.append(m.group(1))
        elif m := _NOT_BUILT.fullmatch(line):
            lib = known[m.group(1)]
            # a version is a build of its own that a smoke run never starts; a pinned driver whose
            # toolchain is here is built by make setup (its absence is a broken build, not a skip)
            assert not lib.available and ("@" in m.group(1) or not lib.buildable), line
            assert m.group(2) == lib.why_unavailable(), line
            left_out.append(m.group(1))
        elif line.startswith("failed:"):
            assert name in _EXPECTED_FAILURES and _EXPECTED_FAILURES[name].fullmatch(line), line
        else:
            assert not line.startswith(("skipped", "smoke:")), line
    return left_out


def check_records(name: str, store: Store) -> None:
    """One smoke run, marked so: every planned job has its records, each in the suite's smoke name with
    `smoke: true` in its environment, its latency drivers pinned as a real run pins them."""
    runs = store.runs()
    assert len(runs) == 1 and runs[0]["suite"] == f"{name}-smoke", runs
    run_id = runs[0]["run_id"]
    recs = list(store.records(run_id))
    # every job has its records, but those of a library that lacks the scheme (`libraries: all` plans
    # every built library, and the run skips the ones without it)
    done, jobs = store.done_keys(run_id), store.run_plan(run_id)["jobs"]
    measured = {(r.library, r.scheme) for r in recs}
    assert done <= {j["key"] for j in jobs}
    assert not [j for j in jobs if j["key"] not in done and (j["library"], j["scheme"]) in measured]
    assert recs and all(r.suite == f"{name}-smoke" and r.env.get("smoke") is True for r in recs)
    if len(affinity.allowed()) > 1:  # one core: nothing to pin to that the OS would not pick
        assert all("pinned to core" in r.env["driver_cpus"] for r in recs)
    sampled = [r for r in recs if r.status == "ok" and r.mode == "latency" and r.sample_process]  # not depth probes
    assert sampled and all(not r.warmup_ns for r in sampled)
    # one sample per slice (driver process x interleaved round): the fewest the policy's structure allows
    assert all(len(r.samples_ns) == len(set(zip(r.sample_process, r.sample_round))) for r in sampled)


@pytest.mark.parametrize("name", builtin_names())
def test_every_suite_runs_in_its_smoke_form(name, tmp_path):
    selected(name)
    proc, store = smoke_run(tmp_path, name)
    check_skips(name, proc.stderr)
    if name == "bootstrap":  # every case at N = 2^16: left out, said, and the run ends successfully
        assert proc.returncode == 0 and "smoke: nothing of suite bootstrap is left to run" in proc.stderr, proc.stderr
        assert not store.runs()
        return
    assert proc.returncode == int("failed:" in proc.stderr), proc.stdout[-3000:] + proc.stderr
    check_records(name, store)
    if name == "threads":  # `threads: all`: every count from 1 to this host's cores, as written
        assert {r.threads for r in store.records()} == set(thread_counts("all"))


def test_a_suite_with_a_thread_list_runs_in_its_smoke_form(tmp_path):
    """`threads: [1, 2]`: a job per count, each in a driver process started with that count."""
    (tmp_path / "t.yaml").write_text(
        "name: two-counts\nthreads: [1, 2]\npolicy: {processes: 2, rounds: 2, min_samples: 8}\ncases:\n"
        "  - libraries: [seal, openfhe]\n    schemes: [ckks]\n    params: [c8192]\n    ops: [mul_relin, rotate_1]\n")
    proc, store = smoke_run(tmp_path, str(tmp_path / "t.yaml"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    check_skips("two-counts", proc.stderr)
    check_records("two-counts", store)
    recs = list(store.records())
    assert {(r.library, r.op, r.threads) for r in recs} == {(lib, op, t) for lib in ("seal", "openfhe")
                                                            for op in ("mul_relin", "rotate_1") for t in (1, 2)}
    assert all(len(r.samples_ns) == 4 and set(r.sample_process) == {0, 1} for r in recs)  # one per slice
