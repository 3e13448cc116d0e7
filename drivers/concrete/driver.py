"""fhemark driver for Zama's Concrete (concrete-python), protocol v2 with the bits extension.

Concrete is a compiler: a Python function on integers is traced, compiled to a native library and
run on encrypted arguments; its optimizer chooses the TFHE parameters (LWE/GLWE dimensions,
decompositions) for each compiled program. So the driver compiles, at setup, one Concrete *module*
(`fhe.module`) that holds one function per integer primitive the setup request's `ops` name (of
int_add, int_sub, int_mul, int_min, int_max, int_lt, int_gt, int_ge, int_eq; all of them when it names
none: the module's size sets its parameters and keys) for the setup's width, generates its keys once, and runs each step of a
program as one call of the compiled function: each step is timed on its own, as the protocol's
regions ask (a multi-operand sum is n - 1 timed additions, exactly as with TFHE-rs).

How an integer is held (scheme `tfhe_int`). A Concrete encrypted integer is one LWE ciphertext,
and a table lookup (TLU, one programmable bootstrap) on it needs parameters for its whole width:
8-bit comparisons already need 16384-coefficient polynomials and 3 GB of keyswitching key, and a
32-bit one does not compile at all (TLUs stop at 16 bits). The driver therefore holds a `bits`-bit
integer as a Concrete tensor of `bits / 2` chunks of 2 bits (little-endian), the radix layout
TFHE-rs' FheUint uses (2-bit message blocks), and writes the operations on chunks in Concrete's
own Python: additions with a ripple carry (two TLUs per chunk), comparisons by a TLU per chunk
pair and a tree of TLUs, min/max by a select per chunk, products by schoolbook columns. The carry out
of the top chunk is dropped, so sums, differences and products wrap modulo 2^bits, exactly as the
orchestrator's reference does. Integer outputs are wired back to every input
(`fhe.Wired` composition) so results feed later steps under the same keys.

Concrete imports PyTorch only for its convolution and max-pool extensions. Its PyPI wheel
requires torch, whose Linux wheel pulls 3 GB of CUDA libraries; build.sh installs Concrete without
it, and this driver installs a stand-in `torch` module (only when no torch is importable) whose
every attribute raises if called. Nothing this driver compiles touches it.
"""

from __future__ import annotations

import base64
import ctypes
import importlib.util
import math
import os
import platform
import sys
import time
import types
import warnings
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python_shared"))
from threads import wanted  # noqa: E402

# Concrete's loop parallelism is OpenMP (the wheel's own libomp): OMP_NUM_THREADS before it loads.
THREADS = wanted()
TORCH_MESSAGE = "torch is not installed: fhemark's Concrete driver does not use convolution or max-pool"


def _install_torch_stub() -> bool:
    """A stand-in `torch` for concrete.fhe.extensions.convolution/maxpool, which import it at module
    level (maxpool also reads torch.max_pool1d/2d/3d into a dict). Only when torch is absent."""
    if importlib.util.find_spec("torch") is not None:
        return False
    stub = types.ModuleType("torch", "stand-in installed by fhemark's Concrete driver: " + TORCH_MESSAGE)

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def unavailable(*args, **kwargs):
            raise RuntimeError(TORCH_MESSAGE)
        unavailable.__name__ = name
        return unavailable

    stub.__getattr__ = __getattr__  # type: ignore[attr-defined]  # module-level __getattr__ (PEP 562)
    sys.modules["torch"] = stub
    return True


TORCH_STUBBED = _install_torch_stub()
# concrete/__init__.py declares a pkg_resources namespace package, which warns on every import.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)

import numpy as np  # noqa: E402
from concrete import fhe  # noqa: E402
from concrete.compiler import ClientProgram, ServerProgram  # noqa: E402
from concrete.compiler import Value as RawValue  # noqa: E402
from concrete.fhe.compilation.configuration import SecurityLevel  # noqa: E402  (not re-exported by fhe)

from jsonl_driver import Failure, Run, merged, serve, static_capabilities  # noqa: E402

