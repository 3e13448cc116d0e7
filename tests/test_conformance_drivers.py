"""What every driver must do besides decrypting the conformance cases right: answer bad requests
with the protocol's error kinds and keep going (PROTOCOL.md, "Framing"), refuse parameter sets the
library refuses, refuse programs that break the timed-region rules before anything runs, report
what its setup built, make new keys that are new keys, and the product and noise facts of
BFV/BGV/CKKS. Run against every driver built here, through the orchestrator's own client; the
expected values come from fhemark's plaintext semantics (model.semantics), as the cases' do.

These checks replace the drivers' former smoke tests (drivers/<lib>/smoke_test.py, OpenFHE's
smoke_bits.py), which nothing ran. Small, insecure rings where the library allows them; no timings
are checked."""

import importlib.util
import json

import numpy as np
import pytest

from fhemark.drivers.conformance import static_facts
from fhemark.drivers.protocol import RunRequest, Sample, Vector
from fhemark.errors import DriverError
from fhemark.locations import project_root
from fhemark.model.checks import received
from fhemark.model.rotations import galois_steps
from fhemark.model.semantics import Plain
from test_conformance import CASES, LIBRARIES, SECURE, check_outputs, request_samples, samples_of, setup_of, snapshot

RLWE = ("bfv", "bgv", "ckks")
BITS = ("tfhe_bool", "tfhe_shortint", "tfhe_int")
# Libraries without a security check of their own (PROTOCOL.md `setup`: allow_insecure disables the
# library's check "where it has one"); the orchestrator's own check stays authoritative.
NO_SECURITY_CHECK = {"lattigo": "Lattigo has no built-in security check (capabilities.build.security_check)"}
# Libraries that choose their own primes near the asked bit sizes: the record says params_match false.
PRIMES_OF_ITS_OWN = {"openfhe": "OpenFHE generates its own moduli (the special prime is always 60 bits)"}


def schemes_of(library: str, family=RLWE + BITS) -> list[str]:
    return [s for s in snapshot(library)["schemes"] if s in family]


def pairs(family) -> list:
    return [pytest.param(lib, s, id=f"{lib}-{s}") for lib in LIBRARIES for s in schemes_of(lib, family)]


def ops_of(library: str, scheme: str) -> set[str]:
    return set(snapshot(library)["schemes"][scheme]["ops"])


def first_case(library: str, scheme: str, op: str | None = None) -> tuple[dict, bool]:
    """The scheme's first conformance case (that runs `op`) in the file this driver takes, and whether it is the secure one."""
    secure = snapshot(library)["schemes"][scheme].get("insecure_params") is False
    return next(c for c in (SECURE if secure else CASES)["cases"] if c["scheme"] == scheme
                and (op is None or any(st["op"] == op for st in c["program"]["steps"]))), secure


def setup(driver_pool, library: str, scheme: str, op: str | None = None):
    """The driver, its conformance setup for the scheme (that of the cases running `op`: Concrete compiles
    a setup's ops only) (id, result), and the scheme's plaintext model."""
    driver = driver_pool(library)
    case, secure = first_case(library, scheme, op)
    setup_id, result = setup_of(driver, case, secure)
    eff = result["effective"]
    if scheme in RLWE:
        plain = Plain(scheme, eff["slots"], eff.get("t"))
    else:
        plain = Plain(scheme, 4, {"tfhe_bool": 2, "tfhe_shortint": eff.get("message_modulus", 4)}.get(scheme)
                      or 1 << case["params"]["bits"])
    return driver, setup_id, result, plain


def step(out: str, op: str, *args: str, **attrs) -> dict:
    return {"out": out, "op": op, "args": list(args), **({"attrs": attrs} if attrs else {})}


def region(name: str, *steps: str) -> dict:
    return {"name": name, "steps": list(steps or [name])}


def program(steps: list[dict], timed=(), outputs=(), **facts) -> dict:
    return {"steps": steps, "timed": list(timed), "outputs": list(outputs), **facts}


def run(driver, setup_id: str, prog: dict, values: dict[str, np.ndarray]) -> dict:
    """Runs the program on one sample of these input vectors, returns the result."""
    sample = Sample(inputs={n: Vector.of(v) for n, v in values.items()})
    return driver.request("run", setup_id=setup_id, program=prog, samples=[sample])


def out(result: dict, name: str) -> np.ndarray:
    return Vector(**result["samples"][0]["outputs"][name]).array()


def refused(kind: str, call, *args, **kwargs) -> DriverError:
    """The driver answers the call with an error of that kind (and stays up: the next call uses it)."""
    with pytest.raises(DriverError) as err:
        call(*args, **kwargs)
    assert err.value.kind == kind, err.value
    return err.value


def raw(driver, line: str) -> dict:
    """One request line as is (not valid protocol v2, so not through Driver.request), its reply."""
    driver.ensure()
    driver.proc.stdin.write(line + "\n")
    driver.proc.stdin.flush()
    reply = driver._lines.get(timeout=60)
    assert reply, f"the {driver.manifest.library} driver died on {line[:60]!r}"
    return json.loads(reply)


def inputs(plain: Plain, rng: np.random.Generator, *names: str) -> dict[str, np.ndarray]:
    if plain.words:
        return {n: rng.integers(0, plain.t, size=plain.slots, dtype=np.uint64) for n in names}
    return {n: plain.random(rng, 8) for n in names}  # zero-padded to the slot count, as the wire carries it


def encrypted(plain: Plain, *names: str) -> list[dict]:
    if plain.words:
        return [step(f"c{n}", "encrypt_sk", n) for n in names]
    return [s for n in names for s in (step(f"p{n}", "encode", n), step(f"c{n}", "encrypt_pk", f"p{n}"))]


def decrypted(plain: Plain, ct: str, out_name: str = "z", **attrs) -> list[dict]:
    if plain.words:
        return [step(out_name, "decrypt", ct, **attrs)]
    return [step(f"p{out_name}", "decrypt", ct, **attrs), step(out_name, "decode", f"p{out_name}")]


def assert_values(plain: Plain, got: np.ndarray, want: np.ndarray, what: str, key_switches: int = 1) -> None:
    """Exact schemes: equal. CKKS: within 1e-3 per key switch on the way (each adds its error); a
    wrong rotation or a missed slot moves a value by an input, uniform in [-1, 1]."""
    if not plain.words:  # as the orchestrator reads it (model/checks.received)
        got = received(got, want.size, plain.t if plain.exact else None)
    if plain.exact:
        assert np.array_equal(got.astype(np.uint64), want.astype(np.uint64)), what
    else:
        assert np.max(np.abs(got - want)) < 1e-3 * key_switches, what


