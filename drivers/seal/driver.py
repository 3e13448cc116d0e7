"""fhemark driver for Microsoft SEAL (through the seal-python binding), protocol v1.

Thin by design: it builds contexts and keys, runs the programs it is sent and
times the steps it is told to time. No statistics, no reference arithmetic.
Every primitive is split into an untimed preparation and a timed call, so
that only the library call itself sits between the two clock reads.
"""

from __future__ import annotations

import base64
import json
import math
import os
import platform
import sys
import time
import traceback

import numpy as np
import seal

DRIVER_VERSION = "0.1.0"
_DT = {"i64": "<i8", "f64": "<f8", "u64": "<u8"}
SCHEMES = {"bfv": seal.scheme_type.bfv, "bgv": seal.scheme_type.bgv, "ckks": seal.scheme_type.ckks}
COMMON = ["encode", "decode", "encrypt_pk", "encrypt_sk", "decrypt", "add", "sub", "add_plain", "mul",
          "mul_relin", "square_relin", "mul_plain", "mul_scalar", "square", "relinearize", "keygen_secret", "keygen_public",
          "keygen_relin", "keygen_galois"]
OPS = {"bfv": COMMON + ["mod_switch", "rotate_rows", "rotate_columns", "encode_coeffs", "decode_coeffs"],
       "bgv": COMMON + ["mod_switch", "rotate_rows", "rotate_columns", "encode_coeffs", "decode_coeffs"],
       "ckks": COMMON + ["mod_switch", "rescale", "rotate", "conjugate"]}


class Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def vec_in(v: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(v["b64"]), dtype=_DT[v["dtype"]])


def vec_out(a: np.ndarray) -> dict:
    kind = "f64" if a.dtype.kind == "f" else "i64"
    return {"dtype": kind, "b64": base64.b64encode(np.ascontiguousarray(a, dtype=_DT[kind]).tobytes()).decode()}


class Setup:
    """A context with its standard keys, kept for later run requests."""

    def __init__(self, scheme: str, params: dict, rotations: list[int], pow2: bool, allow_insecure: bool):
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
            parms.set_coeff_modulus(seal.CoeffModulus.Create(self.n, list(params["q_bits"]) + list(params["p_bits"])))
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
        self.gk = self.make_galois(self.kg, galois_steps(self.n, rotations, pow2)) if (rotations or pow2) else None
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
        q, p = primes[:-1], primes[-1:]
        return {"N": self.n, "q_bits": [x.bit_length() for x in q], "p_bits": [x.bit_length() for x in p],
                "log_q": sum(math.log2(x) for x in q), "log_qp": sum(math.log2(x) for x in primes),
                "t": self.t, "scale_bits": params.get("scale_bits"), "slots": self.slots,
                "levels": len(q) - 1, "dnum": len(q), "secret": "ternary", "sigma": 3.2}

    def sizes(self) -> dict:
        pt = self.encode_call(np.zeros(self.slots))() if self.batching else coeff_plaintext(np.zeros(1), self.t)
        out = {"public_key": len(self.pk.to_string()), "secret_key": len(self.sk.to_string()),
               "relin_keys": len(self.rlk.to_string()), "plaintext": pt.save_size(),
               "ciphertext": self.encryptor.encrypt(pt).save_size()}
        if self.gk is not None:
            out.update(galois_keys=len(self.gk.to_string()), galois_key_count=self.gk.size())
        return out

    def encode_call(self, v: np.ndarray):
        """Pad (untimed) and return the encoding call (to time)."""
        padded = np.zeros(self.slots, dtype=np.float64 if self.scheme == "ckks" else np.uint64)
        padded[: len(v)] = v
        if self.scheme == "ckks":
            return lambda: self.encoder.encode(padded, self.scale)
        return lambda: self.encoder.encode(padded)

    def level(self, obj) -> int:
        return self.ctx.get_context_data(obj.parms_id()).chain_index()


