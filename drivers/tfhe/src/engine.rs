//! Setups, values and the program interpreter.

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
type BoolCk = tfhe::boolean::client_key::ClientKey;
type BoolSk = tfhe::boolean::server_key::ServerKey;
type ShortCk = tfhe::shortint::ClientKey;
type ShortSk = tfhe::shortint::ServerKey;

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

    fn ops(self) -> &'static [&'static str] {
        match self {
            Scheme::Bool => &BOOL_OPS,
            Scheme::Short => &SHORT_OPS,
            Scheme::Int => &INT_OPS,
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

pub const BOOL_OPS: [&str; 13] = [
    "keygen", "encrypt_sk", "decrypt", "and", "or", "xor", "nand", "nor", "xnor", "not", "mux",
    "gather", "trivial",
];
pub const SHORT_OPS: [&str; 6] = ["keygen", "encrypt_sk", "decrypt", "short_add", "short_mul", "pbs"];
pub const INT_OPS: [&str; 12] = [
    "keygen", "encrypt_sk", "decrypt", "int_add", "int_sub", "int_mul", "int_gt", "int_ge",
    "int_lt", "int_eq", "int_min", "int_max",
];

/// The static facts of the capabilities reply (PROTOCOL.md): per scheme its deviations from the
/// canonical boundaries (none: no op's timed work differs) and static limits, build notes.
pub const CAPABILITIES: &str = include_str!("../capabilities.json");

/// capabilities.json (`text`), refused (main checks it at start-up) where it names a scheme, or a
/// deviation for an op, that the op tables lack.
pub fn static_capabilities(text: &str) -> Result<Value, String> {
    let caps: Value = serde_json::from_str(text).map_err(|e| format!("capabilities.json: {e}"))?;
    for (name, facts) in caps["schemes"].as_object().into_iter().flatten() {
        let ops = Scheme::parse(name).map_err(|e| format!("capabilities.json: {}", e.message))?.ops();
        for op in facts["deviations"].as_object().into_iter().flat_map(|d| d.keys()) {
            if !ops.contains(&op.as_str()) {
                return Err(format!("capabilities.json: {name} deviation for {op}, an op the op tables lack"));
            }
        }
    }
    Ok(caps)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Keygen,
    Encrypt,
    Decrypt,
    Gate(GateKind),
    Gather,
    Trivial,
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
    if !scheme.ops().contains(&name) {
        return Err(unsupported(format!("op '{name}' for scheme {} in the tfhe-rs driver", scheme.name())));
    }
    Ok(match name {
        "keygen" => Op::Keygen,
        "encrypt_sk" => Op::Encrypt,
        "decrypt" => Op::Decrypt,
        "gather" => Op::Gather,
        "trivial" => Op::Trivial,
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
        g => Op::Gate(gate_kind(g).expect("listed gate")),
    })
}

#[derive(Clone, Copy, Debug)]
enum Params {
    Bool(BooleanParameters),
    Short(AtomicPatternParameters),
    Int(AtomicPatternParameters, u32),
}

/// Always held behind an `Arc`, so the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Keys {
    Bool {
        ck: BoolCk,
        sk: BoolSk,
    },
    Short {
        ck: ShortCk,
        sk: ShortSk,
    },
    Int {
        ck: tfhe::ClientKey,
        sk: tfhe::ServerKey,
        bits: u32,
    },
}

/// The high-level configuration of a `tfhe_int` setup: the preset's block
/// parameters, without the dedicated OPRF key that `ConfigBuilder` adds by
/// default (a second bootstrapping key the integer ops never use; keygen
/// would otherwise pay for it, and the server key size would include it).
fn int_config(ap: AtomicPatternParameters) -> tfhe::Config {
    tfhe::ConfigBuilder::with_custom_parameters(ap).use_dedicated_oprf_key(false).build()
}

/// Client key + server key for the preset: what `keygen` times.
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
            let config = int_config(*ap);
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

    fn bits(&self) -> u32 {
        match self {
            IntVec::U8(_) => 8,
            IntVec::U16(_) => 16,
            IntVec::U32(_) => 32,
            IntVec::U64(_) => 64,
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

// ---------------------------------------------------------------- gates

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GateKind {
    And,
    Or,
    Xor,
    Nand,
    Nor,
    Xnor,
    Not,
    Mux,
}

fn gate_kind(name: &str) -> Option<GateKind> {
    Some(match name {
        "and" => GateKind::And,
        "or" => GateKind::Or,
        "xor" => GateKind::Xor,
        "nand" => GateKind::Nand,
        "nor" => GateKind::Nor,
        "xnor" => GateKind::Xnor,
        "not" => GateKind::Not,
        "mux" => GateKind::Mux,
        _ => return None,
    })
}

fn binary_gate(sk: &BoolSk, kind: GateKind, a: &BoolCt, b: &BoolCt) -> BoolCt {
    match kind {
        GateKind::And => sk.and(a, b),
        GateKind::Or => sk.or(a, b),
        GateKind::Xor => sk.xor(a, b),
        GateKind::Nand => sk.nand(a, b),
        GateKind::Nor => sk.nor(a, b),
        GateKind::Xnor => sk.xnor(a, b),
        _ => unreachable!("not a binary gate"),
    }
}

// ---------------------------------------------------------------- program

struct Step {
    out: String,
    op_name: String,
    op: Op,
    args: Vec<String>,
    attrs: Map<String, Value>,
    /// `gather`: (argument, position) of every bit it picks, parsed once per request.
    picks: Vec<(usize, usize)>,
    /// `trivial`: the constant bits it makes, parsed once per request.
    constants: Vec<bool>,
    /// An untimed step nothing reads (a warm-up): its result is dropped at once.
    discard: bool,
}

/// Ops that run on a server key (everything but key generation and the
/// client-key operations).
fn uses_server_key(op: Op) -> bool {
    !matches!(op, Op::Keygen | Op::Encrypt | Op::Decrypt | Op::Gather)
}

impl Step {
    /// The literal `key` attr: Some(None) for the setup's keys, Some(Some(name))
    /// for a named keygen result, None when it is a `$scalar` (known per sample).
    fn literal_key(&self) -> Option<Option<&str>> {
        match self.attrs.get("key") {
            None | Some(Value::Null) => Some(None),
            Some(v) if is_scalar_ref(v) => None,
            Some(v) => Some(v.as_str()),
        }
    }
}

/// A timed region: `steps[start .. start + len]`, run between one clock pair.
#[derive(Debug)]
struct Region {
    name: String,
    start: usize,
    len: usize,
}

struct Program {
    steps: Vec<Step>,
    /// Sorted by `start`; disjoint.
    regions: Vec<Region>,
    outputs: Vec<String>,
    sizes: Vec<String>,
    noise: Vec<String>,
    levels: Vec<String>,
}

fn name_list(program: &Value, k: &str) -> DResult<Vec<String>> {
    match program.get(k) {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(|| internal(format!("program.{k} must list names"))))
            .collect(),
        Some(_) => Err(internal(format!("program.{k} must be an array"))),
    }
}

/// Parses and validates a program (steps, timed regions, output lists);
/// nothing runs before it passes.
fn parse_program(scheme: Scheme, program: &Value) -> DResult<Program> {
    let steps_json = program
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| internal("program.steps must be an array"))?;
    let mut steps = Vec::with_capacity(steps_json.len());
    for (i, s) in steps_json.iter().enumerate() {
        let out = s
            .get("out")
            .and_then(Value::as_str)
            .ok_or_else(|| internal(format!("step {i}: missing out")))?
            .to_string();
        let op_name = s
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| internal(format!("step {i}: missing op")))?
            .to_string();
        let op = parse_op(scheme, &op_name)?;
        let args = match s.get("args") {
            None | Some(Value::Null) => vec![],
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| internal(format!("step {i}: args must be names"))))
                .collect::<DResult<Vec<_>>>()?,
            Some(_) => return Err(internal(format!("step {i}: args must be an array"))),
        };
        let attrs = match s.get("attrs") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(internal(format!("step {i}: attrs must be an object"))),
        };
        let picks = if op == Op::Gather { parse_picks(&attrs, args.len(), i)? } else { vec![] };
        let constants = if op == Op::Trivial { parse_constants(&attrs, i)? } else { vec![] };
        let discard = s.get("discard").and_then(Value::as_bool).unwrap_or(false);
        steps.push(Step { out, op_name, op, args, attrs, picks, constants, discard });
    }
    let regions = parse_regions(program.get("timed"), &steps)?;
    if scheme == Scheme::Int {
        check_int_server_keys(&regions, &steps)?;
    }
    Ok(Program {
        regions,
        outputs: name_list(program, "outputs")?,
        sizes: name_list(program, "sizes")?,
        noise: name_list(program, "noise")?,
        levels: name_list(program, "levels")?,
        steps,
    })
}

