"""Every benchmark operation, RLWE (ops.py) and bit/integer (bitops.py), by name."""

from __future__ import annotations

from ..errors import UserError
from .apps import app
from .bitops import circuit, static_ops
from .ops import RLWE_OPS, BenchOp

CATALOG: dict[str, BenchOp] = {**RLWE_OPS, **{o.name: o for o in static_ops()}}

MICRO = [n for n, o in CATALOG.items() if o.group in ("micro", "keygen")]
INTO = [n for n, o in CATALOG.items() if o.group == "into"]
BOOTSTRAP = [n for n, o in CATALOG.items() if o.group == "bootstrap"]
DEPTH = [n for n, o in CATALOG.items() if o.group == "depth"]
PIPELINES = [n for n, o in CATALOG.items() if o.group == "pipeline"]


def lookup(name: str, scheme: str) -> BenchOp | None:
    """The built-in op for one scheme: a catalog entry, or a parametrised workload (multiadd_8x32,
    compare_16, matvec_256). A user's computation is found by its content (workload_file.bench_op)."""
    if name in CATALOG:
        op = CATALOG[name]
        return op if scheme in op.schemes else None
    return next((o for o in circuit(name) or app(name) or [] if scheme in o.schemes), None)


def known(name: str) -> bool:
    """A built-in op's name (a user's computation is named by its file, through a suite's workloads)."""
    return name in CATALOG or circuit(name) is not None or app(name) is not None


# The workloads whose name carries their size: the form, and one name that exists.
SIZED = {"multiadd": ("multiadd_<n>x<bits>", "multiadd_4x8"), "compare": ("compare_<bits>", "compare_8"),
         "dot": ("dot_<n>", "dot_16"), "matvec": ("matvec_<d>", "matvec_16"), "poly": ("poly_<deg>", "poly_7"),
         "logreg": ("logreg_<n>", "logreg_16"), "tally": ("tally_<n>", "tally_16"), "mean": ("mean_<n>", "mean_16"),
         "similarity": ("similarity_<records>x<dim>", "similarity_4x8"), "zmul": ("zmul_<bits>", "zmul_8")}


def unknown_op(name: str, where: str, fix: str) -> UserError:
    """The one line for an op name that names nothing. A sized workload's name without its size (`dot`,
    `poly_`) or with one it does not take (`dot_3`) is told the form it is written in."""
    family = SIZED.get(name.split("_")[0])
    if family is None:
        return UserError(f"{where}: unknown operation '{name}'", fix)
    form, example = family
    return UserError(f"{where}: unknown operation '{name}': the {name.split('_')[0]} workload is written with its size, "
                     f"{form}", f"write e.g. {example}; `fhemark list ops` says which sizes exist")
