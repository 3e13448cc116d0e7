"""What each library builds, as its driver declares it: the `limits` of its capabilities reply, read
from the checked-in snapshot (protocol/capabilities/<library>.json, which a conformance test holds to
the live reply) so that a search knows a library's rings before it starts the driver. The search has
no ring list of its own: a library that builds N = 2^16 is searched there, one that stops at 2^15
(SEAL, TenSEAL) is not."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from ..locations import project_root

# The security tables' largest ring (data/he-security-tables.tsv): no set above it can be judged by them.
TABLE_LOG_N_MAX = 17
# The smallest ring the search offers a computation: below it the tables allow no chain worth a multiplication.
SEARCH_LOG_N_MIN = 12


@dataclass(frozen=True)
class RingLimits:
    library: str
    scheme: str
    log_n_min: int
    log_n_max: int
    max_prime_bits: int = 60
    special_primes: int | None = None  # the most special primes it takes (SEAL, TenSEAL: 1); None: any

    def rings(self) -> tuple[int, ...]:
        """The ring sizes a search offers this library, smallest first: those it builds that the tables judge."""
        lo, hi = max(self.log_n_min, SEARCH_LOG_N_MIN), min(self.log_n_max, TABLE_LOG_N_MAX)
        return tuple(1 << k for k in range(lo, hi + 1))


@lru_cache(maxsize=None)
def snapshot(library: str) -> dict:
    """The library's checked-in capabilities snapshot, read once (empty where it has none)."""
    path = project_root() / "protocol" / "capabilities" / f"{library.partition('@')[0]}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def declared(library: str) -> dict[str, dict]:
    """Per scheme, the `limits` the library's driver declares (empty where it declares none or has no snapshot)."""
    return {name: dict(sc.get("limits") or {}) for name, sc in (snapshot(library).get("schemes") or {}).items()}


SPARSE_MIN_SLOTS = 16  # the fewest a sparse bootstrapping set is asked to pack: the count its driver was tried at


@dataclass(frozen=True)
class BootstrapSet:
    """A library's own bootstrapping set for a scheme, as its driver declares it (capabilities
    `bootstrapping`): the preset that builds it, its ring, the levels a bootstrap gives back (what a
    program spends between two), its scale, and its measured peak memory at that ring; `max_slots` where
    the preset packs a power of two of at most that many slots (`sparse_slots`), 0 where it packs N/2."""
    library: str
    preset: str
    N: int
    levels: int
    scale_bits: int
    peak_bytes: int
    keys_bytes: int = 0
    max_slots: int = 0

    def spec(self, n: int | None = None, slots: int | None = None) -> dict:
        """The set as a suite names it (`n`: the same circuit on another ring, smaller ones insecure; `slots`:
        the values a sparse preset packs, rounded up to a power of two, at least SPARSE_MIN_SLOTS)."""
        packed = {"sparse_slots": max(SPARSE_MIN_SLOTS, 1 << (int(slots) - 1).bit_length())} \
            if self.max_slots and slots else {}
        return {"preset": self.preset, "N": n or self.N, **packed}


    def packs(self, slots: int) -> bool:
        return slots <= (self.max_slots or self.N // 2)


def bootstrap_sets(library: str, scheme: str) -> list[BootstrapSet]:
    """The bootstrapping sets `library` declares for `scheme` (capabilities `bootstrapping`: one, or a
    list, the cheapest first); [] where it declares none."""
    found = (snapshot(library).get("bootstrapping") or {}).get(scheme) or []
    return [BootstrapSet(library, b["preset"], int(b["N"]), int(b["levels"]), int(b["scale_bits"]),
                         int(b["peak_bytes"]), int(b.get("keys_bytes", 0)), int(b.get("max_slots", 0)))
            for b in (found if isinstance(found, list) else [found])]


def bootstrapping(library: str, scheme: str, slots: int = 1, preset: str | None = None) -> BootstrapSet | None:
    """The first set `library` declares for `scheme` that packs `slots` values (and is `preset`, where
    given); None where none does."""
    return next((b for b in bootstrap_sets(library, scheme)
                 if b.packs(slots) and (preset is None or b.preset == preset)), None)


def ring_limits(library: str, scheme: str) -> RingLimits | None:
    """The rings `library` declares for `scheme`; None where it declares none (a bit scheme, or no snapshot)."""
    lim = declared(library).get(scheme) or {}
    if "log_n_max" not in lim:
        return None
    most = lim.get("special_primes")
    return RingLimits(library, scheme, int(lim.get("log_n_min", 1)), int(lim["log_n_max"]),
                      int(lim.get("max_prime_bits", 60)), int(most) if most is not None else None)