/// A gather's `bits`: `[[argument, position], ...]`, every argument one of the step's.
fn parse_picks(attrs: &Map<String, Value>, nargs: usize, i: usize) -> DResult<Vec<(usize, usize)>> {
    let bad = || internal(format!("step {i}: gather needs attr bits = [[argument, position], ...]"));
    let list = attrs.get("bits").and_then(Value::as_array).ok_or_else(bad)?;
    list.iter()
        .map(|p| match p.as_array().map(Vec::as_slice) {
            Some([a, b]) => match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) if (a as usize) < nargs => Ok((a as usize, b as usize)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        })
        .collect()
}

/// A trivial's `bits`: the constants 0 or 1 it makes.
fn parse_constants(attrs: &Map<String, Value>, i: usize) -> DResult<Vec<bool>> {
    let bad = || internal(format!("step {i}: trivial needs attr bits = [0 or 1, ...]"));
    let list = attrs.get("bits").and_then(Value::as_array).ok_or_else(bad)?;
    list.iter()
        .map(|b| b.as_u64().filter(|&b| b <= 1).map(|b| b == 1).ok_or_else(bad))
        .collect()
}

/// Reads `program.timed` (protocol 2): each region's first step and length.
/// The orchestrator checked the rules (known, consecutive, independent steps,
/// each in one region) before it sent the program; a region that is no
/// `{"name", "steps"}` naming steps is refused.
fn parse_regions(timed: Option<&Value>, steps: &[Step]) -> DResult<Vec<Region>> {
    let list = match timed {
        None | Some(Value::Null) => return Ok(vec![]),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(internal("program.timed must be a list of regions {\"name\": ..., \"steps\": [...]}")),
    };
    let index: HashMap<&str, usize> = steps.iter().enumerate().map(|(i, s)| (s.out.as_str(), i)).collect();
    let mut regions = Vec::with_capacity(list.len());
    for (ri, r) in list.iter().enumerate() {
        let bad = || internal(format!("program.timed[{ri}] must be a region {{\"name\": ..., \"steps\": [...]}} naming steps (protocol 2), got {r}"));
        let name = r.get("name").and_then(Value::as_str).ok_or_else(bad)?;
        let idx = r
            .get("steps")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(bad)?
            .iter()
            .map(|s| s.as_str().and_then(|s| index.get(s).copied()).ok_or_else(bad))
            .collect::<DResult<Vec<usize>>>()?;
        let start = *idx.iter().min().expect("non-empty");
        regions.push(Region { name: name.to_string(), start, len: idx.len() });
    }
    regions.sort_by_key(|r| r.start);
    Ok(regions)
}

/// TFHE-rs' high-level API evaluates integer ops with one thread-local server
/// key, installed before the clock: the server-key steps of one region must
/// all use the same key. Checked here for literal `key` attrs; a `$scalar` key
/// is checked per sample.
fn check_int_server_keys(regions: &[Region], steps: &[Step]) -> DResult<()> {
    for r in regions {
        let mut seen: Option<Option<&str>> = None;
        for st in &steps[r.start..r.start + r.len] {
            if !uses_server_key(st.op) {
                continue;
            }
            let Some(k) = st.literal_key() else { continue };
            match seen {
                Some(s) if s != k => {
                    let show = |k: Option<&str>| k.map_or("the setup's key".to_string(), |n| format!("key '{n}'"));
                    return Err(internal(format!(
                        "region '{}': its integer ops use two server keys ({} and {}); TFHE-rs' high-level API holds one server key per thread, so a region can use only one",
                        r.name,
                        show(s),
                        show(k)
                    )));
                }
                _ => seen = Some(k),
            }
        }
    }
    Ok(())
}

