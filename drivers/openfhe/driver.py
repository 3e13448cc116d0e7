#!/usr/bin/env python3
"""fhemark driver for OpenFHE (BFV, BGV, CKKS; binfhe as tfhe_bool) through the openfhe-python binding.

Speaks fhemark protocol v2 (protocol/PROTOCOL.md) through the Python drivers' shared request loop
and step walk (drivers/python_shared/jsonl_driver.py). Runs under CPython 3.10 in the venv made
by build.sh (PyPI's `openfhe` wheel is built for 3.10 only). Every primitive is split into an
untimed preparation and the library call(s) that a timed region brackets (Program.prepare).
"""
import ctypes
import json
import os
import sys
from functools import partial

# 0.14.0: key sizes and P read from serializations streamed through a FIFO (a peak is the library's, not the
# driver's copy of its keys); 0.13.0: binfhe setups state their LWE problems (lwe_problems); 0.12.0: P read from
# the key's binary (no JSON reading in the setup's time); 0.11.0: values freed
DRIVER_VERSION = "0.14.0"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "python_shared")]
# OMP_NUM_THREADS before any import that loads a threaded library (numpy's OpenBLAS reads it too).
from threads import wanted  # noqa: E402

_THREADS_WANTED = wanted()

import numpy as np  # noqa: E402
from jsonl_driver import (Failure, Run, binding_call_ns, merged, regions_of, run_request, serve,  # noqa: E402
                          static_capabilities, vec_out)

try:
    import openfhe as ofhe  # noqa: E402
except Exception as exc:  # still answer every request, with a clear error
    _why = "cannot import openfhe: %s" % exc

    def _unavailable(*_):
        raise Failure("internal", _why)
    serve(_unavailable, _unavailable, _unavailable)
    sys.exit(0)

import autoparams  # noqa: E402
import binfhe  # noqa: E402
import ckksboot  # noqa: E402
import compat  # noqa: E402
import contexts  # noqa: E402
from streamed import binary  # noqa: E402
import noise as noise_mod  # noqa: E402
import routines  # noqa: E402
from contexts import RELIN_INSTALLED, SCHEMES, SECRET_KEYS, Key, one_line  # noqa: E402


