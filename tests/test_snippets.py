"""Parameter snippets (src/fhemark/advise/snippets/, each library's drivers/<library>/snippet.py) run with the real libraries.

Each snippet prints one JSON line: what the library built. It must be what was asked (N, prime sizes,
t or scale, the security level checked) and what the library's driver builds for the same set. A
library whose toolchain or venv is missing here is skipped with the reason. The Go snippets share one
temporary module (Lattigo from the warm module cache); the TFHE-rs snippets are one cargo project
built into the tfhe-rs driver's target directory, so TFHE-rs itself is not compiled again
(FHEMARK_SNIPPETS_RUST=0 skips them).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fhemark.advise import snippets
from fhemark.drivers.registry import manifests
from fhemark.errors import UserError
from fhemark.locations import cache_dir, project_root
from fhemark.model.params import ParamSet, batching_prime, resolve

ROOT = project_root()
SECURE_INT = {"N": 8192, "q_bits": [45, 45, 45], "p_bits": [60], "t_bits": 20}
SECURE_CKKS = {"N": 8192, "q_bits": [50, 40, 40], "p_bits": [60], "scale_bits": 40}
SMALL_INT = {"N": 4096, "q_bits": [40, 40], "p_bits": [40], "t": 65537}  # log QP 120 > 109: below 128 bits
SMALL_BV = {"N": 4096, "q_bits": [43, 43], "p_bits": [], "t_bits": 20, "key_switching": "bv", "digit_size": 20}
SMALL_CKKS = {"N": 4096, "q_bits": [40, 30], "p_bits": [60], "scale_bits": 30}
SECURITY = {"seal": ("tc128", "none"), "tenseal": ("tc128", "tc128"), "lattigo": (None, None),
            "openfhe": ("HEStd_128_classic", "HEStd_NotSet")}
TFHE_KEYS = ("message_modulus", "carry_modulus", "polynomial_size", "lwe_dimension", "glwe_dimension", "bits", "num_blocks")
GO_MOD = "module fhemarksnippets\n\ngo 1.24.0\n\nrequire github.com/tuneinsight/lattigo/v6 v6.2.0\n"
RUN_TIMEOUT_S = 600  # the first `go run` may download Lattigo's modules


@dataclass(frozen=True)
class Case:
    library: str
    scheme: str
    params: dict = field(hash=False)
    insecure: bool = False
    tag: str = ""

    @property
    def id(self) -> str:
        return "-".join(x for x in (self.library, self.scheme, self.tag) if x)

    @property
    def resolved(self) -> ParamSet:
        return resolve(self.params, self.scheme)


FORMS = snippets.forms()
CASES = [
    *(Case(lib, scheme, SECURE_CKKS if scheme == "ckks" else SECURE_INT)
      for lib in ("seal", "openfhe", "tenseal", "lattigo") for scheme in FORMS[lib].schemes),
    Case("seal", "bfv", SMALL_INT, insecure=True, tag="n4096-insecure"),
    Case("openfhe", "ckks", SMALL_CKKS, insecure=True, tag="n4096-insecure"),
    Case("lattigo", "bgv", SMALL_INT, insecure=True, tag="n4096"),
    # BV has no special primes: the ring OpenFHE's own HYBRID P makes insecure holds the chain (the search's switch)
    Case("openfhe", "bgv", SMALL_BV, tag="n4096-bv"),
    Case("openfhe", "bfv", {**SMALL_BV, "q_bits": [33, 33]}, tag="n4096-bv"),  # OpenFHE's depth 1 makes 3 primes here
    Case("tfhe-rs", "tfhe_int", {"preset": "default", "bits": 64}, tag="64"),
    Case("tfhe-rs", "tfhe_int", {"preset": "PARAM_MESSAGE_2_CARRY_2_KS_PBS_GAUSSIAN_2M128", "bits": 8}, tag="8-gaussian"),
    Case("tfhe-rs", "tfhe_shortint", {"preset": "PARAM_MESSAGE_2_CARRY_2_KS_PBS"}, tag="alias"),
    Case("tfhe-rs", "tfhe_bool", {"preset": "default"}),
]


# ---------------------------------------------------------------- running a snippet with its library

def _python(case: Case, request, path: Path) -> tuple[list[str], Path | None]:
    m = manifests()[case.library]
    if not m.available:
        pytest.skip(f"{case.library} snippets: {m.why_unavailable()}")
    if case.library == "seal" and importlib.util.find_spec("seal") is None:
        pytest.skip(f"seal snippets: seal-python is not installed in {sys.executable}; needs {m.requires}")
    return [m.command[0], str(path)], None


@pytest.fixture(scope="module")
def go_module(tmp_path_factory) -> Path:
    """One Go module for every Lattigo snippet (each in its own package directory)."""
    if shutil.which("go") is None:
        pytest.skip(f"lattigo snippets: go not found; needs {manifests()['lattigo'].requires}")
    root = tmp_path_factory.mktemp("go-snippets")
    (root / "go.mod").write_text(GO_MOD)
    shutil.copy(ROOT / "drivers" / "lattigo" / "go.sum", root / "go.sum")
    return root


def _go(case: Case, request, path: Path) -> tuple[list[str], Path | None]:
    root = request.getfixturevalue("go_module")
    package = root / re.sub(r"\W", "_", case.id)
    package.mkdir()
    shutil.move(path, package / path.name)
    if shutil.which("gofmt"):
        unformatted = subprocess.run(["gofmt", "-l", str(package)], capture_output=True, text=True, timeout=60).stdout
        assert not unformatted, f"the Go snippet is not gofmt-formatted: {unformatted}"
    return ["go", "run", f"./{package.name}"], root


def _bin_name(case: Case) -> str:
    return "fhemark_snippet_" + re.sub(r"\W", "_", case.id)


@pytest.fixture(scope="module")
def tfhe_bins(tmp_path_factory) -> Path:
    """Every TFHE-rs case as a binary of one cargo project, built once into the driver's target dir."""
    if os.environ.get("FHEMARK_SNIPPETS_RUST") == "0":
        pytest.skip("tfhe-rs snippets: FHEMARK_SNIPPETS_RUST=0")
    if shutil.which("cargo") is None:
        pytest.skip(f"tfhe-rs snippets: cargo not found; needs {manifests()['tfhe-rs'].requires}")
    target = cache_dir() / "cargo-target"
    if not (target / "release").is_dir():
        pytest.skip(f"tfhe-rs snippets: {target} (the tfhe-rs driver's build) is missing: run make drivers first, "
                    f"the snippets reuse its compiled TFHE-rs instead of compiling it for minutes")
    project = tmp_path_factory.mktemp("tfhe-snippets")
    driver = ROOT / "drivers" / "tfhe"
    manifest = (driver / "Cargo.toml").read_text()
    profile = manifest[manifest.index("[profile.release]"):]
    features = ", ".join(f'"{f}"' for f in snippets.builder("tfhe-rs").FEATURES)
    (project / "Cargo.toml").write_text(
        f'[package]\nname = "fhemark-snippets"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n'
        f'[dependencies]\ntfhe = {{ version = "=1.8.2", features = [{features}] }}\n\n{profile}')
    shutil.copy(driver / "Cargo.lock", project / "Cargo.lock")  # the driver's resolved versions: its build is reused
    (project / "src" / "bin").mkdir(parents=True)
    for case in CASES:
        if case.library == "tfhe-rs":
            text = snippets.snippet(case.library, case.scheme, case.params).text
            (project / "src" / "bin" / f"{_bin_name(case)}.rs").write_text(text)
    proc = subprocess.run(["cargo", "build", "--release", "--offline"], cwd=project, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return target / "release"


def _rust(case: Case, request, path: Path) -> tuple[list[str], Path | None]:
    return [str(request.getfixturevalue("tfhe_bins") / _bin_name(case))], None


COMMANDS = {"python": _python, "go": _go, "rust": _rust}


@pytest.fixture(scope="module")
def reports(request, tmp_path_factory):
    """case -> the JSON line its snippet printed (each snippet runs once per module)."""
    done: dict[str, dict] = {}

    def get(case: Case) -> dict:
        if case.id not in done:
            path = snippets.write(case.library, case.scheme, case.params, tmp_path_factory.mktemp(case.id),
                                  header="test snippet", allow_insecure=case.insecure)
            command, cwd = COMMANDS[FORMS[case.library].language](case, request, path)
            env = {**os.environ, "GOTOOLCHAIN": os.environ.get("GOTOOLCHAIN", "local"), "GOFLAGS": "-mod=mod",
                   "OMP_NUM_THREADS": "1"}
            proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)
            assert proc.returncode == 0, f"{case.id} snippet failed:\n{proc.stderr[-4000:]}"
            done[case.id] = snippets.parse_report(proc.stdout)
        return done[case.id]

    return get


