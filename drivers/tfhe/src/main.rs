//! fhemark driver for TFHE-rs.
//!
//! Speaks protocol v2 (protocol/PROTOCOL.md) with the bit/integer extension
//! (protocol/PROTOCOL-bits.md): one JSON request per line on stdin, one JSON
//! reply per line on stdout; logs go to stderr.

mod engine;
mod presets;
mod wire;

use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Version of the tfhe crate this driver is pinned to (Cargo.toml `=1.8.2`;
/// a unit test keeps the two in step). build.sh names another version when it
/// builds the driver against one (`fhemark setup --library tfhe-rs@1.7.2`).
pub const TFHE_VERSION: &str = match option_env!("FHEMARK_TFHE_VERSION") {
    Some(v) => v,
    None => "1.8.2",
};
pub const DRIVER_VERSION: &str = env!("CARGO_PKG_VERSION");

fn threads_from_env() -> usize {
    std::env::var("FHEMARK_THREADS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(1)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn main() {
    // The rayon global pool is sized from FHEMARK_THREADS (protocol default 1)
    // before any key or ciphertext exists; TFHE-rs uses no other threads on CPU.
    if let Err(e) = engine::static_capabilities(engine::CAPABILITIES) {
        eprintln!("fhemark-tfhe: {e}");
        std::process::exit(2);
    }
    let threads = threads_from_env();
    if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global() {
        eprintln!("fhemark-tfhe: could not build the rayon pool: {e}");
    }
    // Keep the default panic hook (it prints to stderr); replies carry the message.
    let mut driver = engine::Driver::new(rayon::current_num_threads());
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fhemark-tfhe: stdin read error: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let (reply, stop) = match serde_json::from_str::<Value>(&line) {
            Err(e) => (
                json!({"v": 2, "id": null, "ok": false,
                       "error": {"kind": "internal", "message": one_line(&format!("request is not JSON: {e}"))}}),
                false,
            ),
            Ok(req) => {
                let id = req.get("id").cloned().unwrap_or(Value::Null);
                let is_shutdown = req.get("type").and_then(Value::as_str) == Some("shutdown");
                let res = catch_unwind(AssertUnwindSafe(|| driver.handle(&req)));
                let reply = match res {
                    Ok(Ok(result)) => json!({"v": 2, "id": id, "ok": true, "result": result}),
                    Ok(Err(e)) => json!({"v": 2, "id": id, "ok": false,
                                         "error": {"kind": e.kind, "message": one_line(&e.message)}}),
                    Err(p) => {
                        driver.after_panic();
                        json!({"v": 2, "id": id, "ok": false,
                               "error": {"kind": "internal",
                                         "message": one_line(&format!("panic in TFHE-rs or driver: {}", panic_message(&*p)))}})
                    }
                };
                (reply, is_shutdown)
            }
        };
        let mut out = stdout.lock();
        let s = serde_json::to_string(&reply).expect("reply serializes");
        if writeln!(out, "{s}").and_then(|_| out.flush()).is_err() {
            eprintln!("fhemark-tfhe: stdout closed");
            break;
        }
        if stop {
            break;
        }
    }
    std::process::exit(0);
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_constant_matches_cargo_toml() {
        let toml = include_str!("../Cargo.toml");
        assert!(
            toml.contains(&format!("version = \"={}\"", super::TFHE_VERSION)),
            "TFHE_VERSION does not match the tfhe pin in Cargo.toml"
        );
    }
}
