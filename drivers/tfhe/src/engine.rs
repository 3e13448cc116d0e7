//! Setups, values and the program interpreter.

use crate::netlist::{self, GateKind, Gates, Netlist};
use crate::presets;
use crate::wire::{decode_vec, encode_vec, internal, invalid_params, unsupported, DErr, DResult};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use tfhe::boolean::parameters::BooleanParameters;
use tfhe::boolean::server_key::BinaryBooleanGates;
use tfhe::prelude::*;
use tfhe::shortint::parameters::AtomicPatternParameters;
use tfhe::shortint::server_key::LookupTableOwned;
use tfhe::{
    CompressedFheUint16, CompressedFheUint32, CompressedFheUint64, CompressedFheUint8, FheBool,
    FheUint16, FheUint32, FheUint64, FheUint8,
};

type BoolCt = tfhe::boolean::ciphertext::Ciphertext;
type ShortCt = tfhe::shortint::Ciphertext;

// ---------------------------------------------------------------- schemes

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Bool,
    Short,
    Int,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Bool => "tfhe_bool",
            Scheme::Short => "tfhe_shortint",
            Scheme::Int => "tfhe_int",
        }
    }

    fn parse(s: &str) -> DResult<Scheme> {
        Ok(match s {
            "tfhe_bool" => Scheme::Bool,
            "tfhe_shortint" => Scheme::Short,
            "tfhe_int" => Scheme::Int,
            other => {
                return Err(unsupported(format!(
                    "scheme '{other}' (tfhe-rs driver has tfhe_bool, tfhe_shortint, tfhe_int)"
                )))
            }
        })
    }
}

pub const BOOL_OPS: [&str; 12] = [
    "keygen", "encrypt_sk", "decrypt", "and", "or", "xor", "nand", "nor", "xnor", "not", "mux",
    "netlist",
];
pub const SHORT_OPS: [&str; 6] = ["keygen", "encrypt_sk", "decrypt", "short_add", "short_mul", "pbs"];
pub const INT_OPS: [&str; 12] = [
    "keygen", "encrypt_sk", "decrypt", "int_add", "int_sub", "int_mul", "int_gt", "int_ge",
    "int_lt", "int_eq", "int_min", "int_max",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Keygen,
    Encrypt,
    Decrypt,
    Gate(GateKind),
    Netlist,
    ShortAdd,
    ShortMul,
    Pbs,
    IntAdd,
    IntSub,
    IntMul,
    IntGt,
    IntGe,
    IntLt,
    IntEq,
    IntMin,
    IntMax,
}

fn parse_op(scheme: Scheme, name: &str) -> DResult<Op> {
    let ok = match scheme {
        Scheme::Bool => BOOL_OPS.contains(&name),
        Scheme::Short => SHORT_OPS.contains(&name),
        Scheme::Int => INT_OPS.contains(&name),
    };
    if !ok {
        return Err(unsupported(format!("op '{name}' for scheme {} in the tfhe-rs driver", scheme.name())));
    }
    Ok(match name {
        "keygen" => Op::Keygen,
        "encrypt_sk" => Op::Encrypt,
        "decrypt" => Op::Decrypt,
        "netlist" => Op::Netlist,
        "short_add" => Op::ShortAdd,
        "short_mul" => Op::ShortMul,
        "pbs" => Op::Pbs,
        "int_add" => Op::IntAdd,
        "int_sub" => Op::IntSub,
        "int_mul" => Op::IntMul,
        "int_gt" => Op::IntGt,
        "int_ge" => Op::IntGe,
        "int_lt" => Op::IntLt,
        "int_eq" => Op::IntEq,
        "int_min" => Op::IntMin,
        "int_max" => Op::IntMax,
        g => Op::Gate(netlist::gate_arity(g).expect("listed gate").0),
    })
}

#[derive(Clone, Copy, Debug)]
enum Params {
    Bool(BooleanParameters),
    Short(AtomicPatternParameters),
    Int(AtomicPatternParameters, u32),
}

pub enum Keys {
    Bool {
        ck: tfhe::boolean::client_key::ClientKey,
        sk: tfhe::boolean::server_key::ServerKey,
    },
    Short {
        ck: tfhe::shortint::ClientKey,
        sk: tfhe::shortint::ServerKey,
    },
    Int {
        ck: tfhe::ClientKey,
        sk: tfhe::ServerKey,
        bits: u32,
    },
}

fn keygen(p: &Params) -> Keys {
    match p {
        Params::Bool(bp) => {
            let ck = tfhe::boolean::client_key::ClientKey::new(bp);
            let sk = tfhe::boolean::server_key::ServerKey::new(&ck);
            Keys::Bool { ck, sk }
        }
        Params::Short(ap) => {
            let ck = tfhe::shortint::ClientKey::new(*ap);
            let sk = tfhe::shortint::ServerKey::new(&ck);
            Keys::Short { ck, sk }
        }
        Params::Int(ap, bits) => {
            let config = tfhe::ConfigBuilder::with_custom_parameters(*ap).build();
            let (ck, sk) = tfhe::generate_keys(config);
            Keys::Int { ck, sk, bits: *bits }
        }
    }
}

