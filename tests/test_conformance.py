"""The contract between drivers: every driver decrypts every case to the same
expected values (exact for BFV/BGV, within the tolerance for CKKS), including
cases with several copies of an op in one timed region, where every copy is
checked. Which cases a driver must pass is read from its checked-in capability
snapshot (protocol/capabilities/<library>.json), not from what it says today,
so a driver that stops offering an operation fails here instead of skipping."""

import json

import numpy as np
import pytest

from fhemark.drivers import conformance
from fhemark.drivers.registry import manifests
from fhemark.locations import project_root
from fhemark.drivers.protocol import Sample, Vector

CASES = conformance.load()
SECURE = conformance.load(secure=True)
LIBRARIES = sorted(manifests())
SNAPSHOTS = project_root() / "protocol" / "capabilities"


def snapshot(library: str) -> dict:
    path = SNAPSHOTS / f"{library}.json"  # a missing one fails test_every_driver_has_a_snapshot...
    return json.loads(path.read_text()) if path.exists() else {"schemes": {}}


def _promised(library: str, case: dict, secure: bool) -> bool:
    """The driver offers every op of the case, and the case's file is the one for it: a scheme
    whose library cannot run insecure parameters takes the secure cases, every other the insecure."""
    scheme = snapshot(library)["schemes"].get(case["scheme"])
    return (scheme is not None and {s["op"] for s in case["program"]["steps"]} <= set(scheme["ops"])
            and secure == (scheme.get("insecure_params") is False))


PAIRS = [(lib, c, secure) for lib in LIBRARIES for secure, file in ((False, CASES), (True, SECURE))
         for c in file["cases"] if _promised(lib, c, secure)]


def test_cases_file_is_generated_from_the_catalog():
    assert CASES == json.loads(json.dumps(conformance.generate())), \
        "protocol/conformance/cases.json is stale: run python -m fhemark.drivers.conformance"
    assert SECURE == json.loads(json.dumps(conformance.generate_secure())), \
        "protocol/conformance/cases-secure.json is stale: run python -m fhemark.drivers.conformance"


@pytest.mark.parametrize("library", LIBRARIES)
def test_capabilities_match_the_checked_in_snapshot(driver_pool, library):
    """Losing (or silently gaining) an op or a declared deviation is a visible change."""
    caps = driver_pool(library).request("capabilities")
    live = conformance.capability_snapshot(caps)
    assert live == snapshot(library), (f"{library} capabilities differ from protocol/capabilities/{library}.json; "
                                       f"if intended: python -m fhemark.drivers.conformance --snapshot {library}")


def _setup(driver, case, secure):
    setup_id = f"conf-{case['scheme']}-{json.dumps(case['params'], sort_keys=True)}"
    if setup_id not in driver.setups:
        driver.request("setup", setup_id=setup_id, scheme=case["scheme"], params=case["params"],
                       **(SECURE if secure else CASES)["setup"])
        driver.setups.add(setup_id)
    return setup_id


@pytest.mark.parametrize("library,case,secure", PAIRS,
                         ids=[f"{lib}-{c['name']}{'-secure' if sec else ''}" for lib, c, sec in PAIRS])
def test_driver_conforms(driver_pool, library, case, secure):
    driver = driver_pool(library)
    setup_id = _setup(driver, case, secure)
    dtype = np.int64 if case["tolerance"] == 0 else np.float64
    sample = Sample(inputs={n: Vector.of(np.array(v, dtype=dtype)) for n, v in case["inputs"].items()},
                    scalars=case["scalars"])
    result = driver.request("run", setup_id=setup_id, program=case["program"], samples=[sample])
    outputs = result["samples"][0]["outputs"]
    for name, expected in case["expected"].items():
        got = Vector(**outputs[name]).array()
        want = conformance.dense(expected)
        assert got.shape == want.shape, name
        if case["tolerance"] == 0:
            bad = np.flatnonzero(got.astype(np.uint64) != want.astype(np.uint64))
            assert bad.size == 0, (f"{name}: {bad.size} slots differ, first at {bad[:5].tolist()}: "
                                   f"got {got[bad[:5]].tolist()}, want {want[bad[:5]].tolist()}")
        else:
            assert np.max(np.abs(got - want)) <= case["tolerance"], name
    assert set(result["samples"][0]["ns"]) == {r["name"] for r in case["program"]["timed"]}


def test_every_driver_has_a_snapshot_and_every_case_a_driver():
    for library in LIBRARIES:
        assert (SNAPSHOTS / f"{library}.json").exists(), f"no capability snapshot for {library}"
    covered = {c["name"] for _, c, secure in PAIRS if not secure}
    orphans = [c["name"] for c in CASES["cases"] if c["name"] not in covered]
    assert not orphans, f"cases no driver promises to pass: {orphans[:10]}"


def test_published_schemas_are_generated_from_the_models():
    from fhemark.drivers.protocol import schemas
    root = project_root() / "protocol" / "schema"
    for name, schema in schemas().items():
        assert json.loads((root / name).read_text()) == json.loads(json.dumps(schema)), \
            f"protocol/schema/{name} is stale: run python -m fhemark.drivers.protocol"
