"""One measurement on a host at a time: a second fhemark that would measure while another one
measures waits for it and says who it waits for (the fake driver: no timing is asserted, only
the order of events)."""

from __future__ import annotations

import subprocess
import sys

from test_supervision import fake_registry  # noqa: F401 - the fixture

from fhemark.measure import lease, measure
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite

SUITE = Suite(name="leased", policy={"min_samples": 2, "max_samples": 2, "warmup": 0, "budget_s": 0.1},
              cases=[{"schemes": ["bfv"], "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": 12289}],
                      "ops": ["add"]}])
HOLD = """
import sys, time
from fhemark.measure import lease
with lease.hold("the other run"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
    released = time.time()
print(released, flush=True)
"""


def test_a_second_measurement_waits_for_the_host_lease_and_says_whose(fake_registry, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FHEMARK_LEASE", str(tmp_path / "lease"))
    other = subprocess.Popen([sys.executable, "-c", HOLD, "2"], stdout=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == "held"
    waited: list[str] = []
    measured = measure(build(SUITE, ["fake"], allow_insecure=True), env={"threads": 1}, on_wait=waited.append)
    released = float(other.stdout.readline())
    assert other.wait(timeout=30) == 0
    assert waited == [f"pid {other.pid}: the other run"]
    # every job was measured after the other process let go
    assert measured.records and all(r.status == "ok" for r in measured.records)
    assert all(r.timestamp - r.elapsed_s >= released - 0.01 for r in measured.records)


def test_a_lone_measurement_takes_the_lease_without_waiting(fake_registry, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FHEMARK_LEASE", str(tmp_path / "lease"))
    waited: list[str] = []
    measure(build(SUITE, ["fake"], allow_insecure=True), env={"threads": 1}, on_wait=waited.append)
    assert waited == []
    with lease.hold("a nested one"), lease.hold("inside it"):  # a process never waits for itself
        pass
