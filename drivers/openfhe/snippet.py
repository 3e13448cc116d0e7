"""OpenFHE's parameter snippet (openfhe-python): the context this driver builds for a set, in OpenFHE's own API.

Loaded by fhemark's snippets (src/fhemark/advise/snippets) from this folder: `build(scheme, params,
insecure)` returns the program's text. It runs in fhemark's process, never in the driver's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fhemark.advise.snippets.common import INSECURE_NOTE, fill, imports, t_note
from fhemark.errors import UserError
from fhemark.model.params import ParamSet


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


def build(scheme: str, ps: ParamSet, insecure: bool) -> str:
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
    return fill(_OPENFHE, kind=scheme.upper(), N=ps.N, chain="\n".join(chain), switching=switching(ps),
                 context=_BFV_WALK.format(n=len(q), d=len(q) - 1) if scheme == "bfv" else _CONTEXT,
                 sigma=ps.sigma, level="HEStd_NotSet" if insecure else "HEStd_128_classic",
                 level_note=INSECURE_NOTE if insecure else "  # OpenFHE's 128-bit security check (HE standard tables)",
                 imports=imports(scheme == "ckks"),
                 reported=('"scale_bits": round(math.log2(cc.GetScalingFactorReal(0)))' if scheme == "ckks" else
                           '"t": cc.GetPlaintextModulus()'))


def switching(ps: ParamSet) -> str:
    """The set's key switching as the driver sets it (drivers/openfhe/contexts.py, key_switching)."""
    if ps.key_switching == "bv":
        return ("parameters.SetKeySwitchTechnique(openfhe.BV)  # no special primes: log QP is the chain alone\n"
                f"parameters.SetDigitSize({ps.digit_size or 0})  # bits per key-switching digit"
                + ("" if ps.digit_size else " (0: one digit per RNS prime)"))
    p_note = "" if set(ps.p_bits) <= {60} else f" (p_bits {list(ps.p_bits)} become 60-bit primes)"
    return ("parameters.SetKeySwitchTechnique(openfhe.HYBRID)\n"
            f"parameters.SetNumLargeDigits({dnum(list(ps.q_bits), list(ps.p_bits))})"
            f"  # key-switching digits: OpenFHE makes P of 60-bit primes covering one digit{p_note}")


def dnum(q_bits: list[int], p_bits: list[int]) -> int:
    """The driver's own digit-count rule (dnum.py beside this file: no imports, so it loads here without
    OpenFHE), so that a snippet builds what the driver builds."""
    spec = importlib.util.spec_from_file_location("fhemark_openfhe_dnum", Path(__file__).with_name("dnum.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.choose_dnum(q_bits, p_bits)
