"""fhemark driver for TenSEAL (OpenMined's tensor library on Microsoft SEAL), protocol v2.

Thin by design, like the SEAL driver it follows: it builds contexts, runs the programs it is
sent and times the steps it is told to time. Every primitive is split into an untimed
preparation and a timed call, so that only TenSEAL's call sits between the two clock reads.

TenSEAL's own types are vectors (CKKSVector, BFVVector) bound to a context that holds the keys.
Its calls bundle what the protocol keeps apart: ckks_vector/bfv_vector encode and encrypt in
one call, decrypt also decodes, add_plain/mul_plain take values and encode them inside. Those
ops are declared per op in `deviations`. Its automatic relinearization and rescaling are
context flags (`auto_relin`, `auto_rescale`): the driver keeps auto_rescale off and turns
auto_relin on only for mul_relin/square_relin, so mul, mul_relin, square and square_relin time
exactly the canonical work. What TenSEAL's vectors cannot do (a rotation by a chosen step,
relinearize or rescale on their own, mod_switch, key switching, a public key for an existing
secret key, BGV) is not listed, so fhemark records it `unsupported`.

The driver calls TenSEAL's C++ objects (`tenseal._ts_cpp`) directly: the Python classes in
`tenseal.tensors` only check types and re-wrap the result (and turn a list operand into a
PlainTensor and back into a list), which is not library work.
"""

from __future__ import annotations

import math
import os
import platform
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import tenseal as ts
import tenseal.sealapi as sa  # TenSEAL's bundled SEAL API: registers seal::Modulus (primes read back), SEAL's parameter check

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python_shared"))
from threads import wanted  # noqa: E402
from jsonl_driver import Failure, Run, merged, serve, static_capabilities  # noqa: E402

import routines  # noqa: E402  (this folder: TenSEAL's sum, dot, polyval for native variants)

C = ts._ts_cpp
DRIVER_VERSION = "0.6.0"  # 0.6.0: values freed after their last reader (python_shared)


# TenSEAL's one thread setting is the n_threads argument of every context (new, deserialize): the
# size of the context's thread pool, started with the context. Every context here is made with it.
# The pool only splits TenSEAL's multi-ciphertext work (matmul_plain, CKKSTensor element-wise ops);
# each op this driver offers is one SEAL call on the calling thread, so cpu/wall stays about 1.
N_THREADS = wanted()
SCHEMES = {"bfv": C.SCHEME_TYPE.BFV, "ckks": C.SCHEME_TYPE.CKKS}
_SEAL_SCHEMES = {"bfv": sa.SCHEME_TYPE.BFV, "ckks": sa.SCHEME_TYPE.CKKS}

COMMON = ["encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub", "add_plain", "mul", "mul_relin",
          "mul_plain", "mul_scalar", "square", "square_relin", "keygen_secret", "keygen_relin", "keygen_galois"]
# `<op>_into`: TenSEAL's in-place forms (add_, mul_, square_, ...), writing into the first operand.
_INTO = ["add", "sub", "add_plain", "mul", "mul_relin", "mul_plain", "mul_scalar", "square", "square_relin"]
INTO = {"bfv": _INTO, "ckks": _INTO}
OPS = {scheme: COMMON + [f"{op}_into" for op in into] + routines.OPS[scheme] for scheme, into in INTO.items()}
# Multiplications whose relinearization is TenSEAL's context flag auto_relin: op -> the flag's value.
RELIN = {"mul": False, "mul_relin": True, "square": False, "square_relin": True}

# Static facts (limits, deviations from PROTOCOL.md's canonical boundaries, build notes): capabilities.json,
# worded for one thread; keygen_secret's names the thread pool it starts.
CAPABILITIES = static_capabilities(Path(__file__).resolve().parent, OPS)
if N_THREADS != 1:
    for _dev in (sc["deviations"] for sc in CAPABILITIES["schemes"].values()):
        _dev["keygen_secret"] = (_dev["keygen_secret"].replace("n_threads=1)", f"n_threads={N_THREADS})")
                                 .replace("a one-thread pool", f"a pool of {N_THREADS} threads (started in the call)"))



def is_vector(obj) -> bool:
    return isinstance(obj, (C.CKKSVector, C.BFVVector))


