"""A netlist as a program of gate steps, for a bit scheme whose driver evaluates elementwise gates
on arrays of encrypted bits (tfhe_bool): the orchestrator decides the evaluation order once, and
every driver only runs gates.

Gates are grouped by depth (1 + the deepest of their arguments; inputs and constants are 0).
The gates of one depth are independent, so each depth is one timed region, holding one array
step per gate kind; with several threads a driver spreads each array over its pool. A `gather`
step before the region (untimed: it only picks ciphertexts, which an evaluator walking the
netlist reads in place) lines up each gate's operands from the values they live in. A sample's
time is the sum of the regions, the whole circuit."""

from __future__ import annotations

from ..program import Program, step
from .netlist import Netlist

# Constant wires come from one `trivial` step (the library's noiseless encryption of 0 and 1,
# outside every region), so a gate fed by a constant costs what the library makes it cost
# (TFHE-rs skips the bootstrap of a gate on trivial ciphertexts).
CONSTANTS = (0, 1)


def gathered(out: str, wires: list[int], where: dict[int, tuple[str, int]]) -> dict:
    """A gather step: `out` holds the ciphertexts of `wires`, in that order."""
    sources = list(dict.fromkeys(where[w][0] for w in wires))
    return step(out, "gather", *sources, bits=[[sources.index(where[w][0]), where[w][1]] for w in wires])


def gate_program(net: Netlist) -> Program:
    """Input: `x`, the netlist's n_inputs bits. Output: `z`, the output wires' bits in order."""
    steps = [step("cx", "encrypt_sk", "x")]
    where: dict[int, tuple[str, int]] = {i: ("cx", i) for i in range(net.n_inputs)}
    depth = dict.fromkeys(range(net.n_inputs), 0)
    levels: dict[int, dict[str, list[tuple]]] = {}
    for name, out, *args in net.gates:
        if name == "const":
            depth[out] = 0
            where[out] = ("constants", CONSTANTS.index(args[0]))
            continue
        depth[out] = 1 + max(depth[a] for a in args)
        levels.setdefault(depth[out], {}).setdefault(name, []).append((out, *args))
    if any(g[0] == "const" for g in net.gates):
        steps.append(step("constants", "trivial", bits=list(CONSTANTS)))
    timed, regions = [], {}
    for d in sorted(levels):
        region = []
        for name, gates in levels[d].items():
            value = f"d{d}_{name}"
            operands = [f"{value}_{j}" for j in range(len(gates[0]) - 1)]
            steps += [gathered(o, [g[1 + j] for g in gates], where) for j, o in enumerate(operands)]
            region.append(step(value, name, *operands))
            where.update({g[0]: (value, i) for i, g in enumerate(gates)})
        steps += region
        timed.append(f"depth{d}")
        regions[f"depth{d}"] = [s["out"] for s in region]
    steps += [gathered("cz", list(net.outputs), where), step("z", "decrypt", "cz")]
    return Program(steps, timed, sizes=["cz"], regions=regions)

