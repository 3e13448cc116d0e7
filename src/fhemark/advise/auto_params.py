"""A library's own choice of parameters (PROTOCOL.md "auto_params"), for `fhemark choose` to verify
and rank beside the search's: asked of any driver whose capabilities offer it for the scheme
(OpenFHE's picks the ring and the special primes itself from a depth, a scale and a first prime)."""

from __future__ import annotations

import math

from ..drivers.registry import manifests
from ..drivers.supervise import Driver
from ..errors import DriverError
from .advisor import Need, ckks_chain, start_scale

TIMEOUT_S = 120.0  # a choice is a context and one key pair: seconds, even at the largest rings


def auto_params(library: str, need: Need, found: dict | None) -> dict | None:
    """The library's own CKKS set for the depth, at the scale and first prime the search found it
    needs for the precision (`found`: its set, or only the least scale its shortfalls asked; the rules
    of thumb's where it found neither), as a spec the drivers take;
    None where the library offers no choice of its own or is not here. Only at 128 bits under the
    HE standard's 2018 table: the table the libraries' choices follow (OpenFHE's); under another,
    the search alone answers."""
    if need.scheme != "ckks" or need.security != 128 or need.table != "hestd2018":
        return None
    m = manifests().get(library)
    if m is None or not m.available:
        return None
    scale = found["scale_bits"] if found else start_scale(need)
    first = found["q_bits"][0] if found and found.get("q_bits") else ckks_chain(need, scale)[0]
    drv = Driver(m)
    try:
        if not drv.request("capabilities", timeout_s=TIMEOUT_S)["schemes"].get(need.scheme, {}).get("auto_params"):
            return None
        got = drv.request("auto_params", timeout_s=TIMEOUT_S, scheme=need.scheme, depth=max(need.depth, 1),
                          scale_bits=scale, first_bits=first, security=need.security)
    except DriverError:  # a choice the library cannot make leaves the search's own
        return None
    finally:
        drv.stop()
    return spec_of(got, scale)


def spec_of(choice: dict, scale: int) -> dict:
    """A library's choice as the parameter spec a setup takes: each prime as the size it was asked
    near (log2 rounded: a CKKS prime lies either side of 2^scale_bits)."""
    def bits(primes: list[int]) -> list[int]:
        return [round(math.log2(x)) for x in primes]
    return {"N": choice["N"], "q_bits": bits(choice["q_primes"]), "p_bits": bits(choice["p_primes"]),
            "scale_bits": choice.get("scale_bits") or scale}
