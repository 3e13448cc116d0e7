"""The contract between drivers: every driver decrypts every case to the same
expected values (exact for BFV/BGV, within the tolerance for CKKS), including
cases with several copies of an op in one timed region, where every copy is
checked. Which cases a driver must pass is read from its checked-in capability
snapshot (protocol/capabilities/<library>.json), not from what it says today,
so a driver that stops offering an operation fails here instead of skipping; its deviation texts
are read from the driver's own capabilities.json, which its reply must serve. Besides the decrypted
values, every run's reported facts are checked (sizes, levels, noise budgets, composition notes).
Driver behaviour that is no case (error replies, refused parameters, region rules, new keys) is in
test_conformance_drivers.py."""

import json

import numpy as np
import pytest

from fhemark.drivers import conformance
from fhemark.drivers.protocol import RunResult, Sample, Vector
from fhemark.drivers.registry import manifests
from fhemark.model.checks import received
from fhemark.model.ops import RLWE
from fhemark.model.semantics import Plain
from fhemark.model.program import Program
from fhemark.locations import project_root

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


def _pair(lib: str, case: dict, secure: bool):
    return pytest.param(lib, case, secure, id=f"{lib}-{case['name']}{'-secure' if secure else ''}")


def test_cases_file_is_generated_from_the_catalog():
    assert CASES == json.loads(json.dumps(conformance.generate())), \
        "protocol/conformance/cases.json is stale: run python -m fhemark.drivers.conformance"
    assert SECURE == json.loads(json.dumps(conformance.generate_secure())), \
        "protocol/conformance/cases-secure.json is stale: run python -m fhemark.drivers.conformance"


def unserved(facts, reply, at: str = "") -> list[str]:
    """Where a capabilities reply lacks one of the static facts, or words it otherwise."""
    if isinstance(facts, dict) and isinstance(reply, dict):
        return [where for k, v in facts.items() for where in unserved(v, reply.get(k), f"{at}.{k}")]
    return [] if facts == reply else [at]


@pytest.mark.parametrize("library", LIBRARIES)
def test_capabilities_match_the_checked_in_snapshot(driver_pool, library):
    """Losing (or silently gaining) an op is a visible change; the reply serves every static fact of the
    driver's capabilities.json, and declares exactly the deviations written there."""
    caps = driver_pool(library).request("capabilities")
    live = conformance.capability_snapshot(caps)
    assert live == snapshot(library), (f"{library} capabilities differ from protocol/capabilities/{library}.json; "
                                       f"if intended: python -m fhemark.drivers.conformance --snapshot {library}")
    facts = conformance.static_facts(library)
    assert not unserved(facts, caps), f"{library}'s reply differs from its capabilities.json at {unserved(facts, caps)}"
    for scheme, sc in caps["schemes"].items():
        assert sc.get("deviations", {}) == facts["schemes"][scheme].get("deviations", {}), scheme


SETUPS: dict[tuple[int, str], dict] = {}  # (driver, setup_id) -> the setup's result


def _keygen(case: dict) -> bool:
    """The case generates a bit scheme's key set (client and server keys)."""
    return any(st["op"] == "keygen" for st in case["program"]["steps"])


def _compiles_its_ops(library: str) -> bool:
    """The driver builds (compiles) at setup only what the setup's ops name: its capabilities.json says
    how under build.compile (Concrete), and its keys are those of the module it compiled."""
    return "compile" in conformance.static_facts(library).get("build", {})


def setup_of(driver, case: dict, secure: bool) -> tuple[str, dict]:
    """The case's setup on this driver (made once per driver process) and its result. A keygen case
    on a driver that compiles its setup's ops has a setup of its own ops, as a run measuring keygen
    alone has: generating the keys of every function the other cases call (nine of them, 22 s a key
    set for Concrete's 8-bit module against 5 s for its addition alone) would check nothing more."""
    own = _keygen(case) and _compiles_its_ops(driver.manifest.library)
    served = [case] if own else [c for c in (SECURE if secure else CASES)["cases"]
                                 if (c["scheme"], c["params"]) == (case["scheme"], case["params"])]
    setup_id = f"conf-{case['scheme']}-{json.dumps(case['params'], sort_keys=True)}{'-keygen' if own else ''}"
    if setup_id not in driver.setups or (id(driver), setup_id) not in SETUPS:
        common = (SECURE if secure else CASES)["setup"]  # the Galois steps of the case's ring
        # the ops of every case this setup serves, as the orchestrator names its jobs' (Concrete compiles those)
        ops = sorted({st["op"] for c in served for st in c["program"]["steps"]})
        SETUPS[id(driver), setup_id] = driver.request("setup", setup_id=setup_id, scheme=case["scheme"],
                                                      params=case["params"], allow_insecure=common["allow_insecure"],
                                                      rotations=common["rotations"].get(str(case["params"].get("N")), []),
                                                      ops=ops)
        driver.setups.add(setup_id)
    return setup_id, SETUPS[id(driver), setup_id]