# 0.6.0: setups state their LWE problems (lwe_problems); 0.5.0: values freed after their last reader (python_shared)
DRIVER_VERSION = "0.6.0"
CONCRETE_VERSION = metadata.version("concrete-python")
SCHEME = "tfhe_int"
CHUNK_BITS = 2
M = 1 << CHUNK_BITS
WIDTHS = (8, 16, 32, 64)
# Primitive -> name of the module's function: every int op of the vocabulary. Comparisons produce
# an encrypted bit; the others an integer, wired back to every input.
FUNCS = {f"int_{n}": n for n in ("add", "sub", "mul", "min", "max", "lt", "gt", "ge", "eq")}
INT_VALUED = ("add", "sub", "mul", "min", "max")
OPS = ["keygen", "encrypt_sk", "decrypt", *FUNCS]

# Presets: the encoding (2-bit chunks) and the failure-probability target given to Concrete's
# optimizer; it then chooses the parameters (reported in `effective`). Concrete's own default is a
# global_p_error of 1e-5 for the whole program; TFHE-rs' default sets are 2^-128 per bootstrap.
PRESETS = {
    "RADIX2_GLOBAL_PERROR_1E-5": {"p_error": None, "global_p_error": 1e-5,
                                  "about": "Concrete's default target: global_p_error 1e-5 (the failure probability of a whole "
                                           "compiled program)"},
    "RADIX2_PERROR_2M64": {"p_error": 2.0 ** -64, "global_p_error": None,
                           "about": "p_error 2^-64 for every table lookup (programmable bootstrap)"},
    "RADIX2_PERROR_2M128": {"p_error": 2.0 ** -128, "global_p_error": None,
                            "about": "p_error 2^-128 for every table lookup, the failure probability of TFHE-rs' "
                                     "default sets"},
}
DEFAULT_PRESET = "RADIX2_GLOBAL_PERROR_1E-5"

# Static facts (the deviation from PROTOCOL.md's canonical boundaries, build notes): capabilities.json.
CAPABILITIES = static_capabilities(Path(__file__).resolve().parent, {SCHEME: OPS})
NOT_APPLICABLE = "noise and levels: not applicable (every table lookup bootstraps; Concrete exposes no noise budget)"


# -- the functions Concrete compiles (integers as little-endian tensors of 2-bit chunks) --------------

# state of one chunk pair: 0 = x < y, 1 = equal, 2 = x > y (index x * M + y)
_STATE = [0 if a < b else 1 if a == b else 2 for a in range(M) for b in range(M)]
_PREDICATE = {"lt": lambda s: int(s == 0), "gt": lambda s: int(s == 2),
              "ge": lambda s: int(s != 0), "eq": lambda s: int(s == 1)}
# Every table lookup's input stays below 2^LUT_BITS: the lookups then run at the small parameters the
# comparisons already need (wider lookup inputs make Concrete's optimizer pick larger polynomials).
LUT_BITS = 4


def _merge(hi: int, lo: int) -> int:
    """The state of a pair of chunk groups from the higher group's state and the lower one's."""
    return lo if hi == 1 else hi


def _carry_chain(s, chunks: int, carry):
    """Chunk sums (each < 2M) -> the sum's chunks, the carry rippling up; the top carry is dropped
    (modulo 2^bits). Two TLUs per chunk but the last (v % M and v // M on the same input)."""
    out = []
    for i in range(chunks):
        v = s[i] if carry is None else s[i] + carry
        out.append(v % M)
        if i < chunks - 1:
            carry = v // M
    return fhe.array(out)


def _grouping(bounds: list[int], limit: int) -> list[list[int]]:
    """The terms of one column (their largest values) in groups, smallest first, each group's bound
    at most `limit`."""
    order = sorted(range(len(bounds)), key=lambda i: bounds[i])
    groups: list[list[int]] = []
    total = limit + 1
    for i in order:
        if total + bounds[i] > limit:
            groups.append([])
            total = 0
        groups[-1].append(i)
        total += bounds[i]
    return groups


