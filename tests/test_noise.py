"""The orchestrator's one noise budget (model/noise.py): SEAL's invariant noise budget, computed
from a raw decryption. Checked against SEAL's own `invariant_noise_budget` on SEAL's own raw
decryptions, on synthetic decryptions whose noise is known, and through the driver client, which
turns a driver's `raw_decryptions` into `noise_budget_bits` (PROTOCOL.md "Raw decryptions")."""

import base64
import json
from pathlib import Path
from math import prod

import numpy as np
import pytest

from fhemark.drivers.registry import Manifest
from fhemark.drivers.supervise import Driver
from fhemark.errors import DriverError
from fhemark.model.noise import noise_budget_bits

PRIMES = [1099511390209, 1099511480321]  # two 40-bit primes; Q has 80 bits
Q = prod(PRIMES)


def residues(x) -> list[np.ndarray]:
    return [np.array([int(v) % p for v in x], dtype=np.uint64) for p in PRIMES]


@pytest.mark.parametrize("noise_bits", [0, 1, 20, 60, 78, 79])
def test_the_budget_of_a_known_noise(noise_bits):
    """BGV-like x = m + t*e and BFV-like x = Delta*m + t^-1*(m + t*e) with ||m + t*e|| of a known
    bit length, negative coefficients included: budget = bitlen(Q) - that - 1, never below 0."""
    t, rng = 65537, np.random.default_rng(noise_bits)
    worst = (1 << noise_bits) - 1 if noise_bits else 0
    m = rng.integers(0, t, 64)
    e = [int(v) for v in rng.integers(-(worst // t) // 2, (worst // t) // 2 + 1, 64)]
    lsb = [int(a) + t * b for a, b in zip(m, e)]
    lsb[5] = -worst  # a negative coefficient, the largest once the noise outgrows m
    want = max(0, Q.bit_length() - max(abs(v) for v in lsb).bit_length() - 1)
    assert noise_budget_bits(PRIMES, residues(lsb), t, "lsb") == want
    # BFV: t * (Delta*m + t^-1*v) = v - r_t(Q)*m (mod Q), SEAL's BFV noise (r_t(Q)*m < t^2 included)
    delta, tinv = Q // t, pow(t, -1, Q)
    msb = [(delta * int(a) + v * tinv) % Q for a, v in zip(m, lsb)]
    norm = max(abs(v - Q % t * int(a)) for a, v in zip(m, lsb))
    assert noise_budget_bits(PRIMES, residues(msb), t, "msb") == max(0, Q.bit_length() - norm.bit_length() - 1)


def test_a_malformed_raw_decryption_is_refused():
    good = residues(range(8))
    for primes, res, form in ((PRIMES, good, "middle"), (PRIMES, good[:1], "lsb"), (PRIMES[:1] * 2, good, "lsb"),
                              (PRIMES, [good[0], good[1][:4]], "lsb"), ([], [], "lsb")):
        with pytest.raises(ValueError):
            noise_budget_bits(primes, res, 3, form)


def test_the_driver_client_turns_raw_decryptions_into_budgets(tmp_path):
    """A driver's raw decryptions become `noise_budget_bits` as the reply arrives and are not passed
    on; a budget the library gave itself stays; a broken one is the driver's internal error."""
    def b64(r):
        return base64.b64encode(r.astype("<u8").tobytes()).decode()
    raw = {"form": "lsb", "t": 3, "primes": PRIMES, "residues": [b64(r) for r in residues([1, -(1 << 40), 7])]}
    drv = Driver(Manifest("fake", Path(tmp_path), ("true",), ""))
    drv._next_id = 1

    def reply(result):
        return drv._reply("run", json.dumps({"v": 2, "id": 1, "ok": True, "result": {
            "samples": [], "overhead_ns": 1, **result}}))
    got = reply({"raw_decryptions": {"a": raw, "b": raw}, "noise_budget_bits": {"b": 9}})
    assert got["noise_budget_bits"] == {"a": 80 - 41 - 1, "b": 9} and "raw_decryptions" not in got
    with pytest.raises(DriverError, match="raw decryption"):
        reply({"raw_decryptions": {"a": {**raw, "primes": [5, 7]}}})


def _seal_raw(seal, ctx, ev, sk, ct):
    """SEAL's raw decryption of `ct`, by SEAL's own transforms: c0 + c1*s (+ c2*s^2) is summed
    in NTT form (the secret key is kept in it) and taken back to coefficients as a ciphertext
    whose every component holds it. An uncompressed serialization ends with its coefficients."""
    primes = [m.value() for m in ctx.get_context_data(ct.parms_id()).parms().coeff_modulus()]
    k, n = ct.size(), ct.poly_modulus_degree()
    w = seal.Ciphertext(ct)
    if not w.is_ntt_form():
        ev.transform_to_ntt_inplace(w)
    blob = bytearray(w.to_string())
    polys = np.frombuffer(blob[-8 * k * len(primes) * n:], dtype="<u8").reshape(k, len(primes), n)
    key = sk.to_string()
    s = np.frombuffer(key[-8 * len(ctx.key_context_data().parms().coeff_modulus()) * n:], dtype="<u8")
    s = s.reshape(-1, n)[:len(primes)]
    acc = []
    for i, q in enumerate(primes):
        a, sp = polys[0][i].astype(object), 1
        for j in range(1, k):
            sp = sp * s[i].astype(object) % q
            a = (a + polys[j][i].astype(object) * sp) % q
        acc.append(np.array(a, dtype=np.uint64))
    blob[-8 * k * len(primes) * n:] = np.broadcast_to(np.array(acc), (k, len(primes), n)).astype("<u8").tobytes()
    d = seal.Ciphertext()
    d.load_bytes(ctx, bytes(blob))
    ev.transform_from_ntt_inplace(d)
    out = d.to_string()
    return primes, list(np.frombuffer(out[-8 * k * len(primes) * n:], dtype="<u8").reshape(k, len(primes), n)[0])


@pytest.mark.parametrize("scheme", ["bfv", "bgv"])
def test_the_budget_is_seals_own(scheme):
    """On SEAL's ciphertexts (fresh, a 3-component square, relinearized, mod-switched, two squarings
    deep) the orchestrator's figure from SEAL's raw decryption equals SEAL's invariant_noise_budget."""
    seal = pytest.importorskip("seal")
    n, t = 4096, 65537
    parms = seal.EncryptionParameters(getattr(seal.scheme_type, scheme))
    parms.set_poly_modulus_degree(n)
    parms.set_coeff_modulus(seal.CoeffModulus.Create(n, [50, 50, 50, 50]))
    parms.set_plain_modulus(t)
    ctx = seal.SEALContext(parms, True, seal.sec_level_type.none)
    kg = seal.KeyGenerator(ctx)
    sk, rlk, ev = kg.secret_key(), kg.create_relin_keys(), seal.Evaluator(ctx)
    dec = seal.Decryptor(ctx, sk)
    ct = seal.Encryptor(ctx, kg.create_public_key()).encrypt(
        seal.BatchEncoder(ctx).encode(np.random.default_rng(1).integers(0, t // 2, n, dtype=np.int64)))
    sq3 = ev.square(ct)
    sq = ev.relinearize(sq3, rlk)
    cts = [ct, sq3, sq, ev.mod_switch_to_next(sq), ev.relinearize(ev.square(sq), rlk)]
    form = "msb" if scheme == "bfv" else "lsb"
    ours = [noise_budget_bits(*_seal_raw(seal, ctx, ev, sk, c), t, form) for c in cts]
    theirs = [dec.invariant_noise_budget(c) for c in cts]
    assert all(abs(a - b) <= 1 for a, b in zip(ours, theirs)) and theirs[-1] > 0, (ours, theirs)
