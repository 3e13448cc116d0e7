"""What every library's snippet builder shares: filling a template, the imports a Python snippet
needs, the note on t, and the mark on a set built without the library's security check."""

from __future__ import annotations

from string import Template
from typing import Any

from ...model.params import ParamSet

INSECURE_NOTE = "  # no security check: for tests only"


def imports(ckks: bool) -> str:
    return "import json\nimport math" if ckks else "import json"


def fill(template: str, **values: Any) -> str:
    return Template(template).substitute({k: str(v) for k, v in values.items()})


def t_note(ps: ParamSet) -> str:
    return ("plaintext modulus: a prime = 1 mod 2N, so batching fills all N slots" if ps.batching else
            "plaintext modulus (no batching: coefficient encoding)")