def _column_sum(terms, bounds: list[int], last: bool):
    """One column's encrypted terms (a tensor, with each term's largest value) -> the column's chunk
    (its sum modulo M) and its carries to the next column (a tensor and their bounds; none for the
    top column, whose carry leaves the integer). Groups whose bound stays below 2^LUT_BITS are summed
    (a clear 0/1 matrix product, one node for all of them) and split by two lookups into a chunk and
    a carry, until one term below M is left."""
    limit = (1 << LUT_BITS) - 1
    low = fhe.LookupTable([v % M for v in range(limit + 1)])
    high = fhe.LookupTable([v // M for v in range(limit + 1)])
    carries, carry_bounds = [], []
    while len(bounds) > 1 or bounds[0] >= M:
        groups = _grouping(bounds, limit)
        mat = np.zeros((len(bounds), len(groups)), dtype=np.int64)
        for g, members in enumerate(groups):
            mat[members, g] = 1
        # Concrete sizes every value from the inputset's runs, which seldom reach a group's bound:
        # the hint gives the sum (and, by its operands sharing its encoding, every term) the width
        # its bound needs, so no input can overflow it.
        sums = fhe.hint(terms @ mat, bit_width=LUT_BITS)
        sum_bounds = [sum(bounds[i] for i in g) for g in groups]
        terms, bounds = low[sums], [min(b, M - 1) for b in sum_bounds]
        if not last:
            carries.append(high[sums])
            carry_bounds += [b // M for b in sum_bounds]
    return terms[0], carries, carry_bounds


def _function(name: str, chunks: int):
    state = fhe.LookupTable(_STATE)
    merge = fhe.LookupTable([_merge(hi, lo) for hi in range(4) for lo in range(4)])
    # select[b * 2M + d + M - 1] = d if b else 0, for a chunk difference d in (-M, M): one lookup per
    # chunk turns a comparison bit b into min or max (x + b * (y - x)), its input below 2^LUT_BITS.
    select = fhe.LookupTable([(d - (M - 1)) * b for b in range(2) for d in range(2 * M)])
    refresh = fhe.LookupTable(list(range(M)))
    product_lo = fhe.LookupTable([(a * b) % M for a in range(M) for b in range(M)])
    product_hi = fhe.LookupTable([(a * b) // M for a in range(M) for b in range(M)])

    def add(x, y):
        return _carry_chain(x + y, chunks, None)

    def sub(x, y):
        # x + (M^k - 1 - y) + 1: every chunk of y complemented, one carried in (two's complement)
        return _carry_chain(x + (M - 1) - y, chunks, 1)

    def compare(x, y, predicate):
        st = state[x * M + y]                      # one TLU per chunk pair
        while st.shape[0] > 2:                     # then a tree: one TLU per merge
            st = merge[st[1::2] * 4 + st[0::2]]
        final = fhe.LookupTable([predicate(_merge(hi, lo)) for hi in range(4) for lo in range(4)])
        return final[st[1] * 4 + st[0]]

    def pick(x, y, b):
        """x where b is 0, y where b is 1, chunk by chunk. The sum goes through a lookup (identity)
        too: an output that carries its input's noise unrefreshed, wired back to the inputs, has
        no bounded noise (Concrete's optimizer refuses the module: no fixed point)."""
        return refresh[x + select[fhe.hint(b * (2 * M) + (y - x) + (M - 1), bit_width=LUT_BITS)]]

    def mul(x, y):
        # schoolbook on chunks, modulo M^k, column by column: column c holds the low halves of the
        # products x_i * y_(c-i), the high halves of column c - 1's, and column c - 1's carries
        out, pending, pending_bounds = [], [], []
        for c in range(chunks):
            idx = fhe.hint(x[:c + 1] * M + y[c::-1], bit_width=LUT_BITS)
            pieces, bounds = [product_lo[idx], *pending], [M - 1] * (c + 1) + pending_bounds
            pending, pending_bounds = [], []
            if c < chunks - 1:
                pending, pending_bounds = [product_hi[idx]], [(M - 1) ** 2 // M] * (c + 1)
            terms = np.concatenate(tuple(pieces)) if len(pieces) > 1 else pieces[0]
            chunk, carries, carry_bounds = _column_sum(terms, bounds, c == chunks - 1)
            out.append(chunk)
            pending += carries
            pending_bounds += carry_bounds
        return fhe.array(out)

    bodies = {"add": add, "sub": sub, "mul": mul,
              "min": lambda x, y: pick(y, x, compare(x, y, _PREDICATE["lt"])),
              "max": lambda x, y: pick(x, y, compare(x, y, _PREDICATE["lt"])),
              **{p: (lambda x, y, p=p: compare(x, y, _PREDICATE[p])) for p in _PREDICATE}}
    body = bodies[name]

    def traced(x, y):
        return body(x, y)
    traced.__name__ = traced.__qualname__ = name
    return fhe.function({"x": "encrypted", "y": "encrypted"})(traced)


def _configuration(preset: dict) -> fhe.Configuration:
    """One thread: Concrete's OpenMP loop parallelism off (it is on by default), no dataflow or
    auto parallelism. With FHEMARK_THREADS > 1 the chunk-wise lookups of one op run in parallel."""
    return fhe.Configuration(loop_parallelize=THREADS > 1, dataflow_parallelize=False, auto_parallelize=False,
                             p_error=preset["p_error"], global_p_error=preset["global_p_error"],
                             security_level=SecurityLevel.SECURITY_128_BITS,
                             use_insecure_key_cache=False, show_progress=False, dump_artifacts_on_unexpected_failures=False)


def module_functions(ops) -> tuple[str, ...]:
    """The module's functions for a setup's `ops` (every function when the request names none), in
    FUNCS' order. `add` is always one: fresh encryptions take its input layout, the warm-up calls it."""
    if ops is None:
        return tuple(FUNCS.values())
    if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
        raise Failure("internal", f"setup: ops must be a list of op names, got {ops!r}")
    # An op the driver lacks is no setup error: the run that asks for it gets `unsupported`.
    return tuple(name for op, name in FUNCS.items() if op in ops or name == "add")


class Compiled:
    """A module compiled for one width, preset and set of functions (once per process), with its
    parameter facts."""

    def __init__(self, bits: int, preset_name: str, names: tuple[str, ...]):
        self.bits, self.chunks, self.preset, self.names = bits, bits // CHUNK_BITS, preset_name, names
        fns = {name: _function(name, self.chunks) for name in names}
        wires = {fhe.Wire(fhe.Output(fns[src], 0), fhe.Input(fns[dst], pos))
                 for src in INT_VALUED if src in fns for dst in fns for pos in (0, 1)}
        module = fhe.module()(type(f"fhemark_uint{bits}", (), {**fns, "composition": fhe.Wired(wires)}))
        rng = np.random.default_rng(bits)
        edge = [np.zeros(self.chunks, np.int64), np.full(self.chunks, M - 1, np.int64)]
        inputset = [(a, b) for a in edge for b in edge] + \
                   [(rng.integers(0, M, self.chunks), rng.integers(0, M, self.chunks)) for _ in range(16)]
        self.config = _configuration(PRESETS[preset_name])
        t0 = time.perf_counter()
        try:
            self.module = module.compile({name: inputset for name in fns}, self.config)
        except Exception as exc:  # the optimizer finds no parameters, or the compiler refuses
            raise Failure("invalid_params", f"Concrete could not compile the {bits}-bit module ({', '.join(names)}) at "
                                            f"{preset_name}: "
                                            f"{type(exc).__name__}: {exc}".replace("\n", " "))
        self.compile_s = time.perf_counter() - t0
        self.specs = self.module.server.client_specs
        self.program_info = self.specs.program_info
        server = ServerProgram(self.module.server._library, False)  # the compiled library, loaded once
        self.circuits = {name: server.get_server_circuit(name) for name in fns}
        self.facts = self._facts()
        self.server_key_bytes: int | None = None  # serialized size of a key set: fixed by the parameters

    def server_key_size(self, keys: "KeySet") -> int:
        """The serialized size of the module's server keys (arrays of fixed length for fixed parameters):
        serialized once per module (2-3 s for ~300 MB), then known for every key set of it."""
        if self.server_key_bytes is None:
            self.server_key_bytes = len(keys.server_keys.serialize())
        return self.server_key_bytes

    def _facts(self) -> dict:
        info = self.program_info.get_keyset_info()
        stats = self.module.statistics
        fn_stats = stats.get("functions", {})

        def bsk(b):
            return {"polynomial_size": b.polynomial_size(), "glwe_dimension": b.glwe_dimension(),
                    "input_lwe_dimension": b.input_lwe_dimension(), "pbs_level": b.level(),
                    "pbs_base_log": b.base_log(), "variance": b.variance(),
                    "input_key": b.input_secret_key_id(), "output_key": b.output_secret_key_id()}

        def ksk(k):
            return {"ks_level": k.level(), "ks_base_log": k.base_log(), "variance": k.variance(),
                    "input_key": k.input_secret_key_id(), "output_key": k.output_secret_key_id()}

        functions = {}
        for op, name in FUNCS.items():
            if name not in self.names:
                continue
            st = fn_stats.get(name, {})
            per = st.get("programmable_bootstrap_count_per_parameter", {})
            functions[op] = {"pbs": st.get("programmable_bootstrap_count"),
                             "key_switches": st.get("key_switch_count"),
                             "pbs_parameters": [{**bsk(p), "count": n} for p, n in per.items()]}
        p_error, global_p_error = float(stats["p_error"]), float(stats["global_p_error"])
        return {"p_error": p_error, "global_p_error": global_p_error,
                "p_fail": math.log2(p_error) if p_error > 0 else None,
                "global_p_fail_log2": math.log2(global_p_error) if global_p_error > 0 else None,
                "complexity": float(stats["complexity"]),
                "secret_keys": [{"id": i, "lwe_dimension": k.dimension()} for i, k in enumerate(info.secret_keys())],
                "bootstrap_keys": [bsk(b) for b in info.bootstrap_keys()],
                "keyswitch_keys": [ksk(k) for k in info.keyswitch_keys()],
                "key_sizes_bytes": {"secret_keys": int(stats["size_of_secret_keys"]),
                                    "bootstrap_keys": int(stats["size_of_bootstrap_keys"]),
                                    "keyswitch_keys": int(stats["size_of_keyswitch_keys"])},
                "functions": functions}


def problems(facts: dict) -> list[dict]:
    """PROTOCOL.md lwe_problems: each of the optimizer's secret keys (binary, modulo 2^64) with the least
    noise of the keys encrypting under it (key-switching and bootstrapping keys give an attacker as many
    samples as it wants); Concrete states variances relative to 2^64."""
    noise: dict[int, float] = {}
    for key in facts["bootstrap_keys"] + facts["keyswitch_keys"]:
        noise[key["output_key"]] = min(noise.get(key["output_key"], math.inf), key["variance"])
    return [{"name": f"key {k['id']} (n={k['lwe_dimension']})", "n": k["lwe_dimension"], "log_q": 64,
             "secret": "binary", "noise_std": math.sqrt(noise[k["id"]]) * 2.0 ** 64}
            for k in facts["secret_keys"] if noise.get(k["id"], 0) > 0]


_COMPILED: dict[tuple[int, str, tuple[str, ...]], Compiled] = {}


def compiled(bits: int, preset: str, names: tuple[str, ...]) -> tuple[Compiled, bool]:
    """The module for a width, preset and set of functions, compiled once per process (setups share
    it, not keys)."""
    key = (bits, preset, names)
    hit = key in _COMPILED
    if not hit:
        _COMPILED[key] = Compiled(bits, preset, names)
    return _COMPILED[key], hit


class KeySet:
    """One key generation of a module: the client side (encrypt, decrypt) and the server keys."""

    def __init__(self, comp: Compiled, keys: fhe.Keys):
        keyset = keys._keyset  # the generated concrete.compiler.Keyset behind fhe.Keys
        self.comp = comp
        self.keys = keys
        self.server_keys = keyset.get_server_keys()
        client = ClientProgram.create_encrypted(comp.program_info, keyset)
        self.client = {name: client.get_client_circuit(name) for name in comp.names}

    @staticmethod
    def fresh(comp: Compiled) -> fhe.Keys:
        return fhe.Keys(comp.specs)  # no cache directory: generate() makes new random keys


class Cts:
    """An array of encrypted integers (each a TransportValue of `chunks` chunk ciphertexts) or of
    encrypted bits; `fn` is the module function whose output layout decrypts it."""

    __slots__ = ("values", "fn", "keys")

    def __init__(self, values: list, fn: str, keys: KeySet):
        self.values, self.fn, self.keys = values, fn, keys


class Setup:
    """A compiled module for one width and its standard keys, kept for later run requests."""

    def __init__(self, scheme: str, params: dict, rotations: list, allow_insecure: bool, ops: list | None = None):
        if scheme != SCHEME:
            raise Failure("unsupported", f"Concrete driver has no scheme '{scheme}': it offers tfhe_int (integers as "
                                         f"2-bit chunks compiled by Concrete); no gate-level or shortint primitives")
        requested = params.get("preset", "default")
        name = DEFAULT_PRESET if requested == "default" else requested
        if name not in PRESETS:
            raise Failure("invalid_params", f"Concrete driver has no preset '{requested}' (presets: default, "
                                            f"{', '.join(PRESETS)})")
        bits = params.get("bits", 32)
        if bits not in WIDTHS:
            raise Failure("invalid_params", f"Concrete driver: bits {bits!r} is not one of {list(WIDTHS)}")
        self.requested, self.preset, self.bits = requested, name, int(bits)
        self.comp, self.cached = compiled(self.bits, name, module_functions(ops))
        t0 = time.perf_counter()
        keys = KeySet.fresh(self.comp)
        keys.generate(force=True)
        self.keygen_s = time.perf_counter() - t0
        self.std = KeySet(self.comp, keys)
        # One untimed evaluation: Concrete's first call in a process costs 0.3-0.7 s more than later
        # ones (lazy runtime set-up; measured: not again for other functions or new key sets).
        t0 = time.perf_counter()
        zero = self.encrypt_one(self.std, 0)
        self.comp.circuits["add"].call([zero, zero], self.std.server_keys)
        self.warmup_s = time.perf_counter() - t0

    # integers <-> chunks (outside every timed region)
    def chunks_of(self, v: int) -> np.ndarray:
        return np.array([(v >> (CHUNK_BITS * i)) & (M - 1) for i in range(self.comp.chunks)], dtype=np.int64)

    def join(self, chunks) -> int:
        return sum(int(c) << (CHUNK_BITS * i) for i, c in enumerate(np.asarray(chunks).reshape(-1)))

    def encrypt_one(self, ks: KeySet, v: int):
        # Every function input has add's input layout (add's output is wired to every input), so one
        # encryption serves any consumer.
        return ks.client["add"].prepare_input(RawValue(self.chunks_of(v)), 0)

    def effective(self, params: dict) -> dict:
        f = self.comp.facts
        about = PRESETS[self.preset]
        return {"preset": self.preset, "preset_requested": self.requested, "bits": self.bits,
                "num_blocks": self.comp.chunks, "block_bits": CHUNK_BITS,
                "api": f"concrete-python {CONCRETE_VERSION} fhe.module: each int op a compiled function on "
                       f"{self.comp.chunks} chunks of {CHUNK_BITS} bits",
                "p_fail": f["p_fail"], "p_fail_source": "Concrete optimizer: p_error of one table lookup (the worst "
                                                        "of the module's functions)",
                "p_error": f["p_error"], "global_p_error": f["global_p_error"],
                "global_p_fail_log2": f["global_p_fail_log2"],
                "p_error_target": about["p_error"], "global_p_error_target": about["global_p_error"],
                "preset_about": about["about"],
                "security_bits_target": int(self.comp.config.security_level),
                "complexity": f["complexity"],
                "secret_keys": f["secret_keys"], "bootstrap_keys": f["bootstrap_keys"],
                "keyswitch_keys": f["keyswitch_keys"], "functions": f["functions"],
                "lwe_problems": problems(f),
                "module_functions": list(self.comp.names),
                "compile_s": round(self.comp.compile_s, 3), "compile_cached": self.cached,
                "keygen_s": round(self.keygen_s, 3), "warmup_s": round(self.warmup_s, 3),
                "concrete_python": CONCRETE_VERSION}

    def sizes(self) -> dict:
        f = self.comp.facts["key_sizes_bytes"]
        return {"client_key": f["secret_keys"], "server_key": self.comp.server_key_size(self.std),
                "server_key_in_memory": f["bootstrap_keys"] + f["keyswitch_keys"],
                "ciphertext": len(fhe.Value(self.encrypt_one(self.std, 0)).serialize())}

    def run_of(self, program: dict) -> "ConcreteRun":
        return ConcreteRun(self, program)

    def note(self) -> str:
        return (f"setup: Concrete compiled the {self.bits}-bit module ({', '.join(self.comp.names)}) in "
                f"{self.comp.compile_s:.2f} s{' (earlier, same process)' if self.cached else ''}, generated its keys "
                f"in {self.keygen_s:.2f} s, warm-up call {self.warmup_s:.2f} s (none of it timed as a benchmark)")


# -- programs -------------------------------------------------------------------------------------

def prepared(calls: list, post) -> tuple:
    """One step made ready, as the shared step walk takes it: the library calls to time (one per
    array element), made one after the other, and the untimed step that turns their results into
    the step's value."""
    return (lambda: [c() for c in calls]), post


def key_of(s: Setup, vals: dict, attrs: dict, what: str) -> KeySet:
    name = attrs.get("key")
    if name is None:
        return s.std
    obj = vals.get(name) if isinstance(name, str) else None
    if not isinstance(obj, KeySet):
        raise Failure("internal", f"{what}: key {name!r} is no keygen result of the program")
    return obj


def operand(vals: dict, name: str, what: str) -> Cts:
    obj = vals.get(name)
    if not isinstance(obj, Cts):
        kind = "no value of the program" if obj is None else f"a {type(obj).__name__}, not a ciphertext array"
        raise Failure("internal", f"{what}: {name!r} is {kind}")
    return obj


def plain_input(s: Setup, vals: dict, name: str, what: str) -> list[int]:
    v = vals.get(name)
    if not isinstance(v, np.ndarray):
        raise Failure("internal", f"{what}: {name!r} is no input vector")
    if v.dtype.kind == "i" and (v < 0).any():
        raise Failure("internal", f"{what}: input {name!r} has a negative value")
    out = [int(x) for x in v.astype(np.uint64)]
    bad = [x for x in out if x >> s.bits]
    if bad:
        raise Failure("internal", f"{what}: input {name!r} holds {bad[0]}, not below 2^{s.bits}")
    return out


def prepare(s: Setup, op: str, args: list, attrs: dict, vals: dict) -> tuple:
    if op not in OPS:
        raise Failure("unsupported", f"Concrete driver has no '{op}' for {SCHEME}")
    if op == "keygen":
        comp = s.comp
        keys = KeySet.fresh(comp)
        return prepared([lambda: keys.generate(force=True)], lambda outs: KeySet(comp, keys))
    ks = key_of(s, vals, attrs, op)
    if op == "encrypt_sk":
        circuit = ks.client["add"]
        raws = [RawValue(s.chunks_of(v)) for v in plain_input(s, vals, args[0], op)]
        return prepared([lambda r=r: circuit.prepare_input(r, 0) for r in raws], lambda outs: Cts(outs, "add", ks))
    if op == "decrypt":
        x = operand(vals, args[0], op)
        circuit = ks.client[x.fn]
        post = ((lambda outs: np.array([s.join(o.to_py_val()) for o in outs], dtype=np.uint64)) if x.fn in INT_VALUED
                else (lambda outs: np.array([int(o.to_py_val()) for o in outs], dtype=np.uint64)))
        return prepared([lambda v=v: circuit.process_output(v, 0) for v in x.values], post)
    fn = FUNCS[op]
    if fn not in s.comp.names:
        raise Failure("internal", f"{op}: this setup's module holds {', '.join(s.comp.names)} only (the setup's "
                                  f"ops); a program with {op} needs a setup whose ops name it")
    if len(args) != 2:
        raise Failure("internal", f"{op}: takes two ciphertext arrays, got {len(args)} arguments")
    a, b = operand(vals, args[0], op), operand(vals, args[1], op)
    if len(a.values) != len(b.values):
        raise Failure("internal", f"{op}: arrays of lengths {len(a.values)} and {len(b.values)}")
    if a.fn not in INT_VALUED or b.fn not in INT_VALUED:
        raise Failure("unsupported", f"{op}: an operand is an encrypted comparison bit; the driver's integer "
                                     f"functions take integers only")
    circuit, server_keys = s.comp.circuits[fn], ks.server_keys
    return prepared([lambda x=x, y=y: circuit.call([x, y], server_keys) for x, y in zip(a.values, b.values)],
                    lambda outs: Cts([o[0] for o in outs], fn, ks))


def vec_out_u64(a: np.ndarray) -> dict:
    return {"dtype": "u64", "b64": base64.b64encode(np.ascontiguousarray(a, dtype="<u8").tobytes()).decode()}


def size_of(v) -> int | None:
    if isinstance(v, Cts):
        return sum(len(fhe.Value(x).serialize()) for x in v.values)
    if isinstance(v, KeySet):  # a keygen result: its server (evaluation) keys, as Concrete serializes them
        return v.comp.server_key_size(v)
    return None


class ConcreteRun(Run):
    """A program on a Concrete setup (the frame: jsonl_driver.handle_run): its notes say which compiled
    function each op called and how many table lookups it took."""

    def __init__(self, s: Setup, program: dict):
        super().__init__(s)
        self.std = dict(sk=s.std)
        self.program = program

    def __exit__(self, kind, exc, tb) -> None:
        if exc is not None:  # an op the setup did not compile is refused by prepare, with the ones it did
            return
        s, program = self.s, self.program
        self.notes = [s.note()]
        for op in sorted({st["op"] for st in program["steps"]} & set(FUNCS)):
            f = s.comp.facts["functions"][op]
            self.notes.append(f"{op}: one call of Concrete's compiled function '{FUNCS[op]}' on {s.comp.chunks} chunks "
                              f"of {CHUNK_BITS} bits: {f['pbs']} table lookups (programmable bootstraps)")
        if program.get("noise") or program.get("levels"):
            self.notes.append(NOT_APPLICABLE)

    def prepare(self, st: dict, attrs: dict, vals: dict) -> tuple:
        return prepare(self.s, st["op"], st.get("args", []), attrs, vals)

    def output(self, vals: dict, name: str) -> dict:
        if not isinstance(vals.get(name), np.ndarray):
            raise Failure("internal", f"output {name!r} is not a decrypted vector")
        return vec_out_u64(vals[name])

    def size(self, name: str, value) -> int | None:
        return size_of(value)


def openmp_threads() -> tuple[list[str], int | None]:
    """The libomp files mapped into this process (Concrete's runtime brings its own, in
    concrete_python.libs) and, when there is exactly one, its omp_get_max_threads(): the thread
    count the compiled loops get. None when the driver cannot tell."""
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "libomp" in line.rsplit("/", 1)[-1]})
    except OSError:
        return [], None
    if len(libs) != 1:
        return libs, None
    try:
        return libs, int(ctypes.CDLL(libs[0]).omp_get_max_threads())  # dlopen returns the copy already loaded
    except (OSError, AttributeError):
        return libs, None


def capabilities() -> dict:
    libs, omp_max = openmp_threads()
    # One thread: loop_parallelize is off, nothing else in the runtime spreads a call (measured: CPU / wall 1).
    # More: OpenMP's own count, read back, when it is certainly the runtime the compiled loops use.
    threads = 1 if THREADS == 1 else (omp_max if omp_max is not None else THREADS)
    honoured = True if THREADS == 1 or omp_max is not None else None
    return merged(CAPABILITIES, {
        "library_version": CONCRETE_VERSION, "driver_version": DRIVER_VERSION,
        "build": {"binding": f"concrete-python {CONCRETE_VERSION} (PyPI manylinux wheel, installed without its torch "
                             f"dependency); compiled functions called through concrete.compiler's ServerCircuit.call, "
                             f"encryption/decryption through ClientCircuit.prepare_input/process_output",
                  "torch": ("stand-in module (torch not installed: " + TORCH_MESSAGE + ")") if TORCH_STUBBED
                  else "installed",
                  "python": platform.python_version(), "numpy": np.__version__,
                  "encoding": f"tfhe_int: an integer of `bits` bits is a tensor of bits/{CHUNK_BITS} chunks of "
                              f"{CHUNK_BITS} bits (little-endian); sums wrap modulo 2^bits (top carry dropped)",
                  "parallelism": (f"loop_parallelize={THREADS > 1} (OpenMP, OMP_NUM_THREADS="
                                  f"{os.environ.get('OMP_NUM_THREADS')}; {', '.join(libs) or 'no libomp mapped'}: "
                                  f"omp_get_max_threads() {omp_max}), dataflow_parallelize=False, "
                                  f"auto_parallelize=False")},
        "threads": threads, "threads_honoured": honoured,
        "schemes": {SCHEME: {"limits": {"bits": list(WIDTHS), "presets": ["default", *PRESETS],
                                        "default_preset": DEFAULT_PRESET, "block_bits": CHUNK_BITS}}}})


if __name__ == "__main__":
    serve(capabilities, Setup)
