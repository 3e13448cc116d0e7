"""A driver that crashes, hangs, runs out of memory, answers garbage or a wrong
result: each job is recorded with its kind, and the run goes on."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from fhemark.drivers import registry as drivers_registry
from fhemark.drivers.registry import Manifest
from fhemark.measure import latency as run_mod_latency
from fhemark.measure import runner as run_mod
from fhemark.measure.runner import Runner
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

HERE = Path(__file__).parent
FAKE = Manifest("fake", HERE, (sys.executable, str(HERE / "fake_driver.py")), "nothing")


@pytest.fixture
def fake_registry(monkeypatch):
    monkeypatch.setattr(run_mod, "manifests", lambda: {"fake": FAKE})
    monkeypatch.setattr(drivers_registry, "manifests", lambda: {"fake": FAKE})


def test_every_failure_is_recorded_with_its_kind_and_the_run_goes_on(fake_registry, tmp_path):
    suite = Suite(name="faults", policy={"warmup": 1, "min_samples": 3, "max_samples": 3, "timeout_s": 3,
                                         "memory_limit_mb": 400, "inputs": "cold"},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ["add", "sub", "mul", "square", "mul_plain", "add_plain", "mul_relin",
                                  "mul_scalar", "square_relin", "keygen_galois_list", "keygen_galois_all"]}])
    plan = build(suite, ["fake"], allow_insecure=True)
    store = Store(tmp_path / "s.db")
    run_id = store.start_run("faults", "h", True, {}, {})
    Runner(plan, store, run_id, {"threads": 1}).execute()
    status = {r.op: (r.status, r.error) for r in store.records(run_id)}
    assert status["add"] == ("ok", None)
    assert status["sub"][0] == "wrong_result" and "slots wrong" in status["sub"][1]
    assert status["mul"][0] == "crashed" and "segfault imitation" in status["mul"][1]
    assert status["square"][0] == "timeout"
    assert status["mul_plain"][0] == "out_of_memory"
    assert status["add_plain"][0] == "internal" and "not protocol v2" in status["add_plain"][1]
    assert status["mul_relin"][0] == "unsupported"
    wrong = next(r for r in store.records(run_id) if r.op == "sub")
    assert wrong.check_passed is False and wrong.median_ns is None and wrong.samples_ns == []
    # Fast ops run as several copies per timed region, and every copy is checked: one wrong copy
    # among many (the first, which a driver decrypting only the last would never see) fails the job.
    add = next(r for r in store.records(run_id) if r.op == "add")
    assert add.copies > 1
    assert status["mul_scalar"][0] == "wrong_result", status["mul_scalar"]
    # A region without its time is an error, never a zero.
    assert status["square_relin"][0] == "internal" and "timed region" in status["square_relin"][1]
    # After the garbage line (add_plain) the driver was restarted, so the jobs after it ran.
    # Every Galois key the time paid for is used: keys for steps 1..8 all made -> ok; the "pow2"
    # set lacks its negative steps -> caught by the rotation that needs one.
    assert status["keygen_galois_list"] == ("ok", None)
    assert status["keygen_galois_all"][0] == "wrong_result" and "z-1" in status["keygen_galois_all"][1]


T = 12289


def _one_add(db: Path, policy: dict):
    """The record of one add job on the fake driver under `policy`, run into the store at `db`."""
    suite = Suite(name="one-add", policy=policy,
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ["add"]}])
    store = Store(db)
    run_id = store.start_run("one-add", "h", True, {}, {})
    Runner(build(suite, ["fake"], allow_insecure=True), store, run_id, {"threads": 1}).execute()
    (rec,) = store.records(run_id)
    return rec


def test_inputs_hot_warms_each_region_and_cold_makes_copies_and_records_say_which(fake_registry, tmp_path):
    """The policy's input state reaches the driver and every record: hot (the default) times one
    copy per region after a warm-up of the same call; cold times copies on operands made before."""
    states = {}
    for inputs in ("hot", "cold", None):
        rec = _one_add(tmp_path / f"{inputs}.db", {"warmup": 1, "min_samples": 3, "max_samples": 3}
                       | ({"inputs": inputs} if inputs else {}))
        states[inputs] = (rec.status, rec.input_state, rec.copies > 1, "1 warm-up step(s)" in rec.notes)
        assert any(n.startswith("inputs: each ciphertext operand is the sum of two encryptions") for n in rec.notes)
    assert states == {"hot": ("ok", "hot", False, True), "cold": ("ok", "cold", True, False),
                      None: ("ok", "hot", False, True)}


def test_without_warm_up_the_first_sample_runs_its_steps_once_and_counts_cold(fake_registry, tmp_path):
    """`warmup: 0` (the search's runs, a deep measurement, a smoke run): the first request is not warmed up,
    a hidden warm-up that ran every step twice (at depth 60 a whole evaluation, 94 s of a verification's
    193); a job of one sample sends no warm-up step, and a hot job's later requests are warmed, its record
    saying its first sample ran cold."""
    got = {}
    for n in (1, 3):
        rec = _one_add(tmp_path / f"{n}.db", {"warmup": 0, "min_samples": n, "max_samples": n})
        got[n] = (rec.status, rec.input_state, len(rec.samples_ns), any("warm-up step(s)" in x for x in rec.notes),
                  run_mod_latency.FIRST_COLD_NOTE in rec.notes)
    assert got == {1: ("ok", "hot", 1, False, True), 3: ("ok", "hot", 3, True, True)}


def test_each_process_makes_its_pool_once_and_no_job_takes_a_pair_twice_in_it(fake_registry, tmp_path, monkeypatch):
    """PROTOCOL.md "Pool": the first request of a driver process that needs a pool sends it whole
    with an id, every later request of that setup names the id alone; within one job and process
    no pair of pool ciphertexts serves twice; a fresh process gets the pool again."""
    from fhemark.drivers.supervise import Driver
    sent = []
    request = Driver.request

    def logged(self, kind, **fields):
        if kind == "run" and fields.get("pool") is not None:
            pool = fields["pool"]
            pairs = [(sm.scalars[f"{v}~a"], sm.scalars[f"{v}~b"]) for sm in fields["samples"]
                     for v in ("x", "y") if f"{v}~a" in sm.scalars]
            sent.append((self.proc.pid if self.alive else None, pool.id, bool(pool.steps), pairs,
                         [st["op"] for st in fields["program"]["steps"]]))
        return request(self, kind, **fields)
    monkeypatch.setattr(Driver, "request", logged)
    # The quick suite's policy: a process's rounds and their warm-ups take every pair a kept pool's
    # size allows for.
    suite = Suite(name="pool", policy={"warmup": 1, "min_samples": 6, "max_samples": 18, "processes": 2, "rounds": 3},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ["add", "rotate_1"]}])
    store = Store(tmp_path / "pool.db")
    run_id = store.start_run("pool", "h", True, {}, {})
    Runner(build(suite, ["fake"], allow_insecure=True), store, run_id, {"threads": 1}).execute()
    assert {(r.op, r.status) for r in store.records(run_id)} == {("add", "ok"), ("rotate_1", "ok")}
    by_process: dict = {}
    for pid, pool_id, whole, pairs, ops in sent:
        by_process.setdefault(pid, []).append((pool_id, whole, pairs, ops))
    assert len(by_process) == 2
    for reqs in by_process.values():
        assert all(pool_id is not None for pool_id, *_ in reqs)
        assert [whole for _, whole, _, _ in reqs] == [True] + [False] * (len(reqs) - 1)
        for rotate in (False, True):
            taken = [pair for _, _, pairs, ops in reqs if ("rotate_rows" in ops) == rotate for pair in pairs]
            assert taken and len(taken) == len(set(taken)), (rotate, taken)


def test_ctrl_c_during_a_hung_job_stops_at_once_and_keeps_what_was_measured(fake_registry, tmp_path):
    """Ctrl-C is turned into a stop at a safe point: the driver in flight is killed, the run
    does not wait for its timeout, and the results already stored stay."""
    suite = Suite(name="stop", policy={"warmup": 1, "min_samples": 3, "max_samples": 3, "timeout_s": 120},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ["add", "square"]}])
    plan = build(suite, ["fake"], allow_insecure=True)
    store = Store(tmp_path / "s.db")
    run_id = store.start_run("stop", "h", True, {}, {})
    runner = Runner(plan, store, run_id, {"threads": 1})
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.execute()
    assert time.monotonic() - t0 < 10  # not the job's 120 s timeout, nor a 10 s polite shutdown
    assert [r.op for r in store.records(run_id)] == ["add"]
    assert not runner.drivers[("fake", 1)].alive  # one driver process per (library, threads)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_after_the_last_safe_point_is_not_lost():
    """A Ctrl-C that lands while the drivers shut down still ends the caller's work: choose runs one
    Runner per candidate, and a swallowed interrupt let it carry on to the end and exit 0."""
    from fhemark.drivers.supervise import deferred_sigint
    cancel = threading.Event()
    with pytest.raises(KeyboardInterrupt):
        with deferred_sigint(cancel):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs between bytecodes; nothing here checks `cancel`
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _fault_runner(monkeypatch, tmp_path, faults: list[str], ops: list[str], on_record=None):
    m = Manifest("fault", HERE, (sys.executable, str(HERE / "fault_driver.py"), *faults), "nothing")
    monkeypatch.setattr(run_mod, "manifests", lambda: {"fault": m})
    monkeypatch.setattr(drivers_registry, "manifests", lambda: {"fault": m})
    suite = Suite(name="f", policy={"warmup": 1, "min_samples": 3, "max_samples": 3, "timeout_s": 20},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ops}])
    store = Store(tmp_path / "f.db")
    run_id = store.start_run("f", "h", True, {}, {})
    runner = Runner(build(suite, ["fault"], allow_insecure=True), store, run_id, {"threads": 1},
                    on_record=(lambda job, recs: on_record(runner, job)) if on_record else None)
    t0 = time.monotonic()
    runner.execute()
    return {r.op: (r.status, r.error) for r in store.records(run_id)}, time.monotonic() - t0


def test_bytes_that_are_not_utf8_lose_at_most_the_job_in_flight(monkeypatch, tmp_path):
    """Non-UTF-8 on stderr (more than a pipe holds) costs nothing; on stdout, it is a stray line:
    the job in flight is lost, the driver restarted, the next job ok; no wait for the timeout."""
    status, took = _fault_runner(monkeypatch, tmp_path, ["add=binerr", "sub=binary"], ["add", "sub", "mul"])
    assert status["add"] == ("ok", None)
    assert status["sub"][0] == "internal" and "not protocol v2" in status["sub"][1]
    assert status["mul"] == ("ok", None) and took < 20


def test_a_driver_killed_between_jobs_gets_its_setup_back(monkeypatch, tmp_path):
    """Killed after the first job (an OOM killer, a user): the next job restarts it with its context
    and keys, and is measured; it is never recorded as 'unknown setup_id'."""
    killed = []

    def kill_once(runner, job):
        if not killed:
            drv = next(iter(runner.drivers.values()))
            os.kill(drv.proc.pid, signal.SIGKILL)
            drv.proc.wait()
            killed.append(job.op)
    status, _ = _fault_runner(monkeypatch, tmp_path, [], ["add", "sub"], kill_once)
    assert killed == ["add"] and status == {"add": ("ok", None), "sub": ("ok", None)}


def test_a_driver_stopped_between_jobs_times_out_even_while_writing(tmp_path):
    """SIGSTOP between two requests: the next request's write fills the pipe and would block for
    good; it is bounded by the request's timeout, and the driver is killed."""
    from fhemark.drivers.supervise import Driver
    from fhemark.errors import DriverError
    drv = Driver(FAKE)
    drv.request("capabilities", timeout_s=30)
    os.kill(drv.proc.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    with pytest.raises(DriverError) as exc:
        drv.request("setup", timeout_s=2, setup_id="s", scheme="bfv", params={"pad": [0] * 200_000})
    assert exc.value.kind == "timeout" and "did not read" in exc.value.message
    assert time.monotonic() - t0 < 10 and not drv.alive


def test_one_writer_per_run_a_second_resume_is_refused(fake_registry, tmp_path):
    """Two `run --resume` of one run at once measured the remaining jobs twice (56 records for 32
    jobs): the run is locked while it is measured, and the second is one line, before it reads or
    stores anything."""
    from fhemark.errors import UserError
    from fhemark.measure import session
    suite = Suite(name="lock", policy={"min_samples": 2, "max_samples": 2},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ["add"]}])
    plan = build(suite, ["fake"], allow_insecure=True)
    store = Store(tmp_path / "l.db")
    first = session.start(store, plan, {}, resume=False, yes=True)
    with pytest.raises(UserError, match="being measured by another fhemark process"):
        session.start(Store(tmp_path / "l.db"), plan, {}, resume=True, yes=True)
    first.lock.close()  # the first run ended (or was interrupted): its run can be resumed
    again = session.start(Store(tmp_path / "l.db"), plan, {}, resume=True, yes=True)
    assert again.run_id == first.run_id


