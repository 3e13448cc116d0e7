"""OpenFHE binfhe (FHEW/CGGI gate bootstrapping) as the fhemark scheme `tfhe_bool`
(protocol/PROTOCOL-bits.md).

One LWE ciphertext per bit; every two-input gate is one OpenFHE `EvalBinGate`
(one blind rotation + key switch), `not` is `EvalNOT` (no bootstrap), `mux` is
OpenFHE's own `EvalBinGate(CMUX, [b, a, sel])`, which the library computes as
NAND(NAND(b, NOT sel), NAND(a, sel)): three bootstraps.

`keygen` makes a fresh BinFHEContext of the preset before the timed region and times KeyGen +
BTKeyGen on it: OpenFHE keeps the bootstrapping key inside its context (a later BTKeyGen on the
same context replaces it), so the key value owns that context, nothing else calls BTKeyGen on it,
and every op with {"key": k} encrypts, evaluates and decrypts through k's context: a gate after
`keygen` bootstraps with exactly the key that was timed.

The driver's setup and run handlers call `setup` and `run` for this scheme.
"""
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import openfhe as ofhe

import compat
from jsonl_driver import Failure, run_samples, vec_out
from streamed import binary

# preset name -> (BINFHE_PARAMSET name, BINFHE_METHOD name, log2 p_fail or None)
# p_fail: the comment next to the set in OpenFHE's binfhe-constants.h
# (BINFHE_PARAMSET_LIST, "approximate probability of failure", stated for the
# method the set is tuned for). The PyPI wheel ships no headers; the values are
# from the development source whose parameter table matches what the installed
# v1.6.1 builds (n=554, N=1024, q=2048, qKS=2^15, base_KS=256).
PRESETS = {
    "STD128_GINX": ("STD128", "GINX", -68.0),
    "STD128_LMKCDEY": ("STD128_LMKCDEY", "LMKCDEY", -70.0),
    "STD128_AP": ("STD128_AP", "AP", -68.0),
    "STD128Q_GINX": ("STD128Q", "GINX", -68.0),
    "STD128Q_LMKCDEY": ("STD128Q_LMKCDEY", "LMKCDEY", -68.0),
}
ALIASES = {"default": "STD128_GINX", "STD128": "STD128_GINX", "STD128Q": "STD128Q_GINX"}
DEFAULT_PRESET = "STD128_GINX"
P_FAIL_SOURCE = ("OpenFHE binfhe-constants.h comment for the set (approximate failure probability; "
                 "development source matching the installed parameter table, the wheel has no headers)")

OPS = ["keygen", "encrypt_sk", "decrypt", "and", "or", "xor", "nand", "nor", "xnor", "not", "mux",
       "gather", "trivial"]
GATES2 = ("and", "or", "xor", "nand", "nor", "xnor")


def limits():
    return {"presets": ["default"] + sorted(PRESETS), "default_preset": DEFAULT_PRESET}


def _gate_enum():
    return {"and": ofhe.AND, "or": ofhe.OR, "xor": ofhe.XOR, "nand": ofhe.NAND, "nor": ofhe.NOR,
            "xnor": ofhe.XNOR}


# --------------------------------------------------------------------------
# sizes

def serialized_size(obj):
    """Length of OpenFHE's binary serialization (SerializeToFile is the only serializer the binding has
    for binfhe objects), streamed (streamed.py): a ~1 GB bootstrapping key is never written to disk."""
    if not compat.BINFHE_SERIALIZABLE:  # the FIFO would never be opened for writing: the reader would wait
        return None
    try:
        return binary(obj)[0]
    except Exception as e:  # pragma: no cover
        print("[openfhe-driver] binfhe size measurement failed:", e, file=sys.stderr, flush=True)
        return None


