"""OpenFHE's own choice of CKKS parameters, for `fhemark choose` to verify and rank beside the
search's: OpenFHE picks the ring and the special primes itself from a depth, a scale and a
security level."""

from __future__ import annotations

import json
import subprocess

from ..drivers.registry import manifests
from .advisor import Need, ckks_chain, first_scale

# OpenFHE picks the ring and the special primes itself from a depth, a scale and a security level
# (its CCParams with no ring dimension); read back with the driver's own readers of a context.
_AUTO = """
import json, math, sys
import driver  # noqa: F401 - puts python_shared on the path and sets the threads, as a run does
import contexts as d
o = d.ofhe
depth, scale, first = (int(a) for a in sys.argv[1:4])
p = o.CCParamsCKKSRNS()
p.SetMultiplicativeDepth(depth); p.SetScalingModSize(scale); p.SetFirstModSize(first)
p.SetScalingTechnique(o.FIXEDMANUAL); p.SetKeySwitchTechnique(o.HYBRID); p.SetSecurityLevel(o.HEStd_128_classic)
cc = o.GenCryptoContext(p)
for f in (o.PKE, o.KEYSWITCH, o.LEVELEDSHE):
    cc.Enable(f)
kp = cc.KeyGen(); cc.EvalMultKeyGen(kp.secretKey)
q = d.q_primes(cc)
ps = d.p_primes(cc.GetEvalMultKeyVector(kp.secretKey.GetKeyTag())[0], set(q))
bits = lambda xs: [round(math.log2(x)) for x in xs]
print(json.dumps({"N": cc.GetRingDimension(), "q_bits": bits(q), "p_bits": bits(ps)}))
"""


def openfhe_auto(need: Need, found: dict | None) -> dict | None:
    """OpenFHE's automatic CKKS set (ring and special primes its own) for the depth, at the scale and
    first prime the search found OpenFHE needs for the precision (the rules of thumb's where it found
    none), 128 bits under HEStd 2018 (OpenFHE's table), as a spec the drivers take; None where
    OpenFHE is not here."""
    if need.scheme != "ckks" or need.security != 128 or need.table != "hestd2018":
        return None
    m = manifests().get("openfhe")
    if m is None or not m.available:
        return None
    scale = found["scale_bits"] if found else first_scale(need)
    first = found["q_bits"][0] if found else ckks_chain(need, scale)[0]
    try:
        out = subprocess.run([m.command[0], "-c", _AUTO, str(max(need.depth, 1)), str(scale), str(first)],
                             cwd=m.folder, capture_output=True, text=True, timeout=120)
        spec = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    return {**spec, "scale_bits": scale}
