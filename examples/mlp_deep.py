"""Encrypted inference of a deep, narrow multilayer perceptron with a polynomial activation (CKKS):
16 inputs, eight hidden layers of 16 units, 4 outputs,

    a_0 = x,   a_l = p(W_l a_(l-1) + b_l)  (l = 1..8),   y = W_9 a_8 + b_9,   p(h) = (3h - h^3) / 2

The weights are fixed, drawn once from numpy's default_rng(SEED) (normal), every row of [W_l b_l]
then scaled to an L1 norm of exactly 2 (NORM). That bounds every value for inputs in [-1, 1]: a
pre-activation is at most NORM where every value it reads is within [-1, 1], so |h| <= 2; p maps [-2, 2] into [-1, 1]
(its extremes +-1 at h = +-1 and +-2), so |a| <= 1 at every layer, and |y| <= 2; inside the
polynomial, h^2 <= 4 is the largest value. The bound is tight enough to keep a signal: eight
layers leave the activations' RMS at about 0.2 on uniform inputs (a norm of 1 would leave ~0.01).

Packing: one sample per 32-slot block, its 16 values in slots 0..15 and zeros in 16..31;
N = 16384 holds 256 samples per ciphertext, and every sample draws fresh inputs for every block.
Each dense layer first doubles the vector into its block's zero half (one rotation by -16: the
block reads x, x), then multiplies by the plaintext matrix by the diagonal method (Circuit.
linear_transform: diagonals k = 0..15, D_k[t] = W[t, (t + k) mod 16] in the layer's rows t and 0
elsewhere, repeated in every block; fhemark's baby-step giant-step, babies 1..3, giants 4, 8, 12,
or a library's own routine in a native circuit), rescales, and adds the bias (also 0 outside the
rows). The masked diagonals leave every slot outside the layer's rows exactly 0, and p(0) = 0, so
the zero half is there again for the next layer.

Depth 25: per hidden layer 1 (the product by the diagonals) + 2 (p at logarithmic depth, fhemark's
poly_eval), and 1 for the output layer. Rotations -16, 1, 2, 3, 4, 8, 12. The outputs are slots
0..3 of every block (`outputs` reads them), every other slot exactly 0.

precision_bits 20: every value is within [-4, 4], and p's slope is at most 1.5 on [-1, 1] where
most pre-activations fall, so an error grows little from layer to layer. Depth 25 at that precision
needs 954 bits of modulus by choose's rule of thumb (34-bit scale, a 44-bit first prime, a 60-bit
special prime), more than 128-bit security allows at N = 32768 (881): N = 65536, which Lattigo and
OpenFHE build and SEAL does not.

Encrypted runs: every value here sits at its level's canonical scale (S' = S^2 / q after a
product and a rescale: fhemark's convention, which plaintext_like and poly_eval keep). On primes
made just below 2^scale_bits that scale's offset doubles at every level, and a deep program's
scale leaves the chain (SEAL: 'scale out of bounds'; Lattigo decrypted this MLP to 2.1 bits at a
34-bit scale). The SEAL and Lattigo drivers therefore choose the scaling primes that hold the
scale at 2^scale_bits (drivers/lattigo/scale.go, drivers/seal/chain.py; OpenFHE's FLEXIBLEAUTO
does the same): 20.0 and 18.0 bits at N = 4096 (tests/test_scale_chain.py).

Run it:  fhemark choose examples/mlp_deep.py
"""

from __future__ import annotations

import numpy as np

from fhemark.workload import Circuit, Workload

WIDTH = 16           # inputs and hidden units
OUTPUTS = 4
HIDDEN_LAYERS = 8
BLOCK = 2 * WIDTH    # slots per sample: the values, then room for their copy
NORM = 2.0           # the L1 norm of every row of [W b]
SEED = 2026
ACTIVATION = [0.0, 1.5, 0.0, -0.5]   # p(h) = (3h - h^3) / 2, lowest degree first
DEPTH = 3 * HIDDEN_LAYERS + 1


# ---- the model ---------------------------------------------------------------------------------