def _context_facts(cc):
    """Parameters the binding has no getter for, from the context's JSON."""
    d = tempfile.mkdtemp(prefix="fhemark-binfhe-")
    try:
        p = os.path.join(d, "cc.json")
        ofhe.SerializeToFile(p, cc, ofhe.JSON)
        with open(p) as f:
            j = json.load(f)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    data = j["value0"]["params"]["ptr_wrapper"]["data"]
    lwe = data["lweparams"]["ptr_wrapper"]["data"]
    rg = data["rgswparams"]["ptr_wrapper"]["data"]
    return {
        "q_ks": int(lwe["qKS"]["v"]), "base_ks": int(lwe["bKS"]),
        "sigma": float(lwe["sigma"]),
        "key_dist": {0: "gaussian", 1: "uniform_ternary"}.get(int(lwe.get("keyDist", 1)), str(lwe.get("keyDist"))),
        "base_g": int(rg["bG"]), "digits_g": int(rg.get("bdigitsG", 0)) or None, "base_r": int(rg["bR"]),
    }


def problems(n: int, N: int, q_ks: int, Q: int, key_dist: str, sigma: float) -> list[dict]:
    """PROTOCOL.md lwe_problems: the LWE key modulo q_ks (key switching; as many samples as an attacker
    wants) and the ring key modulo Q (the bootstrapping key: N samples), both of the context's secret
    distribution and noise width."""
    secret = {"secret": "gaussian", "secret_std": sigma} if "gaussian" in key_dist else \
        {"secret": "binary" if "binary" in key_dist else "ternary"}
    return [{"name": f"LWE (n={n})", "n": n, "log_q": math.log2(q_ks), **secret, "noise_std": sigma},
            {"name": f"RLWE (N={N})", "n": N, "log_q": math.log2(Q), **secret, "noise_std": sigma, "samples": N}]


# --------------------------------------------------------------------------
# values

class BoolKey:
    """A secret key with the context that holds its bootstrapping key."""

    def __init__(self, cc, sk):
        self.cc = cc
        self.sk = sk


class Bits:
    """An array of LWE ciphertexts (one per bit), with the key it is under."""

    def __init__(self, cts, key):
        self.cts = cts
        self.key = key


class BoolSetup:
    """A preset's context with its secret and bootstrapping keys (`key`), kept for later runs."""

    scheme = "tfhe_bool"

    def effective(self, params):
        return self.eff

    def sizes(self):
        return self.size_table


def _new_context(s):
    cc = ofhe.BinFHEContext()
    cc.GenerateBinFHEContext(getattr(ofhe, s.paramset), getattr(ofhe, s.method))
    return cc


def setup(params):
    asked = params.get("preset") or "default"
    name = ALIASES.get(asked, asked)
    if name not in PRESETS:
        raise Failure("invalid_params", "unknown tfhe_bool preset %r (known: %s)"
                      % (asked, ", ".join(["default"] + sorted(PRESETS))))
    paramset, method, p_fail = PRESETS[name]
    p_fail = p_fail if compat.MODERN else None  # the table's p_fail are for 1.6's sets, redefined under these names
    s = BoolSetup()
    s.preset, s.paramset, s.method = name, paramset, method
    try:
        cc = _new_context(s)
    except Exception as e:
        raise Failure("invalid_params", "OpenFHE: %s" % str(e).replace("\n", " "))
    sk = cc.KeyGen()
    cc.BTKeyGen(sk)
    s.cc = cc
    s.key = BoolKey(cc, sk)
    n, q = int(cc.Getn()), int(cc.Getq())
    N, Q, bt_key = compat.binfhe_ring(cc)
    s.eff = {
        "preset": name, "preset_requested": asked,
        "openfhe_paramset": paramset, "method": method,
        "lwe_dimension": n, "n": n,
        "q": q, "q_bits": [q.bit_length() - 1] if q & (q - 1) == 0 else [q.bit_length()],
        "message_modulus": 2, "carry_modulus": 1,
        "p_fail": p_fail, "p_fail_source": P_FAIL_SOURCE if p_fail is not None else "not stated",
        "security_bits_target": 128,
        "slots": 1,
    }
    if N is not None:  # before openfhe-python 1.6 the ring side is not readable (compat.py)
        facts = _context_facts(cc)
        s.eff.update({
            "polynomial_size": N, "ring_dim": N, "glwe_dimension": 1, "Q": Q, "Q_bits": round(math.log2(Q), 3),
            "q_ks": facts["q_ks"], "base_ks": facts["base_ks"], "base_g": facts["base_g"],
            "digits_g": facts["digits_g"], "base_r": facts["base_r"],
            "secret": facts["key_dist"], "sigma": facts["sigma"],
            "lwe_problems": problems(n, N, facts["q_ks"], Q, facts["key_dist"], facts["sigma"]),
        })
    sizes = {
        "client_key": serialized_size(sk),
        "server_key": serialized_size(bt_key) if bt_key is not None else None,
        "ciphertext": serialized_size(cc.Encrypt(sk, 1)),
    }
    s.size_table = {k: v for k, v in sizes.items() if v is not None}
    s.setup_notes = ["sizes: OpenFHE SerializeToFile(..., BINARY) lengths (cereal, no compression); server_key is "
                     "the RingGSWBTKey (refreshing key + key-switching key); OpenFHE has no compressed variants",
                     "threads: OpenMP is used inside BTKeyGen; gates run one after another (the binding holds the GIL)"]
    return s


