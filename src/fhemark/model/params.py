"""Library-neutral parameter sets: presets, validation, the plaintext modulus.

Every driver receives the same resolved set (same N, prime bit sizes, t and
scale); what each library really used comes back in its setup reply and is
compared in `equivalence.py`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ..errors import UserError

SCHEMES_RLWE = ("bfv", "bgv", "ckks")
# Bitwise / small-integer schemes (PROTOCOL-bits.md): parameter sets are the library's named ones.
SCHEMES_BITS = ("tfhe_bool", "tfhe_shortint", "tfhe_int")
INT_BITS = (8, 16, 32, 64)

# The n<N> presets, for every library: the chains of SEAL's CoeffModulus::BFVDefault(N, tc128), the
# HE standard's 128-bit defaults; the last prime is the special prime.
_DEFAULT_CHAINS = {
    4096: [36, 36, 37],
    8192: [43, 43, 44, 44, 44],
    16384: [48, 48, 48, 49, 49, 49, 49, 49, 49],
    32768: [55] * 15 + [56],
}

# CKKS chains with the same N and the same total log QP as SEAL's defaults, so
# both families sit at the same security estimate: a large first prime for
# the integer part, scale-sized middle primes so rescale keeps the scale.
_CKKS_CHAINS = {
    4096: ([35, 30], [44], 30),  # P above every q prime: a key switch keeps ~20 bits of precision
    8192: ([50, 40, 40, 40], [48], 40),
    # 9 primes as in SEAL's own default (8 + 1), the same log QP 438 (the 128-bit bound): a chain
    # with one more, smaller prime made every linear op ~10% and every key switch ~25% dearer.
    16384: ([56] + [46] * 7, [60], 46),
    32768: ([60] + [40] * 19, [60], 40),
}

# "Common" chains: what SEAL, Lattigo and OpenFHE all build exactly. OpenFHE's
# hybrid key switching makes P of 60-bit primes, so SEAL's defaults (a 44-bit
# P at N = 8192) cannot be reproduced there, and their log QP would exceed the
# 128-bit bound once P is 60 bits. These sets fit under it with a 60-bit P.
# N -> (BFV/BGV q, CKKS q); P = [60] for all; CKKS scale 2^40.
_COMMON_CHAINS = {
    8192: ([45, 45, 45], [50, 40, 40]),
    16384: ([50] * 6, [50] + [40] * 7),
}

_PRESET_T_BITS = 20

# The error distribution's standard deviation: the security tables assume 3.2 (8 / sqrt(2 pi) = 3.19),
# and SEAL cannot use another. Another value would be estimated wrongly, and recorded as matching
# parameters where a library silently used 3.2, so it is refused.
SIGMA = 3.2

NAME_PATTERN = r"^[^\x00-\x1f\x7f\[\]]{1,100}$"
PRESET_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$"
# The fields of free text a set carries: their pattern, and the rule in words.
TEXT_FIELDS = {"name": (NAME_PATTERN, "printable text on one line without [ ], up to 100 characters"),
               "preset": (PRESET_PATTERN, "a library's set name: letters, digits, _ . + -")}
_SIGMA_RANGE = (3.19, 3.2)


class ParamSet(BaseModel):
    """A resolved parameter set: exactly what every driver is asked to use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    N: int
    q_bits: tuple[int, ...]
    p_bits: tuple[int, ...]
    t: int | None = None
    scale_bits: int | None = None
    secret: Literal["ternary", "sparse_ternary"] = "ternary"
    hamming_weight: int | None = None  # the nonzero entries of a sparse_ternary secret
    sigma: float = 3.2
    name: str | None = None
    # A library's own named parameter set (e.g. a bootstrapping set): the
    # driver chooses the moduli and reports them; security is checked then.
    preset: str | None = None
    batching: bool = True  # BFV/BGV: False allows any t (e.g. 2) with coefficient encoding only
    kind: Literal["rlwe", "bits"] = "rlwe"
    bits: int | None = None  # tfhe_int: width of the integers
    # A library's own key-switching choice (OpenFHE: "hybrid", its default, or "bv" with an optional digit size
    # in bits): left out of the wire when unset, so drivers without the choice never see it.
    key_switching: Literal["hybrid", "bv"] | None = None
    digit_size: int | None = None
    sparse_slots: int | None = None  # a CKKS preset's sparsely packed slot count (OpenFHE's sparse bootstrapping)

    @property
    def log_qp_nominal(self) -> int:
        return sum(self.q_bits) + sum(self.p_bits)

    def slots(self, scheme: str) -> int:
        return self.sparse_slots or (self.N // 2 if scheme == "ckks" else self.N)

    def label(self) -> str:
        sparse = f",h={self.hamming_weight}" if self.hamming_weight else ""
        return self.name or f"N={self.N},logQP={self.log_qp_nominal}{sparse}"

    def wire(self) -> dict[str, Any]:
        if self.kind == "bits":
            return {"preset": self.preset, **({"bits": self.bits} if self.bits else {})}
        drop = {"name", "kind", "bits"} | ({"preset"} if self.preset is None else set()) | \
            ({"batching"} if self.batching else set()) | \
            {k for k in ("key_switching", "digit_size", "hamming_weight", "sparse_slots")
             if getattr(self, k) is None}  # defaults: drivers need not know
        return self.model_dump(exclude=drop)


class ParamSpec(BaseModel):
    """What a suite may write inline; resolved per scheme into a ParamSet.

    One spec may serve several schemes: BFV/BGV read t or t_bits, CKKS reads
    scale_bits, and each ignores the other's field."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    N: int
    q_bits: list[int] = Field([], max_length=100)
    p_bits: list[int] = Field([], max_length=100)
    t: int | None = None
    t_bits: int | None = None
    scale_bits: int | None = None
    sigma: float = SIGMA
    # A sparse secret (h nonzero entries of +-1), as CKKS bootstrapping sets use: no table has it, so the
    # estimate judges it, and only a library that builds it runs it (its capabilities' limits.sparse_secret).
    secret: Literal["ternary", "sparse_ternary"] = "ternary"
    hamming_weight: int | None = Field(None, ge=1)
    # Names are labels in tables and file names: printable, one line, no [ ] (the terminal's markup).
    name: str | None = None
    preset: str | None = None
    batching: bool = True
    key_switching: Literal["hybrid", "bv"] | None = None  # OpenFHE's choice (PROTOCOL.md, setup)
    digit_size: int | None = Field(None, ge=1, le=60)
    # A preset that packs fewer slots than N/2 (a power of two), where its library offers it (PROTOCOL.md, setup)
    sparse_slots: int | None = Field(None, ge=1)

    @field_validator("name", "preset")
    @classmethod
    def _text(cls, v: str | None, info: ValidationInfo) -> str | None:
        pattern, what = TEXT_FIELDS[info.field_name]
        if v is not None and not re.fullmatch(pattern, v):
            raise ValueError(f"a {info.field_name} is {what}")
        return v


def preset_names() -> list[str]:
    return [f"n{n}" for n in _DEFAULT_CHAINS] + [f"c{n}" for n in _COMMON_CHAINS]


def inline_set(text: str, what: str, example: str) -> Any:
    """A parameter set typed on a command line as the suites write one ({N: 8192, q_bits: [...], ...}):
    its YAML value, for the caller to check the shape of; one line naming `what` where it is no YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{what}: not a YAML mapping ({' '.join(str(exc).split())[:120]})", f"write e.g. {example}")


def resolve(spec: str | dict | ParamSpec, scheme: str, where: str = "params") -> ParamSet:
    """Turn a preset name or an inline spec into a validated ParamSet for one scheme."""
    if scheme in SCHEMES_BITS:
        return _bits(spec, scheme, where)
    if isinstance(spec, str):
        return _preset(spec, scheme, where)
    if isinstance(spec, dict):
        try:
            spec = ParamSpec(**spec)
        except ValidationError as exc:  # the first error, with its field
            err = exc.errors()[0]
            field = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"])
            value = "" if err["type"] in ("missing", "extra_forbidden") else f" {err.get('input')!r}:"
            msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
            raise UserError(f"{where}{field}:{value} {msg}",
                            "write N, q_bits, p_bits and t or t_bits (BFV/BGV) or scale_bits (CKKS)")
    return _validated(spec, scheme, where)


def _bits(spec: Any, scheme: str, where: str) -> ParamSet:
    """TFHE-style sets are the library's own: a preset name ('default' or one the
    driver lists) and, for integers, the width."""
    if isinstance(spec, str):
        spec = {"preset": spec}
    if not isinstance(spec, dict) or not isinstance(spec.get("preset", "default"), str):
        raise UserError(f"{where}: a {scheme} parameter set is a preset name or {{preset: NAME, bits: 32}}",
                        "write e.g. default or {preset: default, bits: 32}")
    unknown = set(spec) - {"preset", "bits", "name"}
    if unknown:
        raise UserError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} for {scheme}", "use preset and bits")
    for key, (pattern, what) in TEXT_FIELDS.items():
        if key in spec and not (isinstance(spec[key], str) and re.fullmatch(pattern, spec[key])):
            raise UserError(f"{where}.{key}: {spec[key]!r} is not a name", f"use {what}")
    bits = spec.get("bits")
    if scheme == "tfhe_int":
        bits = 32 if bits is None else bits
        if type(bits) is not int or bits not in INT_BITS:
            raise UserError(f"{where}.bits: {bits} is not an integer width", f"use one of {INT_BITS}")
    elif bits is not None:
        raise UserError(f"{where}.bits: only tfhe_int has a width", "remove bits")
    preset = spec.get("preset", "default")
    label = spec.get("name") or (f"{preset}/{bits}b" if bits else preset)
    return ParamSet(N=0, q_bits=(), p_bits=(), preset=preset, kind="bits", bits=bits, name=label)


