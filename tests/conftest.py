import os
import tempfile
from collections import Counter

import pytest

from fhemark.drivers.registry import manifests
from fhemark.drivers.supervise import Driver
from fhemark.measure import affinity


@pytest.fixture(scope="session")
def driver_pool():
    """One process per library for the whole session (drivers keep setups). A driver whose
    toolchain exists here but which is not built fails its tests: its build broke. Only a
    machine without the toolchain skips it."""
    pool: dict[str, Driver] = {}

    def get(library: str) -> Driver:
        m = manifests()[library]
        if not m.available:
            if m.buildable:
                pytest.fail(f"{library} driver is not built although its toolchain ({', '.join(m.toolchain)}) "
                            f"is here: run make drivers and read its build output")
            pytest.skip(f"{library} driver not built here: {m.why_unavailable()}")
        if library not in pool:
            pool[library] = Driver(m)
            pool[library].pin(affinity.measuring_cpus(1))  # as a run pins its drivers (pytest_configure)
        return pool[library]

    yield get
    for d in pool.values():
        d.stop()


def pytest_configure(config):
    """Tests measure only to check results, never to judge a time, so each test process gets a
    host lease of its own: the two workers of `pytest -n 2` (and a benchmark a developer left
    running) do not wait for one another, and no test reads a lease another process holds.
    Drivers are pinned as in every real run (measure/affinity.py), each worker's to a core of its
    own (worker i: the i-th core this process may use, FHEMARK_PIN_CPU), so that the pinned path is
    the one the tests run while two workers' drivers do not take turns on one core; a lone session
    (no xdist) pins to the last core, as a run does."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ["FHEMARK_LEASE"] = os.path.join(tempfile.mkdtemp(prefix="fhemark-test-lease-"), worker)
    if worker.startswith("gw"):
        cores = affinity.allowed()
        os.environ[affinity.PIN_ENV] = str(cores[int(worker[2:]) % len(cores)])


# Setups that take seconds to tens of seconds (key generation for programmable bootstrapping;
# TenSEAL's N = 16384 ring of its poly_eval cases, 13 s): each library's tests share one worker, so
# each setup is built once per session, not once per worker. One group per library, not one for all:
# with two workers one group of them all (half the suite's time) would set the wall time alone.
# Everything else is spread by xdist's load balancing. (nodeid word, group), first match wins:
# "tfhe_bool" names OpenFHE's binfhe cases as well as TFHE-rs', which "tfhe-rs" claims first.
_HEAVY_SETUPS = (("concrete", "concrete"), ("tfhe-rs", "tfhe-rs"), ("tfhe_rs", "tfhe-rs"), ("tfhe_bool", "openfhe-binfhe"),
                 ("binfhe", "openfhe-binfhe"), ("tenseal-ckks/poly_eval", "tenseal-n16384"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the groups above read from the node ids. xdist's own xdist_group marks
    do nothing under pytest 9 (xdist 3.8 renames item._nodeid, which pytest 9 no longer reads), so every
    heavy setup was built on both workers."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BySetup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return next((f"heavy-{g}" for word, g in _HEAVY_SETUPS if word in nodeid), nodeid)

    return BySetup(config, log)


def pytest_terminal_summary(terminalreporter):
    """One line that says what was skipped and why (-q hides skip reasons)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        terminalreporter.write_line("skipped: none")
        return
    reasons = Counter(str(r.longrepr[2]).removeprefix("Skipped: ") if isinstance(r.longrepr, tuple) else "?"
                      for r in skipped)
    terminalreporter.write_line(f"skipped: {len(skipped)} — " + "; ".join(f"{n} x {why}" for why, n in
                                                                          reasons.most_common()))
