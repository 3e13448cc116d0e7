"""Drivers' own unit tests, where running them costs seconds (the Lattigo driver's `go test`;
TFHE-rs's would rebuild tfhe in the test profile, minutes: its driver is covered by conformance)."""

import os
import subprocess
from pathlib import Path

import pytest

from fhemark.drivers.registry import manifests

LATTIGO = Path(__file__).resolve().parents[1] / "drivers" / "lattigo"


def test_lattigo_driver_go_tests():
    if not manifests()["lattigo"].available:  # no Go 1.24+: the driver was not built either
        pytest.skip(manifests()["lattigo"].why_unavailable())
    proc = subprocess.run(["go", "test", "-count=1", "-mod=readonly", "./..."], cwd=LATTIGO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "GOTOOLCHAIN": os.environ.get("GOTOOLCHAIN", "local")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_openfhe_driver_switches_keys_as_the_set_asks(driver_pool):
    """OpenFHE's key switching (PROTOCOL.md, setup): HYBRID with the driver's dnum unless the params name BV, which
    makes no special primes, so N = 4096 holds q 43+43 at 128 bits where HYBRID's own 60-bit P does not; the reply
    says which ran, and a set naming what the driver cannot do is refused, not silently changed."""
    from fhemark.errors import DriverError
    from fhemark.model.params import resolve

    driver = driver_pool("openfhe")
    bv = resolve({"N": 4096, "q_bits": [43, 43], "p_bits": [], "t_bits": 20, "key_switching": "bv", "digit_size": 20}, "bgv")
    eff = driver.request("setup", setup_id="ks-bv", scheme="bgv", params=bv.wire(), rotations=[1])["effective"]
    assert (eff["key_switching"], eff["digit_size"], eff.get("p_bits"), eff["N"]) == ("BV", 20, [], 4096), eff
    hybrid = resolve({"N": 8192, "q_bits": [45, 45], "p_bits": [60], "t_bits": 20}, "bgv").wire()
    assert "key_switching" not in hybrid  # the default is not sent: drivers without the choice never see the key
    eff = driver.request("setup", setup_id="ks-hybrid", scheme="bgv", params=hybrid, rotations=[])["effective"]
    assert eff["key_switching"] == "HYBRID" and "digit_size" not in eff and eff.get("p_bits") == [60], eff
    with pytest.raises(DriverError) as e:
        driver.request("setup", setup_id="ks-bad", scheme="bgv", params={**hybrid, "key_switching": "ghs"}, rotations=[])
    assert e.value.kind == "invalid_params", e.value
    with pytest.raises(DriverError) as e:  # HYBRID at N = 4096: OpenFHE's own P, not the ring, is past the bound
        driver.request("setup", setup_id="ks-small", scheme="bgv", params={**bv.wire(), "key_switching": "hybrid",
                                                                           "digit_size": None, "p_bits": [43]}, rotations=[])
    assert e.value.kind in ("insecure_params", "invalid_params"), e.value