struct Setup {
    scheme: Scheme,
    params: Params,
    keys: Arc<Keys>,
}

// ---------------------------------------------------------------- values

enum IntVec {
    U8(Vec<FheUint8>),
    U16(Vec<FheUint16>),
    U32(Vec<FheUint32>),
    U64(Vec<FheUint64>),
}

impl IntVec {
    fn len(&self) -> usize {
        match self {
            IntVec::U8(v) => v.len(),
            IntVec::U16(v) => v.len(),
            IntVec::U32(v) => v.len(),
            IntVec::U64(v) => v.len(),
        }
    }
}

enum Val {
    Vec(Vec<u64>),
    Bool(Vec<BoolCt>),
    Short(Vec<ShortCt>),
    Int(IntVec),
    IntBool(Vec<FheBool>),
    Key(Arc<Keys>),
}

impl Val {
    fn kind(&self) -> &'static str {
        match self {
            Val::Vec(_) => "vec",
            Val::Bool(_) => "bit array",
            Val::Short(_) => "shortint array",
            Val::Int(_) => "integer array",
            Val::IntBool(_) => "encrypted boolean array",
            Val::Key(_) => "key",
        }
    }
}

fn ser_size<T: Serialize>(x: &T) -> u64 {
    bincode::serialized_size(x).unwrap_or(0)
}

fn sum_sizes<T: Serialize>(v: &[T]) -> u64 {
    v.iter().map(ser_size).sum()
}

fn val_size(v: &Val) -> u64 {
    match v {
        Val::Vec(x) => 8 * x.len() as u64,
        Val::Bool(x) => sum_sizes(x),
        Val::Short(x) => sum_sizes(x),
        Val::Int(IntVec::U8(x)) => sum_sizes(x),
        Val::Int(IntVec::U16(x)) => sum_sizes(x),
        Val::Int(IntVec::U32(x)) => sum_sizes(x),
        Val::Int(IntVec::U64(x)) => sum_sizes(x),
        Val::IntBool(x) => sum_sizes(x),
        Val::Key(k) => match &**k {
            Keys::Bool { sk, .. } => ser_size(sk),
            Keys::Short { sk, .. } => ser_size(sk),
            Keys::Int { sk, .. } => ser_size(sk),
        },
    }
}

// ---------------------------------------------------------------- gate backend

struct CtGates<'a>(&'a tfhe::boolean::server_key::ServerKey);

impl Gates for CtGates<'_> {
    type T = BoolCt;
    fn constant(&self, b: bool) -> BoolCt {
        self.0.trivial_encrypt(b)
    }
    fn not(&self, a: &BoolCt) -> BoolCt {
        self.0.not(a)
    }
    fn binary(&self, kind: GateKind, a: &BoolCt, b: &BoolCt) -> BoolCt {
        let s = self.0;
        match kind {
            GateKind::And => s.and(a, b),
            GateKind::Or => s.or(a, b),
            GateKind::Xor => s.xor(a, b),
            GateKind::Nand => s.nand(a, b),
            GateKind::Nor => s.nor(a, b),
            GateKind::Xnor => s.xnor(a, b),
            _ => unreachable!("not a binary gate"),
        }
    }
    fn mux(&self, sel: &BoolCt, a: &BoolCt, b: &BoolCt) -> BoolCt {
        self.0.mux(sel, a, b)
    }
}

// ---------------------------------------------------------------- program

struct Step {
    out: String,
    op: Op,
    args: Vec<String>,
    attrs: Map<String, Value>,
    /// Parsed once per request when the attr is not a `$scalar`.
    static_net: Option<Arc<Netlist>>,
}

/// What a step needs besides its argument values, resolved outside the
/// timed region.
enum Extra {
    None,
    Lut(Arc<LookupTableOwned>),
    Net(Arc<Netlist>),
}

fn resolve_attr<'a>(v: &'a Value, scalars: &'a Map<String, Value>) -> DResult<&'a Value> {
    if let Some(s) = v.as_str() {
        if let Some(name) = s.strip_prefix('$') {
            return scalars
                .get(name)
                .ok_or_else(|| internal(format!("attr refers to scalar '${name}', which the sample lacks")));
        }
    }
    Ok(v)
}

fn is_scalar_ref(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with('$'))
}

#[inline(never)]
fn timed<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let t0 = Instant::now();
    let r = f();
    let ns = t0.elapsed().as_nanos() as u64;
    (r, ns)
}

fn overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..101).map(|_| timed(|| black_box(())).1).collect();
    v.sort_unstable();
    v[50]
}

type Env = HashMap<String, Val>;

fn lookup<'a>(env: &'a Env, inputs: &'a Env, name: &str) -> DResult<&'a Val> {
    env.get(name)
        .or_else(|| inputs.get(name))
        .ok_or_else(|| internal(format!("unknown value '{name}' (not an input nor an earlier step)")))
}

pub struct Driver {
    threads: usize,
    setups: HashMap<String, Setup>,
    /// Keys currently installed as the high-level API server key on this
    /// thread (kept alive so that the pointer comparison stays valid).
    hl_current: Option<Arc<Keys>>,
}

