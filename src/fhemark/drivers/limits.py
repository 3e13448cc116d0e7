"""What each library builds, as its driver declares it: the `limits` of its capabilities reply, read
from the checked-in snapshot (protocol/capabilities/<library>.json, which a conformance test holds to
the live reply) so that a search knows a library's rings before it starts the driver. The search has
no ring list of its own: a library that builds N = 2^16 is searched there, one that stops at 2^15
(SEAL, TenSEAL) is not."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.declared import snapshot

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


def declared(library: str) -> dict[str, dict]:
    """Per scheme, the `limits` the library's driver declares (empty where it declares none or has no snapshot)."""
    return {name: dict(sc.get("limits") or {}) for name, sc in (snapshot(library).get("schemes") or {}).items()}


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
    precision_bits: float = 0.0  # measured after one bootstrap (0: not measured)

    def spec(self, n: int | None = None) -> dict:
        """The set as a suite names it (`n`: the same circuit on another ring, smaller ones insecure); a
        sparse set packs the slots it was measured at (`max_slots`), its peak and precision being those."""
        return {"preset": self.preset, "N": n or self.N, **({"sparse_slots": self.max_slots} if self.max_slots else {})}

    def packs(self, slots: int) -> bool:
        return slots <= (self.max_slots or self.N // 2)


def bootstrap_sets(library: str, scheme: str) -> list[BootstrapSet]:
    """The bootstrapping sets `library` declares for `scheme` (capabilities `bootstrapping`: one, or a
    list, the cheapest first); [] where it declares none."""
    found = (snapshot(library).get("bootstrapping") or {}).get(scheme) or []
    return [BootstrapSet(library, b["preset"], int(b["N"]), int(b["levels"]), int(b["scale_bits"]),
                         int(b["peak_bytes"]), int(b.get("keys_bytes", 0)), int(b.get("max_slots", 0)),
                         float(b.get("precision_bits", 0)))
            for b in (found if isinstance(found, list) else [found])]


def bootstrapping(library: str, scheme: str, slots: int = 1, preset: str | None = None) -> BootstrapSet | None:
    """The cheapest set `library` declares for `scheme` that packs `slots` values (and is `preset`, where
    given); None where none packs them. Which set a program begins at is booting.way's choice."""
    fits = [b for b in bootstrap_sets(library, scheme) if b.packs(slots) and (preset is None or b.preset == preset)]
    return fits[0] if fits else None


def ring_limits(library: str, scheme: str) -> RingLimits | None:
    """The rings `library` declares for `scheme`; None where it declares none (a bit scheme, or no snapshot)."""
    lim = declared(library).get(scheme) or {}
    if "log_n_max" not in lim:
        return None
    most = lim.get("special_primes")
    return RingLimits(library, scheme, int(lim.get("log_n_min", 1)), int(lim["log_n_max"]),
                      int(lim.get("max_prime_bits", 60)), int(most) if most is not None else None)
