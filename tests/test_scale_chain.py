"""A deep CKKS program whose values multiply each other keeps its scale on the SEAL and Lattigo drivers.

fhemark keeps every value at its level's canonical scale (S' = S^2 / q after a product of two values
and a rescale). On primes made just below 2^b the scale's offset doubles at every such product: the
depth-25 MLP (examples/mlp_deep.py) decrypted to 2.1 bits on Lattigo and stopped with 'scale out of
bounds' on SEAL at a 34-bit scale. The drivers now choose the scaling primes that hold the scale at
2^b (drivers/lattigo/scale.go, drivers/seal/chain.py). Run at N = 4096, INSECURE on purpose (a
ring the test can afford; the chain is the one a secure N = 2^16 set would have)."""
from __future__ import annotations

import pytest

from fhemark.advise import choose as chooser
from fhemark.drivers.registry import available
from fhemark.model.requirements import derive
from fhemark.workload import load


@pytest.mark.parametrize("library", ["lattigo", "seal"])
def test_the_depth_25_mlp_keeps_its_precision_at_a_34_bit_scale(library):
    if library not in available():
        pytest.skip(f"{library} driver not built here")
    (w,) = load("examples/mlp_deep.py")
    need = chooser._need(derive(w, "ckks"), chooser.asked(14.0, 128, "hestd2018", insecure=True))
    spec = {"N": 4096, "q_bits": [44] + [34] * 25, "p_bits": [44], "scale_bits": 34}
    why, rec = chooser.verify(w, need, library, spec, 1, None)
    assert why == "" and rec.precision_bits >= 16, why
    assert rec.params_match is not False  # the chosen primes count as the 34-bit primes asked
