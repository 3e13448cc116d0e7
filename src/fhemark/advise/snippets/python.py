"""The Python snippets: SEAL (seal-python), TenSEAL and OpenFHE, each as its driver builds the context."""

from __future__ import annotations

import importlib.util

from ...errors import UserError
from ...locations import project_root
from ...model.params import ParamSet
from .common import INSECURE_NOTE, fill, imports, t_note

# ---------------------------------------------------------------- SEAL (seal-python), as drivers/seal/driver.py

_SEAL = '''
${imports}

import seal

N = ${N}
Q_BITS = ${q}  # ciphertext primes, level 0 first
P_BITS = ${p}  # the special prime: SEAL takes it as the last prime of the coefficient modulus
${value_line}

parms = seal.EncryptionParameters(seal.scheme_type.${scheme})
parms.set_poly_modulus_degree(N)
parms.set_coeff_modulus(seal.CoeffModulus.Create(N, Q_BITS + P_BITS))
${plain}context = seal.SEALContext(parms, True, seal.sec_level_type.${level})${level_note}
if not context.parameters_set():
    raise SystemExit(f"SEAL refused the parameters: {context.parameter_error_message()}")

keygen = seal.KeyGenerator(context)
secret_key = keygen.secret_key()
public_key = keygen.create_public_key()
relin_keys = keygen.create_relin_keys()
${encoder}
encryptor = seal.Encryptor(context, public_key)
evaluator = seal.Evaluator(context)
decryptor = seal.Decryptor(context, secret_key)

# What SEAL built:
data = context.key_context_data()
bits = [m.value().bit_length() for m in data.parms().coeff_modulus()]
print(json.dumps({"N": data.parms().poly_modulus_degree(), "q_bits": bits[:-1], "p_bits": bits[-1:],
                  ${reported}, "security": data.qualifiers().sec_level.name}))
'''


