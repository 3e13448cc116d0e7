"""The benchmark operations: for each, a program (PROTOCOL.md primitives) per
scheme, which steps are timed, and the plaintext result it must decrypt to.

A micro-benchmark is a program with one timed step; a pipeline times every
stage. Programs are built here once and sent unchanged to every driver, so
every library runs the same work.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from .program import Program, decrypted, encrypted, step
from .rotations import ROTATIONS, galois_steps, keyed_steps, pow2_steps, spell, spell_steps
from .semantics import Plain

RLWE = ("bfv", "bgv", "ckks")
INT = ("bfv", "bgv")
GALOIS_LIST_STEPS = list(range(1, 9))


# The decrypted result of output "z", or of several named outputs (every key a program made).
Expect = Callable[[Plain, dict[str, np.ndarray], dict[str, Any]], "np.ndarray | dict[str, np.ndarray]"]


@dataclass(frozen=True)
class BenchOp:
    name: str
    title: str
    schemes: tuple[str, ...]
    program: Callable[[str], Program]
    expect: Expect
    inputs: tuple[str, ...] = ("x",)
    scalars: Callable[[Plain, np.random.Generator], dict[str, Any]] = lambda p, r: {}
    rotations: tuple[int, ...] = ()
    rotations_pow2: bool = False
    # Pipelines: stage name -> timed steps whose times add up to the stage.
    stages: dict[str, tuple[str, ...]] | None = None
    group: str = "micro"
    # Depth probes: the program for k sequential operations (program() is k = 1).
    chain: Callable[[str, int], Program] | None = None
    # Inputs made by the op itself (e.g. integers as bit arrays), not uniform slots.
    gen: Callable[[Plain, np.random.Generator], dict[str, np.ndarray]] | None = None
    # Whether the op is meaningful for a parameter set (e.g. the integer width).
    applies: Callable[[Any], bool] = lambda params: True
    # Facts recorded with every result (gate counts, depth, cost model).
    facts: dict | None = None
    # Programs that depend on the slot layout (one rotation per Galois key): built once the
    # setup says how many slots there are; `program` is then the layout-free shape.
    sized: Callable[[str, Plain], Program] | None = None

    def build(self, scheme: str, plain: Plain | None = None) -> Program:
        """The program for a parameter set: its rotations spelled against the op's own Galois keys
        (model/rotations.py), so a job's program does not depend on which other jobs share its
        setup. Without a parameter set: the layout-free shape."""
        if plain is None:
            return self.program(scheme)
        program = self.sized(scheme, plain) if self.sized is not None else self.program(scheme)
        if not any(st["op"] in ROTATIONS for st in program.steps):
            return program
        row = plain.row_length()
        return replace(program, steps=spell_steps(program.steps, row,
                                                  keyed_steps(row, self.rotations, self.rotations_pow2)))

    def repeatable(self, program: Program) -> bool:
        """Whether the op may run as several copies in one timed region (key generation never is)."""
        return self.group != "keygen" and program.one_step

    def expected(self, plain: Plain, vecs: dict[str, np.ndarray], scalars: dict[str, Any]) -> dict[str, np.ndarray]:
        """Every checked output's plaintext reference, by output name."""
        want = self.expect(plain, vecs, scalars)
        return want if isinstance(want, dict) else {"z": want}


def _ct_op(prim: str, *, two: bool = True, plain_second: bool = False, after: str | None = None,
           before: str | None = None, **attrs: Any) -> Callable[[str], Program]:
    """Program: encrypt inputs, optionally one untimed op before, the timed op, decrypt."""
    def build(scheme: str) -> Program:
        steps = encrypted("x")
        if two:
            steps += [step("py", "encode", "y")] if plain_second else encrypted("y")
        src = ["cx", "py" if plain_second else "cy"] if two else ["cx"]
        if before:
            steps.append(step("cb", before, *src))
            src = ["cb"]
        steps.append(step("cz", prim, *src, **attrs))
        steps += decrypted("cz")
        return Program(steps, ["cz"], noise=["cz"], sizes=["cz"], levels=["cz"])
    return build


def _rot_prim(scheme: str) -> str:
    return "rotate" if scheme == "ckks" else "rotate_rows"


def _rotate(steps_attr: Any) -> Callable[[str], Program]:
    def build(scheme: str) -> Program:
        return _ct_op(_rot_prim(scheme), two=False, steps=steps_attr)(scheme)
    return build


def _keygen(prim: str, use: Callable[[str], list[dict]], **attrs: Any) -> Callable[[str], Program]:
    """Time key generation, then use the new key so the decrypted output proves it works."""
    def build(scheme: str) -> Program:
        steps = [step("k", prim, **attrs)] + use(scheme)
        return Program(steps, ["k"])
    return build


