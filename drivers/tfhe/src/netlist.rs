//! Boolean netlists: parsing, validation and evaluation over any gate backend.
//!
//! The wire format is specified in protocol/PROTOCOL-bits.md. Evaluation is
//! generic over [`Gates`] so that the same evaluator runs on TFHE ciphertexts
//! (the driver) and on plain booleans (the unit tests below).

use rayon::prelude::*;
use serde_json::Value;
use std::borrow::Cow;

/// Largest wire number accepted (keeps a malformed netlist from allocating
/// absurd amounts of memory).
pub const MAX_WIRE: usize = 1 << 26;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateKind {
    And,
    Or,
    Xor,
    Nand,
    Nor,
    Xnor,
    Not,
    Mux,
    Const(bool),
}

#[derive(Clone, Debug)]
pub struct Gate {
    pub kind: GateKind,
    pub out: usize,
    /// Argument wires: 2 for binary gates, 1 for `not`, 3 for `mux`
    /// (select, a, b), 0 for `const`.
    pub args: Vec<usize>,
}

#[derive(Clone, Debug)]
pub struct Netlist {
    pub n_inputs: usize,
    pub gates: Vec<Gate>,
    pub outputs: Vec<usize>,
    /// Number of wire slots (max wire + 1).
    pub n_wires: usize,
    /// Depth of each gate (inputs and constants have depth 0; a gate is
    /// 1 + the deepest of its arguments; `const` gates have depth 0).
    pub depth: Vec<usize>,
    /// For each wire, the index of the last gate that reads it
    /// (usize::MAX: an output, never freed; None: never read).
    pub last_use: Vec<Option<usize>>,
    pub max_depth: usize,
}

pub fn gate_arity(name: &str) -> Option<(GateKind, usize)> {
    Some(match name {
        "and" => (GateKind::And, 2),
        "or" => (GateKind::Or, 2),
        "xor" => (GateKind::Xor, 2),
        "nand" => (GateKind::Nand, 2),
        "nor" => (GateKind::Nor, 2),
        "xnor" => (GateKind::Xnor, 2),
        "not" => (GateKind::Not, 1),
        "mux" => (GateKind::Mux, 3),
        "const" => (GateKind::Const(false), 1),
        _ => return None,
    })
}

fn as_wire(v: &Value, what: &str) -> Result<usize, String> {
    let w = v
        .as_u64()
        .ok_or_else(|| format!("{what}: wire must be a non-negative integer, got {v}"))?;
    if w as usize > MAX_WIRE {
        return Err(format!("{what}: wire {w} exceeds the limit {MAX_WIRE}"));
    }
    Ok(w as usize)
}

impl Netlist {
    /// Parses and validates a netlist given as JSON.
    pub fn parse(v: &Value) -> Result<Netlist, String> {
        let obj = v.as_object().ok_or("netlist must be an object")?;
        let n_inputs = obj
            .get("n_inputs")
            .and_then(Value::as_u64)
            .ok_or("netlist.n_inputs must be a non-negative integer")? as usize;
        if n_inputs > MAX_WIRE {
            return Err("netlist.n_inputs too large".into());
        }
        let gates_json = obj
            .get("gates")
            .and_then(Value::as_array)
            .ok_or("netlist.gates must be an array")?;
        let outputs_json = obj
            .get("outputs")
            .and_then(Value::as_array)
            .ok_or("netlist.outputs must be an array")?;

        let mut gates = Vec::with_capacity(gates_json.len());
        let mut n_wires = n_inputs;
        for (i, g) in gates_json.iter().enumerate() {
            let arr = g
                .as_array()
                .ok_or_else(|| format!("gate {i}: must be an array [name, out, args...]"))?;
            let name = arr
                .first()
                .and_then(Value::as_str)
                .ok_or_else(|| format!("gate {i}: first element must be the gate name"))?;
            let (mut kind, arity) =
                gate_arity(name).ok_or_else(|| format!("gate {i}: unknown gate '{name}'"))?;
            if arr.len() != 2 + arity {
                return Err(format!(
                    "gate {i} ('{name}'): expected {} elements, got {}",
                    2 + arity,
                    arr.len()
                ));
            }
            let out = as_wire(&arr[1], &format!("gate {i} out"))?;
            let mut args = Vec::with_capacity(arity);
            if let GateKind::Const(_) = kind {
                let c = arr[2]
                    .as_u64()
                    .filter(|c| *c <= 1)
                    .ok_or_else(|| format!("gate {i}: const value must be 0 or 1"))?;
                kind = GateKind::Const(c == 1);
            } else {
                for (j, a) in arr[2..].iter().enumerate() {
                    args.push(as_wire(a, &format!("gate {i} arg {j}"))?);
                }
            }
            n_wires = n_wires.max(out + 1);
            gates.push(Gate { kind, out, args });
        }
        let mut outputs = Vec::with_capacity(outputs_json.len());
        for (i, o) in outputs_json.iter().enumerate() {
            outputs.push(as_wire(o, &format!("output {i}"))?);
        }
        Self::build(n_inputs, gates, outputs, n_wires)
    }