def _preset(name: str, scheme: str, where: str) -> ParamSet:
    if name not in preset_names():
        raise UserError(f"{where}: unknown parameter preset '{name}'",
                        f"use one of {', '.join(preset_names())} or write the set inline")
    n = int(name[1:])
    if name.startswith("c"):
        q_int, q_ckks = _COMMON_CHAINS[n]
        spec = (ParamSpec(N=n, q_bits=q_ckks, p_bits=[60], scale_bits=40, name=name) if scheme == "ckks" else
                ParamSpec(N=n, q_bits=q_int, p_bits=[60], t_bits=_PRESET_T_BITS, name=name))
        return _validated(spec, scheme, where)
    bits = _DEFAULT_CHAINS[n]
    if scheme == "ckks":
        q, p, scale = _CKKS_CHAINS[n]
        spec = ParamSpec(N=n, q_bits=q, p_bits=p, scale_bits=scale, name=name)
    else:
        spec = ParamSpec(N=n, q_bits=bits[:-1], p_bits=bits[-1:], t_bits=_PRESET_T_BITS, name=name)
    return _validated(spec, scheme, where)


def _validated(spec: ParamSpec, scheme: str, where: str) -> ParamSet:
    n = spec.N
    if n < 2 or n & (n - 1):
        raise UserError(f"{where}.N: {n} is not a power of two", "use N = 2^k, e.g. 8192")
    if not 1024 <= n <= 131072:
        raise UserError(f"{where}.N: {n} is outside 1024..131072", "use N between 2^10 and 2^17")
    if not _SIGMA_RANGE[0] <= spec.sigma <= _SIGMA_RANGE[1]:
        raise UserError(f"{where}.sigma: {spec.sigma:g} is not supported: the security tables assume the standard "
                        f"sigma = 3.2 and SEAL always uses it", "remove sigma (3.2 is the default)")
    if spec.preset is not None:
        return ParamSet(N=n, q_bits=tuple(spec.q_bits), p_bits=tuple(spec.p_bits), t=spec.t,
                        scale_bits=spec.scale_bits, sigma=spec.sigma, preset=spec.preset, sparse_slots=spec.sparse_slots,
                        # two packings of one preset are two sets: a table's column each
                        name=spec.name or spec.preset + (f",slots={spec.sparse_slots}" if spec.sparse_slots else ""))
    if spec.sparse_slots is not None:
        raise UserError(f"{where}.sparse_slots: only a library's preset packs fewer slots than N/2",
                        "remove sparse_slots, or name the preset (e.g. preset: lattigo_bootstrap_sparse)")
    if not spec.q_bits:
        raise UserError(f"{where}.q_bits: empty", "give at least one ciphertext prime, e.g. q_bits: [60, 40, 60]")
    for field, bits in (("q_bits", spec.q_bits), ("p_bits", spec.p_bits)):
        for b in bits:
            if not 17 <= b <= 60:
                raise UserError(f"{where}.{field}: a {b}-bit prime is outside 17..60 bits",
                                "use primes of 17 to 60 bits (the common limit of SEAL, Lattigo and OpenFHE)")
    t = scale = None
    if scheme == "ckks":
        scale = _scale(spec, where)
    elif scheme in ("bfv", "bgv"):
        t = _plain_modulus(spec, scheme, where)
    else:
        raise UserError(f"{where}: scheme '{scheme}' has no RLWE parameter set",
                        f"use one of {', '.join(SCHEMES_RLWE + SCHEMES_BITS)}")
    _keys_and_secret(spec, where)
    return ParamSet(N=n, q_bits=tuple(spec.q_bits), p_bits=tuple(spec.p_bits), t=t, scale_bits=scale,
                    sigma=spec.sigma, name=spec.name, batching=spec.batching or scheme == "ckks",
                    key_switching=spec.key_switching, digit_size=spec.digit_size, secret=spec.secret,
                    hamming_weight=spec.hamming_weight)