def build_seal(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if len(ps.p_bits) != 1:
        raise UserError(f"SEAL uses exactly one special prime, p_bits {list(ps.p_bits)} has {len(ps.p_bits)}",
                        "give p_bits with one entry")
    ckks = scheme == "ckks"
    return fill(_SEAL, scheme=scheme, N=ps.N, q=list(ps.q_bits), p=list(ps.p_bits), imports=imports(ckks),
                 value_line=f"SCALE = 2.0 ** {ps.scale_bits}  # the encoding scale" if ckks else f"T = {ps.t}  # {t_note(ps)}",
                 plain="" if ckks else "parms.set_plain_modulus(T)\n",
                 level="none" if insecure else "tc128",
                 level_note=INSECURE_NOTE if insecure else "  # SEAL's 128-bit security check",
                 encoder=("encoder = seal.CKKSEncoder(context)  # encoder.encode(values, SCALE)" if ckks else
                          "encoder = seal.BatchEncoder(context)" if ps.batching else
                          "# t does not allow batching: encode coefficients, e.g. seal.Plaintext(\"3x^1 + 1\")"),
                 reported=('"scale_bits": math.log2(encoder.encode(0.0, SCALE).scale())' if ckks else
                           '"t": data.parms().plain_modulus().value()'))


# ---------------------------------------------------------------- TenSEAL, as drivers/tenseal/driver.py

_TENSEAL = '''
${imports}

import tenseal as ts
import tenseal.sealapi  # noqa: F401  (registers SEAL's types, so the primes can be read back below)

context = ts.context(ts.SCHEME_TYPE.${kind}, poly_modulus_degree=${N},${plain}
                     coeff_mod_bit_sizes=${q} + ${p})  # ciphertext primes (level 0 first), then the special prime
${scale}
# What TenSEAL built (through the SEAL it bundles):
data = context.seal_context().data.key_context_data()
bits = [m.value().bit_length() for m in data.parms().coeff_modulus()]
print(json.dumps({"N": data.parms().poly_modulus_degree(), "q_bits": bits[:-1], "p_bits": bits[-1:],
                  ${reported},
                  "security": "tc128"}))  # ts.context always applies SEAL's 128-bit check and refuses what fails it
'''


def build_tenseal(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if len(ps.p_bits) != 1:
        raise UserError(f"TenSEAL (SEAL) uses exactly one special prime, p_bits {list(ps.p_bits)} has {len(ps.p_bits)}",
                        "give p_bits with one entry")
    if not ps.batching:
        raise UserError("TenSEAL's BFV vectors always batch: t must be a prime = 1 mod 2N", "use t_bits or a batching t")
    ckks = scheme == "ckks"
    return fill(_TENSEAL, kind=scheme.upper(), N=ps.N, q=list(ps.q_bits), p=list(ps.p_bits),
                 imports=imports(ckks),
                 plain="" if ckks else f" plain_modulus={ps.t},",
                 scale=f"context.global_scale = 2 ** {ps.scale_bits}\n" if ckks else "",
                 reported=('"scale_bits": math.log2(context.global_scale)' if ckks else
                           '"t": data.parms().plain_modulus().value()'))


# ---------------------------------------------------------------- OpenFHE (openfhe-python), as drivers/openfhe/driver.py

_OPENFHE = '''
${imports}

import openfhe


def moduli(obj) -> list:
    """OpenFHE's Python API has no getter for the RNS primes: read them from its JSON serialization."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("cm"), dict) and isinstance(node["cm"].get("v"), int):
                found.append(node["cm"]["v"])
            node = list(node.values())
        for child in node if isinstance(node, list) else ():
            walk(child)

    walk(json.loads(openfhe.Serialize(obj, openfhe.JSON)))
    return list(dict.fromkeys(found))


parameters = openfhe.CCParams${kind}RNS()
parameters.SetRingDim(${N})
${chain}
${switching}
parameters.SetSecretKeyDist(openfhe.UNIFORM_TERNARY)
parameters.SetStandardDeviation(${sigma})
parameters.SetSecurityLevel(openfhe.${level})${level_note}
${context}
for feature in (openfhe.PKE, openfhe.KEYSWITCH, openfhe.LEVELEDSHE):
    cc.Enable(feature)
keys = cc.KeyGen()
cc.EvalMultKeyGen(keys.secretKey)

# What OpenFHE built:
q = moduli(cc)
p = [m for m in moduli(cc.GetEvalMultKeyVector(keys.secretKey.GetKeyTag())[0]) if m not in q]
print(json.dumps({"N": cc.GetRingDimension(), "q_bits": [m.bit_length() for m in q], "p_bits": [m.bit_length() for m in p],
                  ${reported}, "security": parameters.GetSecurityLevel().name,
                  "key_switching": parameters.GetKeySwitchTechnique().name}))
'''


_CONTEXT = "cc = openfhe.GenCryptoContext(parameters)"
# OpenFHE BFV makes as many primes as its noise estimate for the depth needs, not one a level (BV, N = 4096, t of 20
# bits: depth 1 gives 33+33+33), so the snippet walks the depth as the driver does (contexts.py, bfv_context).
_BFV_WALK = """# OpenFHE BFV derives its primes from a noise estimate for a multiplicative depth: the depth nearest {d}
# whose chain has the {n} primes of q_bits (fhemark's driver walks the depth the same way)
for depth in sorted(range(2 * {n} + 2), key=lambda d: abs(d - {d})):
    parameters.SetMultiplicativeDepth(depth)
    try:
        cc = openfhe.GenCryptoContext(parameters)
    except RuntimeError:  # a depth whose chain the security table refuses
        continue
    if len(moduli(cc)) == {n}:
        break"""
_FIXEDMANUAL = "parameters.SetScalingTechnique(openfhe.FIXEDMANUAL)  # {what} when you call it, as SEAL and Lattigo do"


def build_openfhe(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if not ps.batching:
        raise UserError("OpenFHE (as fhemark drives it) needs a batching t: a prime = 1 mod 2N", "use t_bits or a batching t")
    q = list(ps.q_bits)
    depth = f"parameters.SetMultiplicativeDepth({len(q) - 1})  # one level per prime above the first: q_bits {q}"
    upper = q[1:] or q
    if scheme == "bfv":
        note = (" (OpenFHE BFV uses one prime size for the whole chain)" if len(set(q)) > 1 else "")
        chain = [depth,
                 f"parameters.SetScalingModSize({max(q)})  # the size of every prime{note}",
                 f"parameters.SetPlaintextModulus({ps.t})  # {t_note(ps)}"]
    elif scheme == "bgv":
        note = " (OpenFHE BGV uses one size for all primes above level 0)" if len(set(upper)) > 1 else ""
        chain = [depth, _FIXEDMANUAL.format(what="mod-switch"), f"parameters.SetFirstModSize({q[0]})",
                 f"parameters.SetScalingModSize({max(upper)})  # primes above level 0{note}",
                 f"parameters.SetPlaintextModulus({ps.t})  # {t_note(ps)}"]
    else:
        note = f" (q_bits {q} above level 0 become {ps.scale_bits}-bit)" if any(b != ps.scale_bits for b in q[1:]) else ""
        chain = [depth, "parameters.SetScalingTechnique(openfhe.FLEXIBLEAUTO)  # divides by the real primes "
                 "(FIXEDMANUAL: ~6 bits less)",
                 f"parameters.SetFirstModSize({q[0]})",
                 f"parameters.SetScalingModSize({ps.scale_bits})  # the scale 2^{ps.scale_bits}; primes above level 0 are "
                 f"near it, some one bit above{note}",
                 f"parameters.SetBatchSize({ps.N // 2})"]
    return fill(_OPENFHE, kind=scheme.upper(), N=ps.N, chain="\n".join(chain), switching=openfhe_switching(ps),
                 context=_BFV_WALK.format(n=len(q), d=len(q) - 1) if scheme == "bfv" else _CONTEXT,
                 sigma=ps.sigma, level="HEStd_NotSet" if insecure else "HEStd_128_classic",
                 level_note=INSECURE_NOTE if insecure else "  # OpenFHE's 128-bit security check (HE standard tables)",
                 imports=imports(scheme == "ckks"),
                 reported=('"scale_bits": round(math.log2(cc.GetScalingFactorReal(0)))' if scheme == "ckks" else
                           '"t": cc.GetPlaintextModulus()'))


def openfhe_switching(ps: ParamSet) -> str:
    """The set's key switching as the driver sets it (drivers/openfhe/contexts.py, key_switching)."""
    if ps.key_switching == "bv":
        return ("parameters.SetKeySwitchTechnique(openfhe.BV)  # no special primes: log QP is the chain alone\n"
                f"parameters.SetDigitSize({ps.digit_size or 0})  # bits per key-switching digit"
                + ("" if ps.digit_size else " (0: one digit per RNS prime)"))
    p_note = "" if set(ps.p_bits) <= {60} else f" (p_bits {list(ps.p_bits)} become 60-bit primes)"
    return ("parameters.SetKeySwitchTechnique(openfhe.HYBRID)\n"
            f"parameters.SetNumLargeDigits({openfhe_dnum(list(ps.q_bits), list(ps.p_bits))})"
            f"  # key-switching digits: OpenFHE makes P of 60-bit primes covering one digit{p_note}")


def openfhe_dnum(q_bits: list[int], p_bits: list[int]) -> int:
    """The OpenFHE driver's own digit-count rule, read from its file (drivers/openfhe/dnum.py: no
    imports, so it loads here without OpenFHE), so that a snippet builds what the driver builds."""
    path = project_root() / "drivers" / "openfhe" / "dnum.py"
    spec = importlib.util.spec_from_file_location("fhemark_openfhe_dnum", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.choose_dnum(q_bits, p_bits)