    /// Validates the gate order and computes depths and last uses.
    pub fn build(
        n_inputs: usize,
        gates: Vec<Gate>,
        outputs: Vec<usize>,
        n_wires: usize,
    ) -> Result<Netlist, String> {
        // wire_depth[w] = Some(depth) once the wire is defined.
        let mut wire_depth: Vec<Option<usize>> = vec![None; n_wires];
        for d in wire_depth.iter_mut().take(n_inputs) {
            *d = Some(0);
        }
        let mut last_use: Vec<Option<usize>> = vec![None; n_wires];
        let mut depth = Vec::with_capacity(gates.len());
        let mut max_depth = 0;
        for (i, g) in gates.iter().enumerate() {
            let mut d = 0;
            for &a in &g.args {
                match wire_depth.get(a).copied().flatten() {
                    Some(ad) => d = d.max(ad + 1),
                    None => {
                        return Err(format!(
                            "gate {i}: reads wire {a}, which is not an input and not written by an earlier gate"
                        ))
                    }
                }
                last_use[a] = Some(i);
            }
            if wire_depth[g.out].is_some() {
                return Err(format!(
                    "gate {i}: writes wire {}, which is already defined (every gate writes a new wire)",
                    g.out
                ));
            }
            wire_depth[g.out] = Some(d);
            max_depth = max_depth.max(d);
            depth.push(d);
        }
        for (i, &o) in outputs.iter().enumerate() {
            if o >= n_wires || wire_depth[o].is_none() {
                return Err(format!("output {i}: wire {o} is never defined"));
            }
            last_use[o] = Some(usize::MAX);
        }
        Ok(Netlist {
            n_inputs,
            gates,
            outputs,
            n_wires,
            depth,
            last_use,
            max_depth,
        })
    }
}

/// A gate backend: plain booleans or ciphertexts.
pub trait Gates: Sync {
    type T: Clone + Send + Sync;
    fn constant(&self, b: bool) -> Self::T;
    fn not(&self, a: &Self::T) -> Self::T;
    fn binary(&self, kind: GateKind, a: &Self::T, b: &Self::T) -> Self::T;
    fn mux(&self, s: &Self::T, a: &Self::T, b: &Self::T) -> Self::T;
}

