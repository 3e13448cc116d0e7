"""Ready-to-use parameter snippets: a short program in a library's own API that builds the context
fhemark benchmarked for one (library, scheme, parameter set) and prints ONE JSON line saying what the
library really built (ring dimension, prime bit sizes, t or scale, the security level it checked).

Each snippet builds what that library's driver (drivers/<library>) builds for the same parameters:
SEAL and TenSEAL take the bit sizes as given (the special prime last), OpenFHE derives its chain from a
multiplicative depth, a first-prime size and a scaling size with 60-bit key-switching primes, Lattigo
gets primes of exactly the asked sizes from its own generator, TFHE-rs gets the named parameter set.
`fhemark choose` hands them to users; tests/test_snippets.py runs them against the real libraries.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from .errors import UserError
from .locations import project_root
from .params import SCHEMES_BITS, ParamSet, resolve

LANGUAGES = {"seal": "python", "openfhe": "python", "tenseal": "python", "lattigo": "go", "tfhe-rs": "rust"}
SCHEMES = {"seal": ("bfv", "bgv", "ckks"), "openfhe": ("bfv", "bgv", "ckks"), "tenseal": ("bfv", "ckks"),
           "lattigo": ("bfv", "bgv", "ckks"), "tfhe-rs": ("tfhe_bool", "tfhe_shortint", "tfhe_int")}
_ALIASES = {"tfhe": "tfhe-rs", "tfhe_rs": "tfhe-rs", "tfhers": "tfhe-rs"}
_SUFFIX = {"python": "py", "go": "go", "rust": "rs"}
_COMMENT = {"python": "#", "go": "//", "rust": "//"}
_SPEC_KEYS = ("N", "q_bits", "p_bits", "t", "t_bits", "scale_bits", "sigma", "name", "preset", "batching", "bits")
TFHE_FEATURES = ("boolean", "shortint", "integer")
INSTALL = {
    "seal": "pip install seal-python==4.4.0",
    "openfhe": "pip install openfhe==1.6.1.0.22.4 (CPython 3.10)",
    "tenseal": "pip install tenseal==0.3.18",
    "lattigo": "a go.mod requiring github.com/tuneinsight/lattigo/v6 v6.2.0",
    "tfhe-rs": 'a cargo project with tfhe = { version = "=1.8.2", features = ["boolean", "shortint", "integer"] }',
}
_RUN = {"python": "python {file}", "go": "go run {file}", "rust": "cargo run --release (this file as src/main.rs)"}
_TITLE = {"seal": "SEAL", "openfhe": "OpenFHE", "tenseal": "TenSEAL", "lattigo": "Lattigo", "tfhe-rs": "TFHE-rs"}


@dataclass(frozen=True)
class Snippet:
    library: str
    scheme: str
    language: str  # "python" | "go" | "rust"
    filename: str
    text: str


def snippet(library: str, scheme: str, params: dict | ParamSet, header: str | None = None,
            allow_insecure: bool = False) -> Snippet:
    """The program for one library, scheme and parameter set (a ParamSet, the wire form or the suite
    inline form). `header`: text put on top as comments (what fhemark verified); `allow_insecure`:
    build without the library's 128-bit security check where it has one (small test rings)."""
    lib = _ALIASES.get(library.lower(), library.lower())
    if lib not in SCHEMES:
        raise UserError(f"no parameter snippet for library '{library}'", f"use one of {', '.join(SCHEMES)}")
    if scheme not in SCHEMES[lib]:
        raise UserError(f"no {_TITLE[lib]} snippet for scheme '{scheme}'", f"{_TITLE[lib]} snippets: {', '.join(SCHEMES[lib])}")
    ps = _resolved(scheme, params)
    if ps.kind == "rlwe" and ps.preset:
        raise UserError(f"no snippet for the {_TITLE[lib]} preset '{ps.preset}'",
                        "snippets cover explicit N / q_bits / p_bits sets")
    language = LANGUAGES[lib]
    stem = lib.removesuffix("-rs")
    filename = f"{scheme if scheme.startswith(stem) else f'{stem}_{scheme}'}.{_SUFFIX[language]}"
    body = _BUILDERS[lib](scheme, ps, allow_insecure)
    mark = _COMMENT[language]
    lines = header.splitlines() if header else []
    lines.append(f"fhemark parameter snippet: {_TITLE[lib]} {scheme}, {_describe(scheme, ps)}")
    lines += [f"Needs: {INSTALL[lib]}.", f"Run: {_RUN[language].format(file=filename)}; it prints one JSON line: "
              f"what {_TITLE[lib]} really built."]
    top = "\n".join(f"{mark} {line}".rstrip() for line in lines)
    return Snippet(lib, scheme, language, filename, f"{top}\n{body.strip()}\n")


