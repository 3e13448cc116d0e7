"""Linters are part of the test command: ruff for every Python file, go vet for the Go driver."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "src", "tests",
                           "benchmarks", "drivers"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_go_vet_is_clean():
    if shutil.which("go") is None:
        pytest.skip("go not installed: the Lattigo driver is not built here either")
    proc = subprocess.run(["go", "vet", "./..."], cwd=ROOT / "drivers" / "lattigo", capture_output=True, text=True,
                          timeout=600, env={**os.environ, "GOTOOLCHAIN": os.environ.get("GOTOOLCHAIN", "local")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