# -- capabilities ----------------------------------------------------------------------------------

@pytest.mark.parametrize("library", LIBRARIES)
def test_deviations_name_listed_ops(library):
    """The driver's capabilities.json against the ops it promises (the driver also refuses, at start-up,
    a file naming an op its table lacks); no build needed."""
    facts = static_facts(library)["schemes"]
    assert set(facts) == set(snapshot(library)["schemes"])
    for scheme, caps in snapshot(library)["schemes"].items():
        dev = facts[scheme].get("deviations", {})
        assert set(dev) <= set(caps["ops"]), (scheme, set(dev) - set(caps["ops"]))


def test_a_python_driver_refuses_a_capabilities_file_naming_what_its_op_table_lacks(tmp_path):
    spec = importlib.util.spec_from_file_location("jsonl_driver", project_root() / "drivers/python_shared/jsonl_driver.py")
    shared = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shared)
    (tmp_path / "capabilities.json").write_text(json.dumps({"library": "x", "schemes": {"bfv": {"deviations": {
        "mul": "also relinearizes"}}}}))
    with pytest.raises(SystemExit, match="mul"):
        shared.static_capabilities(tmp_path, {"bfv": ["add"]})
    with pytest.raises(SystemExit, match="ckks"):
        shared.static_capabilities(tmp_path, {"bfv": ["mul"], "ckks": ["mul"]})
    caps = shared.merged(shared.static_capabilities(tmp_path, {"bfv": ["add", "mul"]}), {"schemes": {"bfv": {"limits": {}}}})
    assert caps["schemes"]["bfv"] == {"ops": ["add", "mul"], "deviations": {"mul": "also relinearizes"}, "limits": {}}


@pytest.mark.parametrize("library", [lib for lib in LIBRARIES if schemes_of(lib, BITS)])
def test_a_driver_of_bit_schemes_declares_the_bits_extension(driver_pool, library):
    assert "bits" in driver_pool(library).request("capabilities").get("extensions", []), "PROTOCOL-bits.md"


@pytest.mark.parametrize("library", LIBRARIES)
def test_auto_params_is_answered_where_offered_and_unsupported_elsewhere(driver_pool, library):
    """PROTOCOL.md "auto_params": an optional request, answered for each scheme whose capabilities
    offer it (a set a setup takes), `unsupported` for the rest and by every driver without it."""
    driver = driver_pool(library)
    schemes = driver.request("capabilities")["schemes"]
    for scheme in ("ckks", "bfv", "tfhe_int"):
        ask = {"scheme": scheme, "depth": 2, "security": 128, **({"scale_bits": 40} if scheme == "ckks" else {})}
        if schemes.get(scheme, {}).get("auto_params"):
            got = driver.request("auto_params", **ask)
            assert got["N"] and len(got["q_primes"]) >= 3, got
        else:
            refused("unsupported", driver.request, "auto_params", **ask)


# -- bad requests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("library", LIBRARIES)
def test_bad_requests_are_answered_and_the_driver_goes_on(driver_pool, library):
    driver = driver_pool(library)
    rep = raw(driver, "this is not json")
    assert rep["v"] == 2 and rep["ok"] is False and rep["error"]["kind"] == "internal", rep
    rep = raw(driver, json.dumps({"v": 1, "id": 900001, "type": "capabilities"}))
    assert rep["v"] == 2 and rep["id"] == 900001 and rep["error"]["kind"] == "internal", rep
    assert "speaks 2" in rep["error"]["message"], rep
    # PROTOCOL.md names no kind for an unknown request type: drivers say unsupported or internal
    rep = raw(driver, json.dumps({"v": 2, "id": 900002, "type": "frobnicate"}))
    assert rep["id"] == 900002 and rep["error"]["kind"] in ("unsupported", "internal"), rep
    refused("internal", driver.request, "run", setup_id="no-such-setup", program=program([]), samples=[])
    absent = next((s for s in RLWE + BITS if s not in snapshot(library)["schemes"]), None)
    if absent:
        params = first_case("lattigo" if absent in RLWE else "tfhe-rs", absent)[0]["params"]
        refused("unsupported", driver.request, "setup", setup_id="absent", scheme=absent, params=params)
    assert driver.request("capabilities")["library"] == snapshot(library)["library"]


@pytest.mark.parametrize("library,scheme", pairs(RLWE + BITS))
def test_an_op_the_driver_does_not_list_is_unsupported(driver_pool, library, scheme):
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    offered = ops_of(library, scheme)
    others = sorted({op for lib in LIBRARIES for op in snapshot(lib)["schemes"].get(scheme, {}).get("ops", [])} - offered)
    for op in ["frobnicate"] + [o for o in others if not o.startswith("keygen")][:4]:
        attrs = {"steps": 1} if op.startswith("rotate") else {"n": 4} if op.startswith("inner") else {}
        steps = encrypted(plain, "x", "y") + [step("cz", op, "cx", "cy", **attrs)]
        refused("unsupported", run, driver, setup_id, program(steps), inputs(plain, np.random.default_rng(1), "x", "y"))


# -- parameters ------------------------------------------------------------------------------------

@pytest.mark.parametrize("library,scheme", pairs(RLWE))
def test_parameter_sets_the_library_refuses(driver_pool, library, scheme):
    driver = driver_pool(library)
    params = first_case(library, scheme)[0]["params"]
    limits = driver.request("capabilities")["schemes"][scheme].get("limits", {})

    def setup_refused(kind: str, **changed) -> None:
        refused(kind, driver.request, "setup", setup_id="refused", scheme=scheme, params={**params, **changed},
                allow_insecure=True)

    if "max_prime_bits" in limits:
        setup_refused("invalid_params", q_bits=[limits["max_prime_bits"] + 1] + params["q_bits"][1:])
    if scheme != "ckks":
        setup_refused("invalid_params", t=7681)  # prime, but not 1 mod 2N: no batching
    if "special_primes" in limits:
        setup_refused("invalid_params", p_bits=[60] * (limits["special_primes"] + 1))