def log(*a):
    print("[openfhe-driver]", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# threads

_GOMP = None


def gomp_copies():
    """The libgomp files mapped into this process. The PyPI wheel ships openfhe/lib/libgomp.so, but
    its libraries ask for the soname libgomp.so.1, which that folder lacks: the loader takes the
    system's copy (seen here: /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0 is the only one mapped).
    One copy means the calls below reach the OpenMP runtime OpenFHE really uses."""
    try:
        with open("/proc/self/maps") as f:
            return sorted({line.split()[-1] for line in f if "libgomp" in line.rsplit("/", 1)[-1]})
    except OSError:
        return []


def _gomp():
    global _GOMP
    if _GOMP is None:
        try:
            # By soname: the copy OpenFHE's libraries already loaded (dlopen returns it).
            _GOMP = ctypes.CDLL("libgomp.so.1")
        except OSError:
            _GOMP = False
    return _GOMP or None


def apply_threads(n):
    g = _gomp()
    if g is None:
        return None
    g.omp_set_num_threads(ctypes.c_int(n))
    return int(g.omp_get_max_threads())


def real_threads():
    """(threads, honoured): OpenMP's max threads read back from the runtime OpenFHE uses, and
    whether it is certainly that runtime (one libgomp mapped); (FHEMARK_THREADS, None) when the
    driver cannot tell."""
    g = _gomp()
    if g is None or len(gomp_copies()) != 1:
        return _THREADS_WANTED, None
    return int(g.omp_get_max_threads()), True



# --------------------------------------------------------------------------
# op tables

COMMON_OPS = ["encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub",
              "add_plain", "mul", "mul_relin", "mul_plain", "mul_scalar", "square", "square_relin",
              "relinearize", "mod_switch", "keygen_secret", "keygen_public", "keygen_relin",
              "keygen_galois", "key_switch", "keygen_switch"]
# `<op>_into`: OpenFHE's in-place calls, on a copy of the first operand made before the region
# (so the program's own value is left as it is). Not offered where the binding has no in-place
# form, or where its in-place form cannot write back: EvalMultMutableInPlace and
# EvalSquareInPlace rebind the C++ shared_ptr, which pybind11 does not hand back (BGV/CKKS: the
# Python object keeps its old value; BFV: refused), and EvalMult(ct, pt), Compress and
# EvalAutomorphism have no in-place binding (CKKS rescale and mod_switch are Compress under the
# driver's FLEXIBLEAUTO, whose RescaleInPlace and LevelReduceInPlace do nothing: contexts.py).
INTO = {
    "bfv": ["add", "sub", "add_plain", "relinearize", "key_switch"],
    "bgv": ["add", "sub", "add_plain", "relinearize", "key_switch", "mod_switch"],
    "ckks": ["add", "sub", "add_plain", "relinearize", "key_switch", "mul_scalar"],
}
OPS = {
    "bfv": COMMON_OPS + ["rotate_rows", "rotate_columns"],
    "bgv": COMMON_OPS + ["rotate_rows", "rotate_columns"],
    "ckks": COMMON_OPS + ["rescale", "rotate", "conjugate", "bootstrap"],
}
for _scheme in SCHEMES:
    OPS[_scheme] = OPS[_scheme] + [op + "_into" for op in INTO[_scheme]] + routines.OPS[_scheme]

# Static facts (limits, deviations from PROTOCOL.md's canonical boundaries checked against OpenFHE 1.6.1
# and openfhe-python 1.6.1.0, build notes): capabilities.json.
CAPABILITIES = static_capabilities(HERE, {**OPS, "tfhe_bool": binfhe.OPS})
# capabilities.json offers `auto_params` per scheme; autoparams.py answers it: a file that offers
# another scheme's would promise what the driver refuses.
_AUTO = sorted(s for s, f in CAPABILITIES["schemes"].items() if f.get("auto_params"))
if _AUTO != sorted(autoparams.SCHEMES):
    sys.exit("%s/capabilities.json: auto_params for %s, but autoparams.py answers for %s"
             % (HERE, _AUTO, sorted(autoparams.SCHEMES)))


# --------------------------------------------------------------------------
# setup

def setup(scheme, params, rotations, allow_insecure):
    if scheme == "tfhe_bool":
        return binfhe.setup(params)
    if scheme not in SCHEMES:
        raise Failure("unsupported", "OpenFHE driver has no scheme %r" % scheme)
    if params.get("preset"):
        if scheme == "ckks":
            return ckksboot.setup(params, rotations, allow_insecure)
        raise Failure("invalid_params", "OpenFHE driver has no %s preset %r" % (scheme, params["preset"]))
    try:
        return contexts.setup(scheme, params, rotations, allow_insecure)
    except Failure as e:
        if e.kind == "insecure_params" and "60-bit" not in str(e) and params.get("key_switching") in (None, "hybrid"):
            raise Failure(e.kind, str(e) + " [OpenFHE's HYBRID special modulus P is made of 60-bit primes covering"
                                           " one digit of ceil(len(q_bits)/dnum) primes, so log QP exceeds"
                                           " sum(q_bits)+sum(p_bits) unless dnum is large]") from None
        raise


# --------------------------------------------------------------------------
# program execution

RELIN_OPS = ("mul_relin", "square_relin", "relinearize")


class Program(Run):
    """A run's steps as prepared calls (the frame: jsonl_driver.run_request): prepare(step, attrs, env)
    -> (call, wrap), the shared step walk's shape. `call` is what the timed region brackets (arguments,
    keys, automorphism indices, scalars and the outputs of `_into` forms are resolved before);
    wrap(result) is the value kept (None: the result itself). `towers` keeps each value's RNS limb
    count (BFV levels), read only by later steps (a region's steps are independent)."""

    def __init__(self, setup):
        super().__init__(setup)
        self.cc = setup.cc
        self.towers = {}
        self.saved_mult = None
        self.saved_auto = None

    def __exit__(self, kind, exc, tb):
        self.restore_caches()  # a failed keygen step must not leave the key caches emptied

    def output(self, env, name):
        v = np.asarray(env[name])
        if v.dtype == object or v.ndim != 1:
            raise Failure("internal", "output %r is not a decoded vector" % name)
        # BFV/BGV: OpenFHE's centred values, which the orchestrator reduces mod t
        return vec_out(np.real(v).astype(np.float64) if self.s.scheme == "ckks" else v.astype(np.int64))

    def size(self, name, v):
        return value_size(self.s, self.val({}, name) if v is None and name in ("sk", "pk", "rlk", "gk") else v)

    def level(self, name, v):
        if self.s.scheme == "bfv":
            return None if v is None else int(self.towers.get(name, self.s.L + 1)) - 1
        return self.s.L - int(v.GetLevel()) if isinstance(v, (ofhe.Ciphertext, ofhe.Plaintext)) else None

    def noise(self, names, env):
        """BFV/BGV: the raw decryptions fhemark turns into noise budgets (OpenFHE has no noise-budget call)."""
        if not names or self.s.scheme not in ("bfv", "bgv"):
            return {}
        s = self.s
        s.roots = s.roots or noise_mod.context_roots(s.cc)
        raw = {}
        for name in names:
            ct = env.get(name)
            sk = SECRET_KEYS.get(ct.GetKeyTag()) if isinstance(ct, ofhe.Ciphertext) else None
            if sk is not None:
                raw[name] = noise_mod.raw_decryption(ct, sk, s.roots, s.scheme, s.t)
        self.notes.append("noise budget computed by fhemark from the raw decryption the driver reads from the "
                          "serialized ciphertext and secret key (OpenFHE has no noise-budget call)")
        return {"raw_decryptions": raw}

    # values ------------------------------------------------------------
    def val(self, env, name):
        if name in env:
            return env[name]
        std = {"sk": self.s.sk, "pk": self.s.pk, "rlk": self.s.rlk, "gk": self.s.gk}
        if name in std:
            return std[name]
        raise Failure("internal", "unknown value %r" % name)

    def key_attr(self, env, attrs, kind, default):
        name = attrs.get("key")
        if name is None:
            return default
        k = self.val(env, name)
        if not isinstance(k, Key):
            raise Failure("internal", "%r is not a key" % name)
        if kind == "public" and k.kind == "secret" and k.pair is not None:
            return Key("public", k.pair.publicKey, k.tag)  # KeyGen made both
        if k.kind != kind:
            raise Failure("internal", "%r is a %s key, %s needed" % (name, k.kind, kind))
        return k

    def like_attr(self, env, attrs, level):
        """encode's `like` attr: the ciphertext (a value of this program) whose level and scale a
        CKKS plaintext takes; None without the attr."""
        name = attrs.get("like")
        if name is None:
            return None
        if self.s.scheme != "ckks":
            raise Failure("unsupported", "encode's like attr is CKKS only (a %s plaintext has no scale)"
                          % self.s.scheme)
        if level is not None:
            raise Failure("internal", "encode: give level or like, not both")
        try:
            ct = self.val(env, name) if isinstance(name, str) else None
        except Failure:
            ct = None
        if not isinstance(ct, ofhe.Ciphertext):
            what = "no value of the program" if ct is None else "a %s, not a ciphertext" % type(ct).__name__
            raise Failure("internal", "encode: like %r names %s" % (name, what))
        return ct

    def install_relin(self, k):
        """Make k the relinearization key OpenFHE uses for its secret key.

        OpenFHE keeps one EvalMult key vector per secret-key tag in a static
        map and refuses to overwrite one: clear the map, put everything back."""
        cur = RELIN_INSTALLED.get(k.tag)
        if cur is k:
            return
        saved = compat.all_mult_keys(self.cc, SECRET_KEYS)
        saved[k.tag] = k.obj
        ofhe.ClearEvalMultKeys()
        for tag, vec in saved.items():
            self.cc.InsertEvalMultKey(vec, tag)
        RELIN_INSTALLED[k.tag] = k

    # one step -> the prepared call -----------------------------------------
    def prepare(self, step, attrs, env):
        call, wrap, towers = self.prepare_op(step, attrs, env)
        if towers is not None:
            self.towers[step["out"]] = towers
        return call, wrap

    def prepare_op(self, step, attrs, env):
        """-> (call, wrap, towers): towers is the result's RNS limb count (None: not a ciphertext)."""
        op = step["op"]
        names = step.get("args") or []
        args = [self.val(env, a) for a in names]
        cc = self.cc
        s = self.s
        scheme = s.scheme
        towers = [self.towers.get(a, s.L + 1) for a in names]
        out_towers = min(towers) if towers else s.L + 1
        into = op.endswith("_into")
        if into:
            op = op[:-len("_into")]
        if op in routines.NAMES:  # the library routines of native variants (routines.py)
            return routines.prepare(self, op, attrs, args, names, out_towers)

        def need(n, cts=0):
            if len(args) != n:
                raise Failure("internal", "%s takes %d args" % (op, n))
            for i in range(cts):
                if not isinstance(args[i], ofhe.Ciphertext):
                    raise Failure("internal", "%s: %r is not a ciphertext" % (op, names[i]))

        def ct_call(new, inplace, a, *rest):
            """`op`: new(a, *rest) returns a new ciphertext. `op_into`: inplace(out, *rest) writes
            into out, a copy of a made here, before the region (the program's a stays as it is)."""
            if not into:
                return partial(new, a, *rest), None
            out = a.Clone()
            return partial(inplace, out, *rest), (lambda _: out)

        if op == "encode":
            need(1)
            level = attrs.get("level")
            like = self.like_attr(env, attrs, level)
            x, n = args[0], s.slots  # full-length, BFV/BGV values in [0, t) (PROTOCOL.md)
            if scheme == "ckks":
                if like is not None:  # at the ciphertext's level and noise-scale degree
                    lvl = int(like.GetLevel())
                    return (partial(cc.MakeCKKSPackedPlaintext, x, int(like.GetNoiseScaleDeg()), lvl, None, n),
                            None, s.L + 1 - lvl)
                lvl = 0 if level is None else s.L - int(level)
                return partial(cc.MakeCKKSPackedPlaintext, x, 1, lvl, None, n), None, s.L + 1 - lvl
            if level is not None and scheme == "bgv":
                lvl = s.L - int(level)
                return partial(cc.MakePackedPlaintext, x, 1, lvl), None, s.L + 1 - lvl
            return partial(cc.MakePackedPlaintext, x), None, s.L + 1
        if op == "decode":
            need(1)
            pt = args[0]
            if not isinstance(pt, ofhe.Plaintext):
                raise Failure("internal", "decode: %r is not a plaintext" % names[0])
            pt.SetLength(s.slots)
            return compat.packed_values(pt, scheme == "ckks"), None, None
        if op in ("encrypt_pk", "encrypt_sk"):
            need(1)
            if not isinstance(args[0], ofhe.Plaintext):
                raise Failure("internal", "%s: %r is not a plaintext" % (op, names[0]))
            k = (self.key_attr(env, attrs, "public", s.pk) if op == "encrypt_pk"
                 else self.key_attr(env, attrs, "secret", s.sk))
            return partial(cc.Encrypt, k.obj, args[0]), None, out_towers
        if op == "decrypt":
            need(1, 1)
            k = self.key_attr(env, attrs, "secret", s.sk)
            return partial(cc.Decrypt, k.obj, args[0]), None, out_towers
        if op in ("add", "sub", "mul"):
            need(2, 2)
            new = {"add": cc.EvalAdd, "sub": cc.EvalSub, "mul": cc.EvalMultNoRelin}[op]
            inplace = {"add": cc.EvalAddInPlace, "sub": cc.EvalSubInPlace}.get(op)
            return ct_call(new, inplace, args[0], args[1]) + (out_towers,)
        if op in ("add_plain", "mul_plain"):
            need(2, 1)
            if not isinstance(args[1], ofhe.Plaintext):
                raise Failure("internal", "%s: %r is not a plaintext" % (op, names[1]))
            if op == "add_plain":
                return ct_call(cc.EvalAdd, cc.EvalAddInPlace, args[0], args[1]) + (out_towers,)
            return ct_call(cc.EvalMult, None, args[0], args[1]) + (out_towers,)
        if op == "square":
            need(1, 1)
            return ct_call(cc.EvalMultNoRelin, None, args[0], args[0]) + (out_towers,)
        if op in RELIN_OPS:
            need(2 if op == "mul_relin" else 1, 2 if op == "mul_relin" else 1)
            self.install_relin(self.key_attr(env, attrs, "relin", s.rlk))
            if op == "mul_relin":
                return ct_call(cc.EvalMult, None, args[0], args[1]) + (out_towers,)
            if op == "square_relin":
                return ct_call(cc.EvalSquare, None, args[0]) + (out_towers,)
            return ct_call(cc.Relinearize, cc.RelinearizeInPlace, args[0]) + (out_towers,)
        if op == "mul_scalar":
            need(1, 1)
            sc = attrs.get("scalar")
            if sc is None:
                raise Failure("internal", "mul_scalar needs attr scalar")
            if scheme == "ckks":
                return ct_call(cc.EvalMult, cc.EvalMultInPlace, args[0], float(sc)) + (out_towers,)
            # OpenFHE's integer scalar multiply (every RNS polynomial times k); EvalMult(ct, k)
            # is CKKS only.
            self.note("mul_scalar (%s): EvalMultNoCheck(ct, k), OpenFHE's integer scalar multiply "
                      "(a copy of ct times k; no type or level checks)" % scheme.upper())
            return ct_call(cc.EvalMultNoCheck, None, args[0], int(sc) % s.t) + (out_towers,)
        if op == "rescale":
            need(1, 1)
            # FLEXIBLEAUTO's Rescale is a no-op; Compress down one tower to noise-scale degree 1 is
            # its ModReduceInternal, dividing the scale by the real prime (contexts.CKKS_SCALING)
            left = s.towers(args[0]) - 1
            if left < 1:
                raise Failure("internal", "rescale: no level left to drop")
            self.note("rescale (CKKS): Compress(ct, towers-1), OpenFHE's exact rescale under FLEXIBLEAUTO")
            return partial(cc.Compress, args[0], left, 1), None, left
        if op == "mod_switch":
            need(1, 1)
            left = out_towers - 1
            last = left < 1 if scheme == "bfv" else args[0].GetLevel() >= s.L
            if last:
                raise Failure("internal", "mod_switch: no level left to drop")
            if scheme == "bgv":
                return ct_call(cc.ModReduce, cc.ModReduceInPlace, args[0]) + (left,)
            if scheme == "ckks":  # at its own noise-scale degree: drops the prime, scale unchanged
                left = s.towers(args[0]) - 1
                self.note("mod_switch (CKKS): Compress(ct, towers-1, its noise-scale degree), drops the last "
                          "prime, scale unchanged")
                return partial(cc.Compress, args[0], left, int(args[0].GetNoiseScaleDeg())), None, left
            self.note("mod_switch (BFV): Compress(ct, towers-1), OpenFHE's BFV modulus switch")
            return partial(cc.Compress, args[0], left), None, left
        if op in ("rotate_rows", "rotate"):
            need(1, 1)
            return self.rotation(env, attrs, op, args[0]) + (out_towers,)
        if op in ("rotate_columns", "conjugate"):
            need(1, 1)
            k = self.key_attr(env, attrs, "galois", s.gk)
            idx = s.M - 1
            if idx not in k.indices:
                raise Failure("internal", "no Galois key for automorphism 2N-1 in that key set")
            return partial(cc.EvalAutomorphism, args[0], idx, k.obj), None, out_towers
        if op == "bootstrap":
            need(1, 1)
            if not s.boot:
                raise Failure("unsupported", "bootstrap needs a setup with params {\"preset\": \"%s\"} (or %s)"
                              % ckksboot.PRESETS)
            self.note("bootstrap: OpenFHE EvalBootstrap (one iteration), output at the levels reported")
            return partial(cc.EvalBootstrap, args[0]), None, None
        if op == "key_switch":
            need(1, 1)
            k = self.key_attr(env, attrs, "switch", None)
            if k is None:
                raise Failure("internal", "key_switch needs attr key (a keygen_switch result)")
            return ct_call(cc.KeySwitch, cc.KeySwitchInPlace, args[0], k.obj) + (out_towers,)
        return self.prepare_keygen(op, attrs, env)

    def rotation(self, env, attrs, op, a):
        """EvalAutomorphism by each given step in turn (one step, or the keyed steps fhemark spelled
        a step without a key of its own as), every step with the key of its own automorphism
        (negative steps included: -k and half-k are the same automorphism)."""
        s, cc = self.s, self.cc
        k = self.key_attr(env, attrs, "galois", s.gk)
        given = attrs.get("steps")
        if given is None:
            raise Failure("internal", "%s needs attr steps" % op)
        half = s.N // 2
        steps = [int(x) % half for x in (given if isinstance(given, list) else [given]) if int(x) % half]
        if not steps:
            self.note("%s by a multiple of %d: the identity, no library call" % (op, half))
            return (lambda: a), None
        idxs = [s.auto_index(x) for x in steps]
        missing = [x for x, i in zip(steps, idxs) if i not in k.indices]
        if missing:
            raise Failure("internal", "no Galois key for step %d (of %s)" % (missing[0], given))
        km, f = k.obj, cc.EvalAutomorphism
        if len(idxs) == 1:
            return partial(f, a, idxs[0], km), None

        def composed():
            c = a
            for i in idxs:
                c = f(c, i, km)
            return c
        return composed, None

    def prepare_keygen(self, op, attrs, env):
        s, cc = self.s, self.cc
        if op == "keygen_secret":
            def wrap(kp):
                tag = kp.secretKey.GetKeyTag()
                SECRET_KEYS[tag] = kp.secretKey
                return Key("secret", kp.secretKey, tag, pair=kp)
            return cc.KeyGen, wrap, None
        k = self.key_attr(env, attrs, "secret", s.sk)
        if op == "keygen_public":
            def wrap_pk(kp):
                pk = kp.publicKey
                pk.SetKeyTag(k.tag)  # ciphertexts under it use k's evaluation keys
                return Key("public", pk, k.tag)
            return partial(cc.MultipartyKeyGen, [k.obj]), wrap_pk, None
        if op == "keygen_relin":
            # OpenFHE keeps evaluation keys per secret key in a static cache and skips
            # generating keys it already has: empty the cache (saved, and put back after the
            # step) so that the time is real.
            self.save_caches("mult")

            def wrap_rk(_):
                new = Key("relin", list(cc.GetEvalMultKeyVector(k.tag)), k.tag)
                self.restore_caches()
                return new
            return partial(cc.EvalMultKeyGen, k.obj), wrap_rk, None
        if op == "keygen_galois":
            indices = s.galois_indices(attrs["steps"] if isinstance(attrs["steps"], list) else [attrs["steps"]])
            if not indices:
                raise Failure("internal", "keygen_galois: no step needs a key")
            idx_list = sorted(indices)
            self.save_caches("auto")

            def wrap_gk(m):
                self.restore_caches()
                return Key("galois", m, k.tag, indices=indices)
            self.note("keygen_galois: %d keys (automorphism indices %s)"
                      % (len(idx_list), idx_list))
            return partial(cc.EvalAutomorphismKeyGen, k.obj, idx_list), wrap_gk, None
        if op == "keygen_switch":
            fr = attrs.get("from")
            to = attrs.get("to")
            kf = self.val(env, fr) if fr is not None else s.sk
            kt = self.val(env, to) if to is not None else None
            if kt is None or not isinstance(kt, Key) or kt.kind != "secret" or \
                    not isinstance(kf, Key) or kf.kind != "secret":
                raise Failure("internal", "keygen_switch needs attrs from/to naming secret keys")
            return partial(cc.KeySwitchGen, kf.obj, kt.obj), (lambda ek: Key("switch", ek, kt.tag)), None
        raise Failure("unsupported", "op %r" % op)

    def save_caches(self, which):
        """Save and empty OpenFHE's static evaluation-key cache ("mult"/"auto")."""
        if which == "mult":
            if self.saved_mult is None:
                self.saved_mult = compat.all_mult_keys(self.cc, SECRET_KEYS)
            ofhe.ClearEvalMultKeys()
        else:
            if self.saved_auto is None:
                self.saved_auto = compat.all_automorphism_keys(self.cc, SECRET_KEYS)
            self.cc.ClearEvalAutomorphismKeys()

    def restore_caches(self):
        if self.saved_mult is not None:
            ofhe.ClearEvalMultKeys()
            for tag, vec in self.saved_mult.items():
                self.cc.InsertEvalMultKey(vec, tag)
            for tag in set(RELIN_INSTALLED) - set(self.saved_mult):
                del RELIN_INSTALLED[tag]
            self.saved_mult = None
        if self.saved_auto is not None:
            self.cc.ClearEvalAutomorphismKeys()
            for tag, mp in self.saved_auto.items():
                self.cc.InsertEvalAutomorphismKey(mp, tag)
            self.saved_auto = None

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)