def _use_secret(scheme: str) -> list[dict]:
    return [step("px", "encode", "x"), step("cx", "encrypt_sk", "px", key="k")] + decrypted("cx", key="k")


def _use_public(scheme: str) -> list[dict]:
    return [step("px", "encode", "x"), step("cx", "encrypt_pk", "px", key="k")] + decrypted("cx")


def _use_relin(scheme: str) -> list[dict]:
    return encrypted("x") + encrypted("y") + [step("cz", "mul_relin", "cx", "cy", key="k")] + decrypted("cz")


def _galois_name(r: int | str) -> str:
    return "z" if r == 1 else f"z{r:+d}" if isinstance(r, int) else f"z_{r}"


def _pow2_steps(row: int) -> list[int]:
    """The keyed steps of a full power-of-two Galois key set, +2^i then -2^i in increasing size."""
    return sorted(pow2_steps(row), key=lambda s: (s < 0, abs(s))) or [1, -1]


def _random_rotation(p: Plain, r: np.random.Generator) -> dict[str, Any]:
    """A random step, spelled as the power-of-two keys' digits it takes (fhemark's spelling, the
    same for every library: model/rotations.py)."""
    row, k = p.row_length(), int(r.integers(1, p.row_length()))
    return {"k": spell(k, row, keyed_steps(row, pow2=True)), "step": k}  # the step, for the record


def _galois_program(scheme: str, rot_steps: list[int], swap: bool, **attrs: Any) -> Program:
    """Time Galois key generation, then rotate x by every step the keys were made for (and swap
    rows / conjugate for a full set), each with the new keys: a key the time paid for but the
    library did not make fails its check."""
    steps = [step("k", "keygen_galois", **attrs)] + encrypted("x")
    outputs = []
    uses: list[tuple[str, str, dict]] = [(_galois_name(r), _rot_prim(scheme), {"steps": r}) for r in rot_steps]
    if swap:
        uses.append(("z_swap", "conjugate" if scheme == "ckks" else "rotate_columns", {}))
    for name, prim, a in uses:
        steps += [step(f"c{name}", prim, "cx", key="k", **a), step(f"p{name}", "decrypt", f"c{name}"),
                  step(name, "decode", f"p{name}")]
        outputs.append(name)
    return Program(steps, ["k"], outputs=outputs)


def _galois_expect(rot_steps: Callable[[Plain], list[int]], swap: bool) -> Expect:
    def expect(p: Plain, v: dict, s: dict) -> dict[str, np.ndarray]:
        out = {_galois_name(r): p.rotate(v["x"], r) for r in rot_steps(p)}
        if swap:
            out["z_swap"] = p.conjugate(v["x"]) if not p.exact else p.swap_rows(v["x"])
        return out
    return expect


def _key_switch(scheme: str) -> Program:
    """Switch a ciphertext from sk to a second secret key (made untimed), decrypt with that key."""
    steps = [step("sk2", "keygen_secret"), step("swk", "keygen_switch", **{"from": "sk", "to": "sk2"})]
    steps += encrypted("x") + [step("cz", "key_switch", "cx", key="swk")] + decrypted("cz", key="sk2")
    return Program(steps, ["cz"], sizes=["cz"], levels=["cz"])


def _mul_chain(scheme: str, k: int) -> Program:
    """x * y * y * ... (k multiplications, each relinearized; CKKS rescales and
    brings y down to the product's level), then decrypt: Study 1's depth."""
    steps = encrypted("x") + encrypted("y")
    cur, y = "cx", "cy"
    for i in range(1, k + 1):
        steps.append(step(f"m{i}", "mul_relin", cur, y))
        cur = f"m{i}"
        if scheme == "ckks":
            steps.append(step(f"r{i}", "rescale", cur))
            cur = f"r{i}"
            if i < k:
                steps.append(step(f"y{i}", "mod_switch", y))
                y = f"y{i}"
    steps += decrypted(cur)
    timed = [s["out"] for s in steps if s["out"].startswith(("m", "r"))]
    return Program(steps, timed, noise=[cur], levels=[cur])


def _bootstrap(scheme: str) -> Program:
    """Encode at the lowest level, encrypt, bootstrap (timed); z0 is the input's decryption."""
    steps = [step("px", "encode", "x", level=0), step("cx", "encrypt_pk", "px"),
             step("p0", "decrypt", "cx"), step("z0", "decode", "p0"),
             step("cz", "bootstrap", "cx")] + decrypted("cz")
    return Program(steps, ["cz"], outputs=["z", "z0"], sizes=["cz"], levels=["cz"])


