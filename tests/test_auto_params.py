"""A library's own choice of parameters (PROTOCOL.md "auto_params"): OpenFHE's driver answers it,
`fhemark choose` asks every library whose capabilities offer it and ranks the answer as
`<library>-auto`."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from fhemark.advise import choose as chooser
from fhemark.advise.advisor import Need
from fhemark.advise.auto_params import auto_params, spec_of
from fhemark.errors import DriverError
from fhemark.model.security import estimate
from fhemark.model.workload_file import load

EXAMPLES = Path(__file__).parent.parent / "examples"
CKKS_128 = Need("ckks", 2, 20.0, None, 1, 128, "hestd2018")


def test_openfhe_driver_answers_its_own_ckks_choice(driver_pool):
    """Through the driver, end to end: a ring the HE standard allows at 128 bits for the primes
    OpenFHE chose, a chain holding the depth, the scale asked; the first prime of the size asked."""
    driver = driver_pool("openfhe")  # built here, or the test skips (fails where the toolchain is but the build broke)
    assert driver.request("capabilities")["schemes"]["ckks"]["auto_params"] is True
    got = driver.request("auto_params", scheme="ckks", depth=2, scale_bits=40, first_bits=50, security=128)
    n, q, p = got["N"], got["q_primes"], got["p_primes"]
    assert n >= 8192 and n & (n - 1) == 0 and len(q) >= 3 and p and got["scale_bits"] == 40
    assert estimate(n, sum(math.log2(x) for x in q + p), "hestd2018").bits >= 128
    assert round(math.log2(q[0])) == 50 and all(round(math.log2(x)) == 40 for x in q[1:])


def test_openfhe_driver_refuses_a_choice_it_does_not_offer(driver_pool):
    driver = driver_pool("openfhe")
    with pytest.raises(DriverError) as e:
        driver.request("auto_params", scheme="bfv", depth=2, security=128)
    assert e.value.kind == "unsupported"
    with pytest.raises(DriverError) as e:
        driver.request("auto_params", scheme="ckks", depth=2, scale_bits=90, security=128)
    assert e.value.kind == "invalid_params" and "scalingModSize" in str(e.value)


def test_the_choice_is_a_set_the_driver_builds(driver_pool):
    """What choose verifies: the spec made of OpenFHE's answer sets up the same ring and chain."""
    driver = driver_pool("openfhe")
    spec = auto_params("openfhe", CKKS_128, None)
    assert spec is not None, "OpenFHE's own set could not be read through its driver"
    assert len(spec["q_bits"]) == 3 and spec["p_bits"]
    eff = driver.request("setup", setup_id="auto", scheme="ckks", params=spec)["effective"]
    assert eff["N"] == spec["N"] and len(eff["q_bits"]) == len(spec["q_bits"]) and eff["log_qp"] > 0


def test_a_library_that_offers_no_choice_is_not_asked_for_one(driver_pool):
    driver_pool("seal")  # built here, or the test skips
    assert auto_params("seal", CKKS_128, None) is None
    assert auto_params("openfhe", replace(CKKS_128, table="guidelines2024"), None) is None  # not OpenFHE's table
    assert auto_params("no-such-library", CKKS_128, None) is None


def test_a_choice_as_a_spec_takes_the_sizes_asked_near():
    primes = {"N": 16384, "q_primes": [1125899904679937, 1099510054913, 1099511922689],
              "p_primes": [1152921504606748673], "scale_bits": 40}
    assert spec_of(primes, 41) == {"N": 16384, "q_bits": [50, 40, 40], "p_bits": [60], "scale_bits": 40}
    assert spec_of({**primes, "scale_bits": None}, 41)["scale_bits"] == 41


def test_choose_asks_every_library_and_ranks_its_choice_by_name(monkeypatch):
    """No library is named in choose: each is asked, and an answer the search did not try is
    searched as `<library>-auto`."""
    (w,) = load(EXAMPLES / "statistics.py")
    w = replace(w, schemes=("ckks",))
    asked = []

    def fake_auto(lib, need, found):
        asked.append((lib, need.scheme, found["N"]))
        # b: a set the search does not build (its own special prime); c: a set already tried
        return {**found, "p_bits": [61]} if lib == "b" else (found if lib == "c" else None)

    def fake_search(w, need, lib, space, repeats, db, say, origin="search", deadline=None, eval_s=None):
        return chooser.Candidate(lib, need.scheme, space[0], origin, verified=True)
    monkeypatch.setattr(chooser, "_search", fake_search)
    monkeypatch.setattr(chooser, "_measure", lambda ans, store, say: None)
    ans = chooser.choose(w, {"a": ("ckks",), "b": ("ckks",), "c": ("ckks",)}, None, 128, "hestd2018", 1,
                         auto=fake_auto)
    assert [lib for lib, _, _ in asked] == ["a", "b", "c"] and {s for _, s, _ in asked} == {"ckks"}
    assert [(c.library, c.origin) for c in ans.chosen] == [("a", "search"), ("b", "search"), ("c", "search"),
                                                          ("b", "b-auto")]
    assert ans.chosen[3].spec["p_bits"] == [61]