impl Driver {
    pub fn new(threads: usize) -> Driver {
        Driver { threads, setups: HashMap::new(), hl_current: None }
    }

    /// After a panic the thread-local server key may be in any state.
    pub fn after_panic(&mut self) {
        self.hl_current = None;
    }

    pub fn handle(&mut self, req: &Value) -> DResult<Value> {
        if let Some(v) = req.get("v") {
            if v.as_u64() != Some(1) {
                return Err(internal(format!("protocol version {v} not supported (driver speaks 1)")));
            }
        }
        let ty = req
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| internal("request has no type"))?;
        match ty {
            "capabilities" => Ok(self.capabilities()),
            "setup" => self.setup(req),
            "run" => self.run(req),
            "shutdown" => Ok(json!({})),
            other => Err(unsupported(format!("request type '{other}'"))),
        }
    }

    fn capabilities(&self) -> Value {
        let shortint_names: Vec<&str> = presets::shortint_presets().iter().map(|p| p.0).collect();
        let bool_names: Vec<&str> = presets::BOOL_PRESETS.iter().map(|p| p.0).collect();
        let rustc = option_env!("FHEMARK_RUSTC_VERSION").unwrap_or("unknown");
        #[cfg(target_arch = "x86_64")]
        let cpu = json!({
            "avx2": std::is_x86_feature_detected!("avx2"),
            "avx512f": std::is_x86_feature_detected!("avx512f"),
            "aes": std::is_x86_feature_detected!("aes"),
        });
        #[cfg(not(target_arch = "x86_64"))]
        let cpu = json!({});
        json!({
            "protocol": 1,
            "extensions": ["bits"],
            "library": "tfhe-rs",
            "library_version": crate::TFHE_VERSION,
            "driver_version": crate::DRIVER_VERSION,
            "build": {
                "binding": format!("tfhe crate ={} (Rust, crates.io)", crate::TFHE_VERSION),
                "features": "boolean,shortint,integer + default (avx512, dispatched at run time)",
                "rustc": rustc,
                "profile": "release",
                "cpu_features_detected": cpu,
                "compression": "sizes are bincode 1.3.3 (serde) serializations; uncompressed unless the key name says compressed (TFHE-rs seeded compression)",
                "parallelism": "rayon global pool of `threads`; gate/shortint arrays and netlist levels are split over the pool when threads > 1",
            },
            "threads": self.threads,
            "schemes": {
                "tfhe_bool": {"ops": BOOL_OPS, "limits": {"presets": bool_names, "default_preset": presets::BOOL_DEFAULT, "netlist_max_wire": netlist::MAX_WIRE}},
                "tfhe_shortint": {"ops": SHORT_OPS, "limits": {"presets": shortint_names, "default_preset": presets::SHORTINT_DEFAULT}},
                "tfhe_int": {"ops": INT_OPS, "limits": {"bits": [8, 16, 32, 64], "presets": shortint_names, "default_preset": presets::SHORTINT_DEFAULT}},
            }
        })
    }

    fn setup(&mut self, req: &Value) -> DResult<Value> {
        let setup_id = req
            .get("setup_id")
            .and_then(Value::as_str)
            .ok_or_else(|| internal("setup: missing setup_id"))?
            .to_string();
        let scheme = Scheme::parse(req.get("scheme").and_then(Value::as_str).unwrap_or(""))?;
        let empty = Map::new();
        let params = req.get("params").and_then(Value::as_object).unwrap_or(&empty);
        let preset = match params.get("preset") {
            None | Some(Value::Null) => "default",
            Some(Value::String(s)) => s.as_str(),
            Some(v) => return Err(invalid_params(format!("params.preset must be a string, got {v}"))),
        };
        // Drop an older setup of the same id first (frees its keys).
        self.setups.remove(&setup_id);
        self.hl_current = None;

        let (p, mut effective) = match scheme {
            Scheme::Bool => {
                let (name, bp, pf) = presets::bool_preset(preset).ok_or_else(|| {
                    invalid_params(format!("unknown tfhe_bool preset '{preset}' (see capabilities)"))
                })?;
                (Params::Bool(bp), presets::bool_effective(name, &bp, pf))
            }
            Scheme::Short | Scheme::Int => {
                let (name, ap) = presets::shortint_preset(preset).ok_or_else(|| {
                    invalid_params(format!("unknown TFHE-rs shortint parameter set '{preset}' (see capabilities)"))
                })?;
                let eff = presets::shortint_effective(&name, &ap);
                if scheme == Scheme::Short {
                    (Params::Short(ap), eff)
                } else {
                    let bits = params.get("bits").and_then(Value::as_u64).unwrap_or(0);
                    if ![8, 16, 32, 64].contains(&bits) {
                        return Err(invalid_params(format!(
                            "tfhe_int needs params.bits in 8, 16, 32, 64 (got {})",
                            params.get("bits").unwrap_or(&Value::Null)
                        )));
                    }
                    let msg_bits = ap.message_modulus().0.trailing_zeros() as u64;
                    if msg_bits == 0 || bits % msg_bits != 0 {
                        return Err(invalid_params(format!(
                            "{bits}-bit integers cannot be split into blocks of {msg_bits} message bits"
                        )));
                    }
                    let mut eff = eff;
                    eff["bits"] = json!(bits);
                    eff["num_blocks"] = json!(bits / msg_bits);
                    eff["api"] = json!(format!("high-level FheUint{bits}"));
                    (Params::Int(ap, bits as u32), eff)
                }
            }
        };
        effective["preset_requested"] = json!(preset);

        let keys = Arc::new(keygen(&p));
        let sizes = match (&*keys, &p) {
            (Keys::Bool { ck, sk }, _) => json!({
                "client_key": ser_size(ck),
                "server_key": ser_size(sk),
                "compressed_server_key": ser_size(&tfhe::boolean::server_key::CompressedServerKey::new(ck)),
                "ciphertext": ser_size(&ck.encrypt(true)),
                "compressed_ciphertext": ser_size(&ck.encrypt_compressed(true)),
            }),
            (Keys::Short { ck, sk }, _) => json!({
                "client_key": ser_size(ck),
                "server_key": ser_size(sk),
                "compressed_server_key": ser_size(&tfhe::shortint::CompressedServerKey::new(ck)),
                "ciphertext": ser_size(&ck.encrypt(1)),
                "compressed_ciphertext": ser_size(&ck.encrypt_compressed(1)),
            }),
            (Keys::Int { ck, sk, bits }, _) => {
                let (ct, cct) = match bits {
                    8 => (ser_size(&FheUint8::encrypt(1u8, ck)), ser_size(&CompressedFheUint8::encrypt(1u8, ck))),
                    16 => (ser_size(&FheUint16::encrypt(1u16, ck)), ser_size(&CompressedFheUint16::encrypt(1u16, ck))),
                    32 => (ser_size(&FheUint32::encrypt(1u32, ck)), ser_size(&CompressedFheUint32::encrypt(1u32, ck))),
                    _ => (ser_size(&FheUint64::encrypt(1u64, ck)), ser_size(&CompressedFheUint64::encrypt(1u64, ck))),
                };
                json!({
                    "client_key": ser_size(ck),
                    "server_key": ser_size(sk),
                    "compressed_server_key": ser_size(&tfhe::CompressedServerKey::new(ck)),
                    "ciphertext": ct,
                    "compressed_ciphertext": cct,
                })
            }
        };
        self.setups.insert(setup_id, Setup { scheme, params: p, keys });
        Ok(json!({"effective": effective, "sizes_bytes": sizes}))
    }

    fn run(&mut self, req: &Value) -> DResult<Value> {
        let setup_id = req
            .get("setup_id")
            .and_then(Value::as_str)
            .ok_or_else(|| internal("run: missing setup_id"))?;
        let setup = self
            .setups
            .get(setup_id)
            .ok_or_else(|| internal(format!("run: unknown setup_id '{setup_id}'")))?;
        let scheme = setup.scheme;
        let params = setup.params;
        let std_keys = setup.keys.clone();
        let program = req.get("program").ok_or_else(|| internal("run: missing program"))?;
        let steps_json = program
            .get("steps")
            .and_then(Value::as_array)
            .ok_or_else(|| internal("program.steps must be an array"))?;
        let names = |k: &str| -> DResult<Vec<String>> {
            match program.get(k) {
                None | Some(Value::Null) => Ok(vec![]),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_string).ok_or_else(|| internal(format!("program.{k} must list names"))))
                    .collect(),
                Some(_) => Err(internal(format!("program.{k} must be an array"))),
            }
        };
        let timed_names = names("timed")?;
        let output_names = names("outputs")?;
        let size_names = names("sizes")?;
        let noise_names = names("noise")?;
        let level_names = names("levels")?;

        let mut steps = Vec::with_capacity(steps_json.len());
        for (i, s) in steps_json.iter().enumerate() {
            let out = s
                .get("out")
                .and_then(Value::as_str)
                .ok_or_else(|| internal(format!("step {i}: missing out")))?
                .to_string();
            let opname = s
                .get("op")
                .and_then(Value::as_str)
                .ok_or_else(|| internal(format!("step {i}: missing op")))?;
            let op = parse_op(scheme, opname)?;
            let args = match s.get("args") {
                None | Some(Value::Null) => vec![],
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_string).ok_or_else(|| internal(format!("step {i}: args must be names"))))
                    .collect::<DResult<Vec<_>>>()?,
                Some(_) => return Err(internal(format!("step {i}: args must be an array"))),
            };
            let attrs = s.get("attrs").and_then(Value::as_object).cloned().unwrap_or_default();
            let mut static_net = None;
            if op == Op::Netlist {
                let nv = attrs
                    .get("netlist")
                    .ok_or_else(|| internal(format!("step {i}: netlist op needs attr 'netlist'")))?;
                if !is_scalar_ref(nv) {
                    static_net = Some(Arc::new(
                        Netlist::parse(nv).map_err(|e| internal(format!("step {i}: bad netlist: {e}")))?,
                    ));
                }
            }
            steps.push(Step { out, op, args, attrs, static_net });
        }
        for t in &timed_names {
            if !steps.iter().any(|s| &s.out == t) {
                return Err(internal(format!("timed name '{t}' is not a step's out")));
            }
        }
        let iters = req.get("iters").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
        let timed_idx: Vec<usize> =
            steps.iter().enumerate().filter(|(_, s)| timed_names.contains(&s.out)).map(|(i, _)| i).collect();
        if iters > 1 && timed_idx.len() != 1 {
            return Err(internal("iters > 1 needs exactly one timed step"));
        }
        let samples = req
            .get("samples")
            .and_then(Value::as_array)
            .ok_or_else(|| internal("run: samples must be an array"))?;

        let ctx = Ctx { scheme, params, std_keys, parallel: self.threads > 1 };
        let mut results = Vec::with_capacity(samples.len());
        let mut last_env: Option<Env> = None;
        for (si, sample) in samples.iter().enumerate() {
            let empty = Map::new();
            let scalars = sample.get("scalars").and_then(Value::as_object).unwrap_or(&empty);
            let mut inputs: Env = HashMap::new();
            if let Some(m) = sample.get("inputs").and_then(Value::as_object) {
                for (k, v) in m {
                    inputs.insert(
                        k.clone(),
                        Val::Vec(decode_vec(v).map_err(|e| DErr { message: format!("sample {si} input '{k}': {}", e.message), ..e })?),
                    );
                }
            }
            let mut ns: Map<String, Value> = Map::new();
            let env = if iters == 1 {
                let mut env: Env = HashMap::new();
                for (i, st) in steps.iter().enumerate() {
                    let is_timed = timed_idx.contains(&i);
                    let (v, t) = self.exec_step(&ctx, st, &env, &inputs, scalars, is_timed)?;
                    if is_timed {
                        ns.insert(st.out.clone(), json!(t));
                    }
                    env.insert(st.out.clone(), v);
                }
                env
            } else {
                let k = timed_idx[0];
                let mut copies: Vec<Env> = Vec::with_capacity(iters);
                for _ in 0..iters {
                    let mut env: Env = HashMap::new();
                    for st in &steps[..k] {
                        let (v, _) = self.exec_step(&ctx, st, &env, &inputs, scalars, false)?;
                        env.insert(st.out.clone(), v);
                    }
                    copies.push(env);
                }
                let st = &steps[k];
                let (vals, t) = self.exec_iters(&ctx, st, &copies, &inputs, scalars)?;
                ns.insert(st.out.clone(), json!(t));
                let mut env = copies.pop().expect("iters >= 2");
                drop(copies);
                env.insert(st.out.clone(), vals.into_iter().last().expect("iters >= 2"));
                for st in &steps[k + 1..] {
                    let (v, _) = self.exec_step(&ctx, st, &env, &inputs, scalars, false)?;
                    env.insert(st.out.clone(), v);
                }
                env
            };
            let mut outs = Map::new();
            for o in &output_names {
                match lookup(&env, &inputs, o)? {
                    Val::Vec(v) => {
                        outs.insert(o.clone(), encode_vec(v));
                    }
                    other => {
                        return Err(internal(format!(
                            "output '{o}' is a {}, not a vec (decrypt it first)",
                            other.kind()
                        )))
                    }
                }
            }
            results.push(json!({"ns": ns, "outputs": outs}));
            last_env = Some(env);
        }

        let mut result = json!({"samples": results, "overhead_ns": overhead_ns()});
        let mut notes: Vec<String> = vec![];
        if !size_names.is_empty() {
            let mut sizes = Map::new();
            if let Some(env) = &last_env {
                for n in &size_names {
                    if let Some(v) = env.get(n) {
                        sizes.insert(n.clone(), json!(val_size(v)));
                    }
                }
            }
            result["sizes_bytes"] = Value::Object(sizes);
            notes.push("sizes_bytes of an array is the sum over its elements (bincode); a key's is its server key".into());
        }
        if !noise_names.is_empty() {
            notes.push("noise: TFHE-rs exposes no noise budget; correctness is bounded by the preset's p_fail".into());
        }
        if !level_names.is_empty() {
            notes.push("levels: not applicable to TFHE (every gate/PBS bootstraps)".into());
        }
        if steps.iter().any(|s| s.op == Op::Pbs) {
            notes.push("pbs: the lookup table is generated outside the timed region".into());
        }
        if steps.iter().any(|s| s.op == Op::Netlist) {
            notes.push(if ctx.parallel {
                "netlist: gates of equal depth run in parallel on the rayon pool".into()
            } else {
                "netlist: gates run one after another on one thread".into()
            });
        }
        if !notes.is_empty() {
            result["notes"] = json!(notes);
        }
        Ok(result)
    }

    /// Resolves the keys and extra data of a step (outside the timed region)
    /// and installs the high-level server key when needed.
    fn prepare(
        &mut self,
        ctx: &Ctx,
        st: &Step,
        env: &Env,
        inputs: &Env,
        scalars: &Map<String, Value>,
    ) -> DResult<(Arc<Keys>, Extra)> {
        let keys = match st.attrs.get("key") {
            None | Some(Value::Null) => ctx.std_keys.clone(),
            Some(k) => {
                let name = resolve_attr(k, scalars)?
                    .as_str()
                    .ok_or_else(|| internal(format!("step '{}': attr key must name a value", st.out)))?;
                match lookup(env, inputs, name)? {
                    Val::Key(k) => k.clone(),
                    other => {
                        return Err(internal(format!(
                            "step '{}': attr key '{name}' is a {}, not a keygen result",
                            st.out,
                            other.kind()
                        )))
                    }
                }
            }
        };
        if let Keys::Int { sk, .. } = &*keys {
            let is_server_op = !matches!(st.op, Op::Keygen | Op::Encrypt | Op::Decrypt);
            let installed = self.hl_current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &keys));
            if is_server_op && !installed {
                tfhe::set_server_key(sk.clone());
                self.hl_current = Some(keys.clone());
            }
        }
        let extra = match st.op {
            Op::Netlist => match &st.static_net {
                Some(n) => Extra::Net(n.clone()),
                None => {
                    let v = resolve_attr(st.attrs.get("netlist").expect("checked"), scalars)?;
                    Extra::Net(Arc::new(
                        Netlist::parse(v).map_err(|e| internal(format!("step '{}': bad netlist: {e}", st.out)))?,
                    ))
                }
            },
            Op::Pbs => {
                let (ck, sk) = match &*keys {
                    Keys::Short { ck, sk } => (ck, sk),
                    _ => return Err(internal("pbs needs shortint keys")),
                };
                let msg = ck.parameters().message_modulus().0;
                let lut_v = resolve_attr(
                    st.attrs
                        .get("lut")
                        .ok_or_else(|| internal(format!("step '{}': pbs needs attr 'lut'", st.out)))?,
                    scalars,
                )?;
                let table: Vec<u64> = lut_v
                    .as_array()
                    .ok_or_else(|| internal("attr lut must be a list of integers"))?
                    .iter()
                    .map(|x| x.as_u64().filter(|&y| y < msg).ok_or_else(|| internal(format!("lut entries must be integers in [0, {msg})"))))
                    .collect::<DResult<_>>()?;
                if table.len() as u64 != msg {
                    return Err(internal(format!(
                        "lut has {} entries; the message space has {msg}",
                        table.len()
                    )));
                }
                let lut = sk.generate_lookup_table(|x| table[(x % msg) as usize]);
                Extra::Lut(Arc::new(lut))
            }
            _ => Extra::None,
        };
        Ok((keys, extra))
    }

    fn exec_step(
        &mut self,
        ctx: &Ctx,
        st: &Step,
        env: &Env,
        inputs: &Env,
        scalars: &Map<String, Value>,
        is_timed: bool,
    ) -> DResult<(Val, u64)> {
        let (keys, extra) = self.prepare(ctx, st, env, inputs, scalars)?;
        let args: Vec<&Val> = st.args.iter().map(|a| lookup(env, inputs, a)).collect::<DResult<_>>()?;
        if is_timed {
            let (r, t) = timed(|| exec(ctx, st.op, &args, &keys, &extra));
            Ok((r?, t))
        } else {
            Ok((exec(ctx, st.op, &args, &keys, &extra)?, 0))
        }
    }

    fn exec_iters(
        &mut self,
        ctx: &Ctx,
        st: &Step,
        copies: &[Env],
        inputs: &Env,
        scalars: &Map<String, Value>,
    ) -> DResult<(Vec<Val>, u64)> {
        let mut prepared = Vec::with_capacity(copies.len());
        for env in copies {
            let (keys, extra) = self.prepare(ctx, st, env, inputs, scalars)?;
            let args: Vec<&Val> = st.args.iter().map(|a| lookup(env, inputs, a)).collect::<DResult<_>>()?;
            prepared.push((keys, extra, args));
        }
        // One installed HL key for the whole loop: all copies use the same key
        // unless `key` names per-copy keygen results, which the loop cannot switch.
        if let Some(first) = prepared.first() {
            if prepared.iter().any(|p| !Arc::ptr_eq(&p.0, &first.0))
                && matches!(&*first.0, Keys::Int { .. })
                && !matches!(st.op, Op::Keygen | Op::Encrypt | Op::Decrypt)
            {
                return Err(internal("iters > 1 with a per-copy integer server key is not supported"));
            }
        }
        let mut out: Vec<DResult<Val>> = Vec::with_capacity(prepared.len());
        let ((), t) = timed(|| {
            for (keys, extra, args) in &prepared {
                out.push(exec(ctx, st.op, args, keys, extra));
            }
        });
        let vals = out.into_iter().collect::<DResult<Vec<Val>>>()?;
        Ok((vals, t))
    }
}

