"""`fhemark choose FILE --compilers heir`: a compiler's rows beside choose's answer, measured at
the compiler's own parameters and at each set choose verified for the hand-written library the
compiler's code targets, each a record in choose's run (compile/records.py)."""

from __future__ import annotations

from ..errors import UserError
from ..model.params import resolve
from ..model.workload import Workload
from ..store.sqlite import Store
from . import heir, tfhe_rs
from .measure import LIBRARY, measure_rows, table
from .records import context, store_rows

# A compiler's rows are set beside the hand-written library its code targets (`choose --compilers`).
COMPILERS = {"heir": "lattigo"}


def beside_choose(w: Workload, compiler: str, specs: list[dict], samples: int = 12, say=print,
                  store: Store | None = None, run_id: str | None = None, security: tuple[str, int] = ("hestd2018", 128)) -> str:
    """`fhemark choose FILE --compilers heir`: the compiled rows at HEIR's own parameters and at each
    CKKS set choose verified for hand-written Lattigo (`specs`), as text, each a record in `store`
    under choose's run (`run_id`; security: the table and bits choose judged by); one line where
    HEIR or Go is missing (the rows are skipped, the fix said). An integer workload's row is HEIR's
    TFHE-rs code (compile/tfhe_rs.py), beside choose's hand TFHE-rs row."""
    integer = tfhe_rs.handles(w)
    sets = []
    for spec in [] if integer else specs:
        try:
            sets.append(resolve(spec, "ckks", "the chosen set"))
        except UserError as exc:  # a set HEIR cannot be given (e.g. OpenFHE's BV switching): said, skipped
            say(f"{LIBRARY}: not at {spec.get('N')}: {exc.line()}")
    try:
        rows = tfhe_rs.measure_rows(w, samples, say=say) if integer else measure_rows(w, sets, samples, say=say)
    except heir.Unavailable as exc:
        return str(exc)
    if store is not None:
        store_rows(rows, w, store, context(store, run_id, w, *security))
    if integer:
        return tfhe_rs.table(rows)
    hand = COMPILERS[compiler]
    note = "" if sets else f"\n(no CKKS set was verified for hand-written {hand} here: HEIR's own parameters only)"
    return table(rows) + note