# ---------------------------------------------------------------- what was asked, what the driver built

def _asked(case: Case) -> dict:
    ps = case.resolved
    if ps.kind == "bits":
        name, _ = snippets.builder("tfhe-rs").constant(case.scheme, ps.preset)
        if case.scheme == "tfhe_bool":
            return {"preset": name, "message_modulus": 2, "carry_modulus": 1}
        out = {"preset": name, "message_modulus": 4, "carry_modulus": 4}  # every preset here is a 2_2 one
        return out | ({"bits": ps.bits, "num_blocks": ps.bits // 2} if ps.bits else {})
    value = {"scale_bits": ps.scale_bits} if case.scheme == "ckks" else {"t": ps.t}
    return {"N": ps.N, "q_bits": list(ps.q_bits), "p_bits": list(ps.p_bits), **value,
            "security": SECURITY[case.library][case.insecure]}


def _openfhe_ckks_chain(got: list[int], asked: list[int]) -> bool:
    """OpenFHE picks the CKKS primes above level 0 near 2^scale_bits, alternately below and above it:
    some have one bit more than asked by their bit length, which the snippet prints (fhemark counts a
    prime just above 2^b as b bits: protocol.prime_bits)."""
    return len(got) == len(asked) and got[0] == asked[0] and all(abs(g - a) <= 1 for g, a in zip(got[1:], asked[1:]))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_snippet_builds_what_was_asked(case, reports):
    got, asked = reports(case), _asked(case)
    if case.library == "openfhe" and case.scheme == "ckks":
        assert _openfhe_ckks_chain(got["q_bits"], asked["q_bits"]), (got["q_bits"], asked["q_bits"])
        asked["q_bits"] = got["q_bits"]
    assert {k: got.get(k) for k in asked} == asked


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_snippet_builds_what_the_driver_builds(case, reports, driver_pool):
    """The same set through the driver (what fhemark benchmarked): the same primes' sizes, t or scale, blocks."""
    got = reports(case)
    driver = driver_pool(case.library)
    eff = driver.request("setup", setup_id=f"snippet-{case.id}", scheme=case.scheme, params=case.resolved.wire(),
                         allow_insecure=case.insecure)["effective"]
    if case.library == "tfhe-rs":
        keys = [k for k in TFHE_KEYS if k in got]
        if "log2_p_fail" in got:  # boolean sets state none in TFHE-rs (the driver quotes source comments)
            assert got["log2_p_fail"] == eff["p_fail"]
    else:
        keys = ["N", "q_bits", "p_bits", "scale_bits" if case.scheme == "ckks" else "t"]
        keys += ["key_switching"] if case.library == "openfhe" else []
    if case.library == "openfhe" and case.scheme == "ckks":
        assert _openfhe_ckks_chain(got["q_bits"], eff["q_bits"]), (got["q_bits"], eff["q_bits"])
        keys.remove("q_bits")
    assert {k: got[k] for k in keys} == {k: eff[k] for k in keys}


# ---------------------------------------------------------------- the text itself (no library needed)

def test_snippet_names_header_and_t():
    s = snippets.snippet("tfhe", "tfhe_int", {"preset": "default", "bits": 32}, header="verified: 128-bit\nby fhemark")
    assert (s.library, s.language, s.filename) == ("tfhe-rs", "rust", "tfhe_int.rs")
    assert s.text.startswith("// verified: 128-bit\n// by fhemark\n") and "FheUint32" in s.text
    seal = snippets.snippet("seal", "bfv", SECURE_INT)
    assert seal.filename == "seal_bfv.py" and f"T = {batching_prime(8192, 20)}" in seal.text
    assert "T = 65537" in snippets.snippet("seal", "bgv", {**SECURE_INT, "t": 65537}).text  # an explicit t wins
    assert "ckks" in snippets.snippet("seal", "ckks", {**SECURE_CKKS, "t_bits": 20, "secret": "ternary"}).text


def test_each_library_with_a_builder_declares_its_snippet_facts_and_no_other():
    """A library's snippet facts live in its driver.json, its template's builder in its folder
    (snippet.py): one without the other is a library half added."""
    declared = {lib for lib, m in manifests().items() if m.snippet}
    built = {lib for lib, m in manifests().items() if (m.folder / snippets.BUILDER).is_file()}
    assert declared == built == set(FORMS)
    for lib, form in FORMS.items():
        assert form.language in COMMANDS and form.install and form.title != lib, lib
        assert set(form.schemes) <= set(manifests()[lib].schemes), f"{lib}: snippets for schemes its driver lacks"
    assert snippets.snippet("TFHE_RS", "tfhe_bool", {"preset": "default"}).library == "tfhe-rs"  # an alias


@pytest.mark.parametrize("library,scheme,params", [
    ("helib", "bgv", SECURE_INT), ("tenseal", "bgv", SECURE_INT), ("seal", "tfhe_int", {"bits": 8}),
    ("seal", "bfv", {**SECURE_INT, "p_bits": [60, 60]}), ("lattigo", "ckks", {"N": 8192, "q_bits": [50]}),
    ("seal", "bgv", SMALL_BV),
])
def test_snippet_refuses_what_it_cannot_write(library, scheme, params):
    with pytest.raises(UserError):
        snippets.snippet(library, scheme, params)


def test_python_snippets_are_lint_clean(tmp_path):
    for lib in ("seal", "openfhe", "tenseal"):
        for scheme in FORMS[lib].schemes:
            snippets.write(lib, scheme, SECURE_CKKS if scheme == "ckks" else SECURE_INT, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--line-length", "130",
                           "--select", "E,F,W", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