def write(library: str, scheme: str, params: dict | ParamSet, folder: Path, header: str | None = None,
          allow_insecure: bool = False) -> Path:
    """Write the snippet into `folder` (made if missing); returns the file's path."""
    s = snippet(library, scheme, params, header, allow_insecure)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / s.filename
    path.write_text(s.text)
    return path


def _resolved(scheme: str, params: dict | ParamSet) -> ParamSet:
    """The same resolution the orchestrator applies before a driver sees the set: t from t_bits by
    params.batching_prime (an explicit t wins), validation with the suite's messages."""
    if isinstance(params, ParamSet):
        return params
    if not isinstance(params, dict):
        raise UserError(f"snippet parameters: {params!r} is not a parameter set", "give a dict such as {N: 8192, q_bits: ...}")
    spec: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v
                            for k, v in params.items() if k in _SPEC_KEYS and v is not None}
    if scheme not in SCHEMES_BITS:
        spec.pop("bits", None)
        if "t" in spec:
            spec.pop("t_bits", None)
        if scheme == "ckks":
            spec.pop("t", None)
            spec.pop("t_bits", None)
    return resolve(spec, scheme, "params")


def _describe(scheme: str, ps: ParamSet) -> str:
    if ps.kind == "bits":
        return f"preset {ps.preset}" + (f", {ps.bits}-bit integers" if ps.bits else "")
    value = f"scale 2^{ps.scale_bits}" if scheme == "ckks" else f"t={ps.t}"
    return f"N={ps.N}, q_bits={list(ps.q_bits)}, p_bits={list(ps.p_bits)}, {value}"


_INSECURE_NOTE = "  # no security check: for tests only"


def _imports(ckks: bool) -> str:
    return "import json\nimport math" if ckks else "import json"


def _fill(template: str, **values: Any) -> str:
    return Template(template).substitute({k: str(v) for k, v in values.items()})


# ---------------------------------------------------------------- SEAL (seal-python), as drivers/seal/driver.py

_SEAL = '''
${imports}

import seal

N = ${N}
Q_BITS = ${q}  # ciphertext primes, level 0 first
P_BITS = ${p}  # the special prime: SEAL takes it as the last prime of the coefficient modulus
${value_line}

parms = seal.EncryptionParameters(seal.scheme_type.${scheme})
parms.set_poly_modulus_degree(N)
parms.set_coeff_modulus(seal.CoeffModulus.Create(N, Q_BITS + P_BITS))
${plain}context = seal.SEALContext(parms, True, seal.sec_level_type.${level})${level_note}
if not context.parameters_set():
    raise SystemExit(f"SEAL refused the parameters: {context.parameter_error_message()}")

keygen = seal.KeyGenerator(context)
secret_key = keygen.secret_key()
public_key = keygen.create_public_key()
relin_keys = keygen.create_relin_keys()
${encoder}
encryptor = seal.Encryptor(context, public_key)
evaluator = seal.Evaluator(context)
decryptor = seal.Decryptor(context, secret_key)

# What SEAL built:
data = context.key_context_data()
bits = [m.value().bit_length() for m in data.parms().coeff_modulus()]
print(json.dumps({"N": data.parms().poly_modulus_degree(), "q_bits": bits[:-1], "p_bits": bits[-1:],
                  ${reported}, "security": data.qualifiers().sec_level.name}))
'''


