"""Minimising an attack's cost over its parameters on a grid, coarse first, then finely around the
coarse optimum: the costs are smooth in every parameter, and a full fine grid over (beta, p, zeta,
t) would make one estimate take a second rather than milliseconds."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

# An axis: (lowest, highest, coarse step, fine step).
Axis = tuple[float, float, float, float]


def _grid(f: Callable[..., tuple[np.ndarray, np.ndarray]], axes: Sequence[np.ndarray]):
    shaped = [a.reshape([-1 if i == k else 1 for i in range(len(axes))]) for k, a in enumerate(axes)]
    cost, extra = f(*shaped)
    cost = np.broadcast_to(cost, np.broadcast_shapes(*(s.shape for s in shaped)))
    j = int(np.argmin(cost))
    idx = np.unravel_index(j, cost.shape)
    return float(cost[idx]), [float(a[i]) for a, i in zip(axes, idx)], float(np.broadcast_to(extra, cost.shape)[idx])


def minimise(f: Callable[..., tuple[np.ndarray, np.ndarray]], axes: Sequence[Axis]) -> tuple[float, list[float], float]:
    """(cost, point, extra) at the minimum of f(*axes) -> (cost, extra), both broadcast over the axes."""
    coarse = [np.arange(lo, hi + 1e-9, step) if hi > lo else np.array([lo]) for lo, hi, step, _ in axes]
    _, point, _ = _grid(f, coarse)
    fine = [np.arange(max(lo, x - step), min(hi, x + step) + 1e-9, fine_step) if hi > lo else np.array([lo])
            for (lo, hi, step, fine_step), x in zip(axes, point)]
    return _grid(f, fine)