# --------------------------------------------------------------------------
# programs

class BoolProgram:
    """A run's steps as prepared calls: prepare(step, attrs, env) -> (thunk, wrap): thunk is the timed
    call, wrap builds the value."""

    def __init__(self, s):
        self.s = s
        self.notes = []

    def note(self, t):
        if t not in self.notes:
            self.notes.append(t)

    @staticmethod
    def val(env, name):
        if name not in env:
            raise Failure("internal", "unknown value %r" % name)
        return env[name]

    def key_for(self, env, attrs, args):
        name = attrs.get("key")
        if name is not None:
            k = self.val(env, name)
            if not isinstance(k, BoolKey):
                raise Failure("internal", "%r is not a key" % name)
            return k
        for a in args:  # the key the argument was encrypted under
            if isinstance(a, Bits):
                return a.key
        return self.s.key

    def prepare(self, st, attrs, env):
        op = st["op"]
        args = [self.val(env, a) for a in st.get("args") or []]
        s = self.s

        def need(n):
            if len(args) != n:
                raise Failure("internal", "%s takes %d args" % (op, n))

        if op == "keygen":
            need(0)
            kcc = _new_context(s)  # parameters only, outside the timed region

            def gen():
                sk = kcc.KeyGen()
                kcc.BTKeyGen(sk)
                return sk
            self.note("keygen: KeyGen + BTKeyGen on a fresh BinFHEContext of the preset (context made "
                      "outside the timed region); the value holds the secret key and that context, whose "
                      "bootstrapping key every op with {\"key\": ...} uses")
            return gen, (lambda sk: BoolKey(kcc, sk))
        key = self.key_for(env, attrs, args)
        cc = key.cc
        if op == "encrypt_sk":
            need(1)
            v = np.asarray(args[0])
            if v.dtype.kind not in "iu":
                raise Failure("internal", "tfhe_bool encrypts integer vectors of bits")
            bad = [int(x) for x in v if int(x) not in (0, 1)]
            if bad:
                raise Failure("internal", "tfhe_bool input value %d is not a bit" % bad[0])
            bits = [int(x) for x in v]
            sk, enc = key.sk, cc.Encrypt
            return (lambda: [enc(sk, b) for b in bits]), (lambda cts: Bits(cts, key))
        if op == "decrypt":
            need(1)
            a = self._bits(args[0], op)
            sk, dec, cts = key.sk, cc.Decrypt, a.cts
            return (lambda: [dec(sk, c) for c in cts]), (lambda r: np.asarray(r, dtype=np.uint64))
        if op in GATES2:
            need(2)
            a, b = self._bits(args[0], op), self._bits(args[1], op)
            self._same_len(a, b)
            g, f = _gate_enum()[op], cc.EvalBinGate
            xs = a.cts
            ys = [self._indep(x, y, cc) for x, y in zip(a.cts, b.cts)]
            return (lambda: [f(g, x, y) for x, y in zip(xs, ys)]), (lambda cts: Bits(cts, key))
        if op == "not":
            need(1)
            a = self._bits(args[0], op)
            f, xs = cc.EvalNOT, a.cts
            return (lambda: [f(x) for x in xs]), (lambda cts: Bits(cts, key))
        if op == "mux":
            need(3)
            sel, a, b = (self._bits(x, op) for x in args)
            self._same_len(sel, a)
            self._same_len(sel, b)
            f, cm = cc.EvalBinGate, ofhe.CMUX
            triples = []
            for sv, av, bv in zip(sel.cts, a.cts, b.cts):
                av = self._indep(sv, av, cc)
                bv = self._indep(sv, self._indep(av, bv, cc), cc)
                triples.append([bv, av, sv])
            self.note("mux: OpenFHE EvalBinGate(CMUX, [b, a, sel]) = NAND(NAND(b, NOT sel), NAND(a, sel)), "
                      "three gate bootstraps")
            return (lambda: [f(cm, t) for t in triples]), (lambda cts: Bits(cts, key))
        if op == "trivial":
            need(0)
            bits = attrs.get("bits")
            if not isinstance(bits, list) or any(b not in (0, 1) or isinstance(b, bool) for b in bits):
                raise Failure("internal", "trivial needs bits = [0 or 1, ...]")
            cts = [cc.EvalConstant(bool(b)) for b in bits]
            self.note("trivial: OpenFHE EvalConstant (noiseless), made outside every timed region")
            return (lambda: cts), (lambda cts: Bits(cts, key))
        if op == "gather":
            picks = attrs.get("bits")
            arrays = [self._bits(x, op).cts for x in args]
            if not isinstance(picks, list) or not all(
                    isinstance(pk, list) and len(pk) == 2 and all(type(i) is int for i in pk)
                    and 0 <= pk[0] < len(arrays) and 0 <= pk[1] < len(arrays[pk[0]]) for pk in picks):
                raise Failure("internal", "gather needs bits = [[argument, position], ...] within its arguments, "
                                          "got %r" % (picks,))
            cts = [arrays[a][p] for a, p in picks]
            return (lambda: cts), (lambda cts: Bits(cts, key))
        raise Failure("unsupported", "op %r" % op)

    @staticmethod
    def _bits(v, op):
        if not isinstance(v, Bits):
            raise Failure("internal", "%s needs an encrypted bit array" % op)
        return v

    @staticmethod
    def _same_len(a, b):
        if len(a.cts) != len(b.cts):
            raise Failure("internal", "arrays of different lengths (%d, %d)" % (len(a.cts), len(b.cts)))

    def _indep(self, x, y, cc):
        """OpenFHE refuses a gate whose two inputs are the same ciphertext: copy y
        (outside the timed region) with two free NOTs."""
        if x is y:
            self.note("same ciphertext given twice to a gate: one copy made (EvalNOT twice) outside timing")
            return cc.EvalNOT(cc.EvalNOT(y))
        return y