def _seal(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if len(ps.p_bits) != 1:
        raise UserError(f"SEAL uses exactly one special prime, p_bits {list(ps.p_bits)} has {len(ps.p_bits)}",
                        "give p_bits with one entry")
    ckks = scheme == "ckks"
    return _fill(_SEAL, scheme=scheme, N=ps.N, q=list(ps.q_bits), p=list(ps.p_bits), imports=_imports(ckks),
                 value_line=f"SCALE = 2.0 ** {ps.scale_bits}  # the encoding scale" if ckks else f"T = {ps.t}  # {_t_note(ps)}",
                 plain="" if ckks else "parms.set_plain_modulus(T)\n",
                 level="none" if insecure else "tc128",
                 level_note=_INSECURE_NOTE if insecure else "  # SEAL's 128-bit security check",
                 encoder=("encoder = seal.CKKSEncoder(context)  # encoder.encode(values, SCALE)" if ckks else
                          "encoder = seal.BatchEncoder(context)" if ps.batching else
                          "# t does not allow batching: encode coefficients, e.g. seal.Plaintext(\"3x^1 + 1\")"),
                 reported=('"scale_bits": math.log2(encoder.encode(0.0, SCALE).scale())' if ckks else
                           '"t": data.parms().plain_modulus().value()'))


def _t_note(ps: ParamSet) -> str:
    return ("plaintext modulus: a prime = 1 mod 2N, so batching fills all N slots" if ps.batching else
            "plaintext modulus (no batching: coefficient encoding)")


# ---------------------------------------------------------------- TenSEAL, as drivers/tenseal/driver.py

_TENSEAL = '''
${imports}

import tenseal as ts
import tenseal.sealapi  # noqa: F401  (registers SEAL's types, so the primes can be read back below)

context = ts.context(ts.SCHEME_TYPE.${kind}, poly_modulus_degree=${N},${plain}
                     coeff_mod_bit_sizes=${q} + ${p})  # ciphertext primes (level 0 first), then the special prime
${scale}
# What TenSEAL built (through the SEAL it bundles):
data = context.seal_context().data.key_context_data()
bits = [m.value().bit_length() for m in data.parms().coeff_modulus()]
print(json.dumps({"N": data.parms().poly_modulus_degree(), "q_bits": bits[:-1], "p_bits": bits[-1:],
                  ${reported},
                  "security": "tc128"}))  # ts.context always applies SEAL's 128-bit check and refuses what fails it
'''


def _tenseal(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if len(ps.p_bits) != 1:
        raise UserError(f"TenSEAL (SEAL) uses exactly one special prime, p_bits {list(ps.p_bits)} has {len(ps.p_bits)}",
                        "give p_bits with one entry")
    if not ps.batching:
        raise UserError("TenSEAL's BFV vectors always batch: t must be a prime = 1 mod 2N", "use t_bits or a batching t")
    ckks = scheme == "ckks"
    return _fill(_TENSEAL, kind=scheme.upper(), N=ps.N, q=list(ps.q_bits), p=list(ps.p_bits),
                 imports=_imports(ckks),
                 plain="" if ckks else f" plain_modulus={ps.t},",
                 scale=f"context.global_scale = 2 ** {ps.scale_bits}\n" if ckks else "",
                 reported=('"scale_bits": math.log2(context.global_scale)' if ckks else
                           '"t": data.parms().plain_modulus().value()'))


# ---------------------------------------------------------------- OpenFHE (openfhe-python), as drivers/openfhe/driver.py

_OPENFHE = '''
${imports}

import openfhe

parameters = openfhe.CCParams${kind}RNS()
parameters.SetRingDim(${N})
${chain}
parameters.SetKeySwitchTechnique(openfhe.HYBRID)
parameters.SetNumLargeDigits(${dnum})  # key-switching digits: OpenFHE makes P of 60-bit primes covering one digit
parameters.SetSecretKeyDist(openfhe.UNIFORM_TERNARY)
parameters.SetStandardDeviation(${sigma})
parameters.SetSecurityLevel(openfhe.${level})${level_note}
cc = openfhe.GenCryptoContext(parameters)
for feature in (openfhe.PKE, openfhe.KEYSWITCH, openfhe.LEVELEDSHE):
    cc.Enable(feature)
keys = cc.KeyGen()
cc.EvalMultKeyGen(keys.secretKey)


def moduli(obj) -> list:
    """OpenFHE's Python API has no getter for the RNS primes: read them from its JSON serialization."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("cm"), dict) and isinstance(node["cm"].get("v"), int):
                found.append(node["cm"]["v"])
            node = list(node.values())
        for child in node if isinstance(node, list) else ():
            walk(child)

    walk(json.loads(openfhe.Serialize(obj, openfhe.JSON)))
    return list(dict.fromkeys(found))


# What OpenFHE built:
q = moduli(cc)
p = [m for m in moduli(cc.GetEvalMultKeyVector(keys.secretKey.GetKeyTag())[0]) if m not in q]
print(json.dumps({"N": cc.GetRingDimension(), "q_bits": [m.bit_length() for m in q], "p_bits": [m.bit_length() for m in p],
                  ${reported}, "security": parameters.GetSecurityLevel().name}))
'''


_FIXEDMANUAL = "parameters.SetScalingTechnique(openfhe.FIXEDMANUAL)  # {what} when you call it, as SEAL and Lattigo do"


def _openfhe(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if not ps.batching:
        raise UserError("OpenFHE (as fhemark drives it) needs a batching t: a prime = 1 mod 2N", "use t_bits or a batching t")
    q = list(ps.q_bits)
    depth = f"parameters.SetMultiplicativeDepth({len(q) - 1})  # one level per prime above the first: q_bits {q}"
    upper = q[1:] or q
    if scheme == "bfv":
        note = (" (OpenFHE BFV uses one prime size for the whole chain)" if len(set(q)) > 1 else "")
        chain = ["# OpenFHE BFV sizes its chain from a noise estimate for this depth (the JSON line shows the primes)", depth,
                 f"parameters.SetScalingModSize({max(q)})  # the size of every prime{note}",
                 f"parameters.SetPlaintextModulus({ps.t})  # {_t_note(ps)}"]
    elif scheme == "bgv":
        note = " (OpenFHE BGV uses one size for all primes above level 0)" if len(set(upper)) > 1 else ""
        chain = [depth, _FIXEDMANUAL.format(what="mod-switch"), f"parameters.SetFirstModSize({q[0]})",
                 f"parameters.SetScalingModSize({max(upper)})  # primes above level 0{note}",
                 f"parameters.SetPlaintextModulus({ps.t})  # {_t_note(ps)}"]
    else:
        note = f" (q_bits {q} above level 0 become {ps.scale_bits}-bit)" if any(b != ps.scale_bits for b in q[1:]) else ""
        chain = [depth, _FIXEDMANUAL.format(what="rescale"),
                 f"parameters.SetFirstModSize({q[0]})",
                 f"parameters.SetScalingModSize({ps.scale_bits})  # the scale 2^{ps.scale_bits}; primes above level 0 are "
                 f"near it, some one bit above{note}",
                 f"parameters.SetBatchSize({ps.N // 2})"]
    p_note = "" if set(ps.p_bits) <= {60} else f"  (p_bits {list(ps.p_bits)} become 60-bit primes)"
    dnum = openfhe_dnum(q, list(ps.p_bits))
    return _fill(_OPENFHE, kind=scheme.upper(), N=ps.N, chain="\n".join(chain), dnum=f"{dnum}{p_note}",
                 sigma=ps.sigma, level="HEStd_NotSet" if insecure else "HEStd_128_classic",
                 level_note=_INSECURE_NOTE if insecure else "  # OpenFHE's 128-bit security check (HE standard tables)",
                 imports=_imports(scheme == "ckks"),
                 reported=('"scale_bits": math.log2(cc.GetScalingFactorReal(0))' if scheme == "ckks" else
                           '"t": cc.GetPlaintextModulus()'))


def openfhe_dnum(q_bits: list[int], p_bits: list[int]) -> int:
    """The OpenFHE driver's own digit-count rule, read from its file (drivers/openfhe/dnum.py: no
    imports, so it loads here without OpenFHE), so that a snippet builds what the driver builds."""
    path = project_root() / "drivers" / "openfhe" / "dnum.py"
    spec = importlib.util.spec_from_file_location("fhemark_openfhe_dnum", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.choose_dnum(q_bits, p_bits)


# ---------------------------------------------------------------- Lattigo v6, as drivers/lattigo/context.go

_LATTIGO = '''
package main

import (
	"encoding/json"
	"fmt"
	"math/bits"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/schemes/${pkg}"
)

func main() {
	const logN = ${logN}
	primes := primeSource(logN)
	params, err := ${pkg}.NewParametersFromLiteral(${pkg}.ParametersLiteral{
${fields}
	})
	check(err)

	kgen := rlwe.NewKeyGenerator(params)
	sk, pk := kgen.GenKeyPairNew()
	rlk := kgen.GenRelinearizationKeyNew(sk)
	encoder := ${pkg}.NewEncoder(params)
	encryptor := rlwe.NewEncryptor(params, pk)
	decryptor := rlwe.NewDecryptor(params, sk)
	evaluator := ${evaluator}
	// your computation goes here
	_, _, _, _ = encoder, encryptor, decryptor, evaluator

	// What Lattigo built (Lattigo has no security check of its own: "security" is null).
	out, err := json.Marshal(map[string]any{"N": params.N(), "q_bits": bitLens(params.Q()), "p_bits": bitLens(params.P()),
		${reported}, "log_qp": params.LogQP(), "security": nil})
	check(err)
	fmt.Println(string(out))
}

// primeSource hands out NTT-friendly primes (1 mod 2N) of exactly the asked bit sizes, downward from
// 2^b as SEAL's CoeffModulus.Create does (LogQ/LogP would alternate around 2^b: some b+1-bit primes).
func primeSource(logN int) func(sizes ...int) []uint64 {
	gens := map[int]*ring.NTTFriendlyPrimesGenerator{}
	return func(sizes ...int) (out []uint64) {
		for _, b := range sizes {
			if gens[b] == nil {
				g := ring.NewNTTFriendlyPrimesGenerator(uint64(b), uint64(2)<<logN)
				gens[b] = &g
			}
			p, err := gens[b].NextDownstreamPrime()
			check(err)
			out = append(out, p)
		}
		return out
	}
}

func bitLens(ps []uint64) (out []int) {
	for _, p := range ps {
		out = append(out, bits.Len64(p))
	}
	return out
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
'''


def _lattigo(scheme: str, ps: ParamSet, insecure: bool) -> str:
    if not ps.batching:
        raise UserError("Lattigo (as fhemark drives it) needs a batching t: a prime = 1 mod 2N", "use t_bits or a batching t")
    fields = [("LogN", "logN", f"N = {ps.N}"),
              ("Q", f"primes({', '.join(map(str, ps.q_bits))})", "ciphertext primes, level 0 first"),
              ("P", f"primes({', '.join(map(str, ps.p_bits))})", "key-switching primes")]
    if scheme == "ckks":
        pkg, reported = "ckks", '"scale_bits": params.LogDefaultScale()'
        fields.append(("LogDefaultScale", str(ps.scale_bits), f"the encoding scale 2^{ps.scale_bits}"))
        evaluator = "ckks.NewEvaluator(params, rlwe.NewMemEvaluationKeySet(rlk))"
    else:  # Lattigo v6 has no bfv package: BFV is the bgv scheme with scale-invariant multiplication
        pkg, reported = "bgv", '"t": params.PlaintextModulus()'
        fields.append(("PlaintextModulus", str(ps.t), _t_note(ps)))
        evaluator = (f"bgv.NewEvaluator(params, rlwe.NewMemEvaluationKeySet(rlk), {'true' if scheme == 'bfv' else 'false'})"
                     f" // {'true: BFV (scale-invariant)' if scheme == 'bfv' else 'false: BGV'} multiplication")
    return _fill(_LATTIGO, pkg=pkg, logN=ps.N.bit_length() - 1, fields=_go_fields(fields), evaluator=evaluator,
                 reported=reported)


def _go_fields(fields: list[tuple[str, str, str]]) -> str:
    """Composite-literal lines `Key: value, // comment`, aligned as gofmt aligns them."""
    key_w = max(len(k) for k, _, _ in fields) + 2
    value_w = max(len(v) for _, v, _ in fields) + 2
    return "\n".join(f"\t\t{k + ':':<{key_w}}{v + ',':<{value_w}}// {c}" for k, v, c in fields)


# ---------------------------------------------------------------- TFHE-rs 1.8.2, as drivers/tfhe/src

BOOL_DEFAULT = "DEFAULT_PARAMETERS"
SHORTINT_DEFAULT = "V1_8_PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128"  # what ConfigBuilder::default() uses in 1.8.2
_SHORTINT_UNVERSIONED = ("PARAM_MESSAGE_2_CARRY_2", "PARAM_MESSAGE_2_CARRY_2_KS_PBS")  # aliases with no V1_8_ twin

_TFHE_REPORT = '''
fn report(name: &str, p: AtomicPatternParameters, extra: &str) {
    let (message, carry) = (p.message_modulus().0, p.carry_modulus().0);
    print!(r#"{{"preset": "{name}", "message_modulus": {message}, "carry_modulus": {carry}, "#);
    print!(r#""polynomial_size": {}, "lwe_dimension": {}, "#, p.polynomial_size().0, p.lwe_dimension().0);
    println!(r#""glwe_dimension": {}, "log2_p_fail": {}{extra}}}"#, p.glwe_dimension().0, p.log2_p_fail());
}
'''

_TFHE_INT = '''
use tfhe::integer::prelude::IntegerCiphertext;
use tfhe::prelude::*;
use tfhe::shortint::AtomicPatternParameters;
use ${path} as PARAMS;
use tfhe::{generate_keys, set_server_key, ConfigBuilder, ${ty}};

fn main() {
    // The preset's block parameters, without the dedicated OPRF key ConfigBuilder adds by default
    // (a second bootstrapping key that the integer operations never use).
    let config = ConfigBuilder::with_custom_parameters(PARAMS).use_dedicated_oprf_key(false).build();
    let (client_key, server_key) = generate_keys(config);
    set_server_key(server_key);

    let x = ${ty}::encrypt(1${rust_int}, &client_key); // your computation goes here
    let clear: ${rust_int} = x.decrypt(&client_key);
    assert_eq!(clear, 1);

    // What TFHE-rs built:
    let blocks = x.into_raw_parts().0.blocks().len();
    let extra = format!(r#", "bits": {}, "num_blocks": {blocks}"#, ${ty}::num_bits());
    report("${name}", client_key.computation_parameters(), &extra);
}
'''

_TFHE_SHORTINT = '''
use tfhe::shortint::{AtomicPatternParameters, ClientKey, ServerKey};
use ${path} as PARAMS;

fn main() {
    let params: AtomicPatternParameters = PARAMS.into();
    let client_key = ClientKey::new(params);
    let server_key = ServerKey::new(&client_key);

    let x = client_key.encrypt(1); // your computation goes here
    let y = server_key.unchecked_add(&x, &x);
    assert_eq!(client_key.decrypt(&y), 2);

    // What TFHE-rs built:
    report("${name}", params, "");
}
'''

_TFHE_BOOL = '''
use tfhe::boolean::client_key::ClientKey;
use tfhe::boolean::server_key::{BinaryBooleanGates, ServerKey};
use ${path} as PARAMS;

fn main() {
    let client_key = ClientKey::new(&PARAMS);
    let server_key = ServerKey::new(&client_key);

    let a = client_key.encrypt(true); // your computation goes here
    let b = client_key.encrypt(false);
    assert!(client_key.decrypt(&server_key.xor(&a, &b)));

    // What TFHE-rs built: the boolean keys carry one bit per ciphertext.
    print!(r#"{{"preset": "${name}", "message_modulus": 2, "carry_modulus": 1, "#);
    print!(r#""polynomial_size": {}, "lwe_dimension": {}, "#, PARAMS.polynomial_size.0, PARAMS.lwe_dimension.0);
    println!(r#""glwe_dimension": {}}}"#, PARAMS.glwe_dimension.0);
}
'''


def tfhe_preset(scheme: str, preset: str | None) -> tuple[str, str]:
    """(the constant's name, its Rust path) for a preset name as the driver resolves it
    (drivers/tfhe/src/presets.rs): 'default', a versioned V1_8_ name, the same without V1_8_, an alias."""
    name = preset or "default"
    if scheme == "tfhe_bool":
        name = BOOL_DEFAULT if name == "default" else name
        return name, f"tfhe::boolean::parameters::{name}"
    if name == "default":
        name = SHORTINT_DEFAULT
    if name in _SHORTINT_UNVERSIONED:
        return name, f"tfhe::shortint::parameters::{name}"
    name = name if name.startswith("V1_8_") else f"V1_8_{name}"
    return name, f"tfhe::shortint::parameters::v1_8::{name}"


def _tfhe(scheme: str, ps: ParamSet, insecure: bool) -> str:
    name, path = tfhe_preset(scheme, ps.preset)
    if scheme == "tfhe_bool":
        return _fill(_TFHE_BOOL, name=name, path=path)
    if scheme == "tfhe_shortint":
        return _fill(_TFHE_SHORTINT, name=name, path=path) + _TFHE_REPORT
    return _fill(_TFHE_INT, name=name, path=path, ty=f"FheUint{ps.bits}", rust_int=f"u{ps.bits}") + _TFHE_REPORT


_BUILDERS = {"seal": _seal, "openfhe": _openfhe, "tenseal": _tenseal, "lattigo": _lattigo, "tfhe-rs": _tfhe}


def parse_report(stdout: str) -> dict:
    """The JSON line a snippet prints (the last line that parses as a JSON object)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError(f"no JSON line in the snippet's output: {stdout[-500:]!r}")
