"""fhemark driver for Microsoft SEAL (through the seal-python binding), protocol v2.

Thin by design: it builds contexts and keys, runs the programs it is sent and
times the steps it is told to time. No statistics, no reference arithmetic.
Every primitive is split into an untimed preparation and a timed call, so
that only the library call itself sits between the two clock reads.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import numpy as np
import seal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python_shared"))
import chain  # noqa: E402
from jsonl_driver import Failure, Run, merged, serve, static_capabilities  # noqa: E402

DRIVER_VERSION = "0.9.0"  # 0.9.0: scaling primes that hold the CKKS scale (chain.py); values freed after their last reader
SCHEMES = {"bfv": seal.scheme_type.bfv, "bgv": seal.scheme_type.bgv, "ckks": seal.scheme_type.ckks}
COMMON = ["encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub", "add_plain", "mul",
          "mul_relin", "square_relin", "mul_plain", "mul_scalar", "square", "relinearize", "keygen_secret", "keygen_public",
          "keygen_relin", "keygen_galois"]
# `<op>_into`: seal-python's in-place forms, writing into the first operand (PROTOCOL.md).
INPLACE = {"add": "add_inplace", "sub": "sub_inplace", "add_plain": "add_plain_inplace", "mul": "multiply_inplace",
           "mul_plain": "multiply_plain_inplace", "square": "square_inplace", "rescale": "rescale_to_next_inplace",
           "mod_switch": "mod_switch_to_next_inplace", "relinearize": "relinearize_inplace",
           "rotate_rows": "rotate_rows_inplace", "rotate_columns": "rotate_columns_inplace",
           "rotate": "rotate_vector_inplace", "conjugate": "complex_conjugate_inplace"}
# The one API difference between the seal-python versions the driver runs (driver.json `versions`):
# 4.1.2 binds add_plain_inplace with a memory pool argument and no default; SEAL's default is the global pool.
POOLED = "MemoryPoolHandle" in (seal.Evaluator.add_plain_inplace.__doc__ or "")
ADAPTATIONS = ["seal-python 4.1.2: add_plain_into passes MemoryPoolHandle.Global() (SEAL's default pool), which "
               "its binding requires"] if POOLED else []
INTO = ["add", "sub", "add_plain", "mul", "mul_plain", "square", "mul_relin", "square_relin", "relinearize",
        "mul_scalar", "mod_switch"]
OPS = {"bfv": COMMON + ["mod_switch", "rotate_rows", "rotate_columns", "encode_coeffs", "decode_coeffs"],
       "bgv": COMMON + ["mod_switch", "rotate_rows", "rotate_columns", "encode_coeffs", "decode_coeffs"],
       "ckks": COMMON + ["mod_switch", "rescale", "rotate", "conjugate"]}
for _scheme, _ops in OPS.items():
    _ops += [f"{op}_into" for op in INTO + (["rescale", "rotate", "conjugate"] if _scheme == "ckks" else
                                            ["rotate_rows", "rotate_columns"])]
# Static facts (limits, deviations from PROTOCOL.md's canonical boundaries, build notes): capabilities.json.
CAPABILITIES = static_capabilities(Path(__file__).resolve().parent, OPS)



class Setup:
    """A context with its standard keys, kept for later run requests."""

    def __init__(self, scheme: str, params: dict, rotations: list[int], allow_insecure: bool):
        if scheme not in SCHEMES:
            raise Failure("unsupported", f"SEAL driver has no scheme '{scheme}'")
        if params.get("preset"):
            raise Failure("unsupported", f"SEAL driver has no parameter preset '{params['preset']}'")
        if len(params.get("p_bits") or []) != 1:
            raise Failure("invalid_params", "SEAL uses exactly one special prime: give p_bits with one entry")
        self.scheme = scheme
        self.n = int(params["N"])
        parms = seal.EncryptionParameters(SCHEMES[scheme])
        parms.set_poly_modulus_degree(self.n)
        try:
            made = [m.value() for m in seal.CoeffModulus.Create(self.n, list(params["q_bits"]) + list(params["p_bits"]))]
            if scheme == "ckks":
                made = chain.stable(self.n, int(params["scale_bits"]), list(params["q_bits"]), made)
            parms.set_coeff_modulus([seal.Modulus(x) for x in made])
            if scheme != "ckks":
                parms.set_plain_modulus(int(params["t"]))
        except Exception as exc:  # SEAL raises ValueError/RuntimeError with its own message
            raise Failure("invalid_params", f"SEAL refused the moduli: {exc}")
        level = seal.sec_level_type.none if allow_insecure else seal.sec_level_type.tc128
        self.ctx = seal.SEALContext(parms, True, level)
        if not self.ctx.parameters_set():
            name, msg = self.ctx.parameter_error_name(), self.ctx.parameter_error_message()
            kind = "insecure_params" if "insecure" in name else "invalid_params"
            raise Failure(kind, f"SEAL: {msg} ({name})")
        self.batching = scheme == "ckks" or params.get("batching", True)
        if self.batching and scheme != "ckks" and not self.ctx.first_context_data().qualifiers().using_batching:
            raise Failure("invalid_params", "SEAL: t does not allow batching (t must be a prime = 1 mod 2N)")
        self.t = int(params["t"]) if scheme != "ckks" else None
        self.scale = 2.0 ** params["scale_bits"] if scheme == "ckks" else None
        self.kg = seal.KeyGenerator(self.ctx)
        self.sk = self.kg.secret_key()
        self.pk = self.kg.create_public_key()
        self.rlk = self.kg.create_relin_keys()
        # SEAL's steps: 0 is the row swap (BFV/BGV) or conjugation (CKKS), as in PROTOCOL.md
        self.gk = self.make_galois(self.kg, sorted({int(k) % (self.n // 2) for k in rotations})) if rotations else None
        if self.batching:
            self.encoder = seal.CKKSEncoder(self.ctx) if scheme == "ckks" else seal.BatchEncoder(self.ctx)
            self.slots = self.encoder.slot_count()
        else:  # coefficient encoding only (e.g. t = 2): one value per polynomial coefficient
            self.encoder, self.slots = None, self.n
        self.encryptor = seal.Encryptor(self.ctx, self.pk, self.sk)
        self.decryptor = seal.Decryptor(self.ctx, self.sk)
        self.evaluator = seal.Evaluator(self.ctx)

    @staticmethod
    def make_galois(kg, steps: list[int]):
        gk = seal.GaloisKeys()
        kg.create_galois_keys(steps, gk)
        return gk

    def effective(self, params: dict) -> dict:
        primes = [m.value() for m in self.ctx.key_context_data().parms().coeff_modulus()]
        return {"N": self.n, "q_primes": primes[:-1], "p_primes": primes[-1:], "t": self.t,
                "scale_bits": params.get("scale_bits"), "slots": self.slots, "secret": "ternary", "sigma": 3.2}

    def sizes(self) -> dict:
        pt = self.encode_call(np.zeros(self.slots))() if self.batching else coeff_plaintext(np.zeros(1), self.t)
        out = {"public_key": len(self.pk.to_string()), "secret_key": len(self.sk.to_string()),
               "relin_keys": len(self.rlk.to_string()), "plaintext": pt.save_size(),
               "ciphertext": self.encryptor.encrypt(pt).save_size()}
        if self.gk is not None:
            out.update(galois_keys=len(self.gk.to_string()), galois_key_count=self.gk.size())
        return out

    def encode_call(self, v: np.ndarray, like=None, level=None):
        """The encoding call (to time) of a full-length input (PROTOCOL.md). CKKS: at the top level and scale
        2^scale_bits; with `like` (a ciphertext) at its level and exact scale; with `level` at
        that level. seal-python's encode has no parms_id argument: below the top level the
        plaintext is encoded at the top and mod-switched down (mod_switch_to drops primes of the
        NTT-form plaintext: the same integers as an encoding at that level)."""
        padded = v.astype(np.float64 if self.scheme == "ckks" else np.uint64)
        if self.scheme != "ckks":
            return lambda: self.encoder.encode(padded)
        enc, ev = self.encoder, self.evaluator
        if like is not None:
            scale, parms = like.scale(), like.parms_id()
            if parms == self.ctx.first_parms_id():
                return lambda: enc.encode(padded, scale)
            return lambda: ev.mod_switch_to(enc.encode(padded, scale), parms)
        if level is not None and int(level) != self.ctx.first_context_data().chain_index():
            parms = self.parms_at(int(level))
            return lambda: ev.mod_switch_to(enc.encode(padded, self.scale), parms)
        return lambda: enc.encode(padded, self.scale)

    def parms_at(self, level: int):
        """The parms_id of the data level with `level` primes above the lowest (SEAL's chain index)."""
        data = self.ctx.first_context_data()
        while data is not None and data.chain_index() != level:
            data = data.next_context_data()
        if data is None:
            raise Failure("internal", f"encode: no level {level} (levels 0..{self.ctx.first_context_data().chain_index()})")
        return data.parms_id()

    def level(self, obj) -> int:
        return self.ctx.get_context_data(obj.parms_id()).chain_index()

    def run_of(self, program: dict) -> "SealRun":
        return SealRun(self)


def prepare(s: Setup, op: str, args: list, attrs: dict, vals: dict, notes: list[str]):
    """Do the untimed part of one primitive; return (the call to time, the untimed step that
    turns its result into the step's value, or None). What the run should say goes to notes."""
    if op not in OPS[s.scheme]:
        raise Failure("unsupported", f"SEAL driver has no '{op}' for {s.scheme}")
    if op.endswith("_into"):
        return prepare_into(s, op[: -len("_into")], args, attrs, vals, notes), None
    return prepare_call(s, op, args, attrs, vals, notes), None


def prepare_into(s: Setup, op: str, args: list, attrs: dict, vals: dict, notes: list[str]):
    """The in-place form: the library writes into the first operand, which becomes the output."""
    ev = s.evaluator
    a = [vals[x] for x in args]
    key = attrs.get("key")
    rlk = vals[key] if key else s.rlk
    gk = vals[key] if key else s.gk
    if op == "mul_relin":
        return lambda: (ev.multiply_inplace(a[0], a[1]), ev.relinearize_inplace(a[0], rlk), a[0])[2]
    if op == "square_relin":
        return lambda: (ev.square_inplace(a[0]), ev.relinearize_inplace(a[0], rlk), a[0])[2]
    if op == "mul_scalar":
        const = scalar_plaintext(s, attrs["scalar"])
        return lambda: (ev.multiply_plain_inplace(a[0], const), a[0])[1]
    f = getattr(ev, INPLACE[op])
    if op == "relinearize":
        return lambda: (f(a[0], rlk), a[0])[1]
    if op in ("rotate_rows", "rotate"):
        ks = rotation_steps(s, op, attrs, gk, notes)
        return lambda: ([f(a[0], k, gk) for k in ks], a[0])[1]
    if op in ("rotate_columns", "conjugate"):
        return lambda: (f(a[0], gk), a[0])[1]
    if op == "add_plain" and POOLED:
        pool = seal.MemoryPoolHandle.Global()
        return lambda: (f(a[0], a[1], pool), a[0])[1]
    return lambda: (f(*a), a[0])[1]


def like_of(s: Setup, attrs: dict, vals: dict):
    """encode's `like` attr: the ciphertext whose level and exact scale a CKKS plaintext takes."""
    name = attrs.get("like")
    if name is None:
        return None
    if s.scheme != "ckks":
        raise Failure("unsupported", f"encode's like attr is CKKS only (a {s.scheme} plaintext has no scale)")
    if "level" in attrs:
        raise Failure("internal", "encode: give level or like, not both")
    ct = vals.get(name) if isinstance(name, str) else None
    if not isinstance(ct, seal.Ciphertext):
        what = "no value of the program" if ct is None else f"a {type(ct).__name__}, not a ciphertext"
        raise Failure("internal", f"encode: like {name!r} names {what}")
    return ct


def scalar_plaintext(s: Setup, scalar):
    """SEAL has no scalar product: the scalar becomes a constant plaintext, made untimed."""
    if s.scheme == "ckks":
        return s.encoder.encode(float(scalar), s.scale)
    return seal.Plaintext(format(int(scalar) % s.t, "X"))


def prepare_call(s: Setup, op: str, args: list, attrs: dict, vals: dict, notes: list[str]):
    ev, key = s.evaluator, attrs.get("key")
    a = [vals[x] for x in args]
    if op == "encode":
        if not s.batching:
            raise Failure("unsupported", "batch encoding needs a batching t: use encode_coeffs")
        return s.encode_call(a[0], like_of(s, attrs, vals), attrs.get("level"))
    if op == "encode_coeffs":
        return lambda: coeff_plaintext(a[0], s.t)
    if op == "decode_coeffs":
        return lambda: coeffs_of(a[0], s.n, s.t)
    if op == "decode":  # BFV/BGV: uint64 values in [0, t)
        decode = s.encoder.decode if s.scheme == "ckks" else s.encoder.decode_uint64
        return lambda: decode(a[0])
    if op == "encrypt_pk":
        enc = seal.Encryptor(s.ctx, vals[key]) if key else s.encryptor
        return lambda: enc.encrypt(a[0])
    if op == "encrypt_sk":
        enc = seal.Encryptor(s.ctx, vals[key]) if key else s.encryptor
        return lambda: enc.encrypt_symmetric(a[0])
    if op == "decrypt":
        dec = seal.Decryptor(s.ctx, vals[key]) if key else s.decryptor
        return lambda: dec.decrypt(a[0])
    rlk = vals[key] if key else s.rlk
    gk = vals[key] if key else s.gk
    if op in ("rotate_rows", "rotate", "rotate_columns", "conjugate") and gk is None:
        raise Failure("internal", "no Galois keys in this setup: ask for rotations in setup")
    simple = {"add": ev.add, "sub": ev.sub, "add_plain": ev.add_plain, "mul": ev.multiply,
              "mul_plain": ev.multiply_plain, "square": ev.square, "rescale": ev.rescale_to_next,
              "mod_switch": ev.mod_switch_to_next}
    if op in simple:
        f = simple[op]
        return lambda: f(*a)
    if op == "mul_relin":
        return lambda: ev.relinearize(ev.multiply(a[0], a[1]), rlk)
    if op == "square_relin":
        return lambda: ev.relinearize(ev.square(a[0]), rlk)
    if op == "relinearize":
        return lambda: ev.relinearize(a[0], rlk)
    if op == "mul_scalar":
        const = scalar_plaintext(s, attrs["scalar"])
        return lambda: ev.multiply_plain(a[0], const)
    if op in ("rotate_rows", "rotate"):
        ks = rotation_steps(s, op, attrs, gk, notes)
        first, then = (ev.rotate_rows, ev.rotate_rows_inplace) if op == "rotate_rows" else \
            (ev.rotate_vector, ev.rotate_vector_inplace)

        def rotated():
            c = first(a[0], ks[0], gk)
            for k in ks[1:]:
                then(c, k, gk)
            return c
        return rotated
    if op == "rotate_columns":
        return lambda: ev.rotate_columns(a[0], gk)
    if op == "conjugate":
        return lambda: ev.complex_conjugate(a[0], gk)
    if op == "keygen_secret":
        return lambda: seal.KeyGenerator(s.ctx).secret_key()
    kg = seal.KeyGenerator(s.ctx, vals[key]) if key else s.kg
    if op == "keygen_public":
        return kg.create_public_key
    if op == "keygen_relin":
        return kg.create_relin_keys
    if op == "keygen_galois":
        return lambda: Setup.make_galois(kg, [int(x) for x in attrs["steps"]])
    raise Failure("unsupported", f"SEAL driver has no '{op}'")


def galois_elt(n: int, step: int) -> int:
    """SEAL's Galois element of a rotation by `step` (GaloisTool::get_elt_from_step: 3^step mod 2N,
    a negative step as row + step); steps congruent modulo the row share it."""
    return pow(3, step % (n // 2), 2 * n)


def rotation_steps(s: Setup, op: str, attrs: dict, gk, notes: list[str]) -> list[int]:
    """The steps to give SEAL for a rotation by attrs["steps"] (one step, or the keyed steps
    fhemark spelled a step without a key of its own as, applied in turn). PROTOCOL.md takes a step
    modulo the row (N/2 slots); SEAL refuses |steps| >= N/2 ("step count too large"), so the
    driver reduces it. Every step must have a Galois key of its own: SEAL would otherwise compose
    it by its own NAF digits, a choice that is fhemark's (model/rotations.py), the same for every
    library."""
    if "steps" not in attrs:
        raise Failure("internal", f"{op} needs attr steps")
    if gk is None:
        raise Failure("internal", "no Galois keys in this setup: ask for rotations in setup")
    given = attrs["steps"] if isinstance(attrs["steps"], list) else [attrs["steps"]]
    row = s.n // 2
    steps = [int(k) % row for k in given if int(k) % row]
    if not steps:
        notes_add(notes, f"{op} by a multiple of {row}: the identity, no key switch (SEAL returns the ciphertext "
                         "or a copy)")
        return [0]
    missing = [k for k in steps if not gk.has_key(galois_elt(s.n, k))]
    if missing:
        raise Failure("internal", f"{op}: no Galois key for step {missing[0]} (of {given}): generate keys for "
                                  "that step, or keys that fhemark can spell it by")
    return steps


def notes_add(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def coeff_plaintext(values: np.ndarray, t: int):
    """A plaintext whose polynomial coefficients are `values` (SEAL's hex polynomial syntax)."""
    terms = [f"{int(v) % t:X}" + (f"x^{i}" if i else "") for i, v in enumerate(values) if int(v) % t]
    return seal.Plaintext(" + ".join(reversed(terms)) or "0")


def coeffs_of(pt, n: int, t: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    text = pt.to_string()
    if text != "0":
        for term in text.split(" + "):
            coef, _, power = term.partition("x^")
            out[int(power) if power else 0] = int(coef, 16) % t
    return out



# SEAL's words when a product's or an encoding's scale has as many bits as the primes left at its level,
# or more: the chain has too little room above the scale for the program (a parameter failure, which a
# larger set mends), unlike "scale mismatch", an addition of two scales the program did not align (its bug).
SCALE_OUT_OF_BOUNDS = "scale out of bounds"


class SealRun(Run):
    """A program on a SEAL setup (the frame: jsonl_driver.handle_run)."""

    def __init__(self, s: Setup):
        super().__init__(s)
        self.std = dict(sk=s.sk, pk=s.pk, rlk=s.rlk, gk=s.gk)

    def prepare(self, st: dict, attrs: dict, vals: dict):
        return prepare(self.s, st["op"], st.get("args", []), attrs, vals, self.notes)

    def __exit__(self, kind, exc, tb) -> None:
        if isinstance(exc, ValueError) and SCALE_OUT_OF_BOUNDS in str(exc):
            raise Failure("invalid_params", f"SEAL: {SCALE_OUT_OF_BOUNDS}: a product's or an encoding's scale needs as "
                          "many bits as the primes left at its level, or more (the chain has too little room above "
                          "the scale for this program): give larger primes (a larger first prime, more room above "
                          "the scale) or more of them") from exc

    def size(self, name: str, value) -> int | None:
        return None if value is None else size_of(value)

    def level(self, name: str, value) -> int | None:
        return None if value is None else self.s.level(value)

    def noise(self, names: list[str], vals: dict) -> dict:
        if self.s.scheme == "ckks":
            return {}
        return {"noise_budget_bits": {n: self.s.decryptor.invariant_noise_budget(vals[n]) for n in names}}


def size_of(obj) -> int:
    if hasattr(obj, "save_size"):
        return obj.save_size()
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    return len(obj.to_string())


def capabilities() -> dict:
    # SEAL's evaluator is single-threaded and has no thread count to set, whatever FHEMARK_THREADS says.
    return merged(CAPABILITIES, {"library_version": getattr(seal, "__version__", "unknown"),
                                 "driver_version": DRIVER_VERSION,
                                 "build": {"python": platform.python_version(), "numpy": np.__version__,
                                           "compression_modes": sorted(seal.compr_mode_type.__members__),
                                           **({"version_adaptations": ADAPTATIONS} if ADAPTATIONS else {})}})



if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    serve(capabilities, Setup)
