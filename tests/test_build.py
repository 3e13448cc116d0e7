"""A suite builds the drivers it uses the first time it needs them, and only those."""

import io

import pytest
from rich.console import Console

from fhemark.drivers import build as build_mod
from fhemark.drivers.registry import Manifest
from fhemark.plan.suites import Suite


def manifest(tmp_path, name, schemes, script="touch driver-binary", toolchain=("bash",)):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "build.sh").write_text(f"echo building {name}\n{script}\n")
    return Manifest(name, folder, (str(folder / "driver-binary"),), f"what {name} needs", tuple(toolchain),
                    ("bash", "build.sh"), tuple(schemes), 600)


@pytest.fixture
def registry(tmp_path, monkeypatch):
    found = {"rlwe": manifest(tmp_path, "rlwe", ["bfv", "ckks"]),
             "bits": manifest(tmp_path, "bits", ["tfhe_bool"]),
             "broken": manifest(tmp_path, "broken", ["bfv"], script="echo compiler error; exit 3"),
             "notool": manifest(tmp_path, "notool", ["bfv"], toolchain=("no-such-compiler",))}
    monkeypatch.setattr(build_mod, "manifests", lambda: found)
    return found


def suite(libraries="all", schemes=("bfv",)):
    return Suite(name="s", cases=[{"libraries": libraries, "schemes": list(schemes), "params": ["c8192"]}])


def test_only_the_drivers_a_suite_can_use_are_built(registry):
    # libraries: all -> the drivers declaring one of its schemes and whose toolchain is here
    assert build_mod.needed(suite()) == ["rlwe", "broken"]
    assert build_mod.needed(suite(schemes=["tfhe_bool"])) == ["bits"]
    assert build_mod.needed(suite(libraries=["bits"], schemes=["tfhe_bool"])) == ["bits"]


def test_a_build_reports_its_outcome_and_a_built_driver_is_not_rebuilt(registry):
    out = io.StringIO()
    done = build_mod.build_needed(suite(), Console(file=out, width=200))
    assert done == {"rlwe": "built", "broken": "failed"}
    text = out.getvalue()
    assert "first build about 10 min" in text and "broken driver build failed (exit 3" in text
    assert "compiler error" in text
    assert registry["rlwe"].available and build_mod.needed(suite()) == ["broken"]  # built once, then not again
    assert "rlwe" in build_mod.needed(suite(), missing_only=False)  # setup --suite brings it up to date


def test_a_relative_cache_folder_is_made_absolute_once_at_start(tmp_path, monkeypatch):
    """FHEMARK_CACHE=relcache means ./relcache where fhemark started, for fhemark and for every build
    script and driver it starts in their own folders (it wrote the Lattigo binary into the checkout)."""
    import os

    from fhemark.drivers.registry import manifests
    from fhemark.locations import cache_dir, settle_environment
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FHEMARK_CACHE", "relcache")
    settle_environment()
    assert os.environ["FHEMARK_CACHE"] == str(tmp_path / "relcache") and cache_dir() == tmp_path / "relcache"
    lattigo = manifests()["lattigo"].command[0]
    assert lattigo.startswith(str(tmp_path / "relcache"))


@pytest.mark.parametrize("library, version", [("openfhe", "3.10"), ("tenseal", "3.11"), ("concrete", "3.11")])
def test_a_venv_driver_without_its_python_is_skipped_with_one_line(tmp_path, library, version):
    """A machine without the CPython a driver's wheel needs: its build.sh says so in one line, with the fix,
    exits 0 (the driver is then unavailable, not a failed build) and makes nothing in the cache."""
    import shutil
    import subprocess
    from pathlib import Path

    tools = tmp_path / "bin"  # a PATH with the shell's tools and no python at all
    tools.mkdir()
    for tool in ("bash", "dirname", "cut", "sort", "ls"):
        (tools / tool).symlink_to(shutil.which(tool))
    var = "FHEMARK_PYTHON" + version.replace(".", "")
    script = Path(__file__).parents[1] / "drivers" / library / "build.sh"
    out = subprocess.run([str(tools / "bash"), str(script)], capture_output=True, text=True, timeout=60,
                         env={"PATH": str(tools), "HOME": str(tmp_path), var: "/nonexistent",
                              "FHEMARK_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{library} driver skipped: no CPython {version} found; install it "
                                       f"(e.g. pyenv install {version}) or set {var}"]
    assert not (tmp_path / "cache").exists()


def test_the_builds_a_suite_needs_run_side_by_side(tmp_path, monkeypatch):
    """A Go compile beside pip installs (the quick suite's four builds took 60 s one after another on a fresh
    machine): each of two builds here finishes only once the other has started, so one after another would
    fail the first (it gives up after 20 s)."""
    meet = tmp_path / "meet"
    meet.mkdir()

    def waits_for(me, other):
        return (f"touch {meet}/{me}; for i in $(seq 400); do [ -f {meet}/{other} ] && touch driver-binary && exit 0; "
                f"sleep 0.05; done; echo {other} never started; exit 1")
    found = {"go": manifest(tmp_path, "go", ["bfv"], script=waits_for("go", "pip")),
             "pip": manifest(tmp_path, "pip", ["ckks"], script=waits_for("pip", "go"))}
    monkeypatch.setattr(build_mod, "manifests", lambda: found)
    out = io.StringIO()
    assert build_mod.build_needed(suite(schemes=("bfv", "ckks")), Console(file=out, width=200)) == \
        {"go": "built", "pip": "built"}, out.getvalue()
    assert "go driver up to date" in out.getvalue() and "pip driver up to date" in out.getvalue()
