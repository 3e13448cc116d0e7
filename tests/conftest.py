import pytest

from fhemark.drivers import manifests
from fhemark.supervise import Driver


@pytest.fixture(scope="session")
def driver_pool():
    """One process per library for the whole session (drivers keep setups)."""
    pool: dict[str, Driver] = {}

    def get(library: str) -> Driver:
        m = manifests()[library]
        if not m.available:
            pytest.skip(f"{library} driver not built here: {m.why_unavailable()}")
        if library not in pool:
            pool[library] = Driver(m)
        return pool[library]

    yield get
    for d in pool.values():
        d.stop()
