"""A library version is part of the library's identity (issue 39): `openfhe@1.5.1` is a driver of
its own, built into its own place in the cache, planned and interleaved like another library, and
every record says which version it measured. The bare name stays the pinned version."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from test_bad_input import cli, one_line
from test_supervision import FAKE, T

from fhemark.drivers import build as build_mod
from fhemark.drivers import registry
from fhemark.drivers.registry import Manifests, Versions, manifests, named
from fhemark.errors import UserError
from fhemark.locations import cache_dir
from fhemark.measure import runner as run_mod
from fhemark.measure.runner import Runner
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.store.sqlite import Store

SMALL = {"N": 2048, "q_bits": [36, 36], "p_bits": [37], "t": T}  # insecure: tests only


# -- names and refusals ----------------------------------------------------------------------------

def test_a_version_is_a_driver_of_its_own_and_the_bare_name_stays_the_pin():
    found = manifests()
    bare, old = found["openfhe"], found["openfhe@1.5.1"]
    assert (bare.library, bare.version) == ("openfhe", "")
    assert (old.library, old.base, old.version) == ("openfhe@1.5.1", "openfhe", "1.5.1")
    assert old.command[0] == str(cache_dir() / "venv-openfhe-1.5.1" / "bin" / "python")
    assert bare.command[0] == str(cache_dir() / "venv-openfhe" / "bin" / "python")  # the default build is unchanged
    pinned = found[f"openfhe@{bare.versions.pinned}"]  # named explicitly: its own name, the pinned build
    assert pinned.library == f"openfhe@{bare.versions.pinned}" and pinned.command == bare.command
    assert found["seal@4.1.2"].command[0] == str(cache_dir() / "venv-seal-4.1.2" / "bin" / "python")
    assert found["seal"].command[0] == sys.executable  # SEAL at its pin runs in fhemark's own venv
    # An alias works with a version, and the record is under the driver's own name.
    assert named("TFHE@1.7.2") == "tfhe-rs@1.7.2" and named("tfhe") == "tfhe-rs"
    assert found["tfhe@1.7.2"].command == (str(cache_dir() / "bin" / "fhemark-tfhe-1.7.2"),)
    assert list(found) == sorted(found)  # iterating gives the bare names only: `libraries: all` means those
    assert "openfhe@1.5.1" in found and "nosuch@1.0" not in found


@pytest.mark.parametrize("name, needles", [
    ("openfhe@0.9.1", ["OpenFHE 0.9.1 is not supported", "openfhe@1.5.1", "openfhe@1.6.1"]),
    ("seal@4.0", ["SEAL 4.0 is not supported", "seal@4.1.2", "seal@4.4.0"]),
    ("lattigo@6.1.0", ["Lattigo 6.1.0 is not supported", "drives one version"]),
])
def test_an_unsupported_version_is_refused_in_one_line_naming_the_supported_ones(tmp_path, name, needles):
    suite = tmp_path / "s.yaml"
    suite.write_text(f"name: s\ncases:\n  - libraries: [{name}]\n    schemes: [bfv]\n    params: [c8192]\n"
                     "    ops: [add]\n")
    for args in (["run", "--suite", suite, "--db", tmp_path / "x.db", "--no-build"],
                 ["run", "--db", tmp_path / "x.db", "--library", name, "--no-build"],
                 ["setup", "--library", name]):
        one_line(cli(*args), *needles)
    assert not (tmp_path / "x.db").exists()


def _driver_json(tmp_path, versions) -> Path:
    folder = tmp_path / "drivers" / "lib"
    folder.mkdir(parents=True)
    (folder / "driver.json").write_text(json.dumps({"library": "lib", "command": ["x"], "versions": versions}))
    return folder / "driver.json"


@pytest.mark.parametrize("versions, says", [
    ({"pinned": "2.0", "supported": ["1.0"], "command": ["x-${VERSION}"]}, "pinned version 2.0 is not among"),
    ({"pinned": "1.0", "supported": ["1.0"], "command": ["x"]}, "names no ${VERSION}"),
    ({"pinned": "v1", "supported": ["v1"], "command": ["x-${VERSION}"]}, "versions.pinned"),
])
def test_a_broken_versions_declaration_names_its_driver_json(tmp_path, versions, says):
    with pytest.raises(UserError) as exc:
        registry._manifest(_driver_json(tmp_path, versions))
    assert "driver.json" in exc.value.problem and says in exc.value.problem


# -- builds ----------------------------------------------------------------------------------------

def test_each_version_builds_into_its_own_place_and_the_pin_builds_as_before(tmp_path, monkeypatch):
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "build.sh").write_text('mkdir -p "$FHEMARK_CACHE/v-${FHEMARK_LIB_VERSION:-pinned}"\n'
                                     'touch "$FHEMARK_CACHE/v-${FHEMARK_LIB_VERSION:-pinned}/run"\n')
    monkeypatch.setenv("FHEMARK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FHEMARK_LIB_VERSION", "9.9")  # from outside: never what a build is told
    base = registry.Manifest("lib", folder, (str(tmp_path / "cache" / "v-pinned" / "run"),), "nothing",
                             build=("bash", "build.sh"), schemes=("bfv",),
                             versions=Versions(pinned="2.0", supported=("1.0", "2.0"),
                                               command=("${FHEMARK_CACHE}/v-${VERSION}/run",)))
    found = Manifests({"lib": base})
    monkeypatch.setattr(build_mod, "manifests", lambda: found)
    suite = Suite(name="s", cases=[{"libraries": ["lib@1.0", "lib"], "schemes": ["bfv"], "params": ["c8192"]}])
    assert build_mod.needed(suite) == ["lib@1.0", "lib"]
    assert build_mod.needed(suite, only=["lib@1.0"]) == ["lib@1.0"]
    out = io.StringIO()
    assert build_mod.build_needed(suite, Console(file=out, width=200)) == {"lib@1.0": "built", "lib": "built"}
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["v-1.0", "v-pinned"]
    assert "building the lib@1.0 driver" in out.getvalue()
    assert build_mod.needed(suite) == []  # each built once
    assert registry.versions_here(base) == [("2.0", True), ("1.0", True)]


# -- plans and records -----------------------------------------------------------------------------

@pytest.fixture
def fake_versions(monkeypatch):
    """The fake driver at three versions: its pin (bare name) and 1.1, 1.2, each reporting its version."""
    fake = replace(FAKE, versions=Versions(pinned="1.0", supported=("1.0", "1.1", "1.2"),
                                           command=(sys.executable, str(FAKE.command[1]), "${VERSION}")))
    found = Manifests({"fake": fake})
    for mod in (registry, run_mod):
        monkeypatch.setattr(mod, "manifests", lambda: found)
    return found


def _suite(libraries) -> Suite:
    return Suite(name="v", policy={"warmup": 1, "min_samples": 3, "max_samples": 3, "min_sample_us": 0},
                 cases=[{"libraries": libraries, "schemes": ["bfv"], "params": [SMALL], "ops": ["add"]}])


def test_versions_of_a_library_are_planned_apart_and_interleaved(fake_versions):
    plan = build(_suite(["fake@1.1", "fake", "fake@1.2"]), ["fake"], allow_insecure=True, known=fake_versions)
    assert [g.library for g in plan.groups] == ["fake@1.1", "fake", "fake@1.2"]  # one turn each, same set
    keys = [j.key for g in plan.groups for j in g.jobs]
    assert len(keys) == len(set(keys)) == 3  # the version is part of every job's identity
    only = build(_suite(["fake@1.1", "fake", "fake@1.2"]), ["fake"], allow_insecure=True, known=fake_versions,
                 only_libraries=["fake@1.2"])
    assert [g.library for g in only.groups] == ["fake@1.2"]


def test_records_carry_the_version_in_their_name_and_the_version_the_driver_reports(fake_versions, tmp_path):
    store = Store(tmp_path / "v.db")
    run_id = store.start_run("v", "h", True, {}, {})
    Runner(build(_suite(["fake", "fake@1.2"]), ["fake"], allow_insecure=True, known=fake_versions), store, run_id,
           {"threads": 1}).execute()
    recs = store.records(run_id)
    assert {(r.library, r.op, r.status, r.library_version) for r in recs} == {
        ("fake", "add", "ok", "0"), ("fake@1.2", "add", "ok", "1.2")}


# -- a real second version, where it is already built ----------------------------------------------

@pytest.mark.parametrize("name, version", [("seal@4.1.2", "4.1.2"), ("openfhe@1.5.1", "1.5.1")])
def test_a_second_version_already_in_the_cache_runs_and_reports_itself(name, version):
    from fhemark.drivers.supervise import Driver
    m = manifests()[name]
    if not m.available:
        pytest.skip(f"{name} is not built here (`fhemark setup --library {name}` builds it; CI does not)")
    assert build_mod.build(m, Console(file=io.StringIO())) == "built"  # up to date: nothing new is built
    d = Driver(m)
    try:
        caps = d.request("capabilities", timeout_s=120)
    finally:
        d.stop()
    assert caps["library_version"] == version
