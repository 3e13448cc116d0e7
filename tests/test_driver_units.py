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