def _scale(spec: ParamSpec, where: str) -> int:
    """A CKKS set's scale, where its chain can carry it."""
    scale = spec.scale_bits
    if scale is None:
        raise UserError(f"{where}.scale_bits: missing for CKKS", "give scale_bits, e.g. 40")
    if not 10 <= scale < spec.q_bits[0]:
        raise UserError(f"{where}.scale_bits: {scale} must be at least 10 and below the first prime ({spec.q_bits[0]} bits)",
                        "lower scale_bits or enlarge q_bits[0]")
    rescale = spec.q_bits[1:]
    if rescale and scale > min(rescale):
        raise UserError(f"{where}.scale_bits: {scale} is above the {min(rescale)}-bit prime of q_bits {spec.q_bits} "
                        "(a rescale divides by it: the scale would grow at every level)",
                        f"use scale_bits <= {min(rescale)} or primes of at least {scale} bits after the first")
    if 2 * scale >= sum(spec.q_bits):
        raise UserError(f"{where}.scale_bits: a product's scale (2 x {scale} bits) does not fit the "
                        f"{sum(spec.q_bits)}-bit modulus q_bits {spec.q_bits} (the library fails: scale out of bounds)",
                        f"lower scale_bits below {(sum(spec.q_bits) + 1) // 2} or add primes to q_bits")
    return scale


