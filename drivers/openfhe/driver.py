#!/usr/bin/env python3
"""fhemark driver for OpenFHE (BFV, BGV, CKKS) through the openfhe-python binding.

Speaks fhemark protocol v2 (protocol/PROTOCOL.md): one JSON object per line on
stdin, one per line on stdout; logs go to stderr.  Runs under CPython 3.10 in
the venv made by build.sh (PyPI's `openfhe` wheel is built for 3.10 only).
Every primitive is split into an untimed preparation and the library call(s)
that a timed region brackets (read_run, run_steps, time_region: shared with
binfhe.py).
"""
import base64
import ctypes
import gc
import json
import os
import re
import statistics
import sys
import time
import traceback
from functools import partial

DRIVER_VERSION = "0.5.0"
PROTOCOL = 2

# OpenMP reads OMP_NUM_THREADS when the runtime starts: set it before import.
_THREADS_WANTED = 1
try:
    _THREADS_WANTED = max(1, int(os.environ.get("FHEMARK_THREADS", "1")))
except ValueError:
    _THREADS_WANTED = 1
os.environ["OMP_NUM_THREADS"] = str(_THREADS_WANTED)

import numpy as np  # noqa: E402

try:
    import openfhe as ofhe  # noqa: E402
    _IMPORT_ERROR = None
except Exception as e:  # still answer requests, with a clear error
    ofhe = None
    _IMPORT_ERROR = "cannot import openfhe: %s" % e

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noise as noise_mod  # noqa: E402
from dnum import choose_dnum  # noqa: E402
import binfhe  # noqa: E402
import ckksboot  # noqa: E402
import routines  # noqa: E402

clock = time.perf_counter_ns
# The process's CPU time, user + system over every thread (OpenMP's workers included): cpu_ns.
cpu_clock = time.process_time_ns


# --------------------------------------------------------------------------
# programs and timed regions (shared by the RLWE schemes and binfhe.py)

def read_run(req, known_ops, scheme_name):
    """A run request's program, checked before anything runs: well-formed steps, every op one
    this scheme offers (else `unsupported`), valid timed regions. An `iters` field (protocol 1)
    is ignored: repetition is k copies of a step inside the program, never a driver loop."""
    program = req.get("program")
    if not isinstance(program, dict):
        raise DriverError("internal", "run needs a program object")
    steps = program.get("steps") or []
    if not isinstance(steps, list):
        raise DriverError("internal", "program.steps must be a list")
    for i, st in enumerate(steps):
        if not isinstance(st, dict) or not isinstance(st.get("out"), str) or not isinstance(st.get("op"), str):
            raise DriverError("internal", "step %d needs a string out and op" % i)
        args = st.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise DriverError("internal", "step %r: args must be a list of names" % st["out"])
        if not isinstance(st.get("attrs") or {}, dict):
            raise DriverError("internal", "step %r: attrs must be an object" % st["out"])
    for st in steps:
        if st["op"] not in known_ops:
            why = routines.WHY_NOT.get(st["op"])
            raise DriverError("unsupported", "OpenFHE %s has no op %r%s" % (scheme_name, st["op"],
                                                                            " (%s)" % why if why else ""))
    regions = read_regions(steps, program.get("timed"))
    outputs = program.get("outputs") or []
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
        raise DriverError("internal", "program.outputs must be a list of names")
    samples = req.get("samples") or [{}]
    if not isinstance(samples, list) or not all(isinstance(x, dict) for x in samples):
        raise DriverError("internal", "samples must be a list of objects")
    return program, steps, regions, list(outputs), samples


def step_reads(st):
    """Names a step reads: its args and its key/from/to/like attrs (a `$scalar` is only known per sample)."""
    attrs = st.get("attrs") or {}
    names = list(st.get("args") or [])
    for k in ("key", "from", "to", "like"):
        v = attrs.get(k)
        if isinstance(v, str) and not v.startswith("$"):
            names.append(v)
    return names


def read_regions(steps, timed):
    """program.timed -> {index of a region's first step: (region name, index after its last step)}.

    PROTOCOL.md: every name in a region's steps is some step's out; the steps of a region are
    consecutive in program order; a step belongs to at most one region; region names are
    unique; no step of a region reads a value made by another step of the same region."""
    if timed is None:
        return {}
    if not isinstance(timed, list):
        raise DriverError("internal", "program.timed must be a list of regions {name, steps}")
    where = {}
    for i, st in enumerate(steps):
        where.setdefault(st["out"], []).append(i)
    regions, owner = {}, {}
    names = set()
    for reg in timed:
        if not isinstance(reg, dict) or not isinstance(reg.get("name"), str) or \
                not isinstance(reg.get("steps"), list) or not reg["steps"] or \
                not all(isinstance(x, str) for x in reg["steps"]):
            raise DriverError("internal", "a timed region is {\"name\": str, \"steps\": [step outs, ...]} "
                                          "(protocol 2), got %s" % json.dumps(reg)[:200])
        name = reg["name"]
        if name in names:
            raise DriverError("internal", "timed region name %r is used twice" % name)
        names.add(name)
        idx = []
        for out in reg["steps"]:
            if out not in where:
                raise DriverError("internal", "timed region %r: %r is no step's out" % (name, out))
            if len(where[out]) > 1:
                raise DriverError("internal", "timed region %r: %r is the out of %d steps" % (name, out, len(where[out])))
            i = where[out][0]
            if i in owner:
                raise DriverError("internal", "step %r is listed twice in timed regions (%r, %r)" % (out, owner[i], name))
            owner[i] = name
            idx.append(i)
        lo, hi = min(idx), max(idx)
        if hi - lo + 1 != len(idx):
            raise DriverError("internal", "timed region %r: its steps are not consecutive in program order" % name)
        made = set(reg["steps"])
        for i in idx:
            for r in step_reads(steps[i]):
                if r in made:
                    raise DriverError("internal", "timed region %r: step %r reads %r, made in the same region"
                                      % (name, steps[i]["out"], r))
        regions[lo] = (name, hi + 1)
    return regions


def time_region(calls):
    """One timed region: the prepared library calls, one after the other, between two reads of
    the monotonic clock (Python's garbage collector held off). The results are returned, so
    freeing them is not timed. -> (ns, cpu_ns, results): cpu_ns is the process's CPU time over
    the same calls (PROTOCOL.md), read outside the clock pair (cpu, wall ... wall, cpu), so the
    CPU reads' own cost (two system calls) stays out of ns."""
    gc_on = gc.isenabled()
    gc.disable()
    try:
        c0 = cpu_clock()
        t0 = clock()
        res = [c() for c in calls]
        t1 = clock()
        c1 = cpu_clock()
    finally:
        if gc_on:
            gc.enable()
    return t1 - t0, c1 - c0, res


def read_sample(sample):
    """A sample's decoded input vectors (the program's first values) and its scalars."""
    inputs = sample.get("inputs") or {}
    scalars = sample.get("scalars") or {}
    if not isinstance(inputs, dict) or not isinstance(scalars, dict):
        raise DriverError("internal", "sample inputs and scalars must be objects")
    return {k: vec_decode(v) for k, v in inputs.items()}, scalars