def check_key_regions(program):
    """What OpenFHE's static key caches forbid inside one region, checked before anything runs (on
    regions that follow the protocol's rules: regions_of, which run_samples calls again, cheaply)."""
    steps = program["steps"]
    for lo, (name, hi) in regions_of(program).items():
        ops = [steps[i]["op"] for i in range(lo, hi)]
        if hi - lo > 1 and ("keygen_relin" in ops or "keygen_galois" in ops):
            raise Failure("internal", "timed region %r: keygen_relin/keygen_galois must be alone in its region "
                                      "(the driver empties OpenFHE's key cache around it)" % name)
        keys = {json.dumps((steps[i].get("attrs") or {}).get("key")) for i in range(lo, hi)
                if ops[i - lo].replace("_into", "") in RELIN_OPS + ("inner_product",)}
        if len(keys) > 1:
            raise Failure("internal", "timed region %r uses several relinearization keys: OpenFHE uses the "
                                      "one installed for the secret key" % name)


def handle_run(s, req):
    program = req["program"]
    ops = binfhe.OPS if s.scheme == "tfhe_bool" else OPS[s.scheme]
    for st in program["steps"]:  # all of them before anything runs
        if st["op"] not in ops:
            why = routines.WHY_NOT.get(st["op"])
            raise Failure("unsupported", "OpenFHE %s has no op %r%s" % (
                s.scheme.upper() if s.scheme in SCHEMES else s.scheme, st["op"], " (%s)" % why if why else ""))
    with compat.older_binding():
        if s.scheme == "tfhe_bool":
            return binfhe.run(s, program, req["samples"])
        check_key_regions(program)
        return run_request(Program(s), req, s.kept_pools)


