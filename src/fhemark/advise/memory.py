"""A candidate set's peak memory, predicted before it is built, and checked against this machine's.

A deep program's set at N = 2^16 or 2^17 can need more memory than the machine has (OpenFHE's
bootstrapping preset about 21 GB); built, it ends in an out-of-memory kill after minutes of key
generation. So the search predicts each set's peak from its sizes and excludes, with both figures,
one that would not fit. The prediction:

    peak = base + growth * (keys + values) + working * ciphertext(Q·P)

- keys: the public key and the relinearisation key, plus one Galois key per rotation the program
  needs; a key-switching key holds dnum = ceil(L / K) digits of 2 polynomials over Q·P (HYBRID, the
  search's sets), the public key 2 polynomials over Q·P;
- values: the most ciphertexts the program holds at once (a driver frees each after the last step
  that reads it, Program.peak_live): 2 polynomials over half the chain, as a deep program's values
  descend it;
- working: the library's own working set, in ciphertexts over Q·P (a constant count, plus a count per
  key-switching digit where the library keeps a buffer for every digit: OpenFHE 3, Lattigo half a
  ciphertext, one polynomial), and base, its process at rest: all declared by its driver
  (capabilities.json `memory`, from measured peaks, see each driver's README);
- growth: how far a garbage-collected library's heap grows past its live data before a collection
  (`live_growth`; Lattigo 2: Go's collector, GOGC = 100, lets the heap reach twice what is live). A
  program holding 1.8 GB of rotation keys read 42% under its peak without it, a chain's relinearisation
  key alone within 10%: the constant working set had absorbed the doubling of a small key.

The margin (MARGIN) covers what the model leaves out; the closing note of each deep answer compares
the prediction with the measured peak (the answer's peak memory column shows both)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..drivers.limits import bootstrapping
from ..model.declared import snapshot
from ..model.requirements import derive
from ..model.workload import Workload

# A set is built only where its predicted peak is at most this share of the memory available now.
MARGIN = 0.8
WORD = 8  # bytes per RNS coefficient


@dataclass(frozen=True)
class Prediction:
    bytes: int
    keys: int
    values: int
    working: int
    base: int
    booted: bool = False  # a bootstrapping set's (`booted`): fewer levels are no way out of it
    growth: float = 1.0   # the heap's growth past the live keys and values (a collector's)

    def describe(self) -> str:
        if self.booted:  # a library may declare its set's measured peak alone, not its keys' share of it
            return (f"predicted peak {gb(self.bytes)} (the bootstrapping set's measured peak {gb(self.keys + self.working)}, "
                    f"the program's values {gb(self.values)})")
        grown = f", both x{self.growth:g} (the collector's heap growth)" if self.growth != 1 else ""
        return (f"predicted peak {gb(self.bytes)} (keys {gb(self.keys)}, the program's values {gb(self.values)}{grown}, "
                f"the library's working set {gb(self.working + self.base)})")


def gb(n: float) -> str:
    return f"{n / 2**30:.1f} GB"


def declared(library: str) -> dict | None:
    """The `memory` facts a library's driver declares (its capabilities snapshot); None where it declares none."""
    return snapshot(library).get("memory")


def predict(library: str, spec: dict, rotations: int, ciphertexts: int) -> Prediction | None:
    """The peak of a process running a program that holds at most `ciphertexts` ciphertext values at once
    and needs `rotations` distinct rotation keys, at an RLWE set `spec`; None for a library that declares
    no memory facts, or a preset other than its bootstrapping set's (`booted`)."""
    facts = declared(library)
    if facts is not None and spec.get("preset"):
        return booted(library, spec, ciphertexts)
    if facts is None or not spec.get("q_bits"):
        return None
    n, q, p = spec["N"], len(spec["q_bits"]), len(spec.get("p_bits") or [])
    ct_qp = 2 * n * (q + p) * WORD
    dnum = math.ceil(q / p) if p else q  # BV (no P): one digit per prime, over Q alone
    keys = ct_qp + dnum * ct_qp * (1 + rotations)  # a key-switching key: dnum digits over Q·P (BV: over Q, p = 0)
    value = 2 * n * (q // 2 + 1) * WORD  # a deep program's values descend the chain: half-way on average
    values = ciphertexts * value
    # The working set may grow with the digits key switching decomposes a ciphertext into (OpenFHE expands
    # every digit over Q·P: mul_relin at N = 2^16 with 41 digits peaked at 6.96 GB, with 9 at 1.82 GB).
    working = int((facts["working_qp_ciphertexts"] + facts.get("working_qp_ciphertexts_per_digit", 0) * dnum) * ct_qp)
    base, growth = int(facts["base_bytes"]), float(facts.get("live_growth", 1.0))
    return Prediction(base + int(growth * (keys + values)) + working, keys, values, working, base, growth=growth)


def booted(library: str, spec: dict, ciphertexts: int) -> Prediction | None:
    """A bootstrapping set's peak: the library's measured peak at its declared ring (keys and the
    bootstrapping's working set: nothing the program changes much), scaled with the ring, plus the
    program's values over the chain a bootstrap gives back."""
    b = bootstrapping(library, "ckks", int(spec.get("sparse_slots") or 1), spec.get("preset"))
    if b is None:
        return None
    ratio = int(spec.get("N") or b.N) / b.N
    keys = int(b.keys_bytes * ratio)
    values = ciphertexts * 2 * int(b.N * ratio) * (b.levels + 1) * WORD
    return Prediction(int(b.peak_bytes * ratio) + values, keys, values, int(b.peak_bytes * ratio) - keys, 0, True)


def shape(w: Workload | None, scheme: str) -> tuple[int, int]:
    """What a set's memory depends on beside its sizes (`predict`): the program's distinct rotation keys and
    the most ciphertexts it holds at once (a driver frees a value after its last reader)."""
    if w is None:
        return 0, 0
    prog = w.program(scheme)

    def cipher(st: dict) -> bool:
        return st["op"] not in ("encode", "decode", "decrypt")
    return len(derive(w, scheme).rotations), prog.peak_live(cipher)


def available() -> int | None:
    """The memory available now (MemAvailable), None where the OS does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def too_large(pred: Prediction | None, have: int | None) -> str:
    """'' where the set fits this machine (or nothing can say); else why not, with the figures."""
    if pred is None or have is None or pred.bytes <= MARGIN * have:
        return ""
    return (f"not built: {pred.describe()}, over {MARGIN:.0%} of the {gb(have)} this machine has available "
            f"({'a larger machine' if pred.booted else 'a larger machine, or fewer levels: bootstrapping'})")