def run_steps(steps, regions, prepare, env):
    """One sample: the steps in program order, each result kept in env under the step's out.
    prepare(step) -> (call, wrap): the library call(s) to make, and wrap(result) -> the value
    kept (None: the result itself). A step outside every region runs untimed; at a region every
    step is prepared first, then its calls are timed together (time_region).
    -> ({region: ns}, {region: cpu_ns})."""
    ns, cpu = {}, {}
    i, n = 0, len(steps)
    while i < n:
        name, end = regions.get(i, (None, i + 1))
        prepared = [prepare(st) for st in steps[i:end]]
        if name is None:
            results = [prepared[0][0]()]
        else:
            ns[name], cpu[name], results = time_region([call for call, _ in prepared])
        for st, (_, wrap), r in zip(steps[i:end], prepared, results):
            env[st["out"]] = r if wrap is None else wrap(r)
        i = end
    return ns, cpu


def measure_overhead():
    """overhead_ns: median of 101 empty timed regions (same clock and code path)."""
    return int(statistics.median(time_region([])[0] for _ in range(101)))


def log(*a):
    print("[openfhe-driver]", *a, file=sys.stderr, flush=True)


class DriverError(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def one_line(msg):
    msg = str(msg).strip().replace("\n", " ")
    # OpenFHE prefixes its messages with the source path and line.
    msg = re.sub(r"^\S+\.(?:h|cpp|hpp):l\.\d+:", "", msg)
    return msg[:2000]


def step_attr(step, key, scalars, default=None):
    """A step's attr; a string "$name" is read from the sample's scalars (PROTOCOL.md)."""
    a = (step.get("attrs") or {}).get(key, default)
    if isinstance(a, str) and a.startswith("$"):
        if a[1:] not in scalars:
            raise DriverError("internal", "scalar %r missing from sample" % a)
        return scalars[a[1:]]
    return a


def openfhe_error(e, default="invalid_params"):
    msg = one_line(e)
    low = msg.lower()
    if ("he standard" in low or "security requirement" in low
            or "does not comply" in low or "security level" in low):
        return DriverError("insecure_params", "OpenFHE: " + msg)
    return DriverError(default, "OpenFHE: " + msg)


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
# vectors

def vec_decode(obj):
    if not isinstance(obj, dict) or "b64" not in obj or "dtype" not in obj:
        raise DriverError("internal", "a vector must be {dtype, b64}")
    raw = base64.b64decode(obj["b64"])
    if obj["dtype"] == "i64":
        return np.frombuffer(raw, dtype="<i8").astype(np.int64)
    if obj["dtype"] == "f64":
        return np.frombuffer(raw, dtype="<f8").astype(np.float64)
    if obj["dtype"] == "u64":
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64)
    raise DriverError("internal", "unknown dtype %r" % obj["dtype"])


def vec_encode(arr, dtype=None):
    arr = np.asarray(arr)
    if dtype == "u64":
        return {"dtype": "u64", "b64": base64.b64encode(arr.astype("<u8").tobytes()).decode()}
    if arr.dtype.kind in "iu":
        return {"dtype": "i64", "b64": base64.b64encode(arr.astype("<i8").tobytes()).decode()}
    return {"dtype": "f64", "b64": base64.b64encode(arr.astype("<f8").tobytes()).decode()}


# --------------------------------------------------------------------------
# keys as program values

class Key:
    """A key value inside a program (or a setup's standard key)."""

    def __init__(self, kind, obj, tag=None, indices=None, pair=None):
        self.kind = kind          # secret | public | relin | galois | switch
        self.obj = obj            # PrivateKey | PublicKey | [EvalKey] | EvalKeyMap | EvalKey
        self.tag = tag            # secret key tag it belongs to
        self.indices = indices or set()  # galois: automorphism indices
        self.pair = pair          # secret: the KeyPair (OpenFHE makes both at once)


SCHEMES = ("bfv", "bgv", "ckks")

COMMON_OPS = ["encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub",
              "add_plain", "mul", "mul_relin", "mul_plain", "mul_scalar", "square", "square_relin",
              "relinearize", "mod_switch", "keygen_secret", "keygen_public", "keygen_relin",
              "keygen_galois", "key_switch", "keygen_switch"]
# `<op>_into`: OpenFHE's in-place calls, on a copy of the first operand made before the region
# (so the program's own value is left as it is). Not offered where the binding has no in-place
# form, or where its in-place form cannot write back: EvalMultMutableInPlace and
# EvalSquareInPlace rebind the C++ shared_ptr, which pybind11 does not hand back (BGV/CKKS: the
# Python object keeps its old value; BFV: refused), and EvalMult(ct, pt), Compress and
# EvalAutomorphism have no in-place binding.
INTO = {
    "bfv": ["add", "sub", "add_plain", "relinearize", "key_switch"],
    "bgv": ["add", "sub", "add_plain", "relinearize", "key_switch", "mod_switch"],
    "ckks": ["add", "sub", "add_plain", "relinearize", "key_switch", "mod_switch", "rescale", "mul_scalar"],
}
OPS = {
    "bfv": COMMON_OPS + ["rotate_rows", "rotate_columns"],
    "bgv": COMMON_OPS + ["rotate_rows", "rotate_columns"],
    "ckks": COMMON_OPS + ["rescale", "rotate", "conjugate", "bootstrap"],
}
for _scheme in SCHEMES:
    OPS[_scheme] = OPS[_scheme] + [op + "_into" for op in INTO[_scheme]] + routines.OPS[_scheme]

# What differs from PROTOCOL.md's canonical boundaries (capabilities.schemes.<s>.deviations),
# checked against OpenFHE 1.6.1 and openfhe-python 1.6.1.0.
_NUMPY_IN = "the binding copies the numpy array into a std::vector inside the call"
_INT_ENCODE = ("MakePackedPlaintext also lifts the Z_t polynomial into every RNS limb of Q and NTTs it "
               "(work the canonical boundary puts in encrypt); " + _NUMPY_IN)
_COMMON_DEV = {
    "decrypt": "OpenFHE's Decrypt also decodes (CryptoContext::Decrypt calls Plaintext::Decode: BFV/BGV "
               "NTT over Z_t, CKKS FFT); the binding has no decrypt without decoding",
    "decode": "no decoding work: Decrypt already decoded (an encoded plaintext keeps its input values); "
              "times only copying the stored values into a new numpy array (GetPackedValueArray)",
    "keygen_secret": "OpenFHE's KeyGen makes the public key together with the secret key "
                     "(no call makes a secret key alone)",
    "keygen_public": "MultipartyKeyGen([sk]), the only call that makes a public key for an existing secret "
                     "key: also copies s into the new key pair",
    "square": "EvalMultNoRelin(ct, ct), the general product: the binding's only squaring call "
              "(EvalSquare) relinearizes",
}
_BFV_ENCRYPT = ("the plaintext arrives lifted to Q and NTT'd by MakePackedPlaintext (timed in encode); "
                "Encrypt inverse-NTTs it back before scaling by Q/t")
_BGV_ENCRYPT = ("no lift or NTT of the plaintext: MakePackedPlaintext did both (timed in encode); Encrypt "
                "adds it to an encryption of zero")