def _model() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(SEED)
    layers = []
    for rows in [WIDTH] * HIDDEN_LAYERS + [OUTPUTS]:
        w, b = rng.normal(size=(rows, WIDTH)), rng.normal(scale=0.25, size=rows)
        scale = NORM / (np.abs(w).sum(axis=1) + np.abs(b))
        layers.append((w * scale[:, None], b * scale))
    return layers


LAYERS = _model()


def activation(h: np.ndarray) -> np.ndarray:
    return np.polynomial.polynomial.polyval(h, ACTIVATION)


def forward(x: np.ndarray, trace: list | None = None) -> np.ndarray:
    """The outputs for samples x (rows of WIDTH values); `trace` gets every layer's pre-activation
    and activation, in order."""
    a = np.asarray(x, dtype=np.float64)
    for w, b in LAYERS[:-1]:
        h = a @ w.T + b
        a = activation(h)
        if trace is not None:
            trace += [h, a]
    w, b = LAYERS[-1]
    return a @ w.T + b


# ---- the layers' plaintexts over one block -----------------------------------------------------

def diagonals(w: np.ndarray) -> dict[int, np.ndarray]:
    """D_k over one block: row t reads value (t + k) mod WIDTH at slot t + k of the doubled block."""
    out = {}
    for k in range(WIDTH):
        d = np.zeros(BLOCK)
        for t in range(w.shape[0]):
            d[t] = w[t, (t + k) % WIDTH]
        out[k] = d
    return out


def _bias(b: np.ndarray) -> np.ndarray:
    out = np.zeros(BLOCK)
    out[:len(b)] = b
    return out


# ---- the encrypted computation ---------------------------------------------------------------

def dense(c: Circuit, v: str, layer: int) -> str:
    doubled = c.add(v, c.rotate(v, -WIDTH))
    h = c.rescaled(c.linear_transform(doubled, {k: f"w{layer}_{k}" for k in range(WIDTH)}))
    return c.add_plain(h, c.plaintext_like(f"b{layer}", h))


def mlp_deep(c: Circuit) -> str:
    a = c.encrypted("x")
    for layer in range(HIDDEN_LAYERS):
        a = c.poly_eval(dense(c, a, layer), ACTIVATION)
    return dense(c, a, HIDDEN_LAYERS)


# ---- the inputs: samples for the client, the model's plaintexts for the server ------------------

def per_ciphertext(slots: int) -> int:
    return slots // BLOCK


def layout(slots: int, x: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of `mlp_deep` for up to slots / BLOCK samples x (rows of WIDTH values)."""
    per = per_ciphertext(slots)
    if len(x) > per:
        raise ValueError(f"{len(x)} samples do not fit in {slots} slots ({per} per ciphertext)")
    blocks = np.zeros((per, BLOCK))
    blocks[:len(x), :WIDTH] = x
    out = {"x": blocks.reshape(-1)}
    for layer, (w, b) in enumerate(LAYERS):
        out[f"b{layer}"] = np.tile(_bias(b), per)
        out.update({f"w{layer}_{k}": np.tile(d, per) for k, d in diagonals(w).items()})
    return out


def inputs(plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return layout(plain.slots, rng.uniform(-1, 1, size=(per_ciphertext(plain.slots), WIDTH)))


def outputs(z: np.ndarray, count: int) -> np.ndarray:
    """The OUTPUTS values of each of the first `count` samples in a decrypted output."""
    return np.asarray(z)[:count * BLOCK].reshape(count, BLOCK)[:, :OUTPUTS]


WORKLOAD = Workload(
    "mlp_deep", mlp_deep, inputs=inputs, schemes=("ckks",), precision_bits=20, slots=BLOCK,
    title=f"MLP {WIDTH}-{'-'.join([str(WIDTH)] * HIDDEN_LAYERS)}-{OUTPUTS}, activation (3h - h^3)/2, "
          f"one sample per {BLOCK} slots",
    facts={"block": BLOCK, "width": WIDTH, "hidden_layers": HIDDEN_LAYERS},
)