@pytest.mark.parametrize("warmup", [0, 2])
def test_warm_up_samples_are_recorded_or_counted_as_the_policy_says(fake_registry, tmp_path, monkeypatch, warmup):
    """warmup: n keeps the first process's n warm-up samples in warmup_ns, outside the statistics;
    warmup: 0 (study4: circuits of minutes) counts the first sample instead of discarding it. Both
    blocks sat in the wrong branch since 23 Nov: warmup_ns was always empty, and warmup: 0 still
    threw a sample away."""
    from fhemark.measure import latency
    suite = Suite(name="warm", policy={"warmup": warmup, "min_samples": 4, "max_samples": 4, "min_sample_us": 0},
                  cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}],
                          "ops": ["add"]}])
    store = Store(tmp_path / "w.db")
    run_id = store.start_run("warm", "h", True, {}, {})
    sent, real = [], latency.run_checked

    def counting(drv, job, op, prep, program, drawn, out):
        sent.append(len(drawn[1]))  # samples in each request
        return real(drv, job, op, prep, program, drawn, out)
    monkeypatch.setattr(latency, "run_checked", counting)
    Runner(build(suite, ["fake"], allow_insecure=True), store, run_id, {"threads": 1}).execute()
    (r,) = store.records(run_id)
    assert r.status == "ok" and len(r.samples_ns) == 4
    assert len(r.warmup_ns) == warmup
    assert sum(sent) == 4 + warmup  # every sample measured is counted or kept as a warm-up: none thrown away