DEVIATIONS = {
    "bfv": dict(_COMMON_DEV, encode=_INT_ENCODE, encrypt_pk=_BFV_ENCRYPT, encrypt_sk=_BFV_ENCRYPT),
    "bgv": dict(_COMMON_DEV, encode=_INT_ENCODE, encrypt_pk=_BGV_ENCRYPT, encrypt_sk=_BGV_ENCRYPT),
    "ckks": dict(_COMMON_DEV, encode=_NUMPY_IN,
                 decode="no decoding work: Decrypt already decoded (an encoded plaintext keeps its input "
                        "values); times only copying the stored values into a new numpy array "
                        "(GetRealPackedValueArray)"),
}
for _scheme in SCHEMES:
    DEVIATIONS[_scheme].update(routines.DEVIATIONS.get(_scheme, {}))


# --------------------------------------------------------------------------
# setup

def _q_primes(cc):
    """Ciphertext primes of a context, level 0 first, from its JSON."""
    d = json.loads(ofhe.Serialize(cc, ofhe.JSON))
    towers = noise_mod._find(noise_mod._find(d, "elp"), "p")
    return [int(noise_mod._find(tw, "value0")["cm"]["v"]) for tw in towers]


_MOD_RE = re.compile(r'"m"\s*:\s*\{\s*"v"\s*:\s*(\d+)')


def _p_primes(evalkey, qset):
    """Special primes: moduli of an evaluation key's towers that are not in Q."""
    s = ofhe.Serialize(evalkey, ofhe.JSON)
    seen = []
    for m in _MOD_RE.findall(s):
        v = int(m)
        if v not in qset and v not in seen:
            seen.append(v)
    return seen


class Setup:
    pass