fn apply<G: Gates>(g: &G, gate: &Gate, w: &[Option<Cow<'_, G::T>>]) -> G::T {
    let get = |i: usize| -> &G::T { w[gate.args[i]].as_deref().expect("validated wire") };
    match gate.kind {
        GateKind::Const(b) => g.constant(b),
        GateKind::Not => g.not(get(0)),
        GateKind::Mux => g.mux(get(0), get(1), get(2)),
        k => g.binary(k, get(0), get(1)),
    }
}

/// Evaluates the netlist. With `parallel`, all gates of one depth run
/// concurrently on the rayon pool; otherwise gates run one after the other
/// in the given order. Wires are freed after their last reader.
pub fn evaluate<G: Gates>(
    net: &Netlist,
    g: &G,
    inputs: &[G::T],
    parallel: bool,
) -> Result<Vec<G::T>, String> {
    if inputs.len() != net.n_inputs {
        return Err(format!(
            "netlist has n_inputs={} but the input array has {} bits",
            net.n_inputs,
            inputs.len()
        ));
    }
    let mut w: Vec<Option<Cow<'_, G::T>>> = Vec::with_capacity(net.n_wires);
    w.extend(inputs.iter().map(|x| Some(Cow::Borrowed(x))));
    w.resize_with(net.n_wires, || None);

    if !parallel {
        for (i, gate) in net.gates.iter().enumerate() {
            let v = apply(g, gate, &w);
            w[gate.out] = Some(Cow::Owned(v));
            for &a in &gate.args {
                if net.last_use[a] == Some(i) {
                    w[a] = None;
                }
            }
        }
    } else {
        // Bucket gate indices by depth, keeping the given order within a level.
        let mut levels: Vec<Vec<usize>> = vec![Vec::new(); net.max_depth + 1];
        for (i, &d) in net.depth.iter().enumerate() {
            levels[d].push(i);
        }
        // Last level (depth) at which each wire is read.
        let mut last_level: Vec<Option<usize>> = vec![None; net.n_wires];
        for (i, gate) in net.gates.iter().enumerate() {
            for &a in &gate.args {
                let d = net.depth[i];
                last_level[a] = Some(last_level[a].map_or(d, |x: usize| x.max(d)));
            }
        }
        for &o in &net.outputs {
            last_level[o] = Some(usize::MAX);
        }
        for (d, level) in levels.iter().enumerate() {
            let results: Vec<(usize, G::T)> = {
                let wr = &w;
                level
                    .par_iter()
                    .map(|&i| {
                        let gate = &net.gates[i];
                        (gate.out, apply(g, gate, wr))
                    })
                    .collect()
            };
            for (out, v) in results {
                w[out] = Some(Cow::Owned(v));
            }
            for &i in level {
                for &a in &net.gates[i].args {
                    if last_level[a] == Some(d) {
                        w[a] = None;
                    }
                }
            }
        }
    }
    Ok(net
        .outputs
        .iter()
        .map(|&o| w[o].as_deref().expect("validated output").clone())
        .collect())
}

/// Plain-boolean backend (reference semantics, used by the tests).
#[cfg(test)]
pub struct Plain;

#[cfg(test)]
impl Gates for Plain {
    type T = bool;
    fn constant(&self, b: bool) -> bool {
        b
    }
    fn not(&self, a: &bool) -> bool {
        !a
    }
    fn binary(&self, kind: GateKind, a: &bool, b: &bool) -> bool {
        let (a, b) = (*a, *b);
        match kind {
            GateKind::And => a & b,
            GateKind::Or => a | b,
            GateKind::Xor => a ^ b,
            GateKind::Nand => !(a & b),
            GateKind::Nor => !(a | b),
            GateKind::Xnor => !(a ^ b),
            _ => unreachable!("not a binary gate"),
        }
    }
    fn mux(&self, s: &bool, a: &bool, b: &bool) -> bool {
        if *s {
            *a
        } else {
            *b
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// n-bit ripple-carry adder: inputs a0..a(n-1), b0..b(n-1) (LSB first),
    /// outputs n sum bits then the carry.
    fn ripple_adder(n: usize) -> Value {
        let mut gates = vec![];
        let mut next = 2 * n;
        let mut new = || {
            next += 1;
            next - 1
        };
        let mut outs = vec![];
        let c0 = new();
        gates.push(json!(["const", c0, 0]));
        let mut c = c0;
        for i in 0..n {
            let (a, b) = (i, n + i);
            let t = new();
            gates.push(json!(["xor", t, a, b]));
            let s = new();
            gates.push(json!(["xor", s, t, c]));
            let g1 = new();
            gates.push(json!(["and", g1, a, b]));
            let g2 = new();
            gates.push(json!(["and", g2, t, c]));
            let co = new();
            gates.push(json!(["or", co, g1, g2]));
            outs.push(s);
            c = co;
        }
        outs.push(c);
        json!({"n_inputs": 2 * n, "gates": gates, "outputs": outs})
    }

    fn bits(x: u64, n: usize) -> Vec<bool> {
        (0..n).map(|i| (x >> i) & 1 == 1).collect()
    }

    #[test]
    fn adder_matches_plain_sum() {
        let n = 4;
        let net = Netlist::parse(&ripple_adder(n)).unwrap();
        for parallel in [false, true] {
            for x in 0..16u64 {
                for y in 0..16u64 {
                    let mut inp = bits(x, n);
                    inp.extend(bits(y, n));
                    let out = evaluate(&net, &Plain, &inp, parallel).unwrap();
                    let got: u64 = out.iter().enumerate().map(|(i, &b)| (b as u64) << i).sum();
                    assert_eq!(got, x + y, "x={x} y={y} parallel={parallel}");
                }
            }
        }
    }

    #[test]
    fn every_gate_kind() {
        let net = Netlist::parse(&json!({
            "n_inputs": 3,
            "gates": [["and",3,0,1],["or",4,0,1],["xor",5,0,1],["nand",6,0,1],
                      ["nor",7,0,1],["xnor",8,0,1],["not",9,0],["mux",10,2,0,1],
                      ["const",11,1]],
            "outputs": [3,4,5,6,7,8,9,10,11,0]
        }))
        .unwrap();
        for x in 0..8u64 {
            let i = bits(x, 3);
            let (a, b, s) = (i[0], i[1], i[2]);
            let want = vec![
                a & b,
                a | b,
                a ^ b,
                !(a & b),
                !(a | b),
                !(a ^ b),
                !a,
                if s { a } else { b },
                true,
                a,
            ];
            for parallel in [false, true] {
                assert_eq!(evaluate(&net, &Plain, &i, parallel).unwrap(), want);
            }
        }
    }

    #[test]
    fn rejects_bad_netlists() {
        let bad = [
            json!({"n_inputs": 2, "gates": [["and", 2, 0, 5]], "outputs": [2]}),
            json!({"n_inputs": 2, "gates": [["and", 1, 0, 1]], "outputs": [1]}),
            json!({"n_inputs": 2, "gates": [["and", 2, 0]], "outputs": [2]}),
            json!({"n_inputs": 2, "gates": [["foo", 2, 0, 1]], "outputs": [2]}),
            json!({"n_inputs": 2, "gates": [["const", 2, 2]], "outputs": [2]}),
            json!({"n_inputs": 2, "gates": [], "outputs": [7]}),
            json!({"n_inputs": 2, "gates": [["and", 3, 2, 0], ["not", 2, 0]], "outputs": [3]}),
        ];
        for b in bad {
            assert!(Netlist::parse(&b).is_err(), "accepted {b}");
        }
    }

    #[test]
    fn wrong_input_count() {
        let net = Netlist::parse(&ripple_adder(2)).unwrap();
        assert!(evaluate(&net, &Plain, &[true], false).is_err());
    }

    #[test]
    fn sparse_wire_numbers_and_freeing() {
        // Wire numbers need not be dense; outputs that are freed-too-early would panic.
        let net = Netlist::parse(&json!({
            "n_inputs": 2,
            "gates": [["xor", 100, 0, 1], ["and", 50, 100, 0], ["not", 7, 50]],
            "outputs": [100, 7, 50, 1]
        }))
        .unwrap();
        for parallel in [false, true] {
            let out = evaluate(&net, &Plain, &[true, false], parallel).unwrap();
            assert_eq!(out, vec![true, false, true, false]);
        }
    }
}