def test_a_driver_that_made_keys_past_a_gigabyte_is_not_kept_for_the_next_set(fake_registry, tmp_path, monkeypatch):
    """A driver keeps every setup it made: choose's deep measurement would hold a 2^17 set's keys beside its
    bootstrapping set's 16 GB. Past runner.HELD_KEYS_MAX of keys the next parameter set gets a fresh process;
    below it the process serves the next set as before (a process start per set costs a cheap suite seconds)."""
    setup = Runner._setup
    for keys, fresh in ((2 << 30, True), (1 << 20, False)):
        pids = []

        def sized(self, g, setup_id, drv=None, keys=keys):
            result = setup(self, g, setup_id, drv)
            pids.append(self.drivers[("fake", 1)].proc.pid)
            return {**result, "sizes_bytes": {"relin_keys": keys, "galois_key_count": 10 ** 12}}
        monkeypatch.setattr(Runner, "_setup", sized)
        suite = Suite(name="two-sets", policy={"warmup": 0, "min_samples": 1, "max_samples": 1, "processes": 1},
                      cases=[{"schemes": ["bfv"], "ops": ["add"],
                              "params": [{"N": 2048, "q_bits": [b, 36], "p_bits": [37], "t": T} for b in (36, 37)]}])
        store = Store(tmp_path / f"{keys}.db")
        run_id = store.start_run("two-sets", "h", True, {}, {})
        Runner(build(suite, ["fake"], allow_insecure=True), store, run_id, {"threads": 1}).execute()
        assert [r.status for r in store.records(run_id)] == ["ok", "ok"]
        assert len(pids) == 2 and (pids[0] != pids[1]) == fresh, pids
