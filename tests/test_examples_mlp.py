"""examples/mlp_digits.py: a 64-16-10 MLP with a square activation, inferred on encrypted 8x8
digits. The plaintext model must classify well, the circuit must encode exactly that model (its
cleartext replay), and encrypted inference through the SEAL driver must agree with the plaintext
model on the held-out images."""

import importlib.util
import time

import numpy as np
import pytest

from fhemark.drivers.protocol import RunResult, Sample, Vector
from fhemark.locations import project_root
from fhemark.model.semantics import Plain
from fhemark.workload import load

pytest.importorskip("sklearn", reason="scikit-learn (the test extra) holds the digits data set")

FILE = project_root() / "examples" / "mlp_digits.py"
# 128-bit secure (log QP 240 <= 438 at N = 16384): three levels for the three rescales.
PARAMS = {"N": 16384, "q_bits": [60, 40, 40, 40], "p_bits": [60], "scale_bits": 40}


@pytest.fixture(scope="module")
def mlp():
    """The example as a module (its helpers: layout, scores, predict, ...)."""
    spec = importlib.util.spec_from_file_location("mlp_digits_example", FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_file_loads_as_a_workload_and_reads_its_requirements():
    from fhemark.model.requirements import derive
    (w,) = load(FILE)
    req = derive(w, "ckks")
    assert w.name == "mlp_digits" and req.depth == 3
    assert req.rotations == [1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32, 40, 48, 56]


def test_the_plaintext_model_classifies_held_out_digits_and_the_circuit_encodes_it(mlp):
    assert len(mlp.X_TEST) == 297 and mlp.accuracy() >= 0.9
    plain = Plain("ckks", 4096)
    per = mlp.per_ciphertext(plain.slots)
    for start in range(0, len(mlp.X_TEST), per):
        images = mlp.X_TEST[start:start + per]
        z = mlp.WORKLOAD.reference(plain, mlp.layout(plain.slots, images), {})
        np.testing.assert_allclose(mlp.scores(z, len(images)), mlp.forward(images, mlp.W1, mlp.B1, mlp.W2, mlp.B2),
                                   atol=1e-9)
        assert mlp.agreement(z, images) == 1.0
        rest = np.asarray(z).reshape(-1, mlp.BLOCK)[:, mlp.CLASSES:]
        assert not rest.any()  # the masks keep every other slot at exactly zero


def test_encrypted_inference_on_seal_agrees_with_the_plaintext_model(mlp, driver_pool):
    """Every held-out image, 64 per ciphertext, encrypted, classified through the SEAL driver
    and decrypted: its argmax must be the plaintext model's for at least 95% of them."""
    driver = driver_pool("seal")
    plain = Plain("ckks", PARAMS["N"] // 2)
    program = mlp.WORKLOAD.program("ckks").wire()
    rotations = sorted({s["attrs"]["steps"] for s in program["steps"] if s["op"] == "rotate"})
    if "mlp-digits" not in driver.setups:
        driver.request("setup", setup_id="mlp-digits", scheme="ckks", params=PARAMS, rotations=rotations,
                       allow_insecure=False)
        driver.setups.add("mlp-digits")
    per = mlp.per_ciphertext(plain.slots)
    batches = [mlp.X_TEST[i:i + per] for i in range(0, len(mlp.X_TEST), per)]
    layouts = [mlp.layout(plain.slots, images) for images in batches]
    samples = [Sample(inputs={k: Vector.of(np.asarray(v, dtype=np.float64)) for k, v in inp.items()}, scalars={})
               for inp in layouts]
    t0 = time.monotonic()
    res = RunResult(**driver.request("run", setup_id="mlp-digits", program=program, samples=samples))
    elapsed = time.monotonic() - t0
    agree, worst = [], 0.0
    for images, inp, smp in zip(batches, layouts, res.samples):
        z = smp.outputs["z"].array()
        worst = max(worst, float(np.max(np.abs(z - mlp.WORKLOAD.reference(plain, inp, {})))))
        agree.extend(mlp.scores(z, len(images)).argmax(axis=1) == mlp.predict(images))
    assert len(agree) == len(mlp.X_TEST)
    assert np.mean(agree) >= 0.95, (np.mean(agree), worst)
    assert worst < 2 ** -mlp.WORKLOAD.precision_bits, worst
    assert res.levels == {program["levels"][0]: 0}, res.levels  # three levels consumed of three
    print(f"agreement {np.mean(agree):.4f} over {len(agree)} images, max error {worst:.2e}, {elapsed:.1f} s")
