//! Named TFHE-rs parameter sets ("presets") and their effective description.

use serde_json::{json, Value};
use tfhe::boolean::parameters::{self as bp, BooleanParameters};
use tfhe::shortint::parameters::{self as sp, current_params as cur};
use tfhe::shortint::parameters::DynamicDistribution;
use tfhe::shortint::AtomicPatternParameters;

/// Boolean presets: (name, parameters, log2 p_fail as stated in the
/// library's source comments for that set, None where it states none).
pub const BOOL_PRESETS: [(&str, BooleanParameters, Option<f64>); 5] = [
    ("DEFAULT_PARAMETERS", bp::DEFAULT_PARAMETERS, Some(-64.344)),
    ("DEFAULT_PARAMETERS_KS_PBS", bp::DEFAULT_PARAMETERS_KS_PBS, Some(-64.017)),
    (
        "PARAMETERS_ERROR_PROB_2_POW_MINUS_165",
        bp::PARAMETERS_ERROR_PROB_2_POW_MINUS_165,
        Some(-165.434),
    ),
    (
        "PARAMETERS_ERROR_PROB_2_POW_MINUS_165_KS_PBS",
        bp::PARAMETERS_ERROR_PROB_2_POW_MINUS_165_KS_PBS,
        Some(-166.826),
    ),
    ("TFHE_LIB_PARAMETERS", bp::TFHE_LIB_PARAMETERS, None),
];

/// What `boolean::gen_keys()` uses.
pub const BOOL_DEFAULT: &str = "DEFAULT_PARAMETERS";
/// What `ConfigBuilder::default()` (high-level API, CPU) and the
/// `PARAM_MESSAGE_2_CARRY_2_KS_PBS` alias resolve to in this version, and the
/// prefix of this version's parameter names (`current_params`). build.sh
/// names the other version's when it builds against one (tfhe-rs@1.7.2: V1_7_).
pub const SHORTINT_DEFAULT: &str = match option_env!("FHEMARK_TFHE_SHORTINT_DEFAULT") {
    Some(n) => n,
    None => "V1_8_PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128",
};
pub const PARAMS_PREFIX: &str = match option_env!("FHEMARK_TFHE_PARAMS_PREFIX") {
    Some(p) => p,
    None => "V1_8_",
};

pub fn bool_preset(name: &str) -> Option<(&'static str, BooleanParameters, Option<f64>)> {
    let name = if name == "default" { BOOL_DEFAULT } else { name };
    BOOL_PRESETS.iter().find(|p| p.0 == name).copied()
}

/// All shortint/integer presets of the current parameter module (v1_8),
/// by their versioned name.
pub fn shortint_presets() -> Vec<(&'static str, AtomicPatternParameters)> {
    let mut v: Vec<(&'static str, AtomicPatternParameters)> = Vec::new();
    for (p, n) in cur::VEC_ALL_CLASSIC_PBS_PARAMETERS.iter() {
        v.push((n, (**p).into()));
    }
    for (p, n) in cur::VEC_ALL_MULTI_BIT_PBS_PARAMETERS.iter() {
        v.push((n, (**p).into()));
    }
    for (p, n) in cur::VEC_ALL_KS32_PARAMETERS.iter() {
        v.push((n, (**p).into()));
    }
    v
}

/// Unversioned aliases exported by `tfhe::shortint::parameters`.
fn alias(name: &str) -> Option<AtomicPatternParameters> {
    Some(match name {
        "PARAM_MESSAGE_2_CARRY_2" => sp::PARAM_MESSAGE_2_CARRY_2.into(),
        "PARAM_MESSAGE_2_CARRY_2_KS_PBS" => sp::PARAM_MESSAGE_2_CARRY_2_KS_PBS.into(),
        "PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128" => {
            sp::PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128.into()
        }
        "PARAM_MESSAGE_2_CARRY_2_KS_PBS_GAUSSIAN_2M128" => {
            sp::PARAM_MESSAGE_2_CARRY_2_KS_PBS_GAUSSIAN_2M128.into()
        }
        "PARAM_MESSAGE_3_CARRY_3_KS_PBS_GAUSSIAN_2M128" => {
            sp::PARAM_MESSAGE_3_CARRY_3_KS_PBS_GAUSSIAN_2M128.into()
        }
        "PARAM_MESSAGE_2_CARRY_2_KS32_PBS_TUNIFORM_2M128" => {
            sp::PARAM_MESSAGE_2_CARRY_2_KS32_PBS_TUNIFORM_2M128.into()
        }
        _ => return None,
    })
}

/// Resolves a shortint/integer preset name: "default", a versioned name
/// (`V1_8_PARAM_...`), the same without the `V1_8_` prefix, or an alias.
/// Returns the canonical (versioned) name where one is known.
pub fn shortint_preset(name: &str) -> Option<(String, AtomicPatternParameters)> {
    let name = if name == "default" { SHORTINT_DEFAULT } else { name };
    let all = shortint_presets();
    if let Some((n, p)) = all.iter().find(|(n, _)| *n == name) {
        return Some((n.to_string(), *p));
    }
    let prefixed = format!("{PARAMS_PREFIX}{name}");
    if let Some((n, p)) = all.iter().find(|(n, _)| **n == prefixed) {
        return Some((n.to_string(), *p));
    }
    let p = alias(name)?;
    // Name the alias by the versioned set it equals, where there is one.
    let canonical = all
        .iter()
        .find(|(_, q)| *q == p)
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| name.to_string());
    Some((canonical, p))
}

