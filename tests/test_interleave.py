"""Libraries compared on one op take turns request by request inside each round (policy.interleave:
sample), so that their samples see the same moments of a shared host; `slice` keeps the older
design, each library's whole slice in turn. The samples' ticks say which it was."""

from dataclasses import replace

import pytest
from test_supervision import FAKE, T

from fhemark.drivers import registry as drivers_registry
from fhemark.measure import latency
from fhemark.measure import runner as run_mod
from fhemark.measure.runner import Runner
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

TWIN = replace(FAKE, library="twin")


@pytest.fixture
def two_libraries(monkeypatch):
    monkeypatch.setattr(latency, "TICK_S", 1e-9)  # a sample a turn: the fake driver's add takes microseconds
    both = {"fake": FAKE, "twin": TWIN}
    monkeypatch.setattr(run_mod, "manifests", lambda: both)
    monkeypatch.setattr(drivers_registry, "manifests", lambda: both)


def _ticks(tmp_path, interleave: str) -> dict[str, list[int]]:
    suite = Suite(name="turns", policy={"warmup": 1, "min_samples": 6, "max_samples": 6, "min_sample_us": 0,
                                        "interleave": interleave},
                  cases=[{"libraries": ["fake", "twin"], "schemes": ["bfv"],
                          "params": [{"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}], "ops": ["add"]}])
    store = Store(tmp_path / f"{interleave}.db")
    run_id = store.start_run("turns", "h", True, {}, {})
    Runner(build(suite, ["fake", "twin"], allow_insecure=True), store, run_id, {"threads": 1}).execute()
    recs = {r.library: r for r in store.records(run_id)}
    assert {lib: r.status for lib, r in recs.items()} == {"fake": "ok", "twin": "ok"}
    assert all(len(r.sample_tick) == len(r.samples_ns) == 6 for r in recs.values())
    return {lib: r.sample_tick for lib, r in recs.items()}


def test_libraries_take_turns_request_by_request(two_libraries, tmp_path):
    ticks = _ticks(tmp_path, "sample")
    shared = set(ticks["fake"]) & set(ticks["twin"])
    assert len(shared) >= 3, ticks  # turn after turn, each library's request beside the other's


def test_slice_by_slice_measures_one_library_whole_then_the_next(two_libraries, tmp_path):
    ticks = _ticks(tmp_path, "slice")
    first, second = sorted(ticks.values(), key=min)
    assert max(first) < min(second), ticks
