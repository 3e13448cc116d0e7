"""Encrypted inference of a small multilayer perceptron on scikit-learn's 8x8 digits (CKKS).

The model, 64 -> 16 -> 10 with the square as its activation, is trained here in plaintext when
the file is imported (plain numpy, 300 steps of full-batch Adam, fixed seeds: about 0.2 s); the
server holds its weights as plaintexts, the client encrypts images, and ten scores per image come
back:

    scores = W2 (W1 x + b1)^2 + b2      x: an image's 64 pixels scaled to [0, 1]

The 1797 images are split once by a fixed permutation (numpy's legacy RandomState(0), a stream
numpy keeps stable): 1500 train, 297 held out. Held-out accuracy of this polynomial model: 98.0%
(291 of 297; on the same split scikit-learn's LogisticRegression gets 98.0% and a 16-unit ReLU
MLPClassifier 97.6%).

Packing: one image per 128-slot block, the 64 pixels written twice (x, x), so that a rotation
by k < 64 is a cyclic rotation of every image at once: N = 16384 holds 64 images per ciphertext,
N = 8192 holds 32; every sample draws fresh held-out images for every block.

Each layer is a plaintext matrix times the encrypted vector by the diagonal method with
baby-step giant-step rotations (Halevi-Shoup; fhemark.model.apps.workloads.matvec is the square,
unmasked form): y = sum_g rot_{8g}( sum_j D'_{8g+j} * rot_j(v) ), the diagonals D'_k pre-rotated
by -8g and masked on the plaintext side (untimed). The masks make each layer's output exactly
zero outside its rows, so no slot of a block leaks into the next:

    layer 1: 64 diagonals (16 x 64 weights, cyclic on the doubled image), 7 + 7 rotations; the
             hidden units land in slots 16..31 of each block, everything else 0
    square:  one ciphertext product
    layer 2: 25 diagonals (10 x 16 weights: out[i] reads slot 16 + j, k = 16 + j - i in 7..31),
             the 7 baby steps and 3 giant steps of the same rotation keys; scores in slots 0..9

Depth 3 (three rescales: layer 1, the square, layer 2); rotations 1..7 and 8, 16, ..., 56.
Every slot is decrypted and checked against the cleartext replay (the slots besides the scores
are exactly 0); the scores stay below 18 in magnitude, and 12 bits of absolute precision leave
their argmax alone: the smallest gap between a held-out image's top two scores is 0.17. SEAL
gives about 21 bits at N = 16384 with a 40-bit scale. `agreement` is the quality metric: the
fraction of images whose decrypted argmax is the plaintext model's (tests/test_examples_mlp.py
measures it through the SEAL driver: 297 of 297).
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits  # installed with scikit-learn

from fhemark.workload import Circuit, Workload

HIDDEN = 16      # hidden units
CLASSES = 10
PIXELS = 64
BLOCK = 128      # slots per image: the 64 pixels twice
OFFSET = 16      # the hidden units' first slot in a block (>= CLASSES - 1: layer 2 reads forward only)
BABY = 8         # baby steps: rotations 1..7; giant steps are multiples of 8
TRAIN = 1500
STEPS, RATE, DECAY, SEED = 300, 0.01, 0.01, 0


# ---- the data and the plaintext model ----------------------------------------------------------

def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    digits = load_digits()
    order = np.random.RandomState(0).permutation(len(digits.target))
    x, y = digits.data[order] / 16.0, digits.target[order]
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def forward(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """The model's scores for images x (rows): what the encrypted circuit computes."""
    return ((x @ w1.T + b1) ** 2) @ w2.T + b2