def _codec(timed: str) -> Callable[[str], Program]:
    def build(scheme: str) -> Program:
        return Program([step("px", "encode", "x"), step("z", "decode", "px")], [timed], sizes=["px"])
    return build


def _encrypt(how: str) -> Callable[[str], Program]:
    def build(scheme: str) -> Program:
        steps = encrypted("x", how) + decrypted("cx")
        return Program(steps, ["cx"], noise=["cx"], sizes=["cx"], levels=["cx"])
    return build


def _decrypt(scheme: str) -> Program:
    return Program(encrypted("x") + decrypted("cx"), ["pz"], noise=["cx"], sizes=["pz"])


def _pipeline(kind: str) -> Callable[[str], Program]:
    """encode -> encrypt -> op -> decrypt -> decode, every stage timed (Study 1)."""
    def build(scheme: str) -> Program:
        steps = [step("px", "encode", "x")]
        if kind != "square":
            steps.append(step("py", "encode", "y"))
        steps.append(step("cx", "encrypt_pk", "px"))
        if kind != "square":
            steps.append(step("cy", "encrypt_pk", "py"))
        if kind == "add":
            op_steps = [step("cz", "add", "cx", "cy")]
        elif kind == "mul":
            op_steps = [step("cz", "mul_relin", "cx", "cy")]
        else:
            op_steps = [step("cz", "square_relin", "cx")]
        if scheme == "ckks" and kind != "add":
            op_steps[-1]["out"] = "cm"
            op_steps.append(step("cz", "rescale", "cm"))
        steps += op_steps + decrypted("cz")
        return Program(steps, [s["out"] for s in steps], noise=["cz"], sizes=["cz"], levels=["cz"])
    return build


def _pipeline_stages(kind: str) -> dict[str, tuple[str, ...]]:
    two = kind != "square"
    op = ("cz", "cm")
    return {"encode": ("px", "py") if two else ("px",), "encrypt": ("cx", "cy") if two else ("cx",),
            "op": op, "decrypt": ("pz",), "decode": ("z",)}


def _x(p, v, s):
    return v["x"]


def _xy_sum(p, v, s):
    return p.add(v["x"], v["y"])


def _xy_prod(p, v, s):
    return p.mul(v["x"], v["y"])


def _power(p: Plain, v: dict, k: int) -> np.ndarray:
    out = v["x"]
    for _ in range(k):
        out = p.mul(out, v["y"])
    return out