struct Ctx {
    scheme: Scheme,
    params: Params,
    std_keys: Arc<Keys>,
    parallel: bool,
}

// ---------------------------------------------------------------- ops

fn want_bool<'a>(v: &'a Val, what: &str) -> DResult<&'a [BoolCt]> {
    match v {
        Val::Bool(x) => Ok(x),
        o => Err(internal(format!("{what}: expected a bit array, got a {}", o.kind()))),
    }
}
fn want_short<'a>(v: &'a Val, what: &str) -> DResult<&'a [ShortCt]> {
    match v {
        Val::Short(x) => Ok(x),
        o => Err(internal(format!("{what}: expected a shortint array, got a {}", o.kind()))),
    }
}
fn same_len(a: usize, b: usize, what: &str) -> DResult<()> {
    if a != b {
        return Err(internal(format!("{what}: arrays have different lengths ({a} and {b})")));
    }
    Ok(())
}
fn nargs(args: &[&Val], n: usize, what: &str) -> DResult<()> {
    if args.len() != n {
        return Err(internal(format!("{what}: expected {n} args, got {}", args.len())));
    }
    Ok(())
}

/// Elementwise map over one or two arrays, on the rayon pool when parallel.
fn map1<T: Sync, R: Send>(par: bool, a: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if par {
        a.par_iter().map(f).collect()
    } else {
        a.iter().map(f).collect()
    }
}
fn map2<T: Sync, R: Send>(par: bool, a: &[T], b: &[T], f: impl Fn(&T, &T) -> R + Sync + Send) -> Vec<R> {
    if par {
        a.par_iter().zip(b.par_iter()).map(|(x, y)| f(x, y)).collect()
    } else {
        a.iter().zip(b.iter()).map(|(x, y)| f(x, y)).collect()
    }
}