def train(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Softmax cross-entropy with L2 weight decay, full-batch Adam, fixed initialisation."""
    rng = np.random.default_rng(SEED)
    params = [rng.normal(0, 1 / np.sqrt(PIXELS), (HIDDEN, PIXELS)), np.zeros(HIDDEN),
              rng.normal(0, 1 / np.sqrt(HIDDEN), (CLASSES, HIDDEN)), np.zeros(CLASSES)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    onehot = np.eye(CLASSES)[y]
    for t in range(1, STEPS + 1):
        w1, b1, w2, b2 = params
        z1 = x @ w1.T + b1
        a = z1 * z1
        z2 = a @ w2.T + b2
        p = np.exp(z2 - z2.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g2 = (p - onehot) / len(x)
        g1 = (g2 @ w2) * 2 * z1
        grads = [g1.T @ x + DECAY * w1, g1.sum(0), g2.T @ a + DECAY * w2, g2.sum(0)]
        for i, g in enumerate(grads):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            params[i] -= RATE * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
    return tuple(params)


X_TRAIN, Y_TRAIN, X_TEST, Y_TEST = _data()
with threadpool_limits(1):  # tiny products: one BLAS thread is 5x faster than several fighting for the cores
    W1, B1, W2, B2 = train(X_TRAIN, Y_TRAIN)


def predict(x: np.ndarray) -> np.ndarray:
    """The plaintext model's classes for images x (rows)."""
    return forward(x, W1, B1, W2, B2).argmax(axis=1)


def accuracy() -> float:
    """The plaintext polynomial model's accuracy on the held-out images."""
    return float(np.mean(predict(X_TEST) == Y_TEST))


# ---- the layers as block matrices, and their masked, pre-rotated diagonals ---------------------
# A layer maps a 128-slot block to the slots 0..63 of the same block: out[t] = sum_c M[t, c] v[c],
# M of shape 64 x 128. Diagonal k: D_k[t] = M[t, t + k], so out = sum_k D_k * rot_k(v) within the
# block; only diagonals some weight sits on are kept (the support is read from the shapes).

def _layer1() -> np.ndarray:
    """Hidden unit i at row OFFSET + i reads pixel p once, from whichever copy lies in c - t = 0..63."""
    m = np.zeros((PIXELS, BLOCK))
    for i in range(HIDDEN):
        t = OFFSET + i
        for c in range(t, t + PIXELS):
            m[t, c] = W1[i, c % PIXELS]
    return m


def _layer2() -> np.ndarray:
    """Score i at row i reads hidden unit j at slot OFFSET + j."""
    m = np.zeros((PIXELS, BLOCK))
    m[:CLASSES, OFFSET:OFFSET + HIDDEN] = W2
    return m


def _support(rows: range, cols: list[range]) -> list[int]:
    return sorted({c - t for t, cs in zip(rows, cols) for c in cs})


# The diagonals each layer uses, from its shape alone (the program must not depend on the data).
K1 = _support(range(OFFSET, OFFSET + HIDDEN), [range(t, t + PIXELS) for t in range(OFFSET, OFFSET + HIDDEN)])
K2 = _support(range(CLASSES), [range(OFFSET, OFFSET + HIDDEN)] * CLASSES)
assert K1 == list(range(PIXELS)) and K2 == list(range(OFFSET - CLASSES + 1, OFFSET + HIDDEN))


def diagonals(m: np.ndarray, ks: list[int]) -> dict[int, np.ndarray]:
    """D'_k for the giant step g = k // BABY: D'_k[s] = D_k[s - g BABY] where that row exists, else
    0, over one 128-slot block. Then rot_{g BABY}(sum_j D'_{g BABY + j} * rot_j(v))[t] =
    sum_j D_k[t] v[t + k]; the zeros keep every block's output off its neighbours' slots."""
    out = {}
    for k in ks:
        shift = (k // BABY) * BABY
        d = np.zeros(BLOCK)
        for s in range(BLOCK):
            t = s - shift
            if 0 <= t < PIXELS and t + k < BLOCK:
                d[s] = m[t, t + k]
        out[k] = d
    return out


D1, D2 = diagonals(_layer1(), K1), diagonals(_layer2(), K2)


# ---- the encrypted computation ---------------------------------------------------------------

def matvec(c: Circuit, v: str, name: str, ks: list[int]) -> str:
    """sum_k D_k * rot_k(v), baby-step giant-step: one rotation per baby step j in use and one per
    giant step g > 0; the products not rescaled (one rescale after, by the caller)."""
    babies = {j: c.rotate(v, j) if j else v for j in sorted({k % BABY for k in ks})}
    giants = []
    for g in sorted({k // BABY for k in ks}):
        inner = c.sum([c.mul_plain(babies[k % BABY], c.plaintext_like(f"{name}_{k}", v)) for k in ks if k // BABY == g])
        giants.append(c.rotate(inner, g * BABY) if g else inner)
    return c.sum(giants)


def mlp(c: Circuit) -> str:
    x = c.encrypted("x")
    h = c.rescaled(matvec(c, x, "w1", K1))
    h = c.add_plain(h, c.plaintext_like("b1", h))   # after a rescale: the bias encoded at h's exact scale
    a = c.rescaled(c.square(h))
    s = c.rescaled(matvec(c, a, "w2", K2))
    return c.add_plain(s, c.plaintext_like("b2", s))


# ---- the inputs: images for the client, the model's plaintexts for the server -----------------

def per_ciphertext(slots: int) -> int:
    return slots // BLOCK


def layout(slots: int, images: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of `mlp` for up to slots / 128 images (rows of 64 pixels): each image twice in
    its block, the layers' diagonals and biases repeated in every block."""
    per = per_ciphertext(slots)
    if len(images) > per:
        raise ValueError(f"{len(images)} images do not fit in {slots} slots ({per} per ciphertext)")
    x = np.zeros((per, BLOCK))
    x[:len(images)] = np.concatenate([images, images], axis=1)
    b1, b2 = np.zeros(BLOCK), np.zeros(BLOCK)
    b1[OFFSET:OFFSET + HIDDEN] = B1
    b2[:CLASSES] = B2
    out = {"x": x.reshape(-1), "b1": np.tile(b1, per), "b2": np.tile(b2, per)}
    out.update({f"w1_{k}": np.tile(d, per) for k, d in D1.items()})
    out.update({f"w2_{k}": np.tile(d, per) for k, d in D2.items()})
    return out


def draw(slots: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of fresh held-out images, one per block."""
    per = per_ciphertext(slots)
    return rng.choice(len(X_TEST), size=per, replace=per > len(X_TEST))


def inputs(plain, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return layout(plain.slots, X_TEST[draw(plain.slots, rng)])


def scores(z: np.ndarray, count: int) -> np.ndarray:
    """The ten scores of each of the first `count` images in a decrypted output."""
    return np.asarray(z)[:count * BLOCK].reshape(count, BLOCK)[:, :CLASSES]


def agreement(z: np.ndarray, images: np.ndarray) -> float:
    """The fraction of `images` whose class from the decrypted output z is the plaintext model's."""
    return float(np.mean(scores(z, len(images)).argmax(axis=1) == predict(images)))


WORKLOAD = Workload("mlp_digits", mlp, inputs=inputs, schemes=("ckks",), precision_bits=12,
                    slots=BLOCK, title="MLP 64-16-10 (square activation) on 8x8 digits, one image per 128 slots",
                    facts={"block": BLOCK, "hidden": HIDDEN})