def build_params(scheme, params, allow_insecure, depth_override=None):
    """Library-neutral parameters -> CCParams*; returns (ccparams, notes)."""
    N = int(params["N"])
    q_bits = [int(b) for b in params["q_bits"]]
    p_bits = [int(b) for b in params.get("p_bits") or []]
    if not q_bits:
        raise DriverError("invalid_params", "q_bits is empty")
    notes = []
    if scheme == "bfv":
        cp = ofhe.CCParamsBFVRNS()
    elif scheme == "bgv":
        cp = ofhe.CCParamsBGVRNS()
    else:
        cp = ofhe.CCParamsCKKSRNS()
    cp.SetRingDim(N)
    depth = len(q_bits) - 1 if depth_override is None else depth_override
    cp.SetMultiplicativeDepth(depth)
    upper = q_bits[1:] if len(q_bits) > 1 else q_bits
    if scheme == "bfv":
        size = max(q_bits)
        cp.SetScalingModSize(size)
        if len(set(q_bits)) > 1:
            notes.append("OpenFHE BFV uses one prime size for the whole chain: %d bits" % size)
        cp.SetPlaintextModulus(int(params["t"]))
    elif scheme == "bgv":
        cp.SetScalingTechnique(ofhe.FIXEDMANUAL)
        cp.SetPlaintextModulus(int(params["t"]))
        if len(q_bits) > 1:
            cp.SetFirstModSize(q_bits[0])
            size = max(upper)
            cp.SetScalingModSize(size)
            if len(set(upper)) > 1:
                notes.append("OpenFHE BGV uses one size for all primes above level 0: %d bits" % size)
        else:
            cp.SetFirstModSize(q_bits[0])
            cp.SetScalingModSize(q_bits[0])
    else:
        cp.SetScalingTechnique(ofhe.FIXEDMANUAL)
        sb = params.get("scale_bits")
        sb = int(sb) if sb is not None else (upper[0])
        cp.SetScalingModSize(sb)
        cp.SetFirstModSize(q_bits[0])
        if len(q_bits) > 1 and any(b != sb for b in upper):
            notes.append("OpenFHE CKKS (FIXEDMANUAL) uses primes of scale_bits=%d bits above level 0" % sb)
        cp.SetBatchSize(N // 2)
    cp.SetKeySwitchTechnique(ofhe.HYBRID)
    # dnum: number of digits; OpenFHE sizes P to cover one digit (a product of
    # ceil(len(q)/dnum) primes), with 60-bit special primes.
    dnum = choose_dnum(q_bits, p_bits)
    cp.SetNumLargeDigits(dnum)
    secret = params.get("secret") or "ternary"
    if secret == "ternary":
        cp.SetSecretKeyDist(ofhe.UNIFORM_TERNARY)
    elif secret == "gaussian":
        cp.SetSecretKeyDist(ofhe.GAUSSIAN)
    elif secret in ("sparse_ternary", "sparse"):
        cp.SetSecretKeyDist(ofhe.SPARSE_TERNARY)
    else:
        raise DriverError("invalid_params", "secret distribution %r not offered by OpenFHE" % secret)
    if params.get("sigma") is not None:
        cp.SetStandardDeviation(float(params["sigma"]))
    cp.SetSecurityLevel(ofhe.HEStd_NotSet if allow_insecure else ofhe.HEStd_128_classic)
    return cp, notes, dnum


def make_context(cp):
    try:
        cc = ofhe.GenCryptoContext(cp)
    except Exception as e:
        raise openfhe_error(e)
    if cc is None:
        raise DriverError("invalid_params", "OpenFHE: GenCryptoContext returned no context")
    # MULTIPARTY: for MultipartyKeyGen([sk]), the only way to a public key of an existing secret key;
    # ADVANCEDSHE: EvalSum, EvalInnerProduct and EvalPoly (the library routines, routines.py)
    for feat in (ofhe.PKE, ofhe.KEYSWITCH, ofhe.LEVELEDSHE, ofhe.ADVANCEDSHE, ofhe.MULTIPARTY):
        cc.Enable(feat)
    return cc


def bfv_context(params, allow_insecure):
    """OpenFHE BFV derives the number of primes from a noise estimate for the
    multiplicative depth (all primes of one size); walk the depth until the
    chain has as many primes as requested."""
    target = len(params["q_bits"])
    tried = {}
    first_error = None
    insecure_error = None
    d = target - 1
    direction = 0
    for _ in range(64):
        if d < 0 or d in tried:
            break
        cp, notes, dnum = build_params("bfv", params, allow_insecure, depth_override=d)
        try:
            cc = make_context(cp)
            n = len(_q_primes(cc))
            tried[d] = (n, cp, cc, notes, dnum)
        except DriverError as e:
            tried[d] = (None, e)
            first_error = first_error or e
            n = None
            if e.kind == "insecure_params":
                insecure_error = insecure_error or e
                step = -1                      # chain too long for the security table
            elif "distribute" in e.message:
                step = +1                      # fewer primes than digits
            else:
                raise
        if n == target:
            break
        if n is not None:
            step = +1 if n < target else -1
        if direction and step != direction:
            break                              # crossed the target
        direction = step
        d += step
    exact = [(d, v) for d, v in tried.items() if v[0] == target]
    if exact:
        d, (n, cp, cc, notes, dnum) = exact[0]
    else:
        if insecure_error is not None:
            raise DriverError(insecure_error.kind, insecure_error.message +
                              " (OpenFHE BFV: no multiplicative depth gives %d primes within its security table)"
                              % target)
        built = [(abs(v[0] - target), d, v) for d, v in tried.items() if v[0] is not None]
        if not built:
            raise first_error or DriverError("invalid_params", "OpenFHE BFV: no context for these parameters")
        _, d, (n, cp, cc, notes, dnum) = min(built, key=lambda x: (x[0], -x[2][0]))
    notes = list(notes)
    if d != target - 1 or n != target:
        notes.append("OpenFHE BFV sizes its chain from a noise estimate; multiplicative depth %d "
                     "gives %d primes" % (d, n))
    return cp, cc, _q_primes(cc), d, notes, dnum


def _pow2_steps(half):
    steps = []
    i = 1
    while i < half:
        steps += [i, -i]
        i *= 2
    return steps


def do_setup(req, registry):
    scheme = req.get("scheme")
    if scheme == "tfhe_bool":
        return binfhe.setup(req)
    if scheme not in SCHEMES:
        raise DriverError("unsupported", "OpenFHE driver has no scheme %r" % scheme)
    params = req.get("params") or {}
    if params.get("preset"):
        if scheme == "ckks":
            return ckksboot.setup(req, registry)
        raise DriverError("invalid_params", "OpenFHE driver has no %s preset %r" % (scheme, params["preset"]))
    for key in ("N", "q_bits"):
        if key not in params:
            raise DriverError("invalid_params", "params.%s is missing" % key)
    allow_insecure = bool(req.get("allow_insecure", False))
    N = int(params["N"])
    if N < 2 or N & (N - 1):
        raise DriverError("invalid_params", "N must be a power of two")
    q_bits = [int(b) for b in params["q_bits"]]
    if scheme in ("bfv", "bgv") and not params.get("t"):
        raise DriverError("invalid_params", "t is required for %s" % scheme)
    if scheme in ("bfv", "bgv") and (params.get("batching") is False or (int(params["t"]) - 1) % (2 * N)):
        # OpenFHE aborts the process (not an exception) on a t without 2N-th roots of unity.
        raise DriverError("invalid_params", "OpenFHE driver: t must be a prime = 1 mod 2N (batching); "
                                            "coefficient encoding (batching: false) is not offered")
    if scheme == "bfv":
        cp, cc, primes, depth_used, notes, dnum = bfv_context(params, allow_insecure)
    else:
        cp, notes, dnum = build_params(scheme, params, allow_insecure)
        cc = make_context(cp)
        primes = _q_primes(cc)
        depth_used = len(q_bits) - 1
    s = Setup()
    s.scheme = scheme
    s.cc = cc
    s.N = cc.GetRingDimension()
    s.slots = s.N if scheme in ("bfv", "bgv") else s.N // 2
    s.t = int(params["t"]) if scheme in ("bfv", "bgv") else None
    s.q_primes = primes
    s.L = len(primes) - 1
    s.notes = notes
    s.roots = None
    M = 2 * s.N
    s.M = M
    s.auto_cache = {}

    kp = cc.KeyGen()
    if not kp.good():
        raise DriverError("internal", "OpenFHE KeyGen failed")
    s.sk = Key("secret", kp.secretKey, kp.secretKey.GetKeyTag(), pair=kp)
    s.pk = Key("public", kp.publicKey, kp.secretKey.GetKeyTag())
    registry.secret_keys[s.sk.tag] = kp.secretKey
    cc.EvalMultKeyGen(kp.secretKey)
    s.rlk = Key("relin", list(cc.GetEvalMultKeyVector(s.sk.tag)), s.sk.tag)
    registry.relin_installed[s.sk.tag] = s.rlk

    steps = [int(k) for k in (req.get("rotations") or [])]
    pow2 = bool(req.get("rotations_pow2", False))
    s.pow2 = pow2
    half = s.N // 2
    all_steps = set()
    for k in steps:
        k %= half
        if k:
            all_steps.add(k)
    if pow2:
        all_steps.update(k % half for k in _pow2_steps(half))
    indices = set(s.auto_index(k) for k in all_steps)
    indices.add(M - 1)  # row swap (BFV/BGV) / conjugation (CKKS)
    gmap = cc.EvalAutomorphismKeyGen(kp.secretKey, sorted(indices))
    s.gk = Key("galois", gmap, s.sk.tag, indices=indices)

    # effective parameters
    qset = set(primes)
    try:
        p_primes = _p_primes(s.rlk.obj[0], qset)
    except Exception as e:  # pragma: no cover
        log("cannot read special primes:", e)
        p_primes = []
    q_eff = [p.bit_length() for p in primes]
    p_eff = [p.bit_length() for p in p_primes]
    import math
    log_q = sum(math.log2(p) for p in primes)
    log_qp = log_q + sum(math.log2(p) for p in p_primes)
    try:
        dnum_eff = int(cp.GetNumLargeDigits())
    except Exception:
        dnum_eff = dnum
    sb = params.get("scale_bits") if scheme == "ckks" else None
    if scheme == "ckks":
        sb = int(round(math.log2(cc.GetScalingFactorReal(0)))) if hasattr(cc, "GetScalingFactorReal") else sb
    secret = params.get("secret") or "ternary"
    effective = {
        "N": s.N, "q_bits": q_eff, "p_bits": p_eff,
        "log_q": round(log_q, 3), "log_qp": round(log_qp, 3),
        "t": s.t, "scale_bits": sb, "slots": s.slots,
        "levels": s.L, "dnum": dnum_eff, "secret": secret,
        "sigma": round(float(cp.GetStandardDeviation()), 4),
        "security": "none (HEStd_NotSet)" if allow_insecure else "HEStd_128_classic",
        "multiplicative_depth": depth_used,
    }
    if scheme == "bfv":
        effective["multiplication"] = str(cp.GetMultiplicationTechnique()).split(".")[-1]
    else:
        effective["scaling"] = "FIXEDMANUAL"
    # sizes of the standard keys and fresh values
    x = np.zeros(s.slots, dtype=np.int64 if scheme != "ckks" else np.float64)
    pt = s.encode(x)
    ct = cc.Encrypt(kp.publicKey, pt)
    sizes = {
        "public_key": len(ofhe.Serialize(kp.publicKey, ofhe.BINARY)),
        "secret_key": len(ofhe.Serialize(kp.secretKey, ofhe.BINARY)),
        "relin_keys": len(ofhe.Serialize(s.rlk.obj, ofhe.BINARY)),
        "galois_keys": len(ofhe.Serialize(gmap, ofhe.BINARY)),
        "galois_key_count": len(indices),
        "plaintext": s.plaintext_size(pt),
        "ciphertext": len(ofhe.Serialize(ct, ofhe.BINARY)),
    }
    s.effective = effective
    return s, {"effective": effective, "sizes_bytes": sizes, "notes": notes + [
        "plaintext size is the in-memory size N x limbs x 8 bytes: OpenFHE cannot serialize plaintexts",
        "galois keys: the requested steps%s plus the row-swap/conjugation automorphism 2N-1"
        % (" and every +/-2^i" if pow2 else "")]}


def _setup_methods():
    def auto_index(self, k):
        k = int(k)
        if k not in self.auto_cache:
            self.auto_cache[k] = int(self.cc.FindAutomorphismIndex(k))
        return self.auto_cache[k]

    def encode(self, vec, level=None):
        n = self.slots
        v = np.asarray(vec)
        if len(v) > n:
            raise DriverError("internal", "input has %d values, more than %d slots" % (len(v), n))
        if self.scheme == "ckks":
            x = np.zeros(n, dtype=np.float64)
            x[:len(v)] = v
            lvl = 0 if level is None else self.L - int(level)
            return self.cc.MakeCKKSPackedPlaintext(x, 1, lvl, None, n)
        x = np.zeros(n, dtype=np.int64)
        x[:len(v)] = np.mod(v.astype(np.int64), self.t)
        if level is not None and self.scheme == "bgv":
            return self.cc.MakePackedPlaintext(x, 1, self.L - int(level))
        return self.cc.MakePackedPlaintext(x)

    def plaintext_size(self, pt):
        mod = int(pt.GetElementModulus())
        prod, limbs = 1, 0
        for p in self.q_primes:
            if prod == mod:
                break
            prod *= p
            limbs += 1
        if prod != mod:
            limbs = 1
        return self.N * max(limbs, 1) * 8

    Setup.auto_index = auto_index
    Setup.encode = encode
    Setup.plaintext_size = plaintext_size


_setup_methods()


# --------------------------------------------------------------------------
# program execution

class Registry:
    def __init__(self):
        self.setups = {}
        self.secret_keys = {}       # tag -> PrivateKey (for noise measurement)
        self.relin_installed = {}   # tag -> Key currently in OpenFHE's EvalMult key map


def _naf(k):
    """Signed binary digits of k: list of +/-2^i whose sum is k."""
    out = []
    i = 0
    while k:
        if k & 1:
            d = 2 - (k & 3)  # +1 or -1
            out.append(d << i)
            k -= d
        k >>= 1
        i += 1
    return out


RELIN_OPS = ("mul_relin", "square_relin", "relinearize")


class Program:
    """A run's steps as prepared calls: prepare(step, env, scalars, meta) -> (call, wrap, towers).
    `call` is what the timed region brackets (arguments, keys, automorphism indices, scalars and
    the outputs of `_into` forms are resolved before); wrap(result) is the value kept (None: the
    result itself); towers is the result's RNS limb count (BFV levels; None: not a ciphertext)."""

    def __init__(self, reg, setup, notes):
        self.reg = reg
        self.s = setup
        self.cc = setup.cc
        self.notes = notes
        self.saved_mult = None
        self.saved_auto = None

    # values ------------------------------------------------------------
    def val(self, env, name):
        if name in env:
            return env[name]
        std = {"sk": self.s.sk, "pk": self.s.pk, "rlk": self.s.rlk, "gk": self.s.gk}
        if name in std:
            return std[name]
        raise DriverError("internal", "unknown value %r" % name)

    def attr(self, step, key, scalars, default=None):
        return step_attr(step, key, scalars, default)

    def key_attr(self, env, step, scalars, kind, default):
        name = self.attr(step, "key", scalars)
        if name is None:
            return default
        k = self.val(env, name)
        if not isinstance(k, Key):
            raise DriverError("internal", "%r is not a key" % name)
        if kind == "public" and k.kind == "secret" and k.pair is not None:
            return Key("public", k.pair.publicKey, k.tag)  # KeyGen made both
        if k.kind != kind:
            raise DriverError("internal", "%r is a %s key, %s needed" % (name, k.kind, kind))
        return k

    def like_attr(self, env, step, level):
        """encode's `like` attr: the ciphertext (a value of this program) whose level and scale a
        CKKS plaintext takes; None without the attr."""
        name = (step.get("attrs") or {}).get("like")
        if name is None:
            return None
        if self.s.scheme != "ckks":
            raise DriverError("unsupported", "encode's like attr is CKKS only (a %s plaintext has no scale)"
                              % self.s.scheme)
        if level is not None:
            raise DriverError("internal", "encode: give level or like, not both")
        try:
            ct = self.val(env, name) if isinstance(name, str) else None
        except DriverError:
            ct = None
        if not isinstance(ct, ofhe.Ciphertext):
            what = "no value of the program" if ct is None else "a %s, not a ciphertext" % type(ct).__name__
            raise DriverError("internal", "encode: like %r names %s" % (name, what))
        return ct

    def install_relin(self, k):
        """Make k the relinearization key OpenFHE uses for its secret key.

        OpenFHE keeps one EvalMult key vector per secret-key tag in a static
        map and refuses to overwrite one: clear the map, put everything back."""
        cur = self.reg.relin_installed.get(k.tag)
        if cur is k:
            return
        saved = dict(self.cc.GetAllEvalMultKeys())
        saved[k.tag] = k.obj
        ofhe.ClearEvalMultKeys()
        for tag, vec in saved.items():
            self.cc.InsertEvalMultKey(vec, tag)
        self.reg.relin_installed[k.tag] = k

    # one step -> the prepared call -----------------------------------------
    def prepare(self, step, env, scalars, meta):
        op = step["op"]
        names = step.get("args") or []
        args = [self.val(env, a) for a in names]
        cc = self.cc
        s = self.s
        scheme = s.scheme
        if op not in OPS[scheme]:
            raise DriverError("unsupported", "OpenFHE %s has no op %r" % (scheme.upper(), op))
        towers = [meta.get(a, s.L + 1) for a in names]
        out_towers = min(towers) if towers else s.L + 1
        into = op.endswith("_into")
        if into:
            op = op[:-len("_into")]
        if op in routines.NAMES:  # the library routines of native variants (routines.py)
            return routines.prepare(self, op, step, env, scalars, args, names, out_towers)

        def need(n, cts=0):
            if len(args) != n:
                raise DriverError("internal", "%s takes %d args" % (op, n))
            for i in range(cts):
                if not isinstance(args[i], ofhe.Ciphertext):
                    raise DriverError("internal", "%s: %r is not a ciphertext" % (op, names[i]))

        def ct_call(new, inplace, a, *rest):
            """`op`: new(a, *rest) returns a new ciphertext. `op_into`: inplace(out, *rest) writes
            into out, a copy of a made here, before the region (the program's a stays as it is)."""
            if not into:
                return partial(new, a, *rest), None
            out = a.Clone()
            return partial(inplace, out, *rest), (lambda _: out)

        if op == "encode":
            need(1)
            level = self.attr(step, "level", scalars)
            like = self.like_attr(env, step, level)
            vec = np.asarray(args[0])
            n = s.slots
            if vec.ndim != 1 or len(vec) > n:
                raise DriverError("internal", "encode takes a vector of at most %d values" % n)
            if scheme == "ckks":
                x = np.zeros(n, dtype=np.float64)
                x[:len(vec)] = vec
                if like is not None:  # at the ciphertext's level and noise-scale degree
                    lvl = int(like.GetLevel())
                    return (partial(cc.MakeCKKSPackedPlaintext, x, int(like.GetNoiseScaleDeg()), lvl, None, n),
                            None, s.L + 1 - lvl)
                lvl = 0 if level is None else s.L - int(level)
                return partial(cc.MakeCKKSPackedPlaintext, x, 1, lvl, None, n), None, s.L + 1 - lvl
            x = np.zeros(n, dtype=np.int64)
            x[:len(vec)] = np.mod(vec.astype(np.int64), s.t)
            if level is not None and scheme == "bgv":
                lvl = s.L - int(level)
                return partial(cc.MakePackedPlaintext, x, 1, lvl), None, s.L + 1 - lvl
            return partial(cc.MakePackedPlaintext, x), None, s.L + 1
        if op == "decode":
            need(1)
            pt = args[0]
            if not isinstance(pt, ofhe.Plaintext):
                raise DriverError("internal", "decode: %r is not a plaintext" % names[0])
            pt.SetLength(s.slots)
            return (pt.GetRealPackedValueArray if scheme == "ckks" else pt.GetPackedValueArray), None, None
        if op in ("encrypt_pk", "encrypt_sk"):
            need(1)
            if not isinstance(args[0], ofhe.Plaintext):
                raise DriverError("internal", "%s: %r is not a plaintext" % (op, names[0]))
            k = (self.key_attr(env, step, scalars, "public", s.pk) if op == "encrypt_pk"
                 else self.key_attr(env, step, scalars, "secret", s.sk))
            return partial(cc.Encrypt, k.obj, args[0]), None, out_towers
        if op == "decrypt":
            need(1, 1)
            k = self.key_attr(env, step, scalars, "secret", s.sk)
            return partial(cc.Decrypt, k.obj, args[0]), None, out_towers
        if op in ("add", "sub", "mul"):
            need(2, 2)
            new = {"add": cc.EvalAdd, "sub": cc.EvalSub, "mul": cc.EvalMultNoRelin}[op]
            inplace = {"add": cc.EvalAddInPlace, "sub": cc.EvalSubInPlace}.get(op)
            return ct_call(new, inplace, args[0], args[1]) + (out_towers,)
        if op in ("add_plain", "mul_plain"):
            need(2, 1)
            if not isinstance(args[1], ofhe.Plaintext):
                raise DriverError("internal", "%s: %r is not a plaintext" % (op, names[1]))
            if op == "add_plain":
                return ct_call(cc.EvalAdd, cc.EvalAddInPlace, args[0], args[1]) + (out_towers,)
            return ct_call(cc.EvalMult, None, args[0], args[1]) + (out_towers,)
        if op == "square":
            need(1, 1)
            return ct_call(cc.EvalMultNoRelin, None, args[0], args[0]) + (out_towers,)
        if op in RELIN_OPS:
            need(2 if op == "mul_relin" else 1, 2 if op == "mul_relin" else 1)
            self.install_relin(self.key_attr(env, step, scalars, "relin", s.rlk))
            if op == "mul_relin":
                return ct_call(cc.EvalMult, None, args[0], args[1]) + (out_towers,)
            if op == "square_relin":
                return ct_call(cc.EvalSquare, None, args[0]) + (out_towers,)
            return ct_call(cc.Relinearize, cc.RelinearizeInPlace, args[0]) + (out_towers,)
        if op == "mul_scalar":
            need(1, 1)
            sc = self.attr(step, "scalar", scalars)
            if sc is None:
                raise DriverError("internal", "mul_scalar needs attr scalar")
            if scheme == "ckks":
                return ct_call(cc.EvalMult, cc.EvalMultInPlace, args[0], float(sc)) + (out_towers,)
            # OpenFHE's integer scalar multiply (every RNS polynomial times k); EvalMult(ct, k)
            # is CKKS only.
            self.note("mul_scalar (%s): EvalMultNoCheck(ct, k), OpenFHE's integer scalar multiply "
                      "(a copy of ct times k; no type or level checks)" % scheme.upper())
            return ct_call(cc.EvalMultNoCheck, None, args[0], int(sc) % s.t) + (out_towers,)
        if op == "rescale":
            need(1, 1)
            return ct_call(cc.Rescale, cc.RescaleInPlace, args[0]) + (out_towers - 1,)
        if op == "mod_switch":
            need(1, 1)
            left = out_towers - 1
            last = left < 1 if scheme == "bfv" else args[0].GetLevel() >= s.L
            if last:
                raise DriverError("internal", "mod_switch: no level left to drop")
            if scheme == "bgv":
                return ct_call(cc.ModReduce, cc.ModReduceInPlace, args[0]) + (left,)
            if scheme == "ckks":  # drop a prime, scale unchanged
                self.note("mod_switch (CKKS): LevelReduce(ct, None, 1), drops the last prime, scale unchanged")
                return ct_call(cc.LevelReduce, cc.LevelReduceInPlace, args[0], None, 1) + (left,)
            self.note("mod_switch (BFV): Compress(ct, towers-1), OpenFHE's BFV modulus switch")
            return partial(cc.Compress, args[0], left), None, left
        if op in ("rotate_rows", "rotate"):
            need(1, 1)
            return self.rotation(env, step, scalars, op, args[0]) + (out_towers,)
        if op in ("rotate_columns", "conjugate"):
            need(1, 1)
            k = self.key_attr(env, step, scalars, "galois", s.gk)
            idx = s.M - 1
            if idx not in k.indices:
                raise DriverError("internal", "no Galois key for automorphism 2N-1 in that key set")
            return partial(cc.EvalAutomorphism, args[0], idx, k.obj), None, out_towers
        if op == "bootstrap":
            need(1, 1)
            if not getattr(s, "boot", False):
                raise DriverError("unsupported", "bootstrap needs a setup with params {\"preset\": \"%s\"}"
                                  % ckksboot.PRESET)
            self.note("bootstrap: OpenFHE EvalBootstrap (one iteration), output at the levels reported")
            return partial(cc.EvalBootstrap, args[0]), None, None
        if op == "key_switch":
            need(1, 1)
            k = self.key_attr(env, step, scalars, "switch", None)
            if k is None:
                raise DriverError("internal", "key_switch needs attr key (a keygen_switch result)")
            return ct_call(cc.KeySwitch, cc.KeySwitchInPlace, args[0], k.obj) + (out_towers,)
        return self.prepare_keygen(op, step, env, scalars)

    def rotation(self, env, step, scalars, op, a):
        """One EvalAutomorphism with the key of that step when the key set has one (negative
        steps included: -k and half-k are the same automorphism); otherwise composed of keyed
        +/-2^i steps, said in notes."""
        s, cc = self.s, self.cc
        k = self.key_attr(env, step, scalars, "galois", s.gk)
        st = self.attr(step, "steps", scalars)
        if st is None:
            raise DriverError("internal", "%s needs attr steps" % op)
        half = s.N // 2
        st = int(st) % half
        if st == 0:
            self.note("%s by a multiple of %d: the identity, no library call" % (op, half))
            return (lambda: a), None
        idx = s.auto_index(st)
        if idx in k.indices:
            return partial(cc.EvalAutomorphism, a, idx, k.obj), None
        parts = _naf(st)
        alt = _naf(half - st)
        if len(alt) < len(parts):
            parts = [-p for p in alt]
        idxs = [s.auto_index(p % half) for p in parts]
        missing = [p for p, i in zip(parts, idxs) if i not in k.indices]
        if missing:
            raise DriverError("internal", "no Galois key for step %d (nor for its parts %s)" % (st, missing))
        self.note("%s by %d composed of %d keyed rotations %s" % (op, st, len(parts), parts))
        km, f = k.obj, cc.EvalAutomorphism

        def composed():
            c = a
            for i in idxs:
                c = f(c, i, km)
            return c
        return composed, None

    def prepare_keygen(self, op, step, env, scalars):
        s, cc = self.s, self.cc
        if op == "keygen_secret":
            def wrap(kp):
                tag = kp.secretKey.GetKeyTag()
                self.reg.secret_keys[tag] = kp.secretKey
                return Key("secret", kp.secretKey, tag, pair=kp)
            return cc.KeyGen, wrap, None
        k = self.key_attr(env, step, scalars, "secret", s.sk)
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
            st = self.attr(step, "steps", scalars)
            half = s.N // 2
            if st == "pow2" or st is None:
                indices = set(s.auto_index(x % half) for x in _pow2_steps(half))
                indices.add(s.M - 1)
            else:
                if isinstance(st, int):
                    st = [st]
                indices = set(s.auto_index(int(x) % half) for x in st if int(x) % half)
            if not indices:
                raise DriverError("internal", "keygen_galois: no step needs a key")
            idx_list = sorted(indices)
            self.save_caches("auto")

            def wrap_gk(m):
                self.restore_caches()
                return Key("galois", m, k.tag, indices=indices)
            self.note("keygen_galois: %d keys (automorphism indices %s)"
                      % (len(idx_list), "pow2 +/-2^i and 2N-1" if st in ("pow2", None) else idx_list))
            return partial(cc.EvalAutomorphismKeyGen, k.obj, idx_list), wrap_gk, None
        if op == "keygen_switch":
            fr = self.attr(step, "from", scalars)
            to = self.attr(step, "to", scalars)
            kf = self.val(env, fr) if fr is not None else s.sk
            kt = self.val(env, to) if to is not None else None
            if kt is None or not isinstance(kt, Key) or kt.kind != "secret" or \
                    not isinstance(kf, Key) or kf.kind != "secret":
                raise DriverError("internal", "keygen_switch needs attrs from/to naming secret keys")
            return partial(cc.KeySwitchGen, kf.obj, kt.obj), (lambda ek: Key("switch", ek, kt.tag)), None
        raise DriverError("unsupported", "op %r" % op)

    def save_caches(self, which):
        """Save and empty OpenFHE's static evaluation-key cache ("mult"/"auto")."""
        if which == "mult":
            if self.saved_mult is None:
                self.saved_mult = dict(self.cc.GetAllEvalMultKeys())
            ofhe.ClearEvalMultKeys()
        else:
            if self.saved_auto is None:
                self.saved_auto = dict(self.cc.GetAllEvalAutomorphismKeys())
            self.cc.ClearEvalAutomorphismKeys()

    def restore_caches(self):
        if self.saved_mult is not None:
            ofhe.ClearEvalMultKeys()
            for tag, vec in self.saved_mult.items():
                self.cc.InsertEvalMultKey(vec, tag)
            self.reg.relin_installed = {t: v for t, v in self.reg.relin_installed.items()
                                        if t in self.saved_mult}
            self.saved_mult = None
        if self.saved_auto is not None:
            self.cc.ClearEvalAutomorphismKeys()
            for tag, mp in self.saved_auto.items():
                self.cc.InsertEvalAutomorphismKey(mp, tag)
            self.saved_auto = None

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)