@pytest.mark.parametrize("library,scheme", pairs(RLWE))
def test_insecure_parameters_need_allow_insecure(driver_pool, library, scheme):
    driver = driver_pool(library)
    small = next(c for c in CASES["cases"] if c["scheme"] == scheme)["params"]  # N = 2048
    if library in NO_SECURITY_CHECK:
        driver.request("setup", setup_id="insecure", scheme=scheme, params=small, allow_insecure=False)
    else:
        refused("insecure_params", driver.request, "setup", setup_id="insecure", scheme=scheme, params=small,
                allow_insecure=False)
    if snapshot(library)["schemes"][scheme].get("insecure_params") is False:  # TenSEAL: SEAL's check, always
        refused("insecure_params", driver.request, "setup", setup_id="insecure", scheme=scheme, params=small,
                allow_insecure=True)
    else:
        driver.request("setup", setup_id="insecure", scheme=scheme, params=small, allow_insecure=True)
    if "bootstrap" in ops_of(library, scheme):  # the preset of suites/bootstrap.yaml on a small ring
        refused("insecure_params", driver.request, "setup", setup_id="insecure-bootstrap", scheme=scheme,
                params={"preset": f"{library}_bootstrap_default", "N": 4096}, allow_insecure=False)


@pytest.mark.parametrize("library,scheme", pairs(BITS))
def test_bit_parameter_sets_the_driver_refuses(driver_pool, library, scheme):
    driver = driver_pool(library)
    params = first_case(library, scheme)[0]["params"]
    refused("invalid_params", driver.request, "setup", setup_id="refused", scheme=scheme,
            params={**params, "preset": "NOPE"})
    if scheme == "tfhe_int":
        refused("invalid_params", driver.request, "setup", setup_id="refused", scheme=scheme, params={**params, "bits": 7})


