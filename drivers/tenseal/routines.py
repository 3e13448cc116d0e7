"""TenSEAL's own routines for the native variants of application workloads (PROTOCOL.md,
"Library routines"): inner_sum, inner_product, poly_eval. What TenSEAL offers beyond the SEAL
primitives is exactly these: its vectors' `sum`, `dot` and `polyval`.

- inner_sum: `vec.sum()`, TenSEAL's sum_vector over the vector's size: for n a power of two it
  rotates by n/2, n/4, ..., 1 (SEAL rotate_vector for CKKS, rotate_rows for BFV) and adds, so
  every slot gets sum_{j<n} in[(i+j) mod row], the protocol's semantics. TenSEAL sums over the
  vector's own size, which the driver's vectors set to every slot (inputs are padded): the
  ciphertext is re-wrapped, untimed, as a vector of size n (its protobuf `sizes` field set to n).
- inner_product: `x.dot(y)`: TenSEAL's mul_inplace (multiply, relinearize with auto_relin on;
  auto_rescale off: not rescaled, as the protocol asks), then the same sum.
- poly_eval (CKKS): `x.polyval(coeffs)`: the constant term freshly encrypted, the squares
  x^(2^i), and every non-zero term c_i x^i computed on its own from them, then added. It needs
  TenSEAL's auto_rescale (scales must match for its additions), turned on before the clock and
  off after the region; its result is rescaled as TenSEAL leaves it. BFV: TenSEAL's BFVVector
  has no polyval.
- linear_transform: not offered. TenSEAL's `matmul`/`mm` multiply a vector by a whole plaintext
  matrix of the vector's size (a sum per output: replicate, mask, sum_vector), not a set of
  diagonals of the slot vector; a different routine for a different layout.
"""
from __future__ import annotations

NAMES = ("inner_sum", "inner_product", "poly_eval")
OPS = {"bfv": ["inner_sum", "inner_product"], "ckks": list(NAMES)}
WHY_NOT = {
    "poly_eval": "TenSEAL's BFVVector has no polyval (CKKSVector only)",
    "linear_transform": "TenSEAL has no linear transformation by diagonals: its matmul/mm multiply a vector by a "
                        "whole plaintext matrix of the vector's size (replicate, mask, sum per output)",
}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(raw: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = raw[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def resized(raw: bytes, size: int) -> bytes:
    """A serialized CKKSVectorProto / BFVVectorProto with field 1 (`sizes`) replaced by [size]:
    the same ciphertext, seen by TenSEAL as a vector of `size` values."""
    kept, i = bytearray(), 0
    while i < len(raw):
        start = i
        key, i = _read_varint(raw, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _read_varint(raw, i)
        elif wire == 1:
            i += 8
        elif wire == 2:
            length, i = _read_varint(raw, i)
            i += length
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} in a TenSEAL vector")
        if field != 1:
            kept += raw[start:i]
    packed = _varint(size)
    return b"\x0a" + _varint(len(packed)) + packed + bytes(kept)