/// "gaussian(std=...)" (std relative to the ciphertext modulus) or
/// "tuniform(bound_log2=...)".
fn noise<T: tfhe::core_crypto::prelude::UnsignedInteger>(d: &DynamicDistribution<T>) -> String {
    match d {
        DynamicDistribution::Gaussian(g) => format!("gaussian(std={:e})", g.std),
        DynamicDistribution::TUniform(t) => format!("tuniform(bound_log2={})", t.bound_log2()),
    }
}

/// One LWE problem (protocol/PROTOCOL.md "lwe_problems"): a binary secret of dimension `n` modulo
/// 2^log_q, with the noise of what is encrypted under it in absolute terms (TFHE-rs states a
/// Gaussian's std relative to the modulus); key-switching and bootstrapping keys give an attacker
/// as many samples as it wants.
fn problem<T: tfhe::core_crypto::prelude::UnsignedInteger>(
    name: String,
    n: usize,
    log_q: i32,
    d: &DynamicDistribution<T>,
) -> Value {
    let mut p = json!({"name": name, "n": n, "log_q": log_q, "secret": "binary"});
    match d {
        DynamicDistribution::Gaussian(g) => p["noise_std"] = json!(g.std * 2f64.powi(log_q)),
        DynamicDistribution::TUniform(t) => p["noise_bound_log2"] = json!(t.bound_log2()),
    }
    p
}

/// The LWE key and the GLWE key (as LWE of dimension k*N) a set rests on.
fn problems<T: tfhe::core_crypto::prelude::UnsignedInteger>(
    n: usize,
    k: usize,
    big_n: usize,
    log_q: i32,
    lwe: &DynamicDistribution<T>,
    glwe: &DynamicDistribution<T>,
) -> Value {
    json!([
        problem(format!("LWE (n={n})"), n, log_q, lwe),
        problem(format!("GLWE (k*N={})", k * big_n), k * big_n, log_q, glwe),
    ])
}

pub fn bool_effective(name: &str, p: &BooleanParameters, p_fail: Option<f64>) -> Value {
    json!({
        "preset": name,
        "lwe_dimension": p.lwe_dimension.0,
        "glwe_dimension": p.glwe_dimension.0,
        "polynomial_size": p.polynomial_size.0,
        "pbs_base_log": p.pbs_base_log.0,
        "pbs_level": p.pbs_level.0,
        "ks_base_log": p.ks_base_log.0,
        "ks_level": p.ks_level.0,
        "encryption_key_choice": format!("{:?}", p.encryption_key_choice),
        "lwe_noise": noise(&p.lwe_noise_distribution),
        "glwe_noise": noise(&p.glwe_noise_distribution),
        // Boolean ciphertexts are u32 (the native modulus 2^32).
        "lwe_problems": problems(p.lwe_dimension.0, p.glwe_dimension.0, p.polynomial_size.0, 32,
                                 &p.lwe_noise_distribution, &p.glwe_noise_distribution),
        "message_modulus": 2,
        "carry_modulus": 1,
        "p_fail": p_fail,
        "p_fail_source": if p_fail.is_some() { "library source comment" } else { "not stated by the library" },
        // The library documents TFHE_LIB_PARAMETERS as "currently around 120 bits".
        "security_bits_target": if name == "TFHE_LIB_PARAMETERS" { 120 } else { 128 },
    })
}

pub fn shortint_effective(name: &str, p: &AtomicPatternParameters) -> Value {
    let multi_bit = match p {
        AtomicPatternParameters::Standard(sp::PBSParameters::MultiBitPBS(m)) => {
            Some(m.grouping_factor.0)
        }
        _ => None,
    };
    json!({
        "preset": name,
        "atomic_pattern": format!("{:?}", p.atomic_pattern()),
        "lwe_dimension": p.lwe_dimension().0,
        "glwe_dimension": p.glwe_dimension().0,
        "polynomial_size": p.polynomial_size().0,
        "pbs_base_log": p.pbs_base_log().0,
        "pbs_level": p.pbs_level().0,
        "ks_base_log": p.ks_base_log().0,
        "ks_level": p.ks_level().0,
        "multi_bit_grouping_factor": multi_bit,
        "encryption_key_choice": format!("{:?}", p.encryption_key_choice()),
        "lwe_noise": noise(&p.lwe_noise_distribution()),
        "glwe_noise": noise(&p.glwe_noise_distribution()),
        // Shortint/integer ciphertexts are u64 (the sets here use the native modulus 2^64).
        "lwe_problems": problems(p.lwe_dimension().0, p.glwe_dimension().0, p.polynomial_size().0, 64,
                                 &p.lwe_noise_distribution(), &p.glwe_noise_distribution()),
        "message_modulus": p.message_modulus().0,
        "carry_modulus": p.carry_modulus().0,
        "p_fail": p.log2_p_fail(),
        "p_fail_source": "parameter set (log2_p_fail)",
        "security_bits_target": 128,
    })
}
