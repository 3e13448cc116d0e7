"""The contract between drivers: every driver decrypts every case to the same
expected values (exact for BFV/BGV, within the tolerance for CKKS)."""

import json

import numpy as np
import pytest

from fhemark import conformance
from fhemark.drivers import manifests
from fhemark.messages import Sample, Vector

CASES = conformance.load()
LIBRARIES = sorted(manifests())


def test_cases_file_is_generated_from_the_catalog():
    assert CASES == json.loads(json.dumps(conformance.generate())), "protocol/conformance/cases.json is stale: run python -m fhemark.conformance"


def _setup(driver, case, caps):
    setup_id = f"conf-{case['scheme']}-{json.dumps(case['params'], sort_keys=True)}"
    if setup_id not in driver.setups:
        driver.request("setup", setup_id=setup_id, scheme=case["scheme"], params=case["params"], **CASES["setup"])
        driver.setups.add(setup_id)
    return setup_id


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_driver_conforms(driver_pool, library, case):
    driver = driver_pool(library)
    caps = driver.request("capabilities")
    ops = caps["schemes"].get(case["scheme"], {}).get("ops")
    if ops is None:
        pytest.skip(f"{library} has no {case['scheme']}")
    missing = {s["op"] for s in case["program"]["steps"]} - set(ops)
    if missing:
        pytest.skip(f"{library} does not offer {sorted(missing)}")
    setup_id = _setup(driver, case, caps)
    dtype = np.int64 if case["tolerance"] == 0 else np.float64
    sample = Sample(inputs={n: Vector.of(np.array(v, dtype=dtype)) for n, v in case["inputs"].items()},
                    scalars=case["scalars"])
    result = driver.request("run", setup_id=setup_id, program=case["program"], samples=[sample])
    got = Vector(**result["samples"][0]["outputs"]["z"]).array()
    want = conformance.dense(case["expected"]["z"])
    if case["tolerance"] == 0:
        got, want = got.astype(np.uint64), want.astype(np.uint64)
    assert got.shape == want.shape
    if case["tolerance"] == 0:
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, f"{bad.size} slots differ, first at {bad[:5].tolist()}: got {got[bad[:5]].tolist()}, want {want[bad[:5]].tolist()}"
    else:
        assert np.max(np.abs(got - want)) <= case["tolerance"]
    assert set(result["samples"][0]["ns"]) == set(case["program"]["timed"])


def test_published_schemas_are_generated_from_the_models():
    from pathlib import Path
    from fhemark.messages import schemas
    root = Path(__file__).resolve().parents[1] / "protocol" / "schema"
    for name, schema in schemas().items():
        assert json.loads((root / name).read_text()) == json.loads(json.dumps(schema)), \
            f"protocol/schema/{name} is stale: run python -m fhemark.messages"