def galois_steps(n: int, rotations: list[int], pow2: bool) -> list[int]:
    """SEAL's steps: 0 is the row swap (BFV/BGV) or conjugation (CKKS)."""
    steps = set(rotations)
    if pow2:
        steps.add(0)
        i = 1
        while i < n // 2:
            steps.update((i, -i))
            i *= 2
    return sorted(steps)


def prepare(s: Setup, op: str, args: list, attrs: dict, vals: dict):
    """Do the untimed part of one primitive; return the call to time."""
    if op not in OPS[s.scheme]:
        raise Failure("unsupported", f"SEAL driver has no '{op}' for {s.scheme}")
    ev, key = s.evaluator, attrs.get("key")
    a = [vals[x] for x in args]
    if op == "encode":
        if not s.batching:
            raise Failure("unsupported", "batch encoding needs a batching t: use encode_coeffs")
        return s.encode_call(a[0])
    if op == "encode_coeffs":
        return lambda: coeff_plaintext(a[0], s.t)
    if op == "decode_coeffs":
        return lambda: coeffs_of(a[0], s.n, s.t)
    if op == "decode":
        if s.scheme == "ckks":
            return lambda: s.encoder.decode(a[0])
        return lambda: np.mod(s.encoder.decode_uint64(a[0]).astype(np.int64), s.t)
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
        # SEAL has no scalar product: the scalar becomes a constant plaintext,
        # made here (untimed); SEAL's multiply_plain is what is timed.
        if s.scheme == "ckks":
            const = s.encoder.encode(float(attrs["scalar"]), s.scale)
        else:
            const = seal.Plaintext(format(int(attrs["scalar"]) % s.t, "X"))
        return lambda: ev.multiply_plain(a[0], const)
    if op == "rotate_rows":
        k = int(attrs["steps"])
        return lambda: ev.rotate_rows(a[0], k, gk)
    if op == "rotate":
        k = int(attrs["steps"])
        return lambda: ev.rotate_vector(a[0], k, gk)
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
        steps = attrs.get("steps", "pow2")
        if steps == "pow2":
            return kg.create_galois_keys
        return lambda: Setup.make_galois(kg, [int(x) for x in steps])
    raise Failure("unsupported", f"SEAL driver has no '{op}'")


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


def resolve(attrs: dict, scalars: dict) -> dict:
    return {k: scalars[v[1:]] if isinstance(v, str) and v.startswith("$") else v for k, v in attrs.items()}


def clock(call):
    t0 = time.perf_counter_ns()
    out = call()
    return out, time.perf_counter_ns() - t0


def overhead_ns() -> int:
    return int(np.median([clock(lambda: None)[1] for _ in range(101)]))


def run_sample(s: Setup, program: dict, iters: int, sample: dict) -> tuple[dict, dict]:
    base = {name: vec_in(v) for name, v in sample["inputs"].items()}
    base.update(sk=s.sk, pk=s.pk, rlk=s.rlk, gk=s.gk)
    scalars = sample.get("scalars", {})
    timed = set(program["timed"])
    steps = program["steps"]
    ns: dict[str, int] = {}
    if iters == 1:
        vals = dict(base)
        for st in steps:
            call = prepare(s, st["op"], st.get("args", []), resolve(st.get("attrs", {}), scalars), vals)
            if st["out"] in timed:
                vals[st["out"]], ns[st["out"]] = clock(call)
            else:
                vals[st["out"]] = call()
        return vals, ns
    if len(timed) != 1:
        raise Failure("internal", "iters > 1 needs exactly one timed step")
    at = next(i for i, st in enumerate(steps) if st["out"] in timed)
    copies, calls = [], []
    for _ in range(iters):  # every iteration gets its own freshly made inputs
        vals = dict(base)
        for st in steps[:at]:
            vals[st["out"]] = prepare(s, st["op"], st.get("args", []), resolve(st.get("attrs", {}), scalars), vals)()
        st = steps[at]
        calls.append(prepare(s, st["op"], st.get("args", []), resolve(st.get("attrs", {}), scalars), vals))
        copies.append(vals)
    t0 = time.perf_counter_ns()
    outs = [c() for c in calls]
    ns[steps[at]["out"]] = time.perf_counter_ns() - t0
    vals = copies[-1]
    vals[steps[at]["out"]] = outs[-1]
    for st in steps[at + 1:]:
        vals[st["out"]] = prepare(s, st["op"], st.get("args", []), resolve(st.get("attrs", {}), scalars), vals)()
    return vals, ns


