"""TFHE-rs's parameter snippet (Rust): the named parameter set of the scheme's API (boolean, shortint,
integer), as this driver's src/presets.rs resolves it.

Loaded by fhemark's snippets (src/fhemark/advise/snippets) from this folder: `build(scheme, params,
insecure)` returns the program's text. It runs in fhemark's process, never in the driver's."""

from __future__ import annotations

from fhemark.advise.snippets.common import fill
from fhemark.model.params import ParamSet


FEATURES = ("boolean", "shortint", "integer")  # the tfhe crate features a snippet project enables
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


def constant(scheme: str, preset: str | None) -> tuple[str, str]:
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


def build(scheme: str, ps: ParamSet, insecure: bool) -> str:
    name, path = constant(scheme, ps.preset)
    if scheme == "tfhe_bool":
        return fill(_TFHE_BOOL, name=name, path=path)
    if scheme == "tfhe_shortint":
        return fill(_TFHE_SHORTINT, name=name, path=path) + _TFHE_REPORT
    return fill(_TFHE_INT, name=name, path=path, ty=f"FheUint{ps.bits}", rust_int=f"u{ps.bits}") + _TFHE_REPORT
