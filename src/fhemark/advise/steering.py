"""What a failed set tells the search of the sets still queued (choose._search).

A ring the library refuses as insecure is left for the next one, unless the refusal was the library's
own key switching's (OpenFHE's HYBRID special primes: key_switching_instead), where the same chain is
tried under its other key switching, and the ring's larger chains with it, or a CKKS set's first prime
is cut (advisor.first_trimmed) once in the ring. The rest is read from the refusal's kind and numbers
(PROTOCOL.md "Refusals"), never from its words: a chain with primes the library cannot make
(prime_unavailable) skips the ring's chains whose smallest prime is no larger; a t the library cannot
hold on a chain (t_too_wide) skips every chain of `chain_primes_from` primes or more; a CKKS set short of
precision (precision_short) by d bits moves the scale up by at least d; a set predicted not to fit this
machine's memory ends its ring (the ring's sets after it are larger), not the search."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..store.record import Record
from .advisor import Need, at_scale, first_trimmed, key_switching_instead

# Larger sets will not help: the library lacks an op, fails on its own, or the program is wrong for it
# (internal: e.g. a scale mismatch the program made, which no parameter set changes; workload_error: the
# computation itself failed at this ring, and a larger one will not mend it).
STOP = ("unsupported", "crashed", "timeout", "out_of_memory", "internal", "workload_error")


@dataclass
class Steering:
    lib: str
    need: Need
    queue: list[dict]
    refused: set[int] = field(default_factory=set)  # rings refused as insecure
    unfit: set[int] = field(default_factory=set)  # rings whose set was predicted not to fit this machine
    unmade: dict[int, int] = field(default_factory=dict)  # ring -> the largest smallest prime of a chain not made
    switched: set[int] = field(default_factory=set)  # rings searched under the library's other key switching
    cut: dict[int, dict] = field(default_factory=dict)  # CKKS ring -> its refused set with the first prime cut
    scale_floor: int = 0

    def next(self) -> dict | None:
        """The next queued set that nothing measured so far rules out; None when none is left."""
        while self.queue:
            spec = self.queue.pop(0)
            if not self._ruled_out(spec):
                return spec
        return None

    def _ruled_out(self, spec: dict) -> bool:
        n = spec.get("N")
        if n in self.refused | self.unfit or (spec.get("scale_bits") or 0) < self.scale_floor:
            return True
        if spec.get("q_bits") and min(spec["q_bits"]) <= self.unmade.get(n, 0):
            return True  # its smallest prime is no larger than one the library could not make in this ring
        return n in self.switched and not spec.get("key_switching")  # the ring's chains are queued switched

    def failed(self, spec: dict, rec: Record | None, refusal: dict | None) -> bool:
        """Read a failed set's refusal into the queue; True where no larger set can help (STOP)."""
        kind = (refusal or {}).get("kind")
        if kind == "prime_unavailable" and spec.get("q_bits"):  # whatever status the driver gave it: the set's primes
            self.unmade[spec["N"]] = max(self.unmade.get(spec["N"], 0), min(spec["q_bits"]))
            return False
        if kind == "t_too_wide":  # the same t in every set searched: every chain that long is refused
            longest = int(refusal.get("chain_primes_from", 2))
            self.queue = [x for x in self.queue if len(x.get("q_bits") or []) < longest]
            return False
        if rec is None or rec.status in STOP:
            return True
        if rec.status == "insecure_params" and spec.get("N"):
            self._insecure(spec)
        # A cut chain's shortfall stays in its ring (the library built that scale there only cut), not a floor for
        # the next ring: OpenFHE on the MLP example, 12.3 bits at 2^37 at N = 8192, 15.5 at 2^38 at N = 16384.
        if kind == "precision_short" and spec.get("scale_bits") and self.cut.get(spec.get("N")) != spec:
            self._short(spec, refusal)
        return False

    def _insecure(self, spec: dict) -> None:
        n = spec["N"]
        instead = [] if n in self.switched else key_switching_instead(self.lib, spec, self.need)
        if instead:  # the library's own key switching was refused, not the ring: the ring's chains switched first
            self.switched.add(n)
            self.queue[:0] = instead
        elif n not in self.cut and (trimmed := first_trimmed(spec, self.need)) is not None:
            self.cut[n] = trimmed  # once a ring: a second refusal there is the ring's (its larger scales)
            self.queue.insert(0, trimmed)  # the library's own count of log QP, not the ring's: the cut chain first
        else:
            self.refused.add(n)

    def _short(self, spec: dict, refusal: dict) -> None:
        # at least a bit: a shortfall of "14.0 bits, below the required 14" would retry the same set
        # (and the room a worst input's shortfall asks for above the requirement: choose.WORST_STEP_ROOM)
        short = float(refusal["need"]) + float(refusal.get("room", 0)) - float(refusal["got"])
        self.scale_floor = spec["scale_bits"] + max(1, math.ceil(short))
        if spec.get("key_switching"):
            return
        # The space steps the scale by 4 bits and may step over the scale the shortfall asks for
        # (34 short by 9: 43, between 42 and 46), which this ring may hold where 46 is refused.
        exact = at_scale(self.need, spec["N"], self.scale_floor)
        if exact is None:
            # The ring cannot hold the scale asked: its largest scale above this set's is tried before the
            # ring is left (a shortfall's step is an estimate: OpenFHE at depth 40, N = 2^16, 19.6 bits at
            # 2^39 asked 2^42, which only 2^17 holds, where 2^41 was the ring's last word).
            exact = next((x for s in range(self.scale_floor - 1, spec["scale_bits"], -1)
                          if (x := at_scale(self.need, spec["N"], s)) is not None), None)
            self.scale_floor = exact["scale_bits"] if exact else self.scale_floor
        if exact and all(x.get("N") != spec["N"] or x.get("scale_bits") != exact["scale_bits"] for x in self.queue):
            self.queue.insert(0, exact)
