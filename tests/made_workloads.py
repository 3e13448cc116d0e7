"""Computations made for tests: one definition where several tests need the same shape."""

from __future__ import annotations

from pathlib import Path

from fhemark.model.workload import Workload
from fhemark.workload import load

CHAIN = '''
from fhemark.workload import Uniform, Workload


def compute(c):
    x, y = c.encrypted("x"), c.encrypted("y")
    for _ in range({depth}):
        x = c.rescaled(c.mul(x, y))
    return x


W = Workload("{name}", compute, schemes=("ckks",), precision_bits={precision},
             inputs={{"x": Uniform(-1, 1, length=16), "y": Uniform(-1, 1, length=16)}})
'''


def chain(folder: Path, depth: int, precision: float, name: str = "chain_t") -> Workload:
    """x * y^depth, one rescale a product: `depth` levels in sequence over 16 values in [-1, 1], loaded
    from a file in `folder` as a user's computation is (a plan finds it by its file)."""
    path = folder / f"{name}.py"
    path.write_text(CHAIN.format(depth=depth, precision=precision, name=name))
    (w,) = load(path)
    return w


def every_row(w: Workload, lib: str, scheme: str, ask, say=lambda *a, **k: None) -> list:
    """One library's rows as choose finds them (its rings, its bootstrapping set, its own choice), nothing
    measured, no --budget; `ask`: choose.asked(...)."""
    from fhemark.advise import choose as chooser
    return chooser._ways(w, scheme, [lib], (), chooser._Run(ask, 1, None, say), None)
