"""A driver frees each value after the last step that reads it (PROTOCOL.md "Values a sample frees").

A deep program makes hundreds of ciphertexts: kept until the sample ended, they made its peak memory
their sum (the depth-25 MLP: 458 values, 12 GB at N = 2^16 on Lattigo), and fhemark's memory
prediction counted them all and excluded sets that fit. The drivers free them; the prediction counts
the most alive at once."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from fhemark.advise import choose as chooser
from fhemark.drivers.registry import available
from fhemark.model.program import Program
from fhemark.model.requirements import derive
from fhemark.workload import load

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "drivers" / "python_shared"))
from jsonl_driver import dead_after  # noqa: E402


def _step(out, op, *args, **attrs):
    return {"out": out, "op": op, "args": list(args), "attrs": attrs}


PROGRAM = [_step("cx", "encrypt_pk", "x"), _step("cy", "encrypt_pk", "y"), _step("a", "add", "cx", "cy"),
           _step("b", "add", "a", "cy"), _step("pw", "encode", "w", like="b"), _step("c", "mul_plain", "b", "pw"),
           _step("pz", "decrypt", "c"), _step("z", "decode", "pz")]


def test_a_value_dies_after_its_last_reader_and_what_the_request_reads_is_kept():
    dies = dead_after({"steps": PROGRAM, "outputs": ["z"], "sizes": ["c"]}, {"x", "y", "w"})
    assert {i: sorted(names) for i, names in dies.items()} == {
        0: ["x"], 1: ["y"], 2: ["cx"], 3: ["a", "cy"], 4: ["w"], 5: ["b", "pw"], 7: ["pz"]}
    assert dead_after({"steps": PROGRAM + [_step("d", "add", "$pick", "c")], "outputs": ["z"]}, {"x"}) == {}
    prog = Program(PROGRAM, [], outputs=["z"], sizes=["c"])
    assert prog.peak_live(lambda st: st["op"] not in ("encode", "decode", "decrypt")) == 3  # cx, cy, a


CHAIN = """
def compute(c):
    x, y = c.encrypted("x"), c.encrypted("y")
    for _ in range({adds}):
        x = c.add(x, y)
    return x
W = Workload("adds{adds}_t", compute, schemes=("ckks",), precision_bits=6.0,
             inputs={{"x": Uniform(-1, 1, length=8), "y": Uniform(-1e-3, 1e-3, length=8)}})
"""


@pytest.mark.parametrize("library", ["lattigo", "openfhe", "seal"])
def test_a_drivers_peak_memory_does_not_grow_with_the_values_a_program_makes(library, tmp_path: Path):
    """300 additions in sequence against 20, at N = 32768 (a ciphertext of 2 MB): kept, the 280 more
    would add 560 MB to the peak; freed, they add nothing."""
    if library not in available():
        pytest.skip(f"{library} driver not built here")
    peaks = []
    for adds in (20, 300):
        path = tmp_path / f"adds{adds}.py"
        path.write_text("from fhemark.workload import Uniform, Workload\n" + textwrap.dedent(CHAIN.format(adds=adds)))
        (w,) = load(path)
        need = chooser._need(derive(w, "ckks"), chooser.asked(6.0, 128, "hestd2018"))
        spec = {"N": 32768, "q_bits": [60, 40, 40, 40], "p_bits": [60], "scale_bits": 40}
        why, rec = chooser.verify(w, need, library, spec, 1, None)
        assert why == "", why
        peaks.append(rec.peak_rss_bytes)
    assert peaks[1] - peaks[0] < 150 << 20, peaks