def refusal(scheme: str, n: int, t: int, bits: list[int], exc: Exception, allow_insecure: bool) -> Failure:
    """TenSEAL answers a refused set with SEAL's bare 'encryption parameters are not set correctly':
    ask TenSEAL's bundled SEAL API why, so insecure and invalid sets are told apart."""
    try:
        parms = sa.EncryptionParameters(_SEAL_SCHEMES[scheme])
        parms.set_poly_modulus_degree(n)
        parms.set_coeff_modulus(sa.CoeffModulus.Create(n, bits))
        if scheme == "bfv":
            parms.set_plain_modulus(t)
        check = sa.SEALContext(parms, True, sa.SEC_LEVEL_TYPE.TC128)
        name, msg = check.parameters_error_name(), check.parameters_error_message()
    except Exception as exc2:  # CoeffModulus::Create refuses the bit sizes
        return Failure("invalid_params", f"TenSEAL refused the moduli: {exc}; SEAL: {exc2}".replace("\n", " "))
    if "insecure" in name:
        why = ("; allow_insecure cannot help: TenSEAL always builds its SEALContext with SEAL's 128-bit check (tc128) "
               "and has no switch to turn it off") if allow_insecure else ""
        return Failure("insecure_params", f"TenSEAL: {exc}: SEAL says {msg} ({name}){why}")
    return Failure("invalid_params", f"TenSEAL: {exc}: SEAL says {msg} ({name})")


def symmetric_twin(ctx):
    """A context of ENCRYPTION_TYPE.SYMMETRIC holding the same secret key, for encrypt_sk.

    TenSEAL fixes a context's encryption type (public key or secret key) when it is made, and a new
    context has a new secret key. Its own serialization carries the secret key: the asymmetric
    context's protobuf with field 4 (encryption_type) set to 1 (symmetric) loads as a symmetric
    context with that key (a protobuf parser takes the last value of a field, so appending the
    field is enough). Ciphertexts it makes decrypt under the setup's secret key."""
    raw = ctx.serialize(False, True, False, False)  # public key, secret key, Galois keys, relin keys
    twin = C.TenSEALContext.deserialize(raw + b"\x20\x01", N_THREADS)
    twin.auto_rescale = False
    return twin