macro_rules! int_binop {
    ($a:expr, $b:expr, $x:ident, $y:ident, $e:expr, $wrap:ident) => {
        match ($a, $b) {
            (IntVec::U8(a), IntVec::U8(b)) => int_binop!(@w $wrap, U8, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            (IntVec::U16(a), IntVec::U16(b)) => int_binop!(@w $wrap, U16, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            (IntVec::U32(a), IntVec::U32(b)) => int_binop!(@w $wrap, U32, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            (IntVec::U64(a), IntVec::U64(b)) => int_binop!(@w $wrap, U64, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            _ => return Err(internal("integer op: operands have different widths")),
        }
    };
    (@w int, $var:ident, $v:expr) => { Val::Int(IntVec::$var($v)) };
    (@w bool, $var:ident, $v:expr) => { Val::IntBool($v) };
}

fn exec(ctx: &Ctx, op: Op, args: &[&Val], keys: &Keys, extra: &Extra) -> DResult<Val> {
    let par = ctx.parallel;
    match op {
        Op::Keygen => {
            nargs(args, 0, "keygen")?;
            let _ = ctx.scheme;
            Ok(Val::Key(Arc::new(keygen(&ctx.params))))
        }
        Op::Encrypt => {
            nargs(args, 1, "encrypt_sk")?;
            let v = match args[0] {
                Val::Vec(v) => v,
                o => return Err(internal(format!("encrypt_sk: expected a vec, got a {}", o.kind()))),
            };
            match keys {
                Keys::Bool { ck, .. } => {
                    if let Some(x) = v.iter().find(|&&x| x > 1) {
                        return Err(internal(format!("encrypt_sk: bit value {x} is not 0 or 1")));
                    }
                    Ok(Val::Bool(v.iter().map(|&x| ck.encrypt(x == 1)).collect()))
                }
                Keys::Short { ck, .. } => {
                    let msg = ck.parameters().message_modulus().0;
                    if let Some(x) = v.iter().find(|&&x| x >= msg) {
                        return Err(internal(format!("encrypt_sk: value {x} outside the message space [0, {msg})")));
                    }
                    Ok(Val::Short(v.iter().map(|&x| ck.encrypt(x)).collect()))
                }
                Keys::Int { ck, bits, .. } => {
                    if *bits < 64 {
                        if let Some(x) = v.iter().find(|&&x| x >> bits != 0) {
                            return Err(internal(format!("encrypt_sk: value {x} does not fit in {bits} bits")));
                        }
                    }
                    Ok(Val::Int(match bits {
                        8 => IntVec::U8(v.iter().map(|&x| FheUint8::encrypt(x as u8, ck)).collect()),
                        16 => IntVec::U16(v.iter().map(|&x| FheUint16::encrypt(x as u16, ck)).collect()),
                        32 => IntVec::U32(v.iter().map(|&x| FheUint32::encrypt(x as u32, ck)).collect()),
                        _ => IntVec::U64(v.iter().map(|&x| FheUint64::encrypt(x, ck)).collect()),
                    }))
                }
            }
        }
        Op::Decrypt => {
            nargs(args, 1, "decrypt")?;
            Ok(Val::Vec(match (args[0], keys) {
                (Val::Bool(c), Keys::Bool { ck, .. }) => c.iter().map(|x| ck.decrypt(x) as u64).collect(),
                (Val::Short(c), Keys::Short { ck, .. }) => c.iter().map(|x| ck.decrypt(x)).collect(),
                (Val::Int(IntVec::U8(c)), Keys::Int { ck, .. }) => {
                    c.iter().map(|x| { let d: u8 = x.decrypt(ck); d as u64 }).collect()
                }
                (Val::Int(IntVec::U16(c)), Keys::Int { ck, .. }) => {
                    c.iter().map(|x| { let d: u16 = x.decrypt(ck); d as u64 }).collect()
                }
                (Val::Int(IntVec::U32(c)), Keys::Int { ck, .. }) => {
                    c.iter().map(|x| { let d: u32 = x.decrypt(ck); d as u64 }).collect()
                }
                (Val::Int(IntVec::U64(c)), Keys::Int { ck, .. }) => {
                    c.iter().map(|x| { let d: u64 = x.decrypt(ck); d }).collect()
                }
                (Val::IntBool(c), Keys::Int { ck, .. }) => {
                    c.iter().map(|x| { let d: bool = x.decrypt(ck); d as u64 }).collect()
                }
                (o, _) => return Err(internal(format!("decrypt: cannot decrypt a {} with these keys", o.kind()))),
            }))
        }
        Op::Gate(kind) => {
            let sk = match keys {
                Keys::Bool { sk, .. } => sk,
                _ => return Err(internal("gate ops need tfhe_bool keys")),
            };
            let g = CtGates(sk);
            match kind {
                GateKind::Not => {
                    nargs(args, 1, "not")?;
                    let a = want_bool(args[0], "not")?;
                    Ok(Val::Bool(map1(par, a, |x| g.not(x))))
                }
                GateKind::Mux => {
                    nargs(args, 3, "mux")?;
                    let s = want_bool(args[0], "mux sel")?;
                    let a = want_bool(args[1], "mux a")?;
                    let b = want_bool(args[2], "mux b")?;
                    same_len(s.len(), a.len(), "mux")?;
                    same_len(s.len(), b.len(), "mux")?;
                    let idx: Vec<usize> = (0..s.len()).collect();
                    Ok(Val::Bool(map1(par, &idx, |&i| g.mux(&s[i], &a[i], &b[i]))))
                }
                k => {
                    nargs(args, 2, "gate")?;
                    let a = want_bool(args[0], "gate")?;
                    let b = want_bool(args[1], "gate")?;
                    same_len(a.len(), b.len(), "gate")?;
                    Ok(Val::Bool(map2(par, a, b, |x, y| g.binary(k, x, y))))
                }
            }
        }
        Op::Netlist => {
            nargs(args, 1, "netlist")?;
            let sk = match keys {
                Keys::Bool { sk, .. } => sk,
                _ => return Err(internal("netlist needs tfhe_bool keys")),
            };
            let net = match extra {
                Extra::Net(n) => n,
                _ => return Err(internal("netlist not prepared")),
            };
            let a = want_bool(args[0], "netlist")?;
            let out = netlist::evaluate(net, &CtGates(sk), a, par).map_err(internal)?;
            Ok(Val::Bool(out))
        }
        Op::ShortAdd | Op::ShortMul | Op::Pbs => {
            let sk = match keys {
                Keys::Short { sk, .. } => sk,
                _ => return Err(internal("shortint ops need tfhe_shortint keys")),
            };
            match op {
                Op::Pbs => {
                    nargs(args, 1, "pbs")?;
                    let a = want_short(args[0], "pbs")?;
                    let lut = match extra {
                        Extra::Lut(l) => l,
                        _ => return Err(internal("lut not prepared")),
                    };
                    Ok(Val::Short(map1(par, a, |x| sk.apply_lookup_table(x, lut))))
                }
                _ => {
                    nargs(args, 2, "shortint op")?;
                    let a = want_short(args[0], "shortint op")?;
                    let b = want_short(args[1], "shortint op")?;
                    same_len(a.len(), b.len(), "shortint op")?;
                    Ok(Val::Short(if op == Op::ShortAdd {
                        map2(par, a, b, |x, y| sk.add(x, y))
                    } else {
                        map2(par, a, b, |x, y| sk.mul(x, y))
                    }))
                }
            }
        }
        _ => {
            // Integer ops: high-level API; the server key was installed by `prepare`.
            if !matches!(keys, Keys::Int { .. }) {
                return Err(internal("integer ops need tfhe_int keys"));
            }
            nargs(args, 2, "integer op")?;
            let (a, b) = match (args[0], args[1]) {
                (Val::Int(a), Val::Int(b)) => (a, b),
                (x, y) => {
                    return Err(internal(format!(
                        "integer op: expected two integer arrays, got {} and {}",
                        x.kind(),
                        y.kind()
                    )))
                }
            };
            same_len(a.len(), b.len(), "integer op")?;
            Ok(match op {
                Op::IntAdd => int_binop!(a, b, x, y, x + y, int),
                Op::IntSub => int_binop!(a, b, x, y, x - y, int),
                Op::IntMul => int_binop!(a, b, x, y, x * y, int),
                Op::IntMin => int_binop!(a, b, x, y, FheMin::min(x, y), int),
                Op::IntMax => int_binop!(a, b, x, y, FheMax::max(x, y), int),
                Op::IntGt => int_binop!(a, b, x, y, FheOrd::gt(x, y), bool),
                Op::IntGe => int_binop!(a, b, x, y, FheOrd::ge(x, y), bool),
                Op::IntLt => int_binop!(a, b, x, y, FheOrd::lt(x, y), bool),
                Op::IntEq => int_binop!(a, b, x, y, FheEq::eq(x, y), bool),
                _ => unreachable!("all ops handled"),
            })
        }
    }
}
