"""Latency drivers measure on one core, the same for every library (measure/affinity.py): every
thread of a driver process, start-up threads included, carries it; throughput mode and the user's
FHEMARK_PIN_CPU=off leave the process to the scheduler; the run's environment says which."""

import os
import sys
from pathlib import Path

import pytest

from fhemark.drivers.registry import Manifest
from fhemark.drivers.supervise import Driver
from fhemark.measure import affinity
from fhemark.measure import runner as run_mod
from fhemark.measure.metadata import environment
from fhemark.measure.runner import Runner
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.report import measured_on
from fhemark.store.sqlite import Store

HERE = Path(__file__).parent
# The fake driver behind a thread started before it answers anything, as Go's runtime starts its own.
STARTS_A_THREAD = ("import runpy, sys, threading, time; threading.Thread(target=time.sleep, args=(600,), daemon=True).start(); "
                   f"sys.argv = ['fake_driver.py']; runpy.run_path({str(HERE / 'fake_driver.py')!r}, run_name='__main__')")
THREADED = Manifest("fake", HERE, (sys.executable, "-c", STARTS_A_THREAD), "nothing")


@pytest.fixture(autouse=True)
def default_pinning(monkeypatch):
    """conftest pins each worker to a core of its own; here the default choice is what is tested."""
    monkeypatch.delenv(affinity.PIN_ENV, raising=False)


two_cores = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(affinity.allowed()) < 2,
                               reason="pinning needs two cores this process may use")


def cores_of(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{pid}/task")}


@pytest.mark.parametrize("env, cores, threads, want", [
    ("", [0, 1], 1, {1}),          # the last core
    ("", [0, 1, 2, 3], 2, {2, 3}),  # the last `threads` cores
    ("", [0, 1], 2, None),         # every core: nothing to pin
    ("", [0], 1, None),
    ("off", [0, 1], 1, None),
    ("0", [0, 1], 1, {0}),
    ("7", [0, 1], 1, None),        # a core this process may not use: not pinned, and said so
])
def test_the_measuring_core_is_the_last_unless_the_user_names_one_or_turns_it_off(monkeypatch, env, cores, threads, want):
    monkeypatch.setenv(affinity.PIN_ENV, env)
    monkeypatch.setattr(affinity, "allowed", lambda: cores)
    got = affinity.measuring_cpus(threads)
    assert got == (frozenset(want) if want is not None else None)
    assert ("not pinned" in affinity.describe([threads])) == (want is None)


@two_cores
def test_every_thread_of_a_pinned_driver_runs_on_its_core_and_unpinning_frees_them():
    core = affinity.allowed()[-1]
    drv = Driver(THREADED)
    try:
        drv.pin(frozenset({core}))
        drv.request("capabilities", timeout_s=30)
        assert len(os.listdir(f"/proc/{drv.proc.pid}/task")) >= 2  # the start-up thread is there
        assert cores_of(drv.proc.pid) == {frozenset({core})}
        drv.pin(None)  # throughput mode's processes spread over the cores
        assert cores_of(drv.proc.pid) == {frozenset(affinity.allowed())}
        drv.pin(frozenset({core}))
        drv.kill()
        drv.request("capabilities", timeout_s=30)  # a restarted process is pinned again
        assert cores_of(drv.proc.pid) == {frozenset({core})}
    finally:
        drv.kill()


@two_cores
def test_a_run_pins_its_latency_drivers_and_records_it(monkeypatch, tmp_path):
    monkeypatch.setattr(run_mod, "manifests", lambda: {"fake": THREADED})
    suite = Suite(name="pinned", policy={"min_samples": 3, "max_samples": 3},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": 65537}],
                          "ops": ["add"]}])
    store = Store(tmp_path / "s.db")
    run = Runner(build(suite, ["fake"], allow_insecure=True), store, store.start_run("pinned", "h", True, {}, {}), {})
    drv = run.driver("fake")
    drv.request("capabilities", timeout_s=30)
    assert cores_of(drv.proc.pid) == {frozenset({affinity.allowed()[-1]})}
    run.close()
    cores = affinity.allowed()
    env = environment(1, None)
    assert env["driver_cpus"] == f"latency drivers pinned to core {cores[-1]} of {len(cores)}"
    assert env["driver_cpus"] in measured_on(env)  # the report's "Measured on" line says it
    monkeypatch.setenv(affinity.PIN_ENV, "off")
    assert environment(1, None)["driver_cpus"] == "not pinned (left to the OS scheduler)"
