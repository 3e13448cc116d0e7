"""TenSEAL's parameter snippet: the context this driver builds for a set, in TenSEAL's own API.

Loaded by fhemark's snippets (src/fhemark/advise/snippets) from this folder: `build(scheme, params,
insecure)` returns the program's text. It runs in fhemark's process, never in the driver's."""

from __future__ import annotations

from fhemark.advise.snippets.common import fill, imports
from fhemark.errors import UserError
from fhemark.model.params import ParamSet


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


def build(scheme: str, ps: ParamSet, insecure: bool) -> str:
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