def test_a_library_s_own_choice_starts_at_the_scale_the_search_s_shortfalls_asked(monkeypatch):
    """Where the search verified no set (OpenFHE at depth 40: 11.8 bits at 2^34, the ring's largest scale
    short too), the library's own choice is asked at the least scale the shortfalls asked for, not the
    rules of thumb's first scale, which the search already found short."""
    (w,) = load(EXAMPLES / "statistics.py")
    w = replace(w, schemes=("ckks",))
    asked = []

    def fake_search(w, need, lib, space, repeats, db, say, origin="search", deadline=None, eval_s=None):
        return chooser.Candidate(lib, need.scheme, None, origin, scale_floor=47)
    monkeypatch.setattr(chooser, "_search", fake_search)
    monkeypatch.setattr(chooser, "_measure", lambda ans, store, say: None)
    chooser.choose(w, {"a": ("ckks",)}, None, 128, "hestd2018", 1,
                   auto=lambda lib, need, found: asked.append(found) or None)
    assert asked == [{"scale_bits": 47}]


def test_under_a_budget_every_library_s_rings_come_before_any_other_way(monkeypatch, tmp_path):
    """A deep program on two libraries that bootstrap: both libraries' rings searched, then their
    bootstrapping sets, then their own choices of a ring. A --budget spent early cuts the last, never the
    second library's rings (depth 60: the first library's search and bootstrapping took 50 minutes)."""
    from made_workloads import chain
    w = chain(tmp_path, 40, 16.0, "deep40")
    origins = []

    def fake_search(w, need, lib, space, repeats, db, say, origin="search", deadline=None, eval_s=None):
        origins.append((lib, origin))  # the rings hold it at N = 2^17 only: bootstrapping at 2^16 is worth trying
        return chooser.Candidate(lib, need.scheme, {**space[0], "N": 131072}, origin, verified=True)
    monkeypatch.setattr(chooser, "_search", fake_search)
    monkeypatch.setattr(chooser, "_measure", lambda ans, store, say: None)
    chooser.choose(w, {"lattigo": ("ckks",), "openfhe": ("ckks",)}, None, 128, "hestd2018", 1,
                   auto=lambda lib, need, found: {**found, "p_bits": [60] * 6} if lib == "openfhe" else None)
    assert origins == [("lattigo", "search"), ("openfhe", "search"), ("lattigo", "lattigo-bootstrap"),
                       ("openfhe", "openfhe-bootstrap"), ("openfhe", "openfhe-auto")], origins


def test_a_budget_is_shared_among_the_ways_still_to_be_tried(monkeypatch, tmp_path):
    """--budget: each ring search and bootstrapping set begun gets an even share of what is left for the ways
    still to be tried, an unused share passing on; a library no ring of which holds the program takes no
    share (depth 40 under 20 minutes: Lattigo's rings took the whole budget and OpenFHE's were never begun).
    A library's bootstrapping set at N = 2^16 counts once its rings are found not to hold the depth there."""
    import time

    from made_workloads import chain
    w = chain(tmp_path, 40, 16.0, "deep40")
    shares = {}

    def fake_search(w, need, lib, space, repeats, db, say, origin="search", deadline=None, eval_s=None):
        shares[(lib, origin)] = round((deadline - time.monotonic()) / 1000, 2)
        return chooser.Candidate(lib, need.scheme, None, origin)  # nothing holds it
    monkeypatch.setattr(chooser, "_search", fake_search)
    monkeypatch.setattr(chooser, "_measure", lambda ans, store, say: None)
    monkeypatch.setattr(chooser.memory, "available", lambda: 1 << 40)  # every bootstrapping set fits
    chooser.choose(w, {"seal": ("ckks",), "lattigo": ("ckks",), "openfhe": ("ckks",)}, None, 128, "hestd2018", 1,
                   budget_s=1000.0)
    # Lattigo's rings: 1/2 (two libraries' rings; SEAL's hold nothing); OpenFHE's: 1/2 (its rings and Lattigo's
    # bootstrapping, counted once Lattigo's rings failed); Lattigo's bootstrapping 1/2, OpenFHE's the rest
    assert shares == {("lattigo", "search"): 0.5, ("openfhe", "search"): 0.5, ("lattigo", "lattigo-bootstrap"): 0.5,
                      ("openfhe", "openfhe-bootstrap"): 1.0}, shares
    # on a machine where no bootstrapping set fits (8 GB), those take no share: their rows say so at once
    monkeypatch.setattr(chooser.memory, "available", lambda: 8 << 30)
    shares.clear()
    chooser.choose(w, {"lattigo": ("ckks",), "openfhe": ("ckks",)}, None, 128, "hestd2018", 1, budget_s=1000.0)
    assert shares[("lattigo", "search")] == 0.5 and shares[("openfhe", "search")] == 1.0, shares


def test_a_computation_s_requirements_are_derived_once_per_scheme(monkeypatch, tmp_path):
    """choose asks what the program needs for every scheme, per library and way, for the memory
    prediction and for a pinned set: the cleartext replays behind it run once per computation and
    scheme, and every step reads the same answer."""
    from fhemark.model import requirements
    from made_workloads import chain
    w = chain(tmp_path, 6, 16.0, "once")
    before = requirements.derive.cache_info()

    def fake_search(w, need, lib, space, repeats, db, say, origin="search", deadline=None, eval_s=None):
        return chooser.Candidate(lib, need.scheme, space[0], origin, verified=True)
    monkeypatch.setattr(chooser, "_search", fake_search)
    monkeypatch.setattr(chooser, "_measure", lambda ans, store, say: None)
    chooser.choose(w, {"seal": ("ckks",), "tenseal": ("ckks",)}, None, 128, "hestd2018", 1)
    after = requirements.derive.cache_info()
    # one derivation (the program's one scheme), read again by each library's search
    assert after.misses - before.misses == 1 and after.hits - before.hits >= 2, (before, after)
