"""SEAL's parameter snippet (seal-python): the context this driver builds for a set, in SEAL's own API.

Loaded by fhemark's snippets (src/fhemark/advise/snippets) from this folder: `build(scheme, params,
insecure)` returns the program's text. It runs in fhemark's process, never in the driver's."""

from __future__ import annotations

from fhemark.advise.snippets.common import INSECURE_NOTE, fill, imports, t_note
from fhemark.errors import UserError
from fhemark.model.params import ParamSet


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


def build(scheme: str, ps: ParamSet, insecure: bool) -> str:
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