/// What a step needs besides its argument values, made outside the timed
/// region.
enum Extra {
    None,
    Lut(LookupTableOwned),
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

type Env = HashMap<String, Val>;

fn lookup<'a>(env: &'a Env, inputs: &'a Env, name: &str) -> DResult<&'a Val> {
    env.get(name)
        .or_else(|| inputs.get(name))
        .ok_or_else(|| internal(format!("unknown value '{name}' (not an input nor an earlier step)")))
}

/// The keys a step uses: the setup's, or the keygen result its `key` attr names.
fn step_keys(ctx: &Ctx, st: &Step, env: &Env, inputs: &Env, scalars: &Map<String, Value>) -> DResult<Arc<Keys>> {
    match st.attrs.get("key") {
        None | Some(Value::Null) => Ok(ctx.std_keys.clone()),
        Some(k) => {
            let name = resolve_attr(k, scalars)?
                .as_str()
                .ok_or_else(|| internal(format!("step '{}': attr key must name a value", st.out)))?;
            match lookup(env, inputs, name)? {
                Val::Key(k) => Ok(k.clone()),
                other => Err(internal(format!(
                    "step '{}': attr key '{name}' is a {}, not a keygen result",
                    st.out,
                    other.kind()
                ))),
            }
        }
    }
}

/// Lookup-table generation.
fn step_extra(st: &Step, keys: &Keys, scalars: &Map<String, Value>) -> DResult<Extra> {
    Ok(match st.op {
        Op::Pbs => {
            let (ck, sk) = match keys {
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
                .map(|x| {
                    x.as_u64()
                        .filter(|&y| y < msg)
                        .ok_or_else(|| internal(format!("lut entries must be integers in [0, {msg})")))
                })
                .collect::<DResult<_>>()?;
            if table.len() as u64 != msg {
                return Err(internal(format!("lut has {} entries; the message space has {msg}", table.len())));
            }
            Extra::Lut(sk.generate_lookup_table(|x| table[(x % msg) as usize]))
        }
        _ => Extra::None,
    })
}

/// The process's CPU time in ns (user + system, all threads):
/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`. None where it is unavailable.
#[cfg(unix)]
#[inline(always)]
fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(not(unix))]
#[inline(always)]
fn process_cpu_ns() -> Option<u64> {
    None
}

/// One timed region's wall time and the process's CPU time over the same calls.
#[derive(Clone, Copy, Debug)]
struct Timing {
    ns: u64,
    cpu_ns: Option<u64>,
}

/// Reads the process CPU clock, then the clock, makes the prepared library
/// calls one after the other, reads the clock, then the CPU clock: the CPU
/// clock's system calls stay outside `ns` (PROTOCOL.md), which they would
/// otherwise lengthen by ~0.4 us each region.
/// `overhead_ns` times this same function on no calls.
#[inline(never)]
fn time_calls(calls: &[Call<'_>], par: bool) -> (Vec<Val>, Timing) {
    let mut out = Vec::with_capacity(calls.len());
    let c0 = process_cpu_ns();
    let t0 = Instant::now();
    for c in calls {
        out.push(c.run(par));
    }
    let ns = t0.elapsed().as_nanos() as u64;
    let c1 = process_cpu_ns();
    let cpu_ns = match (c0, c1) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    (out, Timing { ns, cpu_ns })
}

fn overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..101).map(|_| time_calls(black_box(&[]), false).1.ns).collect();
    v.sort_unstable();
    v[50]
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
            if v.as_u64() != Some(2) {
                return Err(internal(format!("protocol version {v} not supported (this driver speaks 2)")));
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
        #[cfg(target_arch = "x86_64")]
        let cpu = json!({
            "avx2": std::is_x86_feature_detected!("avx2"),
            "avx512f": std::is_x86_feature_detected!("avx512f"),
            "aes": std::is_x86_feature_detected!("aes"),
        });
        #[cfg(not(target_arch = "x86_64"))]
        let cpu = json!({});
        // The static facts, with what is computed here added (serde_json's IndexMut inserts).
        let mut caps = static_capabilities(CAPABILITIES).expect("capabilities.json is checked at start-up");
        caps["protocol"] = json!(2);
        caps["library_version"] = json!(crate::TFHE_VERSION);
        caps["driver_version"] = json!(crate::DRIVER_VERSION);
        caps["threads"] = json!(self.threads);
        caps["build"]["binding"] = json!(format!("tfhe crate ={} (Rust, crates.io)", crate::TFHE_VERSION));
        caps["build"]["rustc"] = json!(option_env!("FHEMARK_RUSTC_VERSION").unwrap_or("unknown"));
        caps["build"]["cpu_features_detected"] = cpu;
        for (scheme, presets, default) in [
            (Scheme::Bool, &bool_names, presets::BOOL_DEFAULT),
            (Scheme::Short, &shortint_names, presets::SHORTINT_DEFAULT),
            (Scheme::Int, &shortint_names, presets::SHORTINT_DEFAULT),
        ] {
            let facts = &mut caps["schemes"][scheme.name()];
            facts["ops"] = json!(scheme.ops());
            facts["limits"]["presets"] = json!(presets);
            facts["limits"]["default_preset"] = json!(default);
        }
        caps
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
                    if msg_bits == 0 || !bits.is_multiple_of(msg_bits) {
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
        let ctx = Ctx { params: setup.params, std_keys: setup.keys.clone(), parallel: self.threads > 1 };
        let program = parse_program(setup.scheme, req.get("program").ok_or_else(|| internal("run: missing program"))?)?;
        let samples = req
            .get("samples")
            .and_then(Value::as_array)
            .ok_or_else(|| internal("run: samples must be an array"))?;
        let region_at: HashMap<usize, &Region> = program.regions.iter().map(|r| (r.start, r)).collect();

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
            let mut cpu_ns: Map<String, Value> = Map::new();
            let mut env: Env = HashMap::new();
            let mut i = 0;
            while i < program.steps.len() {
                let (len, region) = match region_at.get(&i) {
                    Some(r) => (r.len, Some(r.name.as_str())),
                    None => (1, None),
                };
                let group = &program.steps[i..i + len];
                let (vals, t) = self.exec_group(&ctx, group, &env, &inputs, scalars, region)?;
                if let Some(name) = region {
                    ns.insert(name.to_string(), json!(t.ns));
                    if let Some(c) = t.cpu_ns {
                        cpu_ns.insert(name.to_string(), json!(c));
                    }
                }
                for (st, v) in group.iter().zip(vals) {
                    if !st.discard {
                        env.insert(st.out.clone(), v);
                    }
                }
                i += len;
            }
            let mut outs = Map::new();
            for o in &program.outputs {
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
            let mut r = json!({"ns": ns, "outputs": outs});
            if !cpu_ns.is_empty() {
                r["cpu_ns"] = Value::Object(cpu_ns);
            }
            results.push(r);
            last_env = Some(env);
        }

        let mut result = json!({"samples": results, "overhead_ns": overhead_ns()});
        let mut notes: Vec<String> = vec![];
        if !program.sizes.is_empty() {
            let mut sizes = Map::new();
            if let Some(env) = &last_env {
                for n in &program.sizes {
                    if let Some(v) = env.get(n) {
                        sizes.insert(n.clone(), json!(val_size(v)));
                    }
                }
            }
            result["sizes_bytes"] = Value::Object(sizes);
            notes.push("sizes_bytes of an array is the sum over its elements (bincode); a key's is its server key".into());
        }
        if !program.noise.is_empty() {
            notes.push("noise: TFHE-rs exposes no noise budget; correctness is bounded by the preset's p_fail".into());
        }
        if !program.levels.is_empty() {
            notes.push("levels: not applicable to TFHE (every gate/PBS bootstraps)".into());
        }
        if program.steps.iter().any(|s| s.op == Op::Pbs) {
            notes.push("pbs: the lookup table is generated outside the timed region".into());
        }
        if !notes.is_empty() {
            result["notes"] = json!(notes);
        }
        Ok(result)
    }

    /// Runs consecutive steps (a timed region, or one untimed step): first
    /// every step's preparation (keys, argument lookup and checks, lookup
    /// tables, the high-level server key), then the library calls
    /// between one clock pair.
    fn exec_group(
        &mut self,
        ctx: &Ctx,
        group: &[Step],
        env: &Env,
        inputs: &Env,
        scalars: &Map<String, Value>,
        region: Option<&str>,
    ) -> DResult<(Vec<Val>, Timing)> {
        let mut keys = Vec::with_capacity(group.len());
        let mut extras = Vec::with_capacity(group.len());
        for st in group {
            let k = step_keys(ctx, st, env, inputs, scalars)?;
            extras.push(step_extra(st, &k, scalars)?);
            keys.push(k);
        }
        let mut hl: Option<&Arc<Keys>> = None;
        for (st, k) in group.iter().zip(&keys) {
            if matches!(**k, Keys::Int { .. }) && uses_server_key(st.op) {
                match hl {
                    Some(h) if !Arc::ptr_eq(h, k) => {
                        return Err(internal(format!(
                            "region '{}': its integer ops use two server keys; TFHE-rs' high-level API holds one server key per thread, so a region can use only one",
                            region.unwrap_or(&st.out)
                        )))
                    }
                    _ => hl = Some(k),
                }
            }
        }
        if let Some(k) = hl {
            self.install_hl(k);
        }
        let calls = group
            .iter()
            .zip(keys.iter().zip(&extras))
            .map(|(st, (k, e))| bind(ctx, st, env, inputs, k, e))
            .collect::<DResult<Vec<Call>>>()?;
        Ok(time_calls(&calls, ctx.parallel))
    }

    /// Makes `keys`' server key the high-level API's thread-local key (a
    /// cheap clone: the key is shared behind an Arc), unless it already is.
    fn install_hl(&mut self, keys: &Arc<Keys>) {
        if self.hl_current.as_ref().is_some_and(|c| Arc::ptr_eq(c, keys)) {
            return;
        }
        if let Keys::Int { sk, .. } = &**keys {
            tfhe::set_server_key(sk.clone());
            self.hl_current = Some(keys.clone());
        }
    }
}

struct Ctx {
    params: Params,
    std_keys: Arc<Keys>,
    parallel: bool,
}

// ---------------------------------------------------------------- ops

fn want_vec<'a>(v: &'a Val, what: &str) -> DResult<&'a [u64]> {
    match v {
        Val::Vec(x) => Ok(x),
        o => Err(internal(format!("{what}: expected a vec, got a {}", o.kind()))),
    }
}
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

/// One step, ready to run: keys, operands and tables resolved and checked,
/// so that `run` makes only the library calls.
enum Call<'a> {
    Keygen(Params),
    EncBool(&'a BoolCk, &'a [u64]),
    EncShort(&'a ShortCk, &'a [u64]),
    EncInt(&'a tfhe::ClientKey, u32, &'a [u64]),
    DecBool(&'a BoolCk, &'a [BoolCt]),
    DecShort(&'a ShortCk, &'a [ShortCt]),
    DecInt(&'a tfhe::ClientKey, &'a IntVec),
    DecIntBool(&'a tfhe::ClientKey, &'a [FheBool]),
    Not(&'a BoolSk, &'a [BoolCt]),
    Gate(&'a BoolSk, GateKind, &'a [BoolCt], &'a [BoolCt]),
    Mux(&'a BoolSk, [&'a [BoolCt]; 3]),
    Gather(Vec<&'a BoolCt>),
    Trivial(&'a BoolSk, &'a [bool]),
    Pbs(&'a ShortSk, &'a LookupTableOwned, &'a [ShortCt]),
    ShortAdd(&'a ShortSk, &'a [ShortCt], &'a [ShortCt]),
    ShortMul(&'a ShortSk, &'a [ShortCt], &'a [ShortCt]),
    /// Integer op on the installed high-level server key; operands of one width.
    Int(Op, &'a IntVec, &'a IntVec),
}

fn bool_sk<'a>(keys: &'a Keys, what: &str) -> DResult<&'a BoolSk> {
    match keys {
        Keys::Bool { sk, .. } => Ok(sk),
        _ => Err(internal(format!("{what} needs tfhe_bool keys"))),
    }
}
fn short_sk<'a>(keys: &'a Keys, what: &str) -> DResult<&'a ShortSk> {
    match keys {
        Keys::Short { sk, .. } => Ok(sk),
        _ => Err(internal(format!("{what} needs tfhe_shortint keys"))),
    }
}

/// Prepares one step (outside the timed region): looks up and checks its
/// operands, values and keys.
fn bind<'a>(
    ctx: &Ctx,
    st: &'a Step,
    env: &'a Env,
    inputs: &'a Env,
    keys: &'a Keys,
    extra: &'a Extra,
) -> DResult<Call<'a>> {
    let args: Vec<&'a Val> = st.args.iter().map(|a| lookup(env, inputs, a)).collect::<DResult<_>>()?;
    let what = format!("step '{}' ({})", st.out, st.op_name);
    let what = what.as_str();
    Ok(match st.op {
        Op::Keygen => {
            nargs(&args, 0, what)?;
            Call::Keygen(ctx.params)
        }
        Op::Encrypt => {
            nargs(&args, 1, what)?;
            let v = want_vec(args[0], what)?;
            match keys {
                Keys::Bool { ck, .. } => {
                    if let Some(x) = v.iter().find(|&&x| x > 1) {
                        return Err(internal(format!("{what}: bit value {x} is not 0 or 1")));
                    }
                    Call::EncBool(ck, v)
                }
                Keys::Short { ck, .. } => {
                    let msg = ck.parameters().message_modulus().0;
                    if let Some(x) = v.iter().find(|&&x| x >= msg) {
                        return Err(internal(format!("{what}: value {x} outside the message space [0, {msg})")));
                    }
                    Call::EncShort(ck, v)
                }
                Keys::Int { ck, bits, .. } => {
                    if *bits < 64 {
                        if let Some(x) = v.iter().find(|&&x| x >> bits != 0) {
                            return Err(internal(format!("{what}: value {x} does not fit in {bits} bits")));
                        }
                    }
                    Call::EncInt(ck, *bits, v)
                }
            }
        }
        Op::Decrypt => {
            nargs(&args, 1, what)?;
            match (args[0], keys) {
                (Val::Bool(c), Keys::Bool { ck, .. }) => Call::DecBool(ck, c),
                (Val::Short(c), Keys::Short { ck, .. }) => Call::DecShort(ck, c),
                (Val::Int(c), Keys::Int { ck, .. }) => Call::DecInt(ck, c),
                (Val::IntBool(c), Keys::Int { ck, .. }) => Call::DecIntBool(ck, c),
                (o, _) => return Err(internal(format!("{what}: cannot decrypt a {} with these keys", o.kind()))),
            }
        }
        Op::Gate(kind) => {
            let sk = bool_sk(keys, what)?;
            match kind {
                GateKind::Not => {
                    nargs(&args, 1, what)?;
                    Call::Not(sk, want_bool(args[0], what)?)
                }
                GateKind::Mux => {
                    nargs(&args, 3, what)?;
                    let s = want_bool(args[0], what)?;
                    let a = want_bool(args[1], what)?;
                    let b = want_bool(args[2], what)?;
                    same_len(s.len(), a.len(), what)?;
                    same_len(s.len(), b.len(), what)?;
                    Call::Mux(sk, [s, a, b])
                }
                k => {
                    nargs(&args, 2, what)?;
                    let a = want_bool(args[0], what)?;
                    let b = want_bool(args[1], what)?;
                    same_len(a.len(), b.len(), what)?;
                    Call::Gate(sk, k, a, b)
                }
            }
        }
        Op::Gather => Call::Gather(
            st.picks
                .iter()
                .map(|&(a, p)| {
                    want_bool(args[a], what)?
                        .get(p)
                        .ok_or_else(|| internal(format!("{what}: '{}' has no bit {p}", st.args[a])))
                })
                .collect::<DResult<_>>()?,
        ),
        Op::Trivial => {
            nargs(&args, 0, what)?;
            Call::Trivial(bool_sk(keys, what)?, &st.constants)
        }
        Op::Pbs => {
            nargs(&args, 1, what)?;
            let sk = short_sk(keys, what)?;
            let lut = match extra {
                Extra::Lut(l) => l,
                _ => return Err(internal(format!("{what}: lut not prepared"))),
            };
            Call::Pbs(sk, lut, want_short(args[0], what)?)
        }
        Op::ShortAdd | Op::ShortMul => {
            nargs(&args, 2, what)?;
            let sk = short_sk(keys, what)?;
            let a = want_short(args[0], what)?;
            let b = want_short(args[1], what)?;
            same_len(a.len(), b.len(), what)?;
            if st.op == Op::ShortAdd {
                Call::ShortAdd(sk, a, b)
            } else {
                Call::ShortMul(sk, a, b)
            }
        }
        op => {
            if !matches!(keys, Keys::Int { .. }) {
                return Err(internal(format!("{what} needs tfhe_int keys")));
            }
            nargs(&args, 2, what)?;
            let (a, b) = match (args[0], args[1]) {
                (Val::Int(a), Val::Int(b)) => (a, b),
                (x, y) => {
                    return Err(internal(format!(
                        "{what}: expected two integer arrays, got {} and {}",
                        x.kind(),
                        y.kind()
                    )))
                }
            };
            if a.bits() != b.bits() {
                return Err(internal(format!("{what}: operands have different widths ({} and {} bits)", a.bits(), b.bits())));
            }
            same_len(a.len(), b.len(), what)?;
            Call::Int(op, a, b)
        }
    })
}

macro_rules! int_binop {
    ($a:expr, $b:expr, $x:ident, $y:ident, $e:expr, $wrap:ident) => {
        match ($a, $b) {
            (IntVec::U8(a), IntVec::U8(b)) => int_binop!(@w $wrap, U8, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            (IntVec::U16(a), IntVec::U16(b)) => int_binop!(@w $wrap, U16, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            (IntVec::U32(a), IntVec::U32(b)) => int_binop!(@w $wrap, U32, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            (IntVec::U64(a), IntVec::U64(b)) => int_binop!(@w $wrap, U64, a.iter().zip(b).map(|($x, $y)| $e).collect()),
            _ => unreachable!("operand widths checked in bind"),
        }
    };
    (@w int, $var:ident, $v:expr) => { Val::Int(IntVec::$var($v)) };
    (@w bool, $var:ident, $v:expr) => { Val::IntBool($v) };
}

impl Call<'_> {
    /// The library calls of one step (inside the timed region).
    fn run(&self, par: bool) -> Val {
        match *self {
            Call::Keygen(p) => Val::Key(Arc::new(keygen(&p))),
            Call::EncBool(ck, v) => Val::Bool(v.iter().map(|&x| ck.encrypt(x == 1)).collect()),
            Call::EncShort(ck, v) => Val::Short(v.iter().map(|&x| ck.encrypt(x)).collect()),
            Call::EncInt(ck, bits, v) => Val::Int(match bits {
                8 => IntVec::U8(v.iter().map(|&x| FheUint8::encrypt(x as u8, ck)).collect()),
                16 => IntVec::U16(v.iter().map(|&x| FheUint16::encrypt(x as u16, ck)).collect()),
                32 => IntVec::U32(v.iter().map(|&x| FheUint32::encrypt(x as u32, ck)).collect()),
                _ => IntVec::U64(v.iter().map(|&x| FheUint64::encrypt(x, ck)).collect()),
            }),
            Call::DecBool(ck, c) => Val::Vec(c.iter().map(|x| ck.decrypt(x) as u64).collect()),
            Call::DecShort(ck, c) => Val::Vec(c.iter().map(|x| ck.decrypt(x)).collect()),
            Call::DecInt(ck, c) => Val::Vec(match c {
                IntVec::U8(c) => c.iter().map(|x| u64::from(FheDecrypt::<u8>::decrypt(x, ck))).collect(),
                IntVec::U16(c) => c.iter().map(|x| u64::from(FheDecrypt::<u16>::decrypt(x, ck))).collect(),
                IntVec::U32(c) => c.iter().map(|x| u64::from(FheDecrypt::<u32>::decrypt(x, ck))).collect(),
                IntVec::U64(c) => c.iter().map(|x| FheDecrypt::<u64>::decrypt(x, ck)).collect(),
            }),
            Call::DecIntBool(ck, c) => Val::Vec(c.iter().map(|x| u64::from(FheDecrypt::<bool>::decrypt(x, ck))).collect()),
            Call::Not(sk, a) => Val::Bool(map1(par, a, |x| sk.not(x))),
            Call::Gate(sk, k, a, b) => Val::Bool(map2(par, a, b, |x, y| binary_gate(sk, k, x, y))),
            Call::Mux(sk, [s, a, b]) => {
                let idx: Vec<usize> = (0..s.len()).collect();
                Val::Bool(map1(par, &idx, |&i| sk.mux(&s[i], &a[i], &b[i])))
            }
            Call::Gather(ref picked) => Val::Bool(picked.iter().map(|&c| c.clone()).collect()),
            Call::Trivial(sk, bits) => Val::Bool(bits.iter().map(|&b| sk.trivial_encrypt(b)).collect()),
            Call::Pbs(sk, lut, a) => Val::Short(map1(par, a, |x| sk.apply_lookup_table(x, lut))),
            Call::ShortAdd(sk, a, b) => Val::Short(map2(par, a, b, |x, y| sk.add(x, y))),
            Call::ShortMul(sk, a, b) => Val::Short(map2(par, a, b, |x, y| sk.mul(x, y))),
            Call::Int(op, a, b) => match op {
                Op::IntAdd => int_binop!(a, b, x, y, x + y, int),
                Op::IntSub => int_binop!(a, b, x, y, x - y, int),
                Op::IntMul => int_binop!(a, b, x, y, x * y, int),
                Op::IntMin => int_binop!(a, b, x, y, FheMin::min(x, y), int),
                Op::IntMax => int_binop!(a, b, x, y, FheMax::max(x, y), int),
                Op::IntGt => int_binop!(a, b, x, y, FheOrd::gt(x, y), bool),
                Op::IntGe => int_binop!(a, b, x, y, FheOrd::ge(x, y), bool),
                Op::IntLt => int_binop!(a, b, x, y, FheOrd::lt(x, y), bool),
                Op::IntEq => int_binop!(a, b, x, y, FheEq::eq(x, y), bool),
                _ => unreachable!("integer ops only"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(out: &str, op: &str, args: &[&str]) -> Value {
        json!({"out": out, "op": op, "args": args})
    }

    fn keyed(out: &str, op: &str, args: &[&str], key: &str) -> Value {
        json!({"out": out, "op": op, "args": args, "attrs": {"key": key}})
    }

    /// k copies of `op` on (x.i, y.i), each decrypted to z.i; region "cz".
    fn copies(op: &str, k: usize) -> Value {
        let mut steps = vec![];
        for i in 0..k {
            steps.push(step(&format!("cx.{i}"), "encrypt_sk", &[&format!("x.{i}")]));
            steps.push(step(&format!("cy.{i}"), "encrypt_sk", &[&format!("y.{i}")]));
        }
        for i in 0..k {
            steps.push(step(&format!("cz.{i}"), op, &[&format!("cx.{i}"), &format!("cy.{i}")]));
        }
        for i in 0..k {
            steps.push(step(&format!("z.{i}"), "decrypt", &[&format!("cz.{i}")]));
        }
        let cz: Vec<String> = (0..k).map(|i| format!("cz.{i}")).collect();
        let z: Vec<String> = (0..k).map(|i| format!("z.{i}")).collect();
        json!({"steps": steps, "timed": [{"name": "cz", "steps": cz}], "outputs": z, "sizes": ["cz.1"]})
    }

    fn refused(scheme: Scheme, program: Value, needle: &str) {
        match parse_program(scheme, &program) {
            Ok(_) => panic!("program accepted, expected an error containing '{needle}'"),
            Err(e) => {
                assert_eq!(e.kind, "internal", "{}", e.message);
                assert!(e.message.contains(needle), "message '{}' lacks '{needle}'", e.message);
            }
        }
    }

    #[test]
    fn regions_parse() {
        let p = parse_program(Scheme::Bool, &copies("and", 3)).unwrap();
        assert_eq!(p.regions.len(), 1);
        assert_eq!((p.regions[0].name.as_str(), p.regions[0].start, p.regions[0].len), ("cz", 6, 3));
        // Listed out of order but consecutive in the program: accepted.
        let mut prog = copies("and", 3);
        prog["timed"] = json!([{"name": "cz", "steps": ["cz.2", "cz.0", "cz.1"]},
                               {"name": "enc", "steps": ["cx.0"]}]);
        let p = parse_program(Scheme::Bool, &prog).unwrap();
        assert_eq!((p.regions[0].name.as_str(), p.regions[0].start), ("enc", 0));
        assert_eq!((p.regions[1].name.as_str(), p.regions[1].start, p.regions[1].len), ("cz", 6, 3));
    }

    #[test]
    fn region_not_naming_steps() {
        // The rules are the orchestrator's to check; a region that names no step is still refused.
        let mut prog = copies("and", 2);
        prog["timed"] = json!([{"name": "cz", "steps": ["cz.0", "nope"]}]);
        refused(Scheme::Bool, prog, "naming steps");
        let mut prog = copies("and", 2);
        prog["timed"] = json!([{"name": "a", "steps": []}]);
        refused(Scheme::Bool, prog, "naming steps");
        let mut prog = copies("and", 2);
        prog["timed"] = json!(["cz.0"]); // protocol 1 form
        refused(Scheme::Bool, prog, "must be a region");
    }

    #[test]
    fn int_region_with_two_server_keys() {
        let prog = json!({"steps": [
            step("k", "keygen", &[]),
            step("cx", "encrypt_sk", &["x"]), keyed("kx", "encrypt_sk", &["x"], "k"),
            step("a", "int_add", &["cx", "cx"]), keyed("b", "int_add", &["kx", "kx"], "k")],
            "timed": [{"name": "r", "steps": ["a", "b"]}]});
        refused(Scheme::Int, prog.clone(), "two server keys");
        // Boolean and shortint server keys are passed explicitly: allowed.
        let mut prog = prog;
        prog["steps"][3]["op"] = json!("and");
        prog["steps"][4]["op"] = json!("and");
        parse_program(Scheme::Bool, &prog).unwrap();
    }

    #[test]
    fn protocol_version() {
        let mut d = Driver::new(1);
        let e = d.handle(&json!({"v": 1, "id": 1, "type": "capabilities"})).unwrap_err();
        assert_eq!(e.kind, "internal");
        assert!(e.message.contains("speaks 2"), "{}", e.message);
        let caps = d.handle(&json!({"v": 2, "id": 2, "type": "capabilities"})).unwrap();
        assert_eq!(caps["protocol"], 2);
        for s in ["tfhe_bool", "tfhe_shortint", "tfhe_int"] {
            assert_eq!(caps["schemes"][s]["deviations"], json!({}));
        }
    }

    #[test]
    fn capabilities_file_is_checked_against_the_op_tables() {
        let caps = static_capabilities(CAPABILITIES).unwrap();
        let mut bad = caps.clone();
        bad["schemes"]["tfhe_int"]["deviations"]["frobnicate"] = json!("no such op");
        assert!(static_capabilities(&bad.to_string()).unwrap_err().contains("frobnicate"));
        let mut bad = caps;
        bad["schemes"]["tfhe_ckks"] = json!({});
        assert!(static_capabilities(&bad.to_string()).unwrap_err().contains("tfhe_ckks"));
    }

    /// Tests that do key generation and homomorphic work hold this lock, so
    /// that no other test's threads add to the process CPU time that
    /// `cpu_time_and_threads` reads.
    fn heavy() -> std::sync::MutexGuard<'static, ()> {
        static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
        HEAVY.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn setup(d: &mut Driver, scheme: &str, params: Value) {
        d.handle(&json!({"v": 2, "id": 1, "type": "setup", "setup_id": "s", "scheme": scheme, "params": params}))
            .unwrap();
    }

    fn run(d: &mut Driver, program: Value, samples: Vec<Value>) -> Value {
        d.handle(&json!({"v": 2, "id": 2, "type": "run", "setup_id": "s", "program": program, "samples": samples}))
            .unwrap()
    }

    fn out(sample: &Value, name: &str) -> Vec<u64> {
        decode_vec(&sample["outputs"][name]).unwrap()
    }

    /// k copies of a binary op in one region, two samples: every copy's
    /// output is checked and the sample has exactly one time, the region's.
    fn check_copies(d: &mut Driver, op: &str, m: u64, f: impl Fn(u64, u64) -> u64) {
        let k = 3;
        let mut samples = vec![];
        let mut wants = vec![];
        for s in 0..2u64 {
            let mut inputs = Map::new();
            let mut want = vec![];
            for i in 0..k as u64 {
                let x: Vec<u64> = (0..2).map(|j| (i + j + s) % m).collect();
                let y: Vec<u64> = (0..2).map(|j| (2 * i + 3 * j + s + 1) % m).collect();
                want.push(x.iter().zip(&y).map(|(&a, &b)| f(a, b)).collect::<Vec<u64>>());
                inputs.insert(format!("x.{i}"), encode_vec(&x));
                inputs.insert(format!("y.{i}"), encode_vec(&y));
            }
            samples.push(json!({"inputs": inputs}));
            wants.push(want);
        }
        let res = run(d, copies(op, k), samples);
        for (sample, want) in res["samples"].as_array().unwrap().iter().zip(&wants) {
            let ns = sample["ns"].as_object().unwrap();
            assert_eq!(ns.len(), 1, "{ns:?}");
            assert!(ns["cz"].as_u64().unwrap() > 0);
            assert!(sample["cpu_ns"]["cz"].as_u64().unwrap() > 0, "{sample}");
            for (i, w) in want.iter().enumerate() {
                assert_eq!(&out(sample, &format!("z.{i}")), w, "{op} copy {i}");
            }
        }
        assert!(res["sizes_bytes"]["cz.1"].as_u64().unwrap() > 0);
        assert!(res.get("overhead_ns").is_some());
    }

    #[test]
    fn bool_region_of_copies() {
        let _g = heavy();
        let mut d = Driver::new(1);
        setup(&mut d, "tfhe_bool", json!({"preset": "default"}));
        check_copies(&mut d, "and", 2, |a, b| a & b);
        check_copies(&mut d, "xor", 2, |a, b| a ^ b);
    }

    #[test]
    fn shortint_region_of_copies() {
        let _g = heavy();
        let mut d = Driver::new(1);
        setup(&mut d, "tfhe_shortint", json!({"preset": "PARAM_MESSAGE_1_CARRY_1_KS_PBS_TUNIFORM_2M128"}));
        check_copies(&mut d, "short_add", 2, |a, b| (a + b) % 2);
        // pbs copies: the lookup tables are made before the clock.
        let prog = json!({"steps": [
            step("c.0", "encrypt_sk", &["x.0"]), step("c.1", "encrypt_sk", &["x.1"]),
            {"out": "p.0", "op": "pbs", "args": ["c.0"], "attrs": {"lut": [1, 0]}},
            {"out": "p.1", "op": "pbs", "args": ["c.1"], "attrs": {"lut": "$lut"}},
            step("z.0", "decrypt", &["p.0"]), step("z.1", "decrypt", &["p.1"])],
            "timed": [{"name": "pbs", "steps": ["p.0", "p.1"]}], "outputs": ["z.0", "z.1"]});
        let res = run(&mut d, prog, vec![json!({"inputs": {"x.0": encode_vec(&[0, 1]), "x.1": encode_vec(&[1, 0])},
                                               "scalars": {"lut": [1, 1]}})]);
        let s = &res["samples"][0];
        assert_eq!(out(s, "z.0"), vec![1, 0]);
        assert_eq!(out(s, "z.1"), vec![1, 1]);
    }

    /// `cpu_ns` beside `ns` for every region of every sample, > 0; on one
    /// thread a region of boolean gates uses about one CPU (CPU / wall in
    /// 0.5..1.5 on at least one sample, never above 1.5: a loaded machine
    /// only lowers it). Capabilities report the pool's size and
    /// threads_honoured. A 1-thread pool is installed here because the test
    /// process's global pool has the default size.
    #[test]
    fn cpu_time_and_threads() {
        let _g = heavy();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        pool.install(|| {
            let mut d = Driver::new(rayon::current_num_threads());
            let caps = d.handle(&json!({"v": 2, "id": 1, "type": "capabilities"})).unwrap();
            assert_eq!(caps["threads"], 1);
            assert_eq!(caps["threads_honoured"], true);
            setup(&mut d, "tfhe_bool", json!({"preset": "default"}));
            let k = 4;
            let mut prog = copies("and", k);
            let cz: Vec<String> = (0..k).map(|i| format!("cz.{i}")).collect();
            prog["timed"] = json!([{"name": "enc", "steps": ["cx.0", "cy.0"]}, {"name": "cz", "steps": cz}]);
            let samples: Vec<Value> = (0..3u64)
                .map(|s| {
                    let mut inputs = Map::new();
                    for i in 0..k as u64 {
                        inputs.insert(format!("x.{i}"), encode_vec(&[(i + s) % 2, 1]));
                        inputs.insert(format!("y.{i}"), encode_vec(&[1, (i + s + 1) % 2]));
                    }
                    json!({"inputs": inputs})
                })
                .collect();
            let res = run(&mut d, prog, samples);
            for sample in res["samples"].as_array().unwrap() {
                let ns = sample["ns"].as_object().unwrap();
                let cpu = sample["cpu_ns"].as_object().expect("sample has cpu_ns");
                assert_eq!(ns.keys().collect::<Vec<_>>(), cpu.keys().collect::<Vec<_>>());
                for (r, c) in cpu {
                    assert!(c.as_u64().unwrap() > 0, "region {r}: cpu_ns {c}");
                }
                let ratio = cpu["cz"].as_u64().unwrap() as f64 / ns["cz"].as_u64().unwrap() as f64;
                // No lower bound: on a loaded host the process waits for a core, and CPU / wall
                // falls with the load (a timing threshold).
                assert!(ratio <= 1.5, "cpu/wall {ratio:.3} on one thread");
            }
        });
    }

    /// The orchestrator's keygen benchmark: keygen timed, then its keys used
    /// by encrypt_sk, one integer op (two copies) and decrypt; then the
    /// setup's keys again.
    #[test]
    fn int_keygen_then_use() {
        let _g = heavy();
        let mut d = Driver::new(1);
        setup(&mut d, "tfhe_int", json!({"preset": "PARAM_MESSAGE_1_CARRY_1_KS_PBS_TUNIFORM_2M128", "bits": 8}));
        let prog = json!({"steps": [
            step("k", "keygen", &[]),
            keyed("cx.0", "encrypt_sk", &["x.0"], "k"), keyed("cy.0", "encrypt_sk", &["y.0"], "k"),
            keyed("cx.1", "encrypt_sk", &["x.1"], "k"), keyed("cy.1", "encrypt_sk", &["y.1"], "k"),
            keyed("cz.0", "int_add", &["cx.0", "cy.0"], "k"), keyed("cz.1", "int_add", &["cx.1", "cy.1"], "k"),
            keyed("z.0", "decrypt", &["cz.0"], "k"), keyed("z.1", "decrypt", &["cz.1"], "k")],
            "timed": [{"name": "k", "steps": ["k"]}, {"name": "cz", "steps": ["cz.0", "cz.1"]}],
            "outputs": ["z.0", "z.1"], "sizes": ["k"]});
        let res = run(&mut d, prog, vec![json!({"inputs": {
            "x.0": encode_vec(&[200]), "y.0": encode_vec(&[100]),
            "x.1": encode_vec(&[7]), "y.1": encode_vec(&[250])}})]);
        let s = &res["samples"][0];
        assert_eq!(out(s, "z.0"), vec![44]);
        assert_eq!(out(s, "z.1"), vec![1]);
        assert_eq!(s["ns"].as_object().unwrap().len(), 2);
        assert!(res["sizes_bytes"]["k"].as_u64().unwrap() > 0);
        // Back on the setup's keys (the thread-local server key is switched back).
        let res = run(&mut d, copies("int_gt", 2), vec![json!({"inputs": {
            "x.0": encode_vec(&[5]), "y.0": encode_vec(&[4]), "x.1": encode_vec(&[4]), "y.1": encode_vec(&[5])}})]);
        let s = &res["samples"][0];
        assert_eq!(out(s, "z.0"), vec![1]);
        assert_eq!(out(s, "z.1"), vec![0]);
    }
}