def check_key_regions(steps, regions):
    """What OpenFHE's static key caches forbid inside one region (checked before anything runs)."""
    for lo, (name, hi) in regions.items():
        ops = [steps[i]["op"] for i in range(lo, hi)]
        if hi - lo > 1 and ("keygen_relin" in ops or "keygen_galois" in ops):
            raise DriverError("internal", "timed region %r: keygen_relin/keygen_galois must be alone in its region "
                                          "(the driver empties OpenFHE's key cache around it)" % name)
        keys = {json.dumps((steps[i].get("attrs") or {}).get("key")) for i in range(lo, hi)
                if ops[i - lo].replace("_into", "") in RELIN_OPS + ("inner_product",)}
        if len(keys) > 1:
            raise DriverError("internal", "timed region %r uses several relinearization keys: OpenFHE uses the "
                                          "one installed for the secret key" % name)


def do_run(req, reg):
    sid = req.get("setup_id")
    if sid not in reg.setups:
        raise DriverError("internal", "unknown setup_id %r" % sid)
    s = reg.setups[sid]
    if getattr(s, "scheme", None) == "tfhe_bool":
        return binfhe.run(req, s, vec_encode)
    program, steps, regions, outputs, samples = read_run(req, OPS[s.scheme], s.scheme.upper())
    check_key_regions(steps, regions)
    notes = []
    prog = Program(reg, s, notes)
    results = []
    env, meta = {}, {}
    try:
        for sample in samples:
            env, scalars = read_sample(sample)
            meta = {}

            def prepare(st, env=env, meta=meta, scalars=scalars):
                call, wrap, towers = prog.prepare(st, env, scalars, meta)
                if towers is not None:  # read only by later steps (a region's steps are independent)
                    meta[st["out"]] = towers
                return call, wrap

            ns, cpu = run_steps(steps, regions, prepare, env)
            out = {}
            for oname in outputs:
                if oname not in env:
                    raise DriverError("internal", "output %r was not produced" % oname)
                v = np.asarray(env[oname])
                if v.dtype == object or v.ndim != 1:
                    raise DriverError("internal", "output %r is not a decoded vector" % oname)
                if s.scheme == "ckks":
                    v = np.real(v).astype(np.float64)
                else:
                    v = np.mod(v.astype(np.int64), s.t)
                if len(v) < s.slots:
                    v = np.concatenate([v, np.zeros(s.slots - len(v), dtype=v.dtype)])
                out[oname] = vec_encode(v[:s.slots])
            results.append({"ns": ns, "cpu_ns": cpu, "outputs": out})
    finally:
        # a failed keygen step must not leave the key caches emptied
        prog.restore_caches()

    result = {"samples": results, "overhead_ns": measure_overhead()}
    # facts about the last sample's values
    if program.get("noise") and s.scheme in ("bfv", "bgv"):
        nb = {}
        if s.roots is None:
            s.roots = noise_mod.context_roots(s.cc)
        for name in program["noise"]:
            ct = env.get(name)
            if ct is None or not isinstance(ct, ofhe.Ciphertext):
                continue
            sk = reg.secret_keys.get(ct.GetKeyTag())
            if sk is None:
                continue
            if s.scheme == "bfv" and ct.NumberCiphertextElements() > 2:
                # Measured 0 bits on correctly decrypting BFV products before
                # relinearization: the raw decryption of OpenFHE's 3-element BFV
                # ciphertext is not yet understood here, so no figure is given.
                notes.append("noise budget of 3-element BFV ciphertexts omitted (not measured reliably)")
                continue
            try:
                nb[name] = int(noise_mod.noise_budget_bits(ct, sk, s.roots, s.scheme, s.t))
            except Exception as e:
                log("noise measurement failed:", e)
        result["noise_budget_bits"] = nb
        notes.append("noise budget computed by the driver from serialized ciphertext and secret key "
                     "(OpenFHE has no noise-budget call): bitlen(Q) - bitlen(||noise||) - 1, as SEAL")
    if program.get("sizes"):
        sz = {}
        for name in program["sizes"]:
            v = env.get(name) if name in env else prog.val(env, name) if name in ("sk", "pk", "rlk", "gk") else None
            size = value_size(s, v)
            if size is not None:
                sz[name] = size
        result["sizes_bytes"] = sz
    if program.get("levels"):
        lv = {}
        for name in program["levels"]:
            v = env.get(name)
            if v is None:
                continue
            if s.scheme == "bfv":
                lv[name] = int(meta.get(name, s.L + 1)) - 1
            elif ofhe is not None and isinstance(v, (ofhe.Ciphertext, ofhe.Plaintext)):
                lv[name] = s.L - int(v.GetLevel())
        result["levels"] = lv
    if notes:
        result["notes"] = notes
    return result


