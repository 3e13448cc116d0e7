"""A program: the steps a driver runs, which of them are timed, and what it reports (PROTOCOL.md
`run`); and the forms the orchestrator sends it in: copies of a fast op in one region, each
timed region warmed up first (inputs: hot), operands from a request's pool."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable


def step(out: str, op: str, *args: str, **attrs: Any) -> dict:
    s: dict[str, Any] = {"out": out, "op": op, "args": list(args)}
    if attrs:
        s["attrs"] = attrs
    return s


def encrypted(v: str, how: str = "encrypt_pk") -> list[dict]:
    return [step(f"p{v}", "encode", v), step(f"c{v}", how, f"p{v}")]


def decrypted(ct: str, **attrs: Any) -> list[dict]:
    return [step("pz", "decrypt", ct, **attrs), step("z", "decode", "pz")]


STANDARD_KEYS = frozenset({"sk", "pk", "rlk", "gk"})
_REF_ATTRS = ("key", "from", "to", "like")  # attrs that name another value of the program


@dataclass(frozen=True)
class Program:
    steps: list[dict]
    timed: list[str]  # region names, in order; a region defaults to the step of that name
    outputs: list[str] = field(default_factory=lambda: ["z"])
    noise: list[str] = field(default_factory=list)
    sizes: list[str] = field(default_factory=list)
    levels: list[str] = field(default_factory=list)
    regions: dict[str, list[str]] = field(default_factory=dict)  # region name -> its steps

    def peak_live(self, counted: Callable[[dict], bool]) -> int:
        """The most values of `counted` steps alive at once, where a driver frees each value after the
        last step that reads it (PROTOCOL.md "Values a sample frees": a `$` arg frees nothing) and keeps
        what the request reads after the steps (outputs, noise, sizes, levels)."""
        if any(a.startswith("$") for st in self.steps for a in st["args"]):
            return sum(1 for st in self.steps if counted(st))
        last = {st["out"]: i for i, st in enumerate(self.steps)}
        for i, st in enumerate(self.steps):
            # the programs fhemark builds name a value in an attr only as a string (`like`, a key)
            for name in (*st["args"], *(v for v in (st.get("attrs") or {}).values() if isinstance(v, str))):
                last[name] = i
        for name in (*self.outputs, *self.noise, *self.sizes, *self.levels):
            last[name] = len(self.steps)
        live = peak = 0
        dies = Counter(last[st["out"]] for st in self.steps if counted(st))
        for i, st in enumerate(self.steps):
            live += counted(st)
            peak = max(peak, live)
            live -= dies[i]
        return peak

    def region(self, name: str) -> list[str]:
        return self.regions.get(name, [name])

    def wire(self) -> dict:
        return {"steps": self.steps, "timed": [{"name": n, "steps": self.region(n)} for n in self.timed],
                "outputs": self.outputs, "noise": self.noise, "sizes": self.sizes, "levels": self.levels}

    def primitives(self) -> set[str]:
        return {s["op"] for s in self.steps}

    def timed_steps(self) -> set[str]:
        """The outs of every step inside a timed region."""
        return {n for r in self.timed for n in self.region(r)}

    def timed_primitives(self) -> list[str]:
        """The primitives whose work the times contain (what a deviation is looked up by)."""
        inside = self.timed_steps()
        return list(dict.fromkeys(s["op"] for s in self.steps if s["out"] in inside))

    @property
    def one_step(self) -> bool:
        """One timed region holding one step: what can be repeated as copies in a region."""
        return len(self.timed) == 1 and self.region(self.timed[0]) == self.timed[:1]

    def replicate(self, k: int) -> "Program":
        """k independent copies of a one-region program, the k timed steps in one region.

        Copy i reads inputs `<name>.i` and scalars `$<name>.i` and returns `<output>.i`, so every
        copy has fresh inputs and every copy's result is checked. The untimed steps before the
        region run for every copy first, those after it last."""
        if k == 1:
            return self
        if not self.one_step:
            raise ValueError("only a program with one timed step can be replicated")
        at = next(i for i, st in enumerate(self.steps) if st["out"] == self.timed[0])
        outs = {st["out"] for st in self.steps}

        def ren(name: str, i: int) -> str:
            return name if name in STANDARD_KEYS else f"{name}.{i}"

        def scalar(v, i: int):
            return f"{v}.{i}" if isinstance(v, str) and v.startswith("$") else v

        def copy(st: dict, i: int) -> dict:
            c = {**st, "out": ren(st["out"], i), "args": [ren(a, i) for a in st["args"]]}
            if st.get("attrs"):
                c["attrs"] = {k_: ([scalar(x, i) for x in v] if isinstance(v, list) else scalar(v, i) if k_ not in _REF_ATTRS
                                   else ren(v, i) if isinstance(v, str) and v in outs else v)
                              for k_, v in st["attrs"].items()}
            return c

        before, timed, after = self.steps[:at], self.steps[at], self.steps[at + 1:]
        steps = [copy(st, i) for i in range(k) for st in before] + [copy(timed, i) for i in range(k)] + \
                [copy(st, i) for i in range(k) for st in after]
        last = lambda names: [ren(n, k - 1) for n in names]  # noqa: E731 - per-sample facts: the last copy
        return Program(steps, self.timed, [ren(o, i) for i in range(k) for o in self.outputs], last(self.noise),
                       last(self.sizes), last(self.levels), {self.timed[0]: [ren(timed["out"], i) for i in range(k)]})

    def warmed(self) -> "Program":
        """Each timed region's steps first run once untimed, on the same operands, their results
        discarded (PROTOCOL.md "discard"): the operands were just read, the library's code just
        ran and its allocator holds the memory of a result just freed, as one turn of a loop over
        one operand set leaves them (inputs: hot). A `_into` step warms up through its allocating
        twin, so its operands keep their values."""
        by_out = {st["out"]: st for st in self.steps}
        first = {self.region(r)[0]: self.region(r) for r in self.timed}
        steps = []
        for st in self.steps:
            for name in first.get(st["out"], ()):
                warm = by_out[name]
                steps.append({**warm, "out": f"warm:{name}", "op": warm["op"].removesuffix("_into"), "discard": True})
            steps.append(st)
        return replace(self, steps=steps)

    def poolable(self) -> list[str]:
        """Inputs the program encodes and encrypts only to operate on, untimed and with no key of
        their own: what a request's pool can stand in for (Program.pooled)."""
        reads = [a for st in self.steps for a in st["args"]]
        by_out = {st["out"]: st for st in self.steps}
        timed = self.timed_steps()
        return [enc["args"][0] for st in self.steps
                if st["op"] == "encrypt_pk" and not st.get("attrs") and st["out"] not in timed
                and (enc := by_out.get(st["args"][0])) and enc["op"] == "encode" and not enc.get("attrs")
                and enc["out"] not in timed and reads.count(enc["out"]) == 1 and reads.count(enc["args"][0]) == 1]

    def pooled(self, names: list[str]) -> "Program":
        """Each named input's encode + encrypt_pk replaced by one `add` of two ciphertexts of the
        request's pool, picked per sample by the scalars `<name>~a` and `<name>~b` (PROTOCOL.md
        "Pool"): a fresh value for every sample at the cost of an addition, not an encryption."""
        input_of = {st["out"]: st["args"][0] for st in self.steps if st["op"] == "encode" and st["args"][0] in names}
        steps = []
        for st in self.steps:
            if st["out"] in input_of:
                continue
            if st["op"] == "encrypt_pk" and st["args"][0] in input_of:
                v = input_of[st["args"][0]]
                st = step(st["out"], "add", f"${v}~a", f"${v}~b")
            steps.append(st)
        return replace(self, steps=steps)


def base_name(name: str) -> str:
    """`cz.3` -> `cz`: what a replicated program's value is called in the single-copy program."""
    head, dot, tail = name.rpartition(".")
    return head if dot and tail.isdigit() else name