class Setup:
    """A TenSEAL context with its standard keys, kept for later run requests."""

    def __init__(self, scheme: str, params: dict, rotations: list[int], allow_insecure: bool):
        if scheme not in SCHEMES:
            raise Failure("unsupported", f"TenSEAL driver has no scheme '{scheme}' (TenSEAL offers BFV and CKKS)")
        if params.get("preset"):
            raise Failure("unsupported", f"TenSEAL driver has no parameter preset '{params['preset']}'")
        if len(params.get("p_bits") or []) != 1:
            raise Failure("invalid_params", "TenSEAL (SEAL) uses exactly one special prime: give p_bits with one entry")
        if scheme == "bfv" and not params.get("batching", True):
            raise Failure("unsupported", "TenSEAL's BFVVector always batches: no coefficient encoding, t must allow batching")
        self.scheme = scheme
        self.n = int(params["N"])
        self.bits = [int(b) for b in list(params["q_bits"]) + list(params["p_bits"])]
        self.t = int(params["t"]) if scheme == "bfv" else None
        try:
            self.ctx = C.TenSEALContext.new(SCHEMES[scheme], self.n, self.t or 0, self.bits,
                                            C.ENCRYPTION_TYPE.ASYMMETRIC, N_THREADS)
        except (ValueError, RuntimeError, TypeError) as exc:
            raise refusal(scheme, self.n, self.t or 0, self.bits, exc, allow_insecure)
        seal_ctx = self.ctx.seal_context()
        if scheme == "bfv" and not seal_ctx.first_context_data().qualifiers().using_batching:
            raise Failure("invalid_params", "TenSEAL/SEAL: t does not allow batching (t must be a prime = 1 mod 2N)")
        self.scale = 2.0 ** params["scale_bits"] if scheme == "ckks" else None
        self.ctx.auto_rescale = False
        if self.scale is not None:
            self.ctx.global_scale = self.scale
        self.sym = symmetric_twin(self.ctx)
        self.slots = self.n // 2 if scheme == "ckks" else self.n
        self.top = seal_ctx.first_context_data().chain_index()
        self.notes: set[str] = set()  # what the routines did untimed for this setup (keys made), said in their runs
        if rotations:  # TenSEAL's only Galois key set, SEAL's default: every +/- 2^i step and the row swap (0)
            self.ctx.generate_galois_keys()
            if beyond := self.beyond_default(rotations):  # no op of this driver rotates by a step: said, not refused
                self.setup_notes = [f"Galois keys: SEAL's default set, TenSEAL's only one; none for steps {beyond}"]

    def beyond_default(self, steps: list) -> list:
        """The steps SEAL's default Galois key set (every +/- 2^i and 0, the row swap) has no key for."""
        row = self.n // 2
        return [k for k in steps if (r := int(k) % row) & (r - 1) and (row - r) & (row - r - 1)]

    def new_vector(self, ctx, values: list):
        return (C.CKKSVector if self.scheme == "ckks" else C.BFVVector)(ctx, values)

    def effective(self, params: dict) -> dict:
        parms = self.ctx.seal_context().key_context_data().parms()
        primes = [m.value() for m in parms.coeff_modulus()]
        return {"N": self.n, "q_primes": primes[:-1], "p_primes": primes[-1:],
                "t": parms.plain_modulus().value() if self.t else None,
                "scale_bits": math.log2(self.ctx.global_scale) if self.scheme == "ckks" else None,
                "slots": self.slots, "secret": "ternary", "sigma": 3.2}

    def sizes(self) -> dict:
        """TenSEAL's serialize(): a key's size is the context serialized with it minus without it
        (SEAL's save of the key, SEAL's default compression, plus its protobuf field header)."""
        ser = self.ctx.serialize
        base = len(ser(False, False, False, False))
        out = {"public_key": len(ser(True, False, False, False)) - base,
               "secret_key": len(ser(False, True, False, False)) - base,
               "relin_keys": len(ser(False, False, False, True)) - base,
               "ciphertext": len(self.new_vector(self.ctx, self.plain(np.zeros(self.slots, np.int64))).serialize())}
        if self.ctx.has_galois_keys():
            out.update(galois_keys=len(ser(False, False, True, False)) - base, galois_key_count=self.ctx.galois_keys().size())
        return out

    def plain(self, v: np.ndarray) -> list:
        """A full-length input (PROTOCOL.md) -> the Python list TenSEAL's calls take (untimed); BFV
        values centred into (-t/2, t/2], the signed form BatchEncoder's int64 encode takes."""
        return (v if self.scheme == "ckks" else np.where(v > self.t // 2, v - self.t, v)).tolist()

    def scalar(self, value):
        if self.scheme == "ckks":
            return float(value)
        k = int(value) % self.t
        return k - self.t if k > self.t // 2 else k

    def level(self, vec) -> int:
        ct = vec.ciphertext()[0]
        return vec.context().seal_context().get_context_data(ct.parms_id()).chain_index()

    def noise(self, vec) -> int:
        return vec.context().decryptor().invariant_noise_budget(vec.ciphertext()[0])

    def run_of(self, program: dict) -> "TensealRun":
        return TensealRun(self, program)


class Prepared(NamedTuple):
    """One step made ready: the call to time, the untimed step that turns its result into the
    step's value, and the context flag its multiplication needs (auto_relin), set before the clock."""

    call: Callable
    post: Callable | None = None
    ctx: Any = None
    relin: bool | None = None
    rescale: bool = False

    def arm(self) -> None:
        if self.ctx is not None:
            self.ctx.auto_relin = self.relin
            self.ctx.auto_rescale = self.rescale

    def disarm(self) -> None:
        """auto_rescale back off once the region is over: every other op relies on it."""
        if self.rescale:
            self.ctx.auto_rescale = False


def key_of(vals: dict, attrs: dict, what: str):
    name = attrs.get("key")
    if name is None:
        return None
    obj = vals.get(name) if isinstance(name, str) else None
    if not isinstance(obj, C.TenSEALContext):
        raise Failure("internal", f"{what}: key {name!r} is no key of the program (TenSEAL keys live in a context)")
    return obj


def operand(vals: dict, name: str, what: str):
    obj = vals.get(name)
    if not is_vector(obj):
        kind = "no value of the program" if obj is None else f"a {type(obj).__name__}, not a ciphertext"
        raise Failure("internal", f"{what}: {name!r} is {kind}")
    return obj


def prepare(s: Setup, op: str, args: list, attrs: dict, vals: dict) -> Prepared:
    """Do the untimed part of one primitive and return what the region runs."""
    if op not in OPS[s.scheme]:
        why = routines.WHY_NOT.get(op)
        raise Failure("unsupported", why or f"TenSEAL driver has no '{op}' for {s.scheme}")
    into = op.endswith("_into")
    base = op[: -len("_into")] if into else op
    if base == "encode":
        if "like" in attrs or ("level" in attrs and int(attrs["level"]) != s.top):
            raise Failure("unsupported", "TenSEAL has no plaintext below the top level or at another ciphertext's "
                                         "scale: add_plain/mul_plain encode their values at the vector's own scale")
        values = s.plain(vals[args[0]])
        return Prepared(lambda: values)
    if base == "decode":
        values = vals[args[0]]
        if not isinstance(values, list):
            raise Failure("internal", f"decode: {args[0]!r} is no decrypted or encoded value")
        return Prepared(lambda: values)  # BFV: centred values, which the orchestrator reduces mod t
    if base in ("encrypt_pk", "encrypt_sk"):
        values = vals[args[0]]
        if not isinstance(values, list):
            raise Failure("internal", f"{op}: {args[0]!r} is no encoded value")
        key = key_of(vals, attrs, op)
        ctx = key if key is not None else (s.ctx if base == "encrypt_pk" else s.sym)
        cls = C.CKKSVector if s.scheme == "ckks" else C.BFVVector
        # A secret-key encryption made by the setup's symmetric twin is handed to the setup's context
        # (untimed): the same secret key, and the context whose keys and flags later ops use.
        post = (lambda v: (v.link_context(s.ctx), v)[1]) if ctx is s.sym else None
        return Prepared(lambda: cls(ctx, values), post)
    if base == "decrypt":
        x = operand(vals, args[0], op)
        key = key_of(vals, attrs, op)
        # decrypt(sk), the call TenSEAL's decrypt() makes with its context's key: here the setup's secret
        # key (or the key attr's), whatever context the vector is linked to
        sk = (key if key is not None else s.ctx).secret_key()
        return Prepared(lambda: x.decrypt(sk))
    if base.startswith("keygen_"):
        return prepare_keygen(s, base, attrs, vals)
    if base in routines.NAMES:
        return prepare_routine(s, base, args, attrs, vals)
    return prepare_arith(s, base, into, args, attrs, vals)


def prepare_routine(s: Setup, op: str, args: list, attrs: dict, vals: dict) -> Prepared:
    """TenSEAL's sum, dot and polyval (routines.py): inputs re-wrapped, keys made, flags chosen here."""
    x = operand(vals, args[0], op)
    if op == "poly_eval":
        coeffs = [float(c) for c in attrs["coeffs"]]
        return Prepared(lambda: x.polyval(coeffs), ctx=x.context(), relin=True, rescale=True)
    n = int(attrs["n"])
    if n < 1 or n & (n - 1) or n > s.n // 2:
        raise Failure("internal", f"{op}: n={n} is not a power of two at most the row length {s.n // 2}")
    if not s.ctx.has_galois_keys():
        s.ctx.generate_galois_keys()
        s.notes.add("generate_galois_keys() made TenSEAL's Galois keys (SEAL's default set) for inner_sum / "
                    "inner_product, untimed, before the first region using them; kept for the setup")
    cls = type(x)
    ctx = x.context()
    xn = cls(ctx, routines.resized(x.serialize(), n))
    slots = s.slots

    def full(v):  # sum/dot leave a vector of size 1: seen again as every slot (untimed)
        return cls(ctx, routines.resized(v.serialize(), slots))
    if op == "inner_sum":
        return Prepared(xn.sum, full)
    y = operand(vals, args[1], op)
    yn = cls(ctx, routines.resized(y.serialize(), n))
    return Prepared(lambda: xn.dot(yn), full, ctx=ctx, relin=True)


def key_holder(ctx):
    """A copy of ctx with its secret (and public) key and none of its evaluation keys: what a timed
    key generation fills. TenSEAL's copy() serializes the Galois keys too (0.15 s at N = 8192 per
    sample, untimed, but half of the wall time of the quick suite's TenSEAL key generations)."""
    try:
        public = ctx.has_public_key()
    except ValueError:  # TenSEAL raises it for a symmetric context: it has no public key
        public = False
    return C.TenSEALContext.deserialize(ctx.serialize(public, True, False, False), N_THREADS)


def prepare_keygen(s: Setup, op: str, attrs: dict, vals: dict) -> Prepared:
    key = key_of(vals, attrs, op)
    scale = s.scale

    def settle(ctx):
        ctx.auto_rescale = False
        if scale is not None:
            ctx.global_scale = scale
        return ctx

    if op == "keygen_secret":
        scheme, n, t, bits = SCHEMES[s.scheme], s.n, s.t or 0, list(s.bits)
        sym = C.ENCRYPTION_TYPE.SYMMETRIC
        return Prepared(lambda: C.TenSEALContext.new(scheme, n, t, bits, sym, N_THREADS), settle)
    if op == "keygen_galois" and s.beyond_default(attrs["steps"] if isinstance(attrs["steps"], list) else [attrs["steps"]]):
        raise Failure("unsupported", "TenSEAL's generate_galois_keys makes only SEAL's default set (every +/- 2^i "
                                     "step and the row swap / conjugation): a step outside it has no key")
    # The new keys go into a copy of the context (untimed), so the setup keeps its keys and a later
    # step names the copy with {"key": ...} to use the new ones.
    holder = settle(key_holder(key if key is not None else s.ctx))
    gen = holder.generate_relin_keys if op == "keygen_relin" else holder.generate_galois_keys
    return Prepared(gen, lambda _: holder)


def linked(v, ctx):
    """A copy of the vector v in the context ctx (untimed). TenSEAL's copy() serializes v's context
    with its Galois keys: 239 ms at N = 8192, against 2.6 ms for the vector alone."""
    return type(v)(ctx, v.serialize())


def prepare_arith(s: Setup, op: str, into: bool, args: list, attrs: dict, vals: dict) -> Prepared:
    x = operand(vals, args[0], op)
    key = key_of(vals, attrs, op) if op in RELIN else None
    if key is not None:  # use another context's relinearization keys: copies of the operands linked to it
        x = linked(x, key)
    ctx = key if key is not None else x.context()
    if op in ("add", "sub", "mul", "mul_relin"):
        y = operand(vals, args[1], op)
        if key is not None:
            y = linked(y, key)
        f = getattr(x, {"add": "add", "sub": "sub", "mul": "mul", "mul_relin": "mul"}[op] + ("_" if into else ""))
        if op in RELIN:
            return Prepared(lambda: f(y), ctx=ctx, relin=RELIN[op])
        return Prepared(lambda: f(y))
    if op in ("square", "square_relin"):
        if s.scheme == "bfv":  # the binding has no BFVVector.square: the general product x * x (mul_ copies
            # its second operand before multiplying in place, so mul_(x) reads an unaliased copy of x)
            f = x.mul_ if into else x.mul
            return Prepared(lambda: f(x), ctx=ctx, relin=RELIN[op])
        return Prepared(x.square_ if into else x.square, ctx=ctx, relin=RELIN[op])
    if op in ("add_plain", "mul_plain"):
        values = vals[args[1]]
        if not isinstance(values, list):
            raise Failure("internal", f"{op}: {args[1]!r} is no encoded value")
        f = getattr(x, op + ("_" if into else ""))
        return Prepared(lambda: f(values))
    if op == "mul_scalar":
        k = s.scalar(attrs["scalar"])
        f = x.mul_plain_ if into else x.mul_plain
        return Prepared(lambda: f(k))
    raise Failure("unsupported", f"TenSEAL driver has no '{op}'")



def arm_region(name: str | None, prepared: list[Prepared]) -> Callable:
    """Set every step's auto_relin flag before the clock (the shared step walk's arm); the undo
    disarms them. The flag belongs to a context, so one region cannot hold a multiplication with
    and one without relinearization on the same context."""
    wanted: dict[int, tuple] = {}
    for p in prepared:
        if p.ctx is None:
            continue
        flags = (p.relin, p.rescale)
        if wanted.setdefault(id(p.ctx), flags) != flags:  # pybind11 returns one Python object per live context
            raise Failure("unsupported", f"timed region '{name}': TenSEAL's relinearization and rescaling are flags "
                                         f"of a context (auto_relin, auto_rescale): a region cannot mix steps that "
                                         f"want them set differently")
    for p in prepared:
        p.arm()
    return lambda: [p.disarm() for p in prepared]


class TensealRun(Run):
    """A program on a TenSEAL setup (the frame: jsonl_driver.handle_run). TenSEAL has no plaintext object
    to serialize: sizes, levels and noise are of its vectors only."""

    arm = staticmethod(arm_region)

    def __init__(self, s: Setup, program: dict):
        super().__init__(s)
        self.std = dict(sk=s.sym, pk=s.ctx, rlk=s.ctx, gk=s.ctx)
        self.routines = any(st["op"] in routines.NAMES for st in program["steps"])

    def __exit__(self, kind, exc, tb) -> None:
        if self.routines:
            self.notes = sorted(self.s.notes)  # what the routines did untimed for this setup (keys made), so far

    def prepare(self, st: dict, attrs: dict, vals: dict) -> Prepared:
        return prepare(self.s, st["op"], st.get("args", []), attrs, vals)

    def size(self, name: str, value) -> int | None:
        return len(value.serialize()) if is_vector(value) else None

    def level(self, name: str, value) -> int | None:
        return self.s.level(value) if is_vector(value) else None

    def noise(self, names: list[str], vals: dict) -> dict:
        if self.s.scheme == "ckks":
            return {}
        return {"noise_budget_bits": {n: self.s.noise(vals[n]) for n in names if is_vector(vals.get(n))}}


_BUILD: dict = {}


def seal_facts() -> dict:
    """TenSEAL does not expose the version of the SEAL it links: read major.minor and the
    compression mode from the SEAL header inside TenSEAL's own serialization of a small context."""
    if not _BUILD:
        try:
            ctx = C.TenSEALContext.new(C.SCHEME_TYPE.BFV, 2048, 12289, [27, 27], C.ENCRYPTION_TYPE.SYMMETRIC, N_THREADS)
            raw = ctx.serialize(False, False, False, False)
            at = raw.find(b"\x5e\xa1\x10")  # SEALHeader: magic 0xA15E, header size 16, major, minor, compr_mode
            major, minor, compr = raw[at + 3], raw[at + 4], raw[at + 5]
            names = {0: "none", 1: "zlib", 2: "zstd"}
            _BUILD.update(seal=f"{major}.{minor} (major.minor from the SEAL serialization header: TenSEAL exposes no "
                               f"SEAL version)", compression=names.get(compr, str(compr)))
        except Exception as exc:  # never fail capabilities over a fact
            _BUILD.update(seal=f"unknown ({exc})", compression="unknown")
    return _BUILD


def capabilities() -> dict:
    facts = seal_facts()
    # TenSEAL takes the count (its pool has N_THREADS threads, checked: the process gains that many); SEAL's
    # evaluator under it is single-threaded, so the ops offered here do not spread (see build.n_threads).
    return merged(CAPABILITIES, {
        "library_version": ts.__version__, "driver_version": DRIVER_VERSION, "threads": N_THREADS,
        "build": {"binding": f"tenseal {ts.__version__} (PyPI manylinux wheel; its pybind11 module _tenseal_cpp "
                             f"called directly, not the tenseal.tensors Python wrappers)",
                  "seal": facts["seal"], "python": platform.python_version(), "numpy": np.__version__,
                  "n_threads": (f"{N_THREADS} (FHEMARK_THREADS) for every context: TenSEAL's thread pool, which "
                                f"only splits multi-ciphertext work (matmul_plain, CKKSTensor); every op here is one "
                                f"ciphertext, run on the calling thread"),
                  "compression": facts["compression"],
                  "sizes": f"TenSEAL's serialize() (protobuf around SEAL's save, SEAL's default compression: "
                           f"{facts['compression']}; TenSEAL offers no uncompressed form); key sizes: the context "
                           f"serialized with the key minus without it"}})



if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    serve(capabilities, Setup)