def value_size(s, v):
    if v is None:
        return None
    if isinstance(v, Key):
        obj = v.obj
        return len(ofhe.Serialize(obj, ofhe.BINARY))
    if isinstance(v, ofhe.Ciphertext):
        return len(ofhe.Serialize(v, ofhe.BINARY))
    if isinstance(v, ofhe.Plaintext):
        return s.plaintext_size(v)
    if isinstance(v, np.ndarray):
        return int(v.nbytes)
    return None


# --------------------------------------------------------------------------
# capabilities

def library_version():
    v = getattr(ofhe, "__version__", None) if ofhe else None
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


def binding_call_ns():
    """Median region around one trivial call through the pybind11 binding: the per-op floor."""
    f = ofhe.CCParamsBFVRNS().GetRingDim  # a method call on a bound object
    return int(statistics.median(time_region([f])[0] for _ in range(1001)))


def do_capabilities():
    lib, binding, pkg = library_version()
    threads, honoured = real_threads()
    copies = gomp_copies()
    build = {
        "binding": "openfhe-python %s (PyPI openfhe %s)" % (binding, pkg),
        "python": sys.version.split()[0],
        "native_int_bits": int(ofhe.get_native_int()) if hasattr(ofhe, "get_native_int") else None,
        "hexl": "no (PyPI wheel)",
        "openmp": "libgomp %s: FHEMARK_THREADS as OMP_NUM_THREADS before import and omp_set_num_threads (ctypes); "
                  "threads = omp_get_max_threads() read back" % (", ".join(copies) or "(none mapped)"),
        "compression": "none",
        "serialization": "cereal SERBINARY (Serialize)",
        "plaintext_size": "in-memory N x limbs x 8 bytes (OpenFHE cannot serialize plaintexts)",
        "key_switching": "HYBRID",
        "ckks_scaling": "FIXEDMANUAL",
        "bgv_scaling": "FIXEDMANUAL",
        "binding_call_ns": binding_call_ns(),
        "binfhe": "BinFHEContext.GenerateBinFHEContext(paramset, method); gates EvalBinGate/EvalNOT; "
                  "sizes via SerializeToFile(BINARY)",
        "timing": "time.perf_counter_ns around a region's prepared binding calls (functools.partial, one "
                  "after the other, gc off); overhead_ns is an empty region, binding_call_ns a region with "
                  "one trivial binding call (the per-op floor); cpu_ns: time.process_time_ns (every thread, "
                  "OpenMP's workers included) inside the same pair of clock reads",
        "into": "<op>_into: OpenFHE's in-place call on a copy of the first operand made before the region",
        "routines": "inner_sum: EvalSum; inner_product: EvalInnerProduct; linear_transform: baby-step giant-step "
                    "by the driver (EvalFastRotationPrecompute/EvalFastRotation baby steps, EvalRotate giant steps, "
                    "EvalMult by pre-rotated plaintext diagonals); poly_eval (CKKS): EvalPoly",
    }
    limits = {"log_n_min": 1, "log_n_max": 17, "max_prime_bits": 60}
    ckks_limits = {"log_n_min": 1, "log_n_max": 17, "max_prime_bits": 60,
                   "max_scale_bits": 59, "min_scale_bits": 14,
                   "presets": [ckksboot.PRESET], "bootstrap_preset_secure_n": ckksboot.SECURE_N}
    return {
        "protocol": PROTOCOL,
        "library": "openfhe",
        "library_version": lib,
        "driver_version": DRIVER_VERSION,
        "build": build,
        "threads": threads,
        "threads_honoured": honoured,
        "schemes": {
            "bfv": {"ops": OPS["bfv"], "limits": limits, "deviations": DEVIATIONS["bfv"]},
            "bgv": {"ops": OPS["bgv"], "limits": limits, "deviations": DEVIATIONS["bgv"]},
            "ckks": {"ops": OPS["ckks"], "limits": ckks_limits, "deviations": DEVIATIONS["ckks"]},
            "tfhe_bool": {"ops": binfhe.OPS, "limits": binfhe.limits()},
        },
        "extensions": ["bits"],
    }