def samples_of(case: dict) -> list[dict]:
    """The case's samples: its own inputs, then `more_samples`, all sent in one request."""
    return [case] + case.get("more_samples", [])


def request_samples(case: dict, setup: dict | None = None) -> list[Sample]:
    """The case's samples as the wire carries them: RLWE inputs zero-padded to the setup's slot
    count (the case file keeps their heads), BFV/BGV values in [0, t)."""
    dtype = np.int64 if case["tolerance"] == 0 else np.float64
    plain = Plain(case["scheme"], setup["effective"]["slots"], case["params"].get("t")) if setup else None
    wire = (lambda v: plain.full(v)) if plain and not plain.words else (lambda v: v)
    return [Sample(inputs={n: Vector.of(wire(np.array(v, dtype=dtype))) for n, v in s["inputs"].items()},
                   scalars=s["scalars"]) for s in samples_of(case)]


def check_outputs(case: dict, expected: dict, outputs: dict, where: str = "") -> None:
    for name, want in expected.items():
        got = Vector(**outputs[name]).array()
        want = conformance.dense(want)
        if case["scheme"] in RLWE:  # as the orchestrator reads it (model/checks.received)
            got = received(got, want.size, case["params"].get("t"))
        assert got.shape == want.shape, f"{where}{name}"
        if case["tolerance"] == 0:
            bad = np.flatnonzero(got.astype(np.uint64) != want.astype(np.uint64))
            assert bad.size == 0, (f"{where}{name}: {bad.size} slots differ, first at {bad[:5].tolist()}: "
                                   f"got {got[bad[:5]].tolist()}, want {want[bad[:5]].tolist()}")
        else:
            assert np.max(np.abs(got - want)) <= case["tolerance"], f"{where}{name}"


# What a case's program implies about the facts a run reports, by PROTOCOL.md's rules.
DROPS_A_LEVEL = {"rescale", "mod_switch"}
LEVELS_OF_ITS_OWN = {"poly_eval", "bootstrap"}  # "rescaled as the routine leaves it": the library decides
ROUTINES = {"inner_sum", "inner_product", "linear_transform", "poly_eval"}


def expected_levels(program: dict, top: int) -> dict[str, int]:
    """The level of every ciphertext the program asks about: the top (len(q_bits) - 1) less one per
    rescale or mod_switch on its way; encode's `level` attr starts lower, its `like` at that value's;
    a routine that rescales as it likes leaves its result's level unknown (not checked)."""
    below: dict[str, int | None] = {}
    for st in program["steps"]:
        op, attrs = st["op"].removesuffix("_into"), st.get("attrs", {})
        if op in ("decrypt", "decode") or op.startswith("keygen"):
            continue
        if op == "encode":
            below[st["out"]] = top - attrs["level"] if isinstance(attrs.get("level"), int) else below.get(attrs.get("like"), 0)
            continue
        reads = [below[a] for a in st["args"] if a in below]
        unknown = op in LEVELS_OF_ITS_OWN or None in reads
        below[st["out"]] = None if unknown else max(reads, default=0) + (op in DROPS_A_LEVEL)
    return {n: top - below[n] for n in program["levels"] if below.get(n) is not None}


# Bit-scheme ops whose result is an array of the scheme's fresh ciphertexts (comparisons give
# encrypted booleans, a different type).
SAME_TYPE = {"encrypt_sk", "and", "or", "xor", "nand", "nor", "xnor", "not", "mux", "gather", "short_add", "short_mul",
             "pbs", "int_add", "int_sub", "int_mul", "int_min", "int_max"}


