"""examples/logreg_training.py and examples/mlp_deep.py: two deep CKKS computations. Each must
load as a workload with the depth its docstring claims, its cleartext replay (the reference every
decrypted output is checked against) must compute what the docstring says, checked against numpy
written here, and its values must stay within the bounds the docstring states. Nothing encrypted
runs here."""

import importlib.util

import numpy as np
import pytest

from fhemark.locations import project_root
from fhemark.model.requirements import derive
from fhemark.model.semantics import Plain
from fhemark.workload import load

EXAMPLES = project_root() / "examples"


def module(name: str):
    """The example as a module (its helpers: layout, train, forward, ...)."""
    spec = importlib.util.spec_from_file_location(f"{name}_example", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def logreg():
    return module("logreg_training")


@pytest.fixture(scope="module")
def mlp():
    return module("mlp_deep")


# ---- logistic-regression training --------------------------------------------------------------

N_RECORDS, N_FEATURES = 64, 8


def kim_sigmoid(t):
    """The least-squares cubic of Kim et al. 2018 on [-8, 8]."""
    return 0.5 + 0.15012 * t - 0.0015930 * t ** 3


def gradient_descent(z, iterations, rate=1.0):
    """Weights after each step from w = 0: w += rate / n sum_i sigmoid3(-w.z_i) z_i; and the
    largest |w.z_i| the steps evaluated the cubic at."""
    w, path, largest = np.zeros(z.shape[1]), [], 0.0
    for _ in range(iterations):
        t = z @ w
        largest = max(largest, float(np.abs(t).max()))
        w = w + rate / len(z) * (kim_sigmoid(-t)[:, None] * z).sum(axis=0)
        path.append(w)
    return path, largest


def clusters(seed):
    """Two Gaussian clusters in [-1, 1]^7, labels +-1, a constant feature 1 first: z = y (1, x)."""
    rng = np.random.default_rng(seed)
    y = rng.choice([-1.0, 1.0], N_RECORDS)
    mu = rng.normal(size=N_FEATURES - 1)
    mu *= 0.5 / np.abs(mu).max()
    x = np.clip(y[:, None] * mu + rng.normal(0, 0.35, (N_RECORDS, N_FEATURES - 1)), -1, 1)
    data = np.hstack([np.ones((N_RECORDS, 1)), x])
    return data, y, y[:, None] * data


def replayed(logreg, z, slots=2048):
    w = logreg.WORKLOAD
    plain = Plain("ckks", slots)
    vecs = w.draw(plain, np.random.default_rng(0))  # with the constants the program names
    vecs["z"] = plain.full(logreg.layout(z))
    return np.asarray(w.reference(plain, vecs, {}))


def test_logreg_loads_as_a_workload_of_depth_26():
    (w,) = load(EXAMPLES / "logreg_training.py")
    req = derive(w, "ckks")
    assert w.name == "logreg_training" and w.schemes == ("ckks",) and w.precision_bits == 20
    assert req.depth == 26 and req.levels == 26
    assert req.slots == 2048
    assert req.rotations == [-1024, -448, -384, -320, -256, -192, -128, -64, 1, 2, 4, 8, 16, 32, 128, 256, 512]
    # the docstring's worst case: (w.z)^2 = 4.02^2 inside the cubic when every z_ij = 1; the weights
    # (the last level's values) below 2
    assert 16.0 < req.largest_value < 16.5 and req.magnitude_bits <= 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_logreg_replay_is_gradient_descent_with_the_cubic_and_it_trains(logreg, seed):
    data, y, z = clusters(seed)
    path, largest = gradient_descent(z, 7)
    out = replayed(logreg, z)
    np.testing.assert_allclose(logreg.weights(out), path[-1], rtol=0, atol=1e-12)
    # every slot of feature j's block holds w_j
    blocks = out[:logreg.SPAN].reshape(N_FEATURES, 2, N_RECORDS)[:, 0, :]
    np.testing.assert_allclose(blocks, np.repeat(path[-1][:, None], N_RECORDS, axis=1), rtol=0, atol=1e-12)
    assert np.abs(out).max() < 1.5  # every slot, the leftovers beside the blocks too
    assert largest < 3.5  # the cubic is only ever evaluated where it approximates the sigmoid ([-8, 8])

    # it trains: the true logistic loss falls at every step, from log 2 at w = 0, and the model separates
    loss = [float(np.mean(np.log1p(np.exp(-z @ w)))) for w in [np.zeros(N_FEATURES)] + path]
    assert all(b < a for a, b in zip(loss, loss[1:])), loss
    assert loss[-1] < 0.8 * np.log(2)
    assert np.mean(np.sign(data @ path[-1]) == y) >= 0.85


def test_logreg_replay_at_a_larger_ring_is_the_same(logreg):
    z = clusters(0)[2]
    np.testing.assert_allclose(logreg.weights(replayed(logreg, z, 8192)), logreg.weights(replayed(logreg, z)),
                               rtol=0, atol=1e-15)


def test_logreg_values_stay_in_the_cubics_range_at_the_edges_of_the_inputs(logreg):
    rng = np.random.default_rng(5)
    worst = {"ones": np.ones((N_RECORDS, N_FEATURES)), "minus ones": -np.ones((N_RECORDS, N_FEATURES))}
    draws = [rng.uniform(-1, 1, (N_RECORDS, N_FEATURES)) for _ in range(4)]
    draws += [rng.choice([-1.0, 1.0], (N_RECORDS, N_FEATURES)) for _ in range(4)]
    for z in worst.values():
        path, largest = gradient_descent(z, 7)
        assert 4.0 < largest < 4.05
        np.testing.assert_allclose(logreg.weights(replayed(logreg, z)), path[-1], rtol=0, atol=1e-12)
    for z in draws:
        path, largest = gradient_descent(z, 7)
        assert largest < 2.5
        out = replayed(logreg, z)
        np.testing.assert_allclose(logreg.weights(out), path[-1], rtol=0, atol=1e-12)
        assert np.abs(out).max() < 1.5
    # at twice the rate the aligned case leaves [-8, 8] and the cubic diverges: why RATE is 1
    assert gradient_descent(worst["ones"], 3, rate=2.0)[1] > 8


# ---- the deep MLP -------------------------------------------------------------------------------

def numpy_forward(mlp, x):
    """The MLP in numpy from its weights: every pre-activation and activation, and the outputs."""
    trace, a = [], x
    for w, b in mlp.LAYERS[:-1]:
        h = a @ w.T + b
        a = 1.5 * h - 0.5 * h ** 3
        trace += [h, a]
    w, b = mlp.LAYERS[-1]
    return trace, a @ w.T + b


def test_mlp_loads_as_a_workload_of_depth_25():
    (w,) = load(EXAMPLES / "mlp_deep.py")
    req = derive(w, "ckks")
    assert w.name == "mlp_deep" and w.schemes == ("ckks",) and w.precision_bits == 20
    assert req.depth == 25 and req.levels == 25
    assert req.rotations == [-16, 1, 2, 3, 4, 8, 12] and req.slots == 32
    assert req.largest_value <= 4 and req.magnitude_bits <= 1  # h^2 <= 4 inside p; outputs within [-2, 2]


def test_mlp_weights_are_fixed_and_scaled_to_bound_every_value(mlp):
    assert len(mlp.LAYERS) == 9
    shapes = [w.shape for w, _ in mlp.LAYERS]
    assert shapes == [(16, 16)] * 8 + [(4, 16)]
    for w, b in mlp.LAYERS:
        np.testing.assert_allclose(np.abs(w).sum(axis=1) + np.abs(b), 2.0)  # |h| <= 2 when |a| <= 1
    again = module("mlp_deep")
    assert all(np.array_equal(w1, w2) and np.array_equal(b1, b2)
               for (w1, b1), (w2, b2) in zip(mlp.LAYERS, again.LAYERS))
    # p maps [-2, 2] into [-1, 1]
    h = np.linspace(-2, 2, 4001)
    assert np.abs(1.5 * h - 0.5 * h ** 3).max() <= 1 + 1e-12


def test_mlp_replay_is_the_forward_pass_and_values_stay_bounded(mlp):
    plain = Plain("ckks", 4096)
    per = mlp.per_ciphertext(plain.slots)
    rng = np.random.default_rng(11)
    x = np.vstack([rng.uniform(-1, 1, (per - 8, 16)), rng.choice([-1.0, 1.0], (6, 16)), np.ones((1, 16)),
                   -np.ones((1, 16))])
    # a draw brings the constants the program names (p's coefficients); the samples are these
    vecs = {**mlp.WORKLOAD.draw(plain, rng), **mlp.layout(plain.slots, x)}
    z = np.asarray(mlp.WORKLOAD.reference(plain, vecs, {}))
    trace, y = numpy_forward(mlp, x)
    np.testing.assert_allclose(mlp.outputs(z, per), y, rtol=0, atol=1e-12)
    assert not z.reshape(per, mlp.BLOCK)[:, mlp.OUTPUTS:].any()  # every other slot exactly 0
    hs, acts = trace[0::2], trace[1::2]
    assert max(np.abs(h).max() for h in hs) <= 2 and max(np.abs(a).max() for a in acts) <= 1
    assert np.abs(y).max() <= 2
    # the signal survives eight layers: the last activations' RMS about 0.2 on uniform inputs
    assert 0.1 < np.sqrt(np.mean(acts[-1][:per - 8] ** 2)) < 0.4
    assert np.std(y[:per - 8], axis=0).min() > 0.01


def test_mlp_draws_fill_every_block_with_fresh_samples(mlp):
    plain = Plain("ckks", 1024)
    w = mlp.WORKLOAD
    vecs = w.draw(plain, np.random.default_rng(3))
    x = vecs["x"].reshape(-1, mlp.BLOCK)
    assert x.shape == (32, 32) and not x[:, 16:].any() and np.abs(x[:, :16]).max() <= 1
    assert len({tuple(row) for row in x[:, :16]}) == 32
    z = np.asarray(w.reference(plain, vecs, {}))
    np.testing.assert_allclose(mlp.outputs(z, 32), numpy_forward(mlp, x[:, :16])[1], rtol=0, atol=1e-12)