@pytest.mark.parametrize("library,scheme", pairs(RLWE + BITS))
def test_setup_reports_what_the_library_built(driver_pool, library, scheme):
    _, _, result, _ = setup(driver_pool, library, scheme)
    asked, eff, sizes = first_case(library, scheme)[0]["params"], result["effective"], result["sizes_bytes"]
    if scheme in BITS:
        assert isinstance(eff["preset"], str) and eff["security_bits_target"] >= 128 and eff["p_fail"] < 0, eff
        if scheme == "tfhe_int":  # the default preset's blocks of 2 message bits
            assert eff["bits"] == asked["bits"] and eff["num_blocks"] == asked["bits"] // 2, eff
        assert all(sizes.get(k, 0) > 0 for k in ("server_key", "ciphertext")), sizes
        # The LWE problems the set rests on, in the protocol's one form (PROTOCOL-bits.md), which the
        # security check estimates: each library's default is a 128-bit set (OpenFHE's binfhe LWE key,
        # sized under the 2018 model, reads about 123 under today's).
        from fhemark.drivers.protocol import Effective
        from fhemark.model.security import bit_scheme_sets, judge_weakest
        assert Effective(**eff).lwe_problems, eff
        assert 118 <= judge_weakest(bit_scheme_sets(eff)).estimated_bits <= 145, eff["lwe_problems"]
        return
    assert (eff["N"], eff["t"], eff["levels"]) == (asked["N"], asked["t"], len(asked["q_bits"]) - 1), eff
    assert eff["slots"] == (asked["N"] // 2 if scheme == "ckks" else asked["N"]), eff
    assert asked["scale_bits"] is None or abs(eff["scale_bits"] - asked["scale_bits"]) < 1e-6, eff
    if library not in PRIMES_OF_ITS_OWN:
        assert (eff["q_bits"], eff["p_bits"]) == (asked["q_bits"], asked["p_bits"]), eff
    # log2 of the primes' product: a prime of b bits lies within half a bit of 2^b (protocol.prime_bits)
    for field, bits in (("log_q", eff["q_bits"]), ("log_qp", eff["q_bits"] + eff["p_bits"])):
        assert abs(eff[field] - sum(bits)) <= len(bits) / 2 + 1e-6, (field, eff)
    assert all(sizes.get(k, 0) > 0 for k in ("public_key", "secret_key", "relin_keys", "galois_keys", "ciphertext",
                                             "galois_key_count")), sizes


@pytest.mark.parametrize("library,scheme", pairs(("ckks",)))
def test_setup_makes_the_galois_keys_it_is_sent(driver_pool, library, scheme):
    """PROTOCOL.md setup: one key per step of `rotations` and no other (no conjugation without step 0);
    TenSEAL makes SEAL's default set, its only one, and names the asked steps that it lacks."""
    case, secure = first_case(library, scheme)
    driver = driver_pool(library)
    result = driver.request("setup", setup_id="keys-3-5", scheme=scheme, params=case["params"], rotations=[3, -5],
                            allow_insecure=not secure)
    if library == "tenseal":
        assert "[3, -5]" in " ".join(result.get("notes", [])), result.get("notes")
    else:
        assert result["sizes_bytes"]["galois_key_count"] == 2, result["sizes_bytes"]
        prog = program([step("px", "encode", "x"), step("cx", "encrypt_sk", "px"), step("cz", "conjugate", "cx")])
        err = refused("internal", driver.request, "run", setup_id="keys-3-5", program=prog,
                      samples=[Sample(inputs={"x": Vector.of(np.ones(result["effective"]["slots"]))})])
        assert "key" in str(err).lower(), err


# -- programs --------------------------------------------------------------------------------------

def test_a_region_reading_itself_through_a_scalar_is_not_sent():
    """A key named per sample ($kk) that a step of the same region makes breaks the rule too."""
    steps = [step("cx", "encrypt_sk", "x"), step("k", "keygen_relin"), step("m", "mul_relin", "cx", "cx", key="$kk")]
    prog = program(steps, [region("km", "k", "m")])
    for kk, ok in (("k", False), ("rk", True)):
        request = {"id": 1, "setup_id": "s", "program": prog, "samples": [{"inputs": {}, "scalars": {"kk": kk}}]}
        if ok:
            RunRequest(**request)
        else:
            with pytest.raises(ValueError, match=r"through \$kk"):
                RunRequest(**request)


def test_a_warm_up_is_untimed_and_nothing_reads_it():
    """Program.warmed (inputs: hot) puts an untimed, discarded twin of each timed step just before
    its region; a `_into` step's twin allocates, so the operands keep their values. A discarded
    step that is timed or read is refused before anything is sent."""
    from fhemark.model.ops import RLWE_OPS
    warmed = RLWE_OPS["add_into"].program("bfv").warmed().wire()
    ops = [(st["op"], st["out"], bool(st.get("discard"))) for st in warmed["steps"]]
    at = ops.index(("add_into", "cz", False))
    assert ops[at - 1] == ("add", "warm:cz", True) and warmed["steps"][at - 1]["args"] == warmed["steps"][at]["args"]
    base = [step("cx", "encrypt_sk", "x"), {**step("w", "add", "cx", "cx"), "discard": True}]
    for steps, timed, outputs in ((base + [step("m", "add", "w", "cx")], [region("m")], []),
                                  (base, [region("w")], []), (base, [], ["w"])):
        with pytest.raises(ValueError, match="discarded but timed or read"):
            RunRequest(id=1, setup_id="s", program=program(steps, timed, outputs), samples=[])


@pytest.mark.parametrize("library,scheme", pairs(RLWE))
def test_a_pool_is_made_once_and_each_sample_picks_its_own(driver_pool, library, scheme):
    """PROTOCOL.md "Pool": the request's pool is encrypted once, before its samples; a `$` arg
    names one of its ciphertexts per sample, so each sample adds its own pair, and the pool
    outlives none of its requests."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    vecs = inputs(plain, np.random.default_rng(19), "p0", "p1", "p2")
    pool = {"inputs": {f"pool.{i}": Vector.of(vecs[f"p{i}"]) for i in range(3)},
            "steps": encrypted(plain, "pool.0", "pool.1", "pool.2")}
    picks = [("cpool.0", "cpool.1"), ("cpool.2", "cpool.0"), ("cpool.1", "cpool.2")]
    prog = program([step("cz", "add", "$a", "$b")] + decrypted(plain, "cz"), [region("cz")], ["z"])
    samples = [Sample(inputs={}, scalars={"a": a, "b": b}) for a, b in picks]
    result = driver.request("run", setup_id=setup_id, program=prog, samples=samples, pool=pool)
    for (a, b), got in zip(picks, result["samples"]):
        want = plain.add(vecs["p" + a[-1]], vecs["p" + b[-1]])
        assert_values(plain, Vector(**got["outputs"]["z"]).array(), want, f"{a} + {b}")
    refused("internal", driver.request, "run", setup_id=setup_id, program=prog, samples=samples[:1])


@pytest.mark.parametrize("library,scheme", pairs(RLWE))
def test_a_kept_pool_is_read_by_its_id_in_later_requests(driver_pool, library, scheme):
    """PROTOCOL.md "Pool": a pool sent with an id is kept with the setup, and a later request that
    names the id alone reads the same ciphertexts; an id the setup does not keep is refused."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    vecs = inputs(plain, np.random.default_rng(23), "p0", "p1", "p2")
    made = {"id": f"{setup_id}/kept", "inputs": {f"pool.{i}": Vector.of(vecs[f"p{i}"]) for i in range(3)},
            "steps": encrypted(plain, "pool.0", "pool.1", "pool.2")}
    prog = program([step("cz", "add", "$a", "$b")] + decrypted(plain, "cz"), [region("cz")], ["z"])
    for pool, (a, b) in ((made, ("cpool.0", "cpool.1")), ({"id": made["id"]}, ("cpool.2", "cpool.1")),
                         ({"id": made["id"]}, ("cpool.0", "cpool.2"))):
        result = driver.request("run", setup_id=setup_id, program=prog, pool=pool,
                                samples=[Sample(inputs={}, scalars={"a": a, "b": b})])
        want = plain.add(vecs["p" + a[-1]], vecs["p" + b[-1]])
        assert_values(plain, Vector(**result["samples"][0]["outputs"]["z"]).array(), want, f"{pool} {a} + {b}")
    refused("internal", driver.request, "run", setup_id=setup_id, program=prog, pool={"id": "no such pool"},
            samples=[Sample(inputs={}, scalars={"a": "cpool.0", "b": "cpool.1"})])


@pytest.mark.parametrize("library", LIBRARIES)
def test_timed_region_rules_are_checked_before_anything_runs(driver_pool, library):
    """The orchestrator checks a program's regions once, for every driver (protocol.Program), and
    sends none that breaks them; a driver refuses a region that is no {name, steps}; a program that
    keeps the rules runs."""
    scheme = schemes_of(library)[0]
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    op = next(o for o in ("add", "and", "short_add", "int_add") if o in ops_of(library, scheme))
    steps = encrypted(plain, "x", "y") + [step("a", op, "cx", "cy"), step("b", op, "cx", "cy"), step("c", op, "b", "cy")]
    xy = inputs(plain, np.random.default_rng(2), "x", "y")
    broken = {"steps not consecutive": [region("r", "a", "c")], "a name that is no step": [region("r", "nope")],
              "a step in two regions": [region("r", "a", "b"), region("s", "b")],
              "a region name twice": [region("r", "a"), region("r", "b")],
              "a step reading another of its region": [region("r", "b", "c")]}
    for why, timed in broken.items():
        err = refused("internal", run, driver, setup_id, program(steps, timed), xy)
        assert "region" in str(err) and "not sent" in str(err), (why, err)
    rep = raw(driver, json.dumps({"v": 2, "id": 900003, "type": "run", "setup_id": setup_id,
                                  "program": program(steps, ["a"]), "samples": []}))
    assert rep["error"]["kind"] == "internal", ("a region as a bare name (protocol 1)", rep)
    result = run(driver, setup_id, program(steps + decrypted(plain, "c"), [region("r", "a", "b")], ["z"]), xy)
    assert list(result["samples"][0]["ns"]) == ["r"]  # the rules met: it runs


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_name_no_step_made_is_refused(driver_pool, library):
    """An argument or a key attr naming no input, no earlier step and no standard key."""
    scheme = schemes_of(library)[0]
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    op = next(o for o in ("mul_relin", "and", "short_add", "int_add") if o in ops_of(library, scheme))
    x = inputs(plain, np.random.default_rng(9), "x")
    refused("internal", run, driver, setup_id, program(decrypted(plain, "nope")), x)
    refused("internal", run, driver, setup_id, program(encrypted(plain, "x") + [step("cz", op, "cx", "cx", key="nokey")]), x)


@pytest.mark.parametrize("library,scheme", [p for p in pairs(RLWE) if "mod_switch" in ops_of(*p.values)])
def test_a_modulus_switch_below_level_zero_is_an_error(driver_pool, library, scheme):
    driver, setup_id, result, plain = setup(driver_pool, library, scheme)
    levels = result["effective"]["levels"]
    steps = encrypted(plain, "x") + [step(f"m{i + 1}", "mod_switch", f"m{i}" if i else "cx") for i in range(levels + 1)]
    refused("internal", run, driver, setup_id, program(steps + decrypted(plain, f"m{levels + 1}"), outputs=["z"]),
            inputs(plain, np.random.default_rng(3), "x"))
    assert driver.request("capabilities")


@pytest.mark.parametrize("library,scheme", pairs(("bfv", "bgv")))
def test_the_noise_budget_shrinks_with_a_product(driver_pool, library, scheme):
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    x = inputs(plain, np.random.default_rng(4), "x")
    steps = [step("px", "encode", "x"), step("c0", "encrypt_sk", "px"), step("c1", "mul_relin", "c0", "c0")]
    last = "c1"
    if "mod_switch" in ops_of(library, scheme):
        steps.append(step("c2", "mod_switch", "c1"))
        last = "c2"
    result = run(driver, setup_id, program(steps + decrypted(plain, last), outputs=["z"],
                                           noise=["c0", "c1", last]), x)
    assert_values(plain, out(result, "z"), plain.mul(x["x"], x["x"]), "x * x")
    noise = result["noise_budget_bits"]
    assert noise["c0"] > noise["c1"] > 0 and noise[last] > 0, noise


@pytest.mark.parametrize("library,scheme", pairs(("bfv", "bgv")))
def test_a_fresh_encryption_has_the_budget_of_its_noise(driver_pool, library, scheme):
    """One definition (SEAL's, computed by the orchestrator where the library has none), so one
    prediction for every library: a fresh secret-key encryption's noise is the Gaussian error e
    (sigma 3.2; its largest of N coefficients about 4 sigma), so ||t*e|| leaves log2(Q/t) -
    log2(4 sigma) - 1 bits, give or take 2."""
    driver, setup_id, result, plain = setup(driver_pool, library, scheme)
    eff = result["effective"]
    res = run(driver, setup_id, program([step("px", "encode", "x"), step("c", "encrypt_sk", "px")], noise=["c"]),
              inputs(plain, np.random.default_rng(7), "x"))
    want = eff["log_q"] - np.log2(eff["t"]) - np.log2(4 * 3.2) - 1
    assert abs(res["noise_budget_bits"]["c"] - want) <= 2, (res["noise_budget_bits"], want)


@pytest.mark.parametrize("library,scheme", pairs(RLWE))
def test_a_product_without_relinearization_is_larger(driver_pool, library, scheme):
    """mul and square leave 3 components, mul_relin and square_relin 2: the sizes say which was done."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    pairs_ = [(a, b) for a, b in (("mul", "mul_relin"), ("square", "square_relin"), ("mul_into", "mul_relin_into"),
                                  ("square_into", "square_relin_into")) if {a, b} <= ops_of(library, scheme)]
    steps = [step("px", "encode", "x"), step("py", "encode", "y")]
    for op in (op for p in pairs_ for op in p):  # fresh operands each: an _into form may write into its first
        steps += [step(f"x_{op}", "encrypt_pk", "px"), step(f"y_{op}", "encrypt_pk", "py"),
                  step(op, op, f"x_{op}", *([f"y_{op}"] if "mul" in op else []))]
    result = run(driver, setup_id, program(steps, sizes=[op for p in pairs_ for op in p]),
                 inputs(plain, np.random.default_rng(5), "x", "y"))
    sizes = result["sizes_bytes"]
    for three, two in pairs_:
        assert sizes[three] > 1.3 * sizes[two], (three, two, sizes)


def _key_program(library: str, scheme: str, plain: Plain) -> tuple[list[dict], str]:
    """keygen, x encrypted under the new key and decrypted under the setup's (`w`); a keyed op, then
    the same op under the setup's keys (`z`, `z2`)."""
    if scheme in RLWE:
        op = "add"
        steps = [step("k", "keygen_secret"), step("px", "encode", "x"), step("cx", "encrypt_sk", "px", key="k")]
        steps += decrypted(plain, "cx", "w") + encrypted(plain, "y")
        steps += [step("cz", "add", "cx", "cx"), step("pz", "decrypt", "cz", key="k"), step("z", "decode", "pz")]
        return steps + [step("cz2", "add", "cy", "cy")] + decrypted(plain, "cz2", "z2"), op
    op = next(o for o in ("int_add", "short_add", "and") if o in ops_of(library, scheme))
    steps = [step("k", "keygen"), step("cx", "encrypt_sk", "x", key="k"), step("w", "decrypt", "cx"),
             step("cz", op, "cx", "cx", key="k"), step("z", "decrypt", "cz", key="k"), step("cy", "encrypt_sk", "y"),
             step("cz2", op, "cy", "cy"), step("z2", "decrypt", "cz2")]
    return steps, op


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_new_key_is_another_key_and_the_setup_keys_stay(driver_pool, library):
    """What a new key encrypts does not decrypt under the setup's key; the new key works; the setup's
    keys still work after it in the same program (TFHE-rs installs one server key per thread)."""
    rlwe = schemes_of(library, RLWE)
    scheme = rlwe[0] if rlwe else next(s for s in ("tfhe_int", "tfhe_bool", "tfhe_shortint") if s in schemes_of(library))
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    steps, op = _key_program(library, scheme, plain)
    xy = inputs(plain, np.random.default_rng(6), "x", "y")
    result = run(driver, setup_id, program(steps, [region("k")], ["w", "z", "z2"]), xy)
    x, y = xy["x"], xy["y"]
    same = (lambda a, b: a & b) if op == "and" else plain.add
    assert_values(plain, out(result, "z"), same(x, x), "the new key's op")
    assert_values(plain, out(result, "z2"), same(y, y), "the setup keys' op after it")
    w = out(result, "w")
    if plain.words:  # 4 integers (bits: 4 bits) decrypted under another key
        assert not np.array_equal(w.astype(np.uint64), x), "a ciphertext under the new key decrypts under the setup's"
    else:  # every slot, the zero padding included, comes out as noise
        differs = (w.astype(np.uint64) != x.astype(np.uint64)) if plain.exact else np.abs(w - x) > 1e-3
        assert differs.mean() > 0.5, "a ciphertext under the new key decrypts under the setup's"


ROUTINES = ("inner_sum", "inner_product", "linear_transform", "poly_eval")


def _routine_step(op: str) -> dict:
    return {"inner_sum": step("cz", "inner_sum", "cx", n=4), "inner_product": step("cz", "inner_product", "cx", "cy", n=4),
            "linear_transform": step("cz", "linear_transform", "cx", "y", diagonals=[1]),
            "poly_eval": step("cz", "poly_eval", "cx", coeffs=[0.5, 1, 2])}[op]


@pytest.mark.parametrize("library,scheme", [p for p in pairs(RLWE) if set(ROUTINES) - ops_of(*p.values)])
def test_a_routine_the_driver_does_not_list_is_unsupported(driver_pool, library, scheme):
    """PROTOCOL.md, "Library routines": a driver answers unsupported for the routines it does not
    list (SEAL has none; poly_eval is CKKS only, so BFV/BGV have it nowhere)."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    xy = inputs(plain, np.random.default_rng(10), "x", "y")
    for op in (op for op in ROUTINES if op not in ops_of(library, scheme)):
        steps = encrypted(plain, "x", "y") + [_routine_step(op)] + decrypted(plain, "cz")
        refused("unsupported", run, driver, setup_id, program(steps, outputs=["z"]), xy)


@pytest.mark.parametrize("library,scheme", [p for p in pairs(RLWE) if "inner_sum" in ops_of(*p.values)])
def test_inner_sum_over_a_whole_row(driver_pool, library, scheme):
    """n = the row length (PROTOCOL.md allows up to it): every slot gets the sum of its whole row,
    the window wrapping all the way round; BFV/BGV rows summed apart."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    row, rng = plain.row_length(), np.random.default_rng(11)
    x = plain.random(rng, 8)
    if plain.exact:  # the start of the second row too
        x[row:row + 8] = rng.integers(0, plain.t, size=8)
    steps = encrypted(plain, "x") + [step("cz", "inner_sum", "cx", n=row)] + decrypted(plain, "cz")
    result = run(driver, setup_id, program(steps, [region("cz")], ["z"]), {"x": x})
    if plain.exact:
        want = np.repeat(x.reshape(2, row).sum(axis=1) % plain.t, row)
    else:
        want = np.full(plain.slots, x.sum())
    # log2(row) rotations: at the cases' small CKKS scale OpenFHE's whole-row sum read 1.1e-3 off once
    assert_values(plain, out(result, "z"), want, f"inner_sum over all {row} slots of a row",
                  key_switches=row.bit_length() - 1)


@pytest.mark.parametrize("library", [lib for lib in LIBRARIES
                                     if "ckks" in schemes_of(lib) and "poly_eval" in ops_of(lib, "ckks")])
def test_a_polynomial_deeper_than_the_chain_is_refused(driver_pool, library):
    """Degree 7 needs 3 levels (OpenFHE's EvalPoly 4) and the case chain has 2: an error, not a
    wrong value, and the driver goes on. PROTOCOL.md names no kind for it (OpenFHE says
    invalid_params, Lattigo internal)."""
    driver, setup_id, result, plain = setup(driver_pool, library, "ckks")
    assert result["effective"]["levels"] == 2, result["effective"]
    x = inputs(plain, np.random.default_rng(12), "x")
    steps = encrypted(plain, "x") + [step("cz", "poly_eval", "cx", coeffs=[0.5] * 8)] + decrypted(plain, "cz")
    with pytest.raises(DriverError) as err:
        run(driver, setup_id, program(steps, [region("cz")], ["z"]), x)
    assert err.value.kind in ("invalid_params", "internal"), err.value
    result = run(driver, setup_id, program(encrypted(plain, "x") + decrypted(plain, "cx"), outputs=["z"]), x)
    assert_values(plain, out(result, "z"), x["x"], "x after the refused polynomial")


@pytest.mark.parametrize("library,scheme", [p for p in pairs(RLWE) if "keygen_relin" in ops_of(*p.values)])
def test_a_failed_program_leaves_the_setup_keys_usable(driver_pool, library, scheme):
    """A timed keygen_relin, then a step naming a key no step made: refused; the setup's
    relinearization and Galois keys still work in the next program (OpenFHE's driver empties the
    library's key caches around a timed keygen and must put them back when the program fails)."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    xy = inputs(plain, np.random.default_rng(13), "x", "y")
    steps = [step("rk", "keygen_relin")] + encrypted(plain, "x", "y") + [step("cz", "mul_relin", "cx", "cy", key="nokey")]
    refused("internal", run, driver, setup_id, program(steps, [region("rk")]), xy)
    want = plain.mul(xy["x"], xy["y"])
    steps, last = encrypted(plain, "x", "y") + [step("cm", "mul_relin", "cx", "cy")], "cm"
    rot = next((o for o in ("rotate_rows", "rotate") if o in ops_of(library, scheme)), None)
    if rot:
        steps, last, want = steps + [step("cr", rot, "cm", steps=1)], "cr", plain.rotate(want, 1)
    result = run(driver, setup_id, program(steps + decrypted(plain, last), [region("cm")], ["z"]), xy)
    assert_values(plain, out(result, "z"), want, "the setup's keys after a failed program")


@pytest.mark.parametrize("library,scheme", [p for p in pairs(RLWE) if {"rotate_rows", "rotate"} & ops_of(*p.values)])
def test_a_rotation_is_by_keyed_steps_only(driver_pool, library, scheme):
    """Galois keys for steps 1 and 2: a rotation by 1 works, and so does one by the list [1, 2] (3,
    as fhemark spells a step without a key of its own: model/rotations.py). A rotation by 3 itself
    is refused although its parts have keys (composing is fhemark's choice, never a driver's), and
    so is a list with a step that has no key: refused, not a wrong value."""
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    rot = "rotate" if scheme == "ckks" else "rotate_rows"
    x = inputs(plain, np.random.default_rng(17), "x")
    for k, total in ((1, 1), ([1, 2], 3), (3, None), ([1, 4], None)):
        steps = [step("gk", "keygen_galois", steps=[1, 2])] + encrypted(plain, "x") + [step("cz", rot, "cx", steps=k, key="gk")]
        prog = program(steps + decrypted(plain, "cz"), [region("gk")], ["z"])
        if total:
            assert_values(plain, out(run(driver, setup_id, prog, x), "z"), plain.rotate(x["x"], total), f"by {k}")
        else:
            refused("internal", run, driver, setup_id, prog, x)


@pytest.mark.parametrize("library,scheme", pairs(BITS))
def test_an_input_out_of_range_is_refused(driver_pool, library, scheme):
    driver, setup_id, _, plain = setup(driver_pool, library, scheme)
    refused("internal", run, driver, setup_id, program([step("cx", "encrypt_sk", "x")]),
            {"x": np.array([0, plain.t], dtype=np.uint64)})


@pytest.mark.parametrize("library", [lib for lib in LIBRARIES
                                     if "tfhe_bool" in schemes_of(lib) and "gather" in ops_of(lib, "tfhe_bool")])
def test_a_bad_gather_or_constant_is_refused(driver_pool, library):
    """A gather that names a bit its arguments do not have, an argument it was not given, or no
    bits at all is refused, never read out of bounds; so is a trivial constant that is not a bit."""
    driver, setup_id, _, _ = setup(driver_pool, library, "tfhe_bool")
    for bits in ([[0, 2]], [[1, 0]], [[0, -1]], None, [[0]]):
        attrs = {} if bits is None else {"bits": bits}
        refused("internal", run, driver, setup_id,
                program([step("cx", "encrypt_sk", "x"), step("cz", "gather", "cx", **attrs)]),
                {"x": np.array([1, 0], dtype=np.uint64)})
    for bits in ([2], [True], None, "01"):  # constants are the bits 0 and 1
        attrs = {} if bits is None else {"bits": bits}
        refused("internal", run, driver, setup_id, program([step("k", "trivial", **attrs)]), {})


# -- one library's own limits ----------------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["bfv", "ckks"])
def test_tenseal_refuses_what_its_library_cannot_do(driver_pool, scheme):
    driver, setup_id, _, plain = setup(driver_pool, "tenseal", scheme)
    x = inputs(plain, np.random.default_rng(7), "x", "y")
    # its contexts make the default Galois key set only (used by its routines; no rotation op): a
    # step outside it is refused, the steps of that set are accepted
    refused("unsupported", run, driver, setup_id, program([step("k", "keygen_galois", steps=[1, 3])], [region("k")]), x)
    for steps in ([1, 2], galois_steps(plain.row_length(), pow2=True)):
        result = run(driver, setup_id, program([step("k", "keygen_galois", steps=steps)] + encrypted(plain, "x")
                                               + decrypted(plain, "cx"), [region("k")], ["z"]), x)
        assert_values(plain, out(result, "z"), x["x"], f"x after keygen_galois {steps}")
    # relinearization is a context flag: a product with and one without it cannot share a region
    steps = encrypted(plain, "x", "y") + [step("a", "mul", "cx", "cy"), step("b", "mul_relin", "cx", "cy")]
    refused("unsupported", run, driver, setup_id, program(steps, [region("r", "a", "b")]), x)
    refused("unsupported", run, driver, setup_id, program([step("px", "encode", "x", level=0)], [region("px")]), x)


def test_tfhe_rs_refuses_two_server_keys_in_one_region(driver_pool):
    """Integer ops run under one thread-local server key: a region mixing two keys cannot be timed."""
    driver, setup_id, _, _ = setup(driver_pool, "tfhe-rs", "tfhe_int")
    steps = [step("k", "keygen"), step("cx", "encrypt_sk", "x"), step("kx", "encrypt_sk", "x", key="k"),
             step("a", "int_add", "cx", "cx"), step("b", "int_add", "kx", "kx", key="k")]
    err = refused("internal", run, driver, setup_id, program(steps, [region("r", "a", "b")]),
                  {"x": np.array([1], dtype=np.uint64)})
    assert "two server keys" in str(err)


def test_concrete_refuses_a_comparison_bit_as_an_integer(driver_pool):
    driver, setup_id, _, plain = setup(driver_pool, "concrete", "tfhe_int", "int_lt")
    xy = inputs(plain, np.random.default_rng(8), "x", "y")
    steps = encrypted(plain, "x", "y") + [step("l", "int_lt", "cx", "cy"), step("cz", "int_add", "l", "cy")]
    refused("unsupported", run, driver, setup_id, program(steps), xy)
    result = run(driver, setup_id, program(encrypted(plain, "x", "y") + [step("cz", "int_add", "cx", "cy")], [region("cz")]),
                 xy)
    assert any("table lookups" in n for n in result.get("notes", [])), result.get("notes")


def test_openfhe_keygen_of_cached_keys_is_alone_in_its_region(driver_pool):
    """OpenFHE keeps relinearization and Galois keys in static caches that the driver empties around
    a timed keygen_relin / keygen_galois: such a step shares its region with no other step
    (refused before anything runs, though the region follows the protocol's rules)."""
    driver, setup_id, _, plain = setup(driver_pool, "openfhe", "bfv")
    xy = inputs(plain, np.random.default_rng(14), "x", "y")
    for keygen, attrs, other in (("keygen_relin", {}, step("cz", "mul_relin", "cx", "cy")),
                                 ("keygen_galois", {"steps": [1]}, step("cz", "rotate_rows", "cx", steps=1))):
        steps = encrypted(plain, "x", "y") + [step("k", keygen, **attrs), other]
        err = refused("internal", run, driver, setup_id, program(steps, [region("r", "k", "cz")]), xy)
        assert "alone in its region" in str(err), err


def test_openfhe_poly_eval_levels(driver_pool):
    """EvalPoly of degree 3 consumes 3 levels (the coefficient products take one more than the power
    tree's 2), `$name` coefficients among literal ones; degree 7 on the 2 levels of the case chain
    is invalid_params."""
    driver = driver_pool("openfhe")
    setup_id, result = setup_of(driver, next(c for c in CASES["cases"] if c["name"] == "ckks/poly_eval_3"), False)
    top, plain = result["effective"]["levels"], Plain("ckks", result["effective"]["slots"])
    x = plain.random(np.random.default_rng(15), 8)
    steps = encrypted(plain, "x") + [step("cz", "poly_eval", "cx", coeffs=["$a0", 0.25, "$a2", 0.5])] + decrypted(plain, "cz")
    sample = Sample(inputs={"x": Vector.of(x)}, scalars={"a0": -0.5, "a2": 0.125})
    res = driver.request("run", setup_id=setup_id, program=program(steps, [region("cz")], ["z"], levels=["cz"]),
                         samples=[sample])
    assert_values(plain, out(res, "z"), np.polynomial.polynomial.polyval(x, [-0.5, 0.25, 0.125, 0.5]), "degree 3")
    assert res["levels"]["cz"] == top - 3, (top, res["levels"], res.get("notes"))
    driver, setup_id, _, plain = setup(driver_pool, "openfhe", "ckks")
    steps = encrypted(plain, "x") + [step("cz", "poly_eval", "cx", coeffs=[0.5] * 8)] + decrypted(plain, "cz")
    x = inputs(plain, np.random.default_rng(15), "x")
    refused("invalid_params", run, driver, setup_id, program(steps, [region("cz")], ["z"]), x)


def test_openfhe_binfhe_gates_bootstrap_with_the_key_they_name(driver_pool):
    """binfhe keeps the bootstrapping key in its context: a gate with {"key": k} after a timed keygen
    bootstraps with k (right bits), the same gate with the setup's key on k's ciphertexts gives
    garbage (32 bits: all right by chance 2^-32), and the setup's keys still work afterwards."""
    driver, setup_id, _, _ = setup(driver_pool, "openfhe", "tfhe_bool")
    rng = np.random.default_rng(16)
    xy = {n: rng.integers(0, 2, size=32, dtype=np.uint64) for n in ("x", "y")}
    want = xy["x"] ^ xy["y"]
    steps = [step("k", "keygen"), step("cx", "encrypt_sk", "x", key="k"), step("cy", "encrypt_sk", "y", key="k"),
             step("cz", "xor", "cx", "cy", key="k"), step("z", "decrypt", "cz", key="k"),
             step("cw", "xor", "cx", "cy", key="sk"), step("w", "decrypt", "cw", key="k")]
    result = run(driver, setup_id, program(steps, [region("k")], ["z", "w"]), xy)
    assert np.array_equal(out(result, "z").astype(np.uint64), want), "the new key's gate"
    assert not np.array_equal(out(result, "w").astype(np.uint64), want), "the setup's key bootstrapped k's ciphertexts"
    steps = [step("cx", "encrypt_sk", "x"), step("cy", "encrypt_sk", "y"), step("cz", "or", "cx", "cy"),
             step("z", "decrypt", "cz")]
    result = run(driver, setup_id, program(steps, [region("cz")], ["z"]), xy)
    assert np.array_equal(out(result, "z").astype(np.uint64), xy["x"] | xy["y"]), "the setup's keys after a keygen"


def test_openfhe_binfhe_lmkcdey_preset(driver_pool):
    """binfhe's other bootstrapping method, by its preset: the adder on all 16 inputs and a netlist of
    every gate kind (the tfhe_bool cases, run at the default STD128_GINX there) come out right."""
    driver = driver_pool("openfhe")
    eff = driver.request("setup", setup_id="lmkcdey", scheme="tfhe_bool", params={"preset": "STD128_LMKCDEY"})["effective"]
    assert (eff["preset"], eff["method"]) == ("STD128_LMKCDEY", "LMKCDEY"), eff
    for name in ("tfhe_bool/netlist_adder_all_inputs", "tfhe_bool/netlist_gates"):
        case = next(c for c in CASES["cases"] if c["name"] == name)
        result = driver.request("run", setup_id="lmkcdey", program=case["program"], samples=request_samples(case))
        for i, (want, got) in enumerate(zip(samples_of(case), result["samples"])):
            check_outputs(case, want["expected"], got["outputs"], f"{name} sample {i}: ")


def test_openfhe_bgv_refuses_a_t_of_33_bits_on_a_chain_and_decrypts_the_sets_it_keeps(driver_pool):
    """OpenFHE BGV keeps t in 32 bits when it picks its primes, so a larger t decrypts every slot
    wrongly once a prime is dropped (Decrypt drops all but the first): a chain of two primes with a
    33-bit t is refused in one line naming the limit and the fix; the largest 32-bit t the ring
    batches, and the 33-bit t on one prime (nothing dropped), still decrypt right."""
    driver = driver_pool("openfhe")
    params = {"N": 2048, "q_bits": [60, 60], "p_bits": [60], "secret": "ternary", "sigma": 3.2}
    t33, t32 = 4294991873, 4294955009  # primes = 1 mod 4096, of 33 and 32 bits
    err = refused("invalid_params", driver.request, "setup", setup_id="t33", scheme="bgv",
                  params={**params, "t": t33}, allow_insecure=True)
    assert "t < 2^32" in str(err) and "BFV" in str(err) and "\n" not in str(err), err
    # what choose's search reads (PROTOCOL.md "Refusals"), not the words above
    assert err.refusal == {"kind": "t_too_wide", "t_bits": 33, "largest_t_bits": 32, "chain_primes_from": 2}, err.refusal
    for setup_id, changed in (("t32", {"t": t32}), ("t33-one-prime", {"t": t33, "q_bits": [60]})):
        result = driver.request("setup", setup_id=setup_id, scheme="bgv", params={**params, **changed},
                                allow_insecure=True)
        plain = Plain("bgv", result["effective"]["slots"], result["effective"]["t"])
        x = inputs(plain, np.random.default_rng(17), "x")
        res = run(driver, setup_id, program(encrypted(plain, "x") + decrypted(plain, "cx"), [region("cx")], ["z"]), x)
        assert_values(plain, out(res, "z"), x["x"], setup_id)


def test_openfhe_ckks_rescale_divides_by_the_real_prime(driver_pool):
    """OpenFHE CKKS under FIXEDMANUAL decodes as if a rescale divided by exactly 2^scale_bits, so every
    value keeps the factor 2^scale_bits / q of the prime dropped (about 6 bits lost at N = 8192;
    drivers/openfhe/README.md, CKKS precision). x^2 over [-64, 64], rescaled once: the least-squares
    factor between output and reference is 1 within 2^-22 (FIXEDMANUAL: 2^-17.0 off at this set,
    FLEXIBLEAUTO 2^-27 measured, the slots' noise averaging out), one level is spent, and the setup
    names its scaling, OpenFHE's decode noise and its public-key encryption's fresh noise."""
    driver, setup_id, result, plain = setup(driver_pool, "openfhe", "ckks")
    assert result["effective"]["scaling"] == "FLEXIBLEAUTO", result["effective"]
    assert any("decode noise" in n for n in result.get("notes", [])), result.get("notes")
    assert any(n.startswith("CKKS encrypt_pk") for n in result.get("notes", [])), result.get("notes")
    x = np.random.default_rng(18).uniform(-64, 64, plain.slots)
    steps = encrypted(plain, "x") + [step("cz", "mul_relin", "cx", "cx"), step("cr", "rescale", "cz")]
    res = run(driver, setup_id, program(steps + decrypted(plain, "cr"), [region("cr")], ["z"], levels=["cx", "cr"]),
              {"x": x})
    assert res["levels"]["cr"] == res["levels"]["cx"] - 1, res["levels"]
    want = x * x
    factor = np.sum(out(res, "z") * want) / np.sum(want * want)
    assert abs(factor - 1) < 2.0 ** -22, f"output = {factor!r} x reference: the rescale's prime taken as 2^scale_bits"