def _plain_modulus(spec: ParamSpec, scheme: str, where: str) -> int:
    """A BFV/BGV set's plaintext modulus: t as given (batching-friendly unless batching is off), or the
    largest batching prime of t_bits."""
    n = spec.N
    if spec.t is not None and not spec.batching:
        t = spec.t
        if t < 2:
            raise UserError(f"{where}.t: {t} is below 2", "use t >= 2")
    elif spec.t is not None:
        t = spec.t
        if not (is_prime(t) and t % (2 * n) == 1):
            raise UserError(f"{where}.t: {t} is not batching-friendly for N={n} (needs a prime t = 1 mod {2 * n})",
                            f"use t_bits instead, or t = {_nearest_batching_prime(n, t.bit_length())}")
    elif spec.t_bits is not None:
        if not (2 * n).bit_length() < spec.t_bits <= 60:
            raise UserError(f"{where}.t_bits: {spec.t_bits} leaves no prime t = 1 mod {2 * n}",
                            f"use t_bits between {(2 * n).bit_length() + 1} and 60")
        t = batching_prime(n, spec.t_bits)
    else:
        raise UserError(f"{where}.t: missing for {scheme.upper()}", "give t (a prime = 1 mod 2N) or t_bits, e.g. 20")
    if t.bit_length() >= min(spec.q_bits):
        raise UserError(f"{where}.t: {t.bit_length()}-bit t does not fit under the {min(spec.q_bits)}-bit primes",
                        "lower t_bits or enlarge q_bits")
    return t


def _keys_and_secret(spec: ParamSpec, where: str) -> None:
    """Key switching's and the secret's fields agree with each other and with N."""
    if spec.key_switching == "bv" and spec.p_bits:
        raise UserError(f"{where}.p_bits: BV key switching has no special primes", "write p_bits: [] with key_switching: bv")
    if spec.digit_size is not None and spec.key_switching != "bv":
        raise UserError(f"{where}.digit_size: only BV key switching has a digit size", "add key_switching: bv")
    if (spec.secret == "sparse_ternary") != (spec.hamming_weight is not None):
        raise UserError(f"{where}.hamming_weight: a sparse_ternary secret has a Hamming weight, and only it",
                        "write secret: sparse_ternary with hamming_weight: H (e.g. 192), or neither")
    if spec.hamming_weight is not None and spec.hamming_weight > spec.N:
        raise UserError(f"{where}.hamming_weight: {spec.hamming_weight} nonzero entries do not fit N = {spec.N}",
                        f"use a Hamming weight from 1 to {spec.N}")


def batching_prime(n: int, bits: int) -> int:
    """The largest prime below 2^bits that is 1 mod 2N (what batching needs)."""
    m = 2 * n
    c = ((1 << bits) - 2) // m * m + 1
    while c > m:
        if is_prime(c):
            return c
        c -= m
    raise UserError(f"t_bits: no {bits}-bit prime is 1 mod {m}", "raise t_bits")


def _nearest_batching_prime(n: int, bits: int) -> int:
    for b in range(max(bits, (2 * n).bit_length() + 1), 61):
        try:
            return batching_prime(n, b)
        except UserError:
            continue
    raise UserError(f"no batching prime for N={n}", "use a smaller N")


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for 64-bit integers."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True