def check_facts(library: str, case: dict, secure: bool, result: dict, setup: dict) -> None:
    """What a run reports besides the outputs (PROTOCOL.md `run` result, PROTOCOL-bits.md): a size
    for every value in `sizes`, levels for every ciphertext in `levels`, noise budgets for BFV/BGV
    only (below log2 Q), nothing of either for the bit schemes."""
    program, scheme = case["program"], case["scheme"]
    result = RunResult.model_validate(result).model_dump()  # absent facts as empty
    made_by = {st["out"]: st["op"] for st in program["steps"]}
    assert result["overhead_ns"] >= 0
    sizes = result["sizes_bytes"]
    assert all(b > 0 for b in sizes.values()) and set(sizes) <= set(program["sizes"]), sizes
    # every ciphertext's and key's; a plaintext's where the library can serialize one (TenSEAL cannot)
    missing = [n for n in program["sizes"] if n not in sizes and not made_by[n].startswith(("encode", "decrypt"))]
    assert not missing, f"no size for {missing}: {sizes}"
    if scheme.startswith("tfhe"):
        assert not result["noise_budget_bits"] and not result["levels"], "bit schemes have no noise budget or level"
        # PROTOCOL-bits.md: an array's size is the sum over its elements, a keygen result's its server key
        decrypted_as = {st["args"][0]: st["out"] for st in program["steps"] if st["op"] == "decrypt"}
        for n in program["sizes"]:
            if made_by[n] == "keygen":
                assert sizes[n] == setup["sizes_bytes"]["server_key"], (n, sizes[n], setup["sizes_bytes"])
            elif made_by[n] in SAME_TYPE and n in decrypted_as:
                length = case["expected"][decrypted_as[n]]["slots"]
                assert sizes[n] == length * setup["sizes_bytes"]["ciphertext"], (n, sizes[n], length, setup["sizes_bytes"])
        return
    levels = result["levels"]
    assert set(program["levels"]) <= set(levels), (program["levels"], levels)
    for n, level in expected_levels(program, len(case["params"]["q_bits"]) - 1).items():
        assert levels[n] == level, f"{n} is at level {levels[n]}, want {level} (levels: {levels})"
    noise = result["noise_budget_bits"]
    if scheme == "ckks":
        assert not noise, f"CKKS has no noise budget: {noise}"
    else:
        assert set(noise) <= set(program["noise"]), noise
        assert all(b > 0 for b in noise.values()), f"noise budget spent: {noise}"
        # the orchestrator's own budget (model/noise.py) where the driver sent raw decryptions
        assert all(b < setup["effective"]["log_q"] for b in noise.values()), (noise, setup["effective"]["log_q"])
        assert not result["raw_decryptions"], "raw decryptions are the client's to turn into budgets"
        missing = [n for n in program["noise"] if n not in noise]
        assert not missing, f"no noise budget for {missing}"


@pytest.mark.parametrize("library,case,secure", [_pair(*p) for p in PAIRS])
def test_driver_conforms(driver_pool, library, case, secure):
    driver = driver_pool(library)
    setup_id, setup = setup_of(driver, case, secure)
    result = driver.request("run", setup_id=setup_id, program=case["program"], samples=request_samples(case, setup))
    assert len(result["samples"]) == len(samples_of(case))
    for i, (want, got) in enumerate(zip(samples_of(case), result["samples"])):
        check_outputs(case, want["expected"], got["outputs"], f"sample {i}: " if i else "")
        assert set(got["ns"]) == {r["name"] for r in case["program"]["timed"]}
    check_facts(library, case, secure, result, setup)


def _warmed(program: dict) -> dict:
    """The case's program as `inputs: hot` sends it: every timed region warmed up first."""
    names = [r["name"] for r in program["timed"]]
    return Program(program["steps"], names, program["outputs"], program["noise"], program["sizes"],
                   program["levels"], {r["name"]: r["steps"] for r in program["timed"]}).warmed().wire()


def _skeleton(library: str) -> bool:
    """The driver runs its programs in the shared Python skeleton."""
    driver = manifests()[library].folder / "driver.py"
    return driver.exists() and "jsonl_driver" in driver.read_text()


def _warm_pairs() -> list:
    """Every case with a write-into step (its warm-up must leave the operands as they were), each
    driver's first case of each scheme that generates no key set, and each driver's first that does
    where its discarding is its own: a driver discards a warm-up step by one rule whatever the scheme,
    and warming the keygen case of every bit scheme generated two more key sets each (TFHE-rs' three:
    40 s) to check that rule again. The Python drivers discard in the shared skeleton
    (drivers/python_shared/jsonl_driver.py, one loop for every step), which their other cases check;
    their keygen twins (OpenFHE binfhe 16 s, Concrete 6 s) checked it once more."""
    firsts, keygens = {}, {}
    for lib, case, secure in PAIRS:
        if _keygen(case):
            if not _skeleton(lib):
                keygens.setdefault(lib, (lib, case, secure))
        else:
            firsts.setdefault((lib, case["scheme"]), (lib, case, secure))
    into = [p for p in PAIRS if any(st["op"].endswith("_into") for st in p[1]["program"]["steps"])]
    chosen = {(lib, case["name"], secure): (lib, case, secure)
              for lib, case, secure in [*firsts.values(), *keygens.values(), *into]}
    return [_pair(*p) for p in chosen.values()]


@pytest.mark.parametrize("library,case,secure", _warm_pairs())
def test_a_warmed_up_program_decrypts_the_same(driver_pool, library, case, secure):
    """inputs: hot sends each timed region's steps once more just before it, untimed and discarded
    (PROTOCOL.md "discard"): the values, times per region and facts stay those of the case."""
    driver = driver_pool(library)
    setup_id, setup = setup_of(driver, case, secure)
    program = _warmed(case["program"])
    assert any(st.get("discard") for st in program["steps"])
    result = driver.request("run", setup_id=setup_id, program=program, samples=request_samples(case, setup))
    for i, (want, got) in enumerate(zip(samples_of(case), result["samples"])):
        check_outputs(case, want["expected"], got["outputs"], f"sample {i}: " if i else "")
        assert set(got["ns"]) == {r["name"] for r in case["program"]["timed"]}
    check_facts(library, case, secure, result, setup)


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
