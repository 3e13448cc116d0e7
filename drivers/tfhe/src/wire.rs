//! Wire encoding of vectors and driver error values.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

/// An error answered to the orchestrator (protocol error kinds).
#[derive(Debug, Clone)]
pub struct DErr {
    pub kind: &'static str,
    pub message: String,
}

pub type DResult<T> = Result<T, DErr>;

pub fn internal(m: impl Into<String>) -> DErr {
    DErr { kind: "internal", message: m.into() }
}
pub fn unsupported(m: impl Into<String>) -> DErr {
    DErr { kind: "unsupported", message: m.into() }
}
pub fn invalid_params(m: impl Into<String>) -> DErr {
    DErr { kind: "invalid_params", message: m.into() }
}

/// Decodes a wire vector into unsigned integers. Accepts `u64` and (for
/// convenience) non-negative `i64`.
pub fn decode_vec(v: &Value) -> DResult<Vec<u64>> {
    let dtype = v
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| internal("vector: missing dtype"))?;
    let b64 = v
        .get("b64")
        .and_then(Value::as_str)
        .ok_or_else(|| internal("vector: missing b64"))?;
    let bytes = B64
        .decode(b64)
        .map_err(|e| internal(format!("vector: bad base64: {e}")))?;
    if bytes.len() % 8 != 0 {
        return Err(internal(format!(
            "vector: {} bytes is not a multiple of 8",
            bytes.len()
        )));
    }
    let chunks = bytes.chunks_exact(8).map(|c| c.try_into().unwrap());
    match dtype {
        "u64" => Ok(chunks.map(u64::from_le_bytes).collect()),
        "i64" => chunks
            .map(i64::from_le_bytes)
            .map(|x| {
                u64::try_from(x)
                    .map_err(|_| internal(format!("vector: negative value {x} for an unsigned scheme")))
            })
            .collect(),
        other => Err(unsupported(format!(
            "vector dtype '{other}' not supported by TFHE schemes (use u64)"
        ))),
    }
}

pub fn encode_vec(v: &[u64]) -> Value {
    let mut bytes = Vec::with_capacity(v.len() * 8);
    for x in v {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    json!({"dtype": "u64", "b64": B64.encode(bytes)})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let v = vec![0, 1, u64::MAX, 12345];
        assert_eq!(decode_vec(&encode_vec(&v)).unwrap(), v);
    }

    #[test]
    fn i64_accepted_negative_refused() {
        let b = B64.encode([5i64.to_le_bytes(), (-1i64).to_le_bytes()].concat());
        let v = json!({"dtype": "i64", "b64": b});
        assert!(decode_vec(&v).is_err());
        let b = B64.encode(7i64.to_le_bytes());
        assert_eq!(decode_vec(&json!({"dtype": "i64", "b64": b})).unwrap(), vec![7]);
    }
}
