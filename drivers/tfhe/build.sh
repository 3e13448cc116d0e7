#!/usr/bin/env bash
# Builds the TFHE-rs driver into the fhemark cache (never into the clone).
# Exits 0 with one line when cargo is missing: the driver is then unavailable.
# `bash build.sh test` also runs the unit tests (cargo test --release, same cache).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"
if ! command -v cargo >/dev/null 2>&1; then
    echo "tfhe-rs driver: cargo not found (install Rust 1.91+ from https://rustup.rs), skipping"
    exit 0
fi
export CARGO_TARGET_DIR="$cache/cargo-target"
mkdir -p "$cache/bin"
cd "$here"
cargo build --release --locked
if [ "${1:-}" = "test" ]; then
    cargo test --release --locked
fi
install -m 0755 "$CARGO_TARGET_DIR/release/fhemark-tfhe" "$cache/bin/fhemark-tfhe"
echo "tfhe-rs driver: built $cache/bin/fhemark-tfhe"