def value_size(v):
    if isinstance(v, Bits):
        sizes = [serialized_size(c) for c in v.cts]
        return None if any(x is None for x in sizes) else sum(sizes)
    if isinstance(v, BoolKey):
        bt_key = compat.binfhe_ring(v.cc)[2]
        return serialized_size(bt_key) if bt_key is not None else None
    if isinstance(v, np.ndarray):
        return int(v.nbytes)
    return None


def run(s, program, samples):
    """A run request's samples on a tfhe_bool setup (its ops already checked by the driver)."""
    prog = BoolProgram(s)

    def output(env, o):
        if not isinstance(env[o], np.ndarray):
            raise Failure("internal", "output %r is not a decrypted vector" % o)
        return vec_out(env[o].astype(np.uint64))
    result, env = run_samples(program, samples, prog.prepare, output, {"sk": s.key, "key": s.key})
    if program.get("sizes"):
        sizes = {name: value_size(env.get(name)) for name in program["sizes"]}
        result["sizes_bytes"] = {name: v for name, v in sizes.items() if v is not None}
    if program.get("noise") or program.get("levels"):
        prog.notes.append("noise and levels do not apply to tfhe_bool (every gate bootstraps): omitted")
    if prog.notes:
        result["notes"] = prog.notes
    return result