def _catalog() -> dict[str, BenchOp]:
    xy = ("x", "y")
    ops = [
        BenchOp("keygen_secret", "key generation: secret key", RLWE, _keygen("keygen_secret", _use_secret), _x, group="keygen"),
        BenchOp("keygen_public", "key generation: public key", RLWE, _keygen("keygen_public", _use_public), _x, group="keygen"),
        BenchOp("keygen_relin", "key generation: relinearization keys", RLWE, _keygen("keygen_relin", _use_relin),
                _xy_prod, inputs=xy, group="keygen"),
        BenchOp("keygen_galois_list", f"key generation: Galois keys for steps {GALOIS_LIST_STEPS[0]}..{GALOIS_LIST_STEPS[-1]}",
                RLWE, lambda sch: _galois_program(sch, GALOIS_LIST_STEPS, False, steps=GALOIS_LIST_STEPS),
                _galois_expect(lambda p: GALOIS_LIST_STEPS, False), group="keygen"),
        BenchOp("keygen_galois_all", "key generation: Galois keys, all power-of-two steps", RLWE,
                lambda sch: _galois_program(sch, _pow2_steps(4), True, steps=galois_steps(4, pow2=True)),
                _galois_expect(lambda p: _pow2_steps(p.row_length()), True), group="keygen",
                sized=lambda sch, p: _galois_program(sch, _pow2_steps(p.row_length()), True,
                                                     steps=galois_steps(p.row_length(), pow2=True))),
        BenchOp("encode", "encode", RLWE, _codec("px"), _x),
        BenchOp("decode", "decode", RLWE, _codec("z"), _x),
        BenchOp("encrypt_pk", "encrypt (public key)", RLWE, _encrypt("encrypt_pk"), _x),
        BenchOp("encrypt_sk", "encrypt (secret key)", RLWE, _encrypt("encrypt_sk"), _x),
        BenchOp("decrypt", "decrypt", RLWE, _decrypt, _x),
        BenchOp("add", "add (ciphertext + ciphertext)", RLWE, _ct_op("add"), _xy_sum, inputs=xy),
        BenchOp("add_plain", "add plaintext", RLWE, _ct_op("add_plain", plain_second=True), _xy_sum, inputs=xy),
        BenchOp("sub", "subtract", RLWE, _ct_op("sub"), lambda p, v, s: p.sub(v["x"], v["y"]), inputs=xy),
        BenchOp("mul", "multiply (no relinearization)", RLWE, _ct_op("mul"), _xy_prod, inputs=xy),
        BenchOp("mul_relin", "multiply + relinearize", RLWE, _ct_op("mul_relin"), _xy_prod, inputs=xy),
        BenchOp("mul_plain", "multiply by plaintext", RLWE, _ct_op("mul_plain", plain_second=True), _xy_prod, inputs=xy),
        BenchOp("mul_scalar", "multiply by scalar", RLWE, _ct_op("mul_scalar", two=False, scalar="$s"),
                lambda p, v, s: p.mul(v["x"], s["s"]), scalars=lambda p, r: {"s": p.random_scalar(r)}),
        BenchOp("square", "square (no relinearization)", RLWE, _ct_op("square", two=False),
                lambda p, v, s: p.mul(v["x"], v["x"])),
        BenchOp("square_relin", "square + relinearize", RLWE, _ct_op("square_relin", two=False),
                lambda p, v, s: p.mul(v["x"], v["x"])),
        BenchOp("relinearize", "relinearize", RLWE, _ct_op("relinearize", before="mul"), _xy_prod, inputs=xy),
        BenchOp("rescale", "rescale", ("ckks",), _ct_op("rescale", before="mul_relin"), _xy_prod, inputs=xy),
        BenchOp("mod_switch", "modulus switch", RLWE, _ct_op("mod_switch", two=False), _x),
        BenchOp("key_switch", "key switch (to another secret key)", RLWE, _key_switch, _x),
        BenchOp("bootstrap", "bootstrap (CKKS)", ("ckks",), _bootstrap, _x, group="bootstrap"),
        BenchOp("rotate_1", "rotate by one step (BFV/BGV: rows)", RLWE, _rotate(1),
                lambda p, v, s: p.rotate(v["x"], 1), rotations=(1,)),
        BenchOp("rotate_random", "rotate by a random step (new each sample)", RLWE, _rotate("$k"),
                lambda p, v, s: p.rotate(v["x"], s["step"]), scalars=_random_rotation, rotations_pow2=True,
                facts={"method": "a random step of the row; without a key of its own, the power-of-two keyed "
                                 "rotations of its non-adjacent form, spelled by fhemark (the same in every library)"}),
        BenchOp("rotate_columns", "rotate columns (swap rows)", INT, _ct_op("rotate_columns", two=False),
                lambda p, v, s: p.swap_rows(v["x"]), rotations_pow2=True),
        BenchOp("conjugate", "complex conjugate", ("ckks",), _ct_op("conjugate", two=False),
                lambda p, v, s: p.conjugate(v["x"]), rotations_pow2=True),
    ]
    ops.append(BenchOp("depth_mul", "multiplicative depth (x * y^k until decryption fails)", RLWE,
                       lambda sch: _mul_chain(sch, 1), lambda p, v, s: _power(p, v, s["depth"]), inputs=xy,
                       group="depth", chain=_mul_chain))
    for kind, expect, inputs in (("add", _xy_sum, xy), ("mul", _xy_prod, xy),
                                 ("square", lambda p, v, s: p.mul(v["x"], v["x"]), ("x",))):
        ops.append(BenchOp(f"pipeline_{kind}", f"pipeline: {kind}", ("bfv", "ckks", "bgv"), _pipeline(kind), expect,
                           inputs=inputs, stages=_pipeline_stages(kind), group="pipeline"))
    ops += [_into(o) for o in ops if o.group == "micro"]
    return {o.name: o for o in ops}


def _into(op: BenchOp) -> BenchOp:
    """The same op timing the library's write-into-preallocated-output variant."""
    def build(scheme: str) -> Program:
        prog = op.program(scheme)
        steps = [dict(s, op=s["op"] + "_into") if s["out"] in prog.timed else s for s in prog.steps]
        return Program(steps, prog.timed, prog.outputs, prog.noise, prog.sizes, prog.levels)
    return BenchOp(f"{op.name}_into", f"{op.title}, into an existing ciphertext", op.schemes, build, op.expect,
                   op.inputs, op.scalars, op.rotations, op.rotations_pow2, group="into")


RLWE_OPS: dict[str, BenchOp] = _catalog()
