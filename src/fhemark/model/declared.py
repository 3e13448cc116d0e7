"""What a library's driver declares, read without starting it: its checked-in capabilities snapshot
(protocol/capabilities/<library>.json, which a conformance test holds to the driver's live reply). The
one reader of those files: the search's limits (drivers/limits.py), the levels a library's routines
consume and the ops it promises (routines.py), its working set (advise/memory.py)."""

from __future__ import annotations

import json
from functools import lru_cache

from ..locations import project_root


@lru_cache(maxsize=None)
def snapshot(library: str) -> dict:
    """The library's snapshot, read once (empty where it has none; `lib@version`: the library's)."""
    path = project_root() / "protocol" / "capabilities" / f"{library.partition('@')[0]}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def declaring() -> list[str]:
    """Every library with a snapshot."""
    return sorted(p.stem for p in (project_root() / "protocol" / "capabilities").glob("*.json"))
