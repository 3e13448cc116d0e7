import os
import tempfile
from collections import Counter

import pytest

from fhemark.drivers.registry import manifests
from fhemark.drivers.supervise import Driver


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
        return pool[library]

    yield get
    for d in pool.values():
        d.stop()


def pytest_configure(config):
    """Tests measure only to check results, never to judge a time, so each test process gets a
    host lease of its own: the two workers of `pytest -n 2` (and a benchmark a developer left
    running) do not wait for one another, and no test reads a lease another process holds."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ["FHEMARK_LEASE"] = os.path.join(tempfile.mkdtemp(prefix="fhemark-test-lease-"), worker)


# Libraries whose setups take seconds to tens of seconds (key generation for programmable
# bootstrapping): their tests share one worker, so each setup is built once per session, not once
# per worker. Everything else is spread by xdist's load balancing.
_HEAVY_SETUPS = ("concrete", "tfhe-rs", "tfhe_bool", "binfhe")


def pytest_collection_modifyitems(config, items):
    for item in items:
        heavy = next((lib for lib in _HEAVY_SETUPS if lib in item.nodeid), None)
        if heavy:
            item.add_marker(pytest.mark.xdist_group("heavy-setups"))


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