def value_size(s, v):
    if v is None:
        return None
    if isinstance(v, Key):
        return binary(v.obj)[0]
    if isinstance(v, ofhe.Ciphertext):
        return binary(v)[0]
    if isinstance(v, ofhe.Plaintext):
        return s.plaintext_size(v)
    if isinstance(v, np.ndarray):
        return int(v.nbytes)
    return None


# --------------------------------------------------------------------------
# capabilities

def library_version():
    v = getattr(ofhe, "__version__", None)
    pkg = None
    try:
        from importlib import metadata
        pkg = metadata.version("openfhe")
    except Exception:
        pass
    lib = None
    try:
        cfg = os.path.join(os.path.dirname(ofhe.__file__), "build-config.txt")
        with open(cfg) as f:
            for line in f:
                if line.startswith("OPENFHE_TAG="):
                    lib = line.split("=", 1)[1].strip().lstrip("v")
    except Exception:
        pass
    return lib or (v or "unknown"), v, pkg


def capabilities():
    lib, binding, pkg = library_version()
    threads, honoured = real_threads()
    copies = gomp_copies()
    return merged(CAPABILITIES, {
        "library_version": lib, "driver_version": DRIVER_VERSION, "threads": threads, "threads_honoured": honoured,
        "build": {"binding": "openfhe-python %s (PyPI openfhe %s)" % (binding, pkg), "python": sys.version.split()[0],
                  "native_int_bits": int(ofhe.get_native_int()) if hasattr(ofhe, "get_native_int") else None,
                  "openmp": "libgomp %s: FHEMARK_THREADS as OMP_NUM_THREADS before import and omp_set_num_threads "
                            "(ctypes); threads = omp_get_max_threads() read back" % (", ".join(copies) or "(none mapped)"),
                  "binding_call_ns": binding_call_ns(ofhe.CCParamsBFVRNS().GetRingDim),
                  **({"version_adaptations": compat.ADAPTATIONS} if compat.ADAPTATIONS else {})},
        "schemes": {"ckks": {"limits": {"presets": list(ckksboot.PRESETS), "bootstrap_preset_secure_n": ckksboot.SECURE_N}},
                    "tfhe_bool": {"limits": binfhe.limits()}}})


def unexpected(exc):
    """An exception no step turned into a Failure: the driver's own slip, or OpenFHE's (pybind11 raises
    its exceptions as RuntimeError, std::bad_alloc as MemoryError)."""
    if isinstance(exc, MemoryError):
        return "out of memory in driver"
    if isinstance(exc, (KeyError, ValueError, TypeError)):
        return one_line("%s: %s" % (type(exc).__name__, exc))
    return one_line("OpenFHE: %s" % exc)


if __name__ == "__main__":
    log("threads wanted %d, OpenMP max threads %s" % (_THREADS_WANTED, apply_threads(_THREADS_WANTED)))
    serve(capabilities, setup, handle_run, unexpected, optional={"auto_params": autoparams.auto_params})