def handle_run(setups: dict, req: dict) -> dict:
    s = setups.get(req["setup_id"])
    if s is None:
        raise Failure("internal", f"unknown setup_id '{req['setup_id']}'")
    program = req["program"]
    samples, vals = [], {}
    for sample in req["samples"]:
        vals, ns = run_sample(s, program, int(req.get("iters", 1)), sample)
        samples.append({"ns": ns, "outputs": {o: vec_out(np.asarray(vals[o])) for o in program.get("outputs", [])}})
    result = {"samples": samples, "overhead_ns": overhead_ns(),
              "sizes_bytes": {n: size_of(vals[n]) for n in program.get("sizes", [])},
              "levels": {n: s.level(vals[n]) for n in program.get("levels", [])},
              "notes": []}
    if s.scheme != "ckks":
        result["noise_budget_bits"] = {n: s.decryptor.invariant_noise_budget(vals[n]) for n in program.get("noise", [])}
    if any(st["op"] == "mul_scalar" for st in program["steps"]):
        result["notes"].append("mul_scalar: SEAL multiply_plain by a constant plaintext made outside the timed region")
    return result


def size_of(obj) -> int:
    if hasattr(obj, "save_size"):
        return obj.save_size()
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    return len(obj.to_string())


def capabilities() -> dict:
    limits = {"log_n_min": 10, "log_n_max": 15, "max_prime_bits": 60, "special_primes": 1}
    return {"protocol": 1, "library": "seal", "library_version": getattr(seal, "__version__", "unknown"),
            "driver_version": DRIVER_VERSION,
            "build": {"binding": "seal-python (PyPI wheel)", "python": platform.python_version(),
                      "numpy": np.__version__,
                      "compression_modes": sorted(seal.compr_mode_type.__members__),
                      "sizes": "uncompressed serialization"},
            "threads": 1,  # SEAL's evaluator is single-threaded
            "schemes": {k: {"ops": v, "limits": limits} for k, v in OPS.items()}}


def main() -> None:
    setups: dict[str, Setup] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            kind = req.get("type")
            if req.get("v") != 1:
                raise Failure("internal", f"protocol version {req.get('v')} not supported (this driver speaks 1)")
            if kind == "capabilities":
                result = capabilities()
            elif kind == "setup":
                s = Setup(req["scheme"], req["params"], req.get("rotations", []), req.get("rotations_pow2", False),
                          req.get("allow_insecure", False))
                setups[req["setup_id"]] = s
                result = {"effective": s.effective(req["params"]), "sizes_bytes": s.sizes()}
            elif kind == "run":
                result = handle_run(setups, req)
            elif kind == "shutdown":
                print(json.dumps({"v": 1, "id": rid, "ok": True, "result": {}}), flush=True)
                return
            else:
                raise Failure("internal", f"unknown request type '{kind}'")
            reply = {"v": 1, "id": rid, "ok": True, "result": result}
        except Failure as exc:
            reply = {"v": 1, "id": rid, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}}
        except Exception as exc:  # never die on a bad request
            traceback.print_exc(file=sys.stderr)
            msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            reply = {"v": 1, "id": rid, "ok": False, "error": {"kind": "internal", "message": msg}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