# --------------------------------------------------------------------------
# main loop

def handle(req, reg):
    typ = req.get("type")
    if typ == "capabilities":
        return do_capabilities()
    if typ == "setup":
        sid = req.get("setup_id")
        if not sid:
            raise DriverError("internal", "setup needs a setup_id")
        try:
            s, res = do_setup(req, reg)
        except DriverError as e:
            if e.kind == "insecure_params" and "60-bit" not in e.message and \
                    not (req.get("params") or {}).get("preset"):
                e.message += (" [OpenFHE's HYBRID special modulus P is made of 60-bit primes covering"
                              " one digit of ceil(len(q_bits)/dnum) primes, so log QP exceeds sum(q_bits)+sum(p_bits)"
                              " unless dnum is large]")
            raise
        reg.setups[sid] = s
        return res
    if typ == "run":
        return do_run(req, reg)
    if typ == "shutdown":
        return {}
    if typ == "teardown" or typ == "drop":
        reg.setups.pop(req.get("setup_id"), None)
        return {}
    raise DriverError("unsupported", "unknown request type %r" % typ)


def main():
    out = sys.stdout
    reg = Registry()
    binfhe.bind(ofhe=ofhe, DriverError=DriverError, measure_overhead=measure_overhead, log=log,
                step_attr=step_attr, read_run=read_run, read_sample=read_sample, run_steps=run_steps)
    ckksboot.bind(ofhe=ofhe, DriverError=DriverError, Setup=Setup, Key=Key, openfhe_error=openfhe_error,
                  q_primes=_q_primes, p_primes=_p_primes, serialized_size=binfhe.serialized_size)
    routines.bind(ofhe=ofhe, DriverError=DriverError)
    if ofhe is not None:
        got = apply_threads(_THREADS_WANTED)
        log("threads wanted %d, OpenMP max threads %s" % (_THREADS_WANTED, got))
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        rid = None
        req = None
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise DriverError("internal", "request is not a JSON object")
            rid = req.get("id")
            if req.get("v") != PROTOCOL:
                raise DriverError("internal", "protocol version %r not supported (this driver speaks %d)"
                                  % (req.get("v"), PROTOCOL))
            if ofhe is None and req.get("type") != "shutdown":
                raise DriverError("internal", _IMPORT_ERROR)
            result = handle(req, reg)
            reply = {"v": PROTOCOL, "id": rid, "ok": True, "result": result}
        except DriverError as e:
            reply = {"v": PROTOCOL, "id": rid, "ok": False,
                     "error": {"kind": e.kind, "message": one_line(e.message)}}
        except json.JSONDecodeError as e:
            reply = {"v": PROTOCOL, "id": rid, "ok": False,
                     "error": {"kind": "internal", "message": "bad JSON: %s" % e}}
        except (KeyError, ValueError, TypeError) as e:
            log(traceback.format_exc())
            reply = {"v": PROTOCOL, "id": rid, "ok": False,
                     "error": {"kind": "internal", "message": one_line("%s: %s" % (type(e).__name__, e))}}
        except MemoryError:
            reply = {"v": PROTOCOL, "id": rid, "ok": False,
                     "error": {"kind": "internal", "message": "out of memory in driver"}}
        except Exception as e:  # OpenFHE raises RuntimeError with its message
            log(traceback.format_exc())
            reply = {"v": PROTOCOL, "id": rid, "ok": False,
                     "error": {"kind": "internal", "message": one_line("OpenFHE: %s" % e)}}
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if isinstance(req, dict) and req.get("type") == "shutdown" and reply.get("ok"):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
