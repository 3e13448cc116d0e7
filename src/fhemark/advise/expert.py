"""Sets `choose` measures as given, beside its own (`fhemark choose FILE --at SET`): an expert's
parameters, such as the FHERMA challenges' (data/fherma.tsv), or any set of the user's. A pinned
set is checked like every searched one (choose.verify, then the worst input found, at the security
and precision asked); where it fails a check the row says why instead of a latency.

--at takes `fherma` (the rows of data/fherma.tsv for the workload's facts['fherma'] kernel), an
inline set as the suites write one ({N: 16384, q_bits: [60, 40, 40], p_bits: [60], scale_bits: 40}),
or a YAML file holding one such mapping."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import UserError
from ..model.params import inline_set, resolve
from ..model.workload import Workload

FHERMA = "fherma"
EXAMPLE = "--at '{N: 16384, q_bits: [60, 40, 40], p_bits: [60], scale_bits: 40}'"


@dataclass(frozen=True)
class Row:
    """One expert set as data/fherma.tsv states it (`stated`: what the source says and how what it
    does not say was filled in)."""

    kernel: str
    library: str
    scheme: str
    N: int
    q_bits: tuple[int, ...]
    p_bits: tuple[int, ...]
    scale_bits: int | None
    t_bits: int | None
    levels: int | None
    security: str
    source: str
    read: str
    stated: str

    def spec(self) -> dict | None:
        """The set as fhemark runs it (None where the source leaves the moduli unstated)."""
        if not self.q_bits:
            return None
        out = {"N": self.N, "q_bits": list(self.q_bits), "p_bits": list(self.p_bits)}
        return {**out, "scale_bits": self.scale_bits} if self.scheme == "ckks" else {**out, "t_bits": self.t_bits}


def rows(text: str | None = None) -> list[Row]:
    """data/fherma.tsv (or `text` in its format), '#' lines being comments."""
    if text is None:
        text = resources.files("fhemark").joinpath("data/fherma.tsv").read_text()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [_row(r) for r in csv.DictReader(lines, delimiter="\t")]


def _row(r: dict[str, str]) -> Row:
    def number(key: str) -> int | None:
        return None if r[key] in ("-", "") else int(r[key])
    return Row(r["kernel"], r["library"], r["scheme"], int(r["N"]), _chain(r["q_bits"]), _chain(r["p_bits"]),
               number("scale_bits"), number("t_bits"), number("levels"), r["security"], r["source"], r["read"],
               r["stated"])


def _chain(text: str) -> tuple[int, ...]:
    """'60+59*4' -> (60, 59, 59, 59, 59); '-' -> ()."""
    if text in ("-", ""):
        return ()
    out: list[int] = []
    for part in text.split("+"):
        bits, _, times = part.partition("*")
        out += [int(bits)] * int(times or 1)
    return tuple(out)


def pinned(w: Workload, ats: list[str]) -> list[tuple[str, str, dict]]:
    """(origin, scheme, spec) for each --at value: every FHERMA row of the workload's kernel whose
    moduli are stated, or the one set given (for each of the workload's RLWE schemes)."""
    out: list[tuple[str, str, dict]] = []
    for at in ats:
        if at == FHERMA:
            kernel = w.facts.get(FHERMA)
            found = [r for r in rows() if r.kernel == kernel]
            if not found:
                raise UserError(f"--at {FHERMA}: {w.name} is no FHERMA kernel (its facts name none)",
                                "use a workload from examples/fherma/, or give a set: " + EXAMPLE)
            usable = [r for r in found if r.spec() and r.scheme in w.schemes]
            if not usable:
                r = found[0]
                raise UserError(f"--at {FHERMA}: the {kernel} expert set cannot be run here ({r.stated})",
                                "compare by hand with the row in data/fherma.tsv")
            out += [(FHERMA, r.scheme, r.spec()) for r in usable]
            continue
        spec = _set(at)
        out += [("pinned", s, spec) for s in w.schemes if s in ("bfv", "bgv", "ckks")]
    for _, scheme, spec in out:
        resolve(spec, scheme, "--at")  # a bad field is said now, with its fix, not after the search
    return out


def _set(at: str) -> dict:
    text = at
    if not at.lstrip().startswith("{"):
        path = Path(at)
        if not path.is_file():
            raise UserError(f"--at {at}: neither {FHERMA}, an inline set nor a file", "write e.g. " + EXAMPLE)
        text = path.read_text()
    value = inline_set(text, f"--at {at!r}", EXAMPLE)
    if not isinstance(value, dict) or "N" not in value:
        raise UserError(f"--at {at!r}: not a parameter set (a mapping with N, q_bits, ...)", "write e.g. " + EXAMPLE)
    return {"p_bits": [], **value}
