#!/usr/bin/env bash
# Builds the TFHE-rs driver into the fhemark cache (never into the clone).
# Exits 0 with one line when cargo is missing: the driver is then unavailable.
# `bash build.sh test` also runs the unit tests (cargo test --release, same cache).
# FHEMARK_LIB_VERSION=X.Y.Z (fhemark setup --library tfhe-rs@X.Y.Z) builds against tfhe X.Y.Z
# instead of the pin: a copy of the manifest and lock in $cache/tfhe-X.Y.Z (the sources stay
# here), the same CARGO_TARGET_DIR so shared dependencies compile once, $cache/bin/fhemark-tfhe-X.Y.Z.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"
if ! command -v cargo >/dev/null 2>&1; then
    echo "tfhe-rs driver: cargo not found (install Rust 1.91+ from https://rustup.rs), skipping"
    exit 0
fi
export CARGO_TARGET_DIR="$cache/cargo-target"
mkdir -p "$cache/bin"
pinned="$(sed -n 's/^tfhe = { version = "=\([^"]*\)".*/\1/p' "$here/Cargo.toml")"
version="${FHEMARK_LIB_VERSION:-$pinned}"
if [ "$version" = "$pinned" ]; then
    cd "$here"
    cargo build --release --locked
    if [ "${1:-}" = "test" ]; then
        cargo test --release --locked
    fi
    install -m 0755 "$CARGO_TARGET_DIR/release/fhemark-tfhe" "$cache/bin/fhemark-tfhe"
    echo "tfhe-rs driver: built $cache/bin/fhemark-tfhe"
    exit 0
fi
# Another version: the package is renamed so its binary does not overwrite the pinned one in
# the shared target dir; the lock starts from the pinned one so other crates keep their versions.
work="$cache/tfhe-$version"
name="fhemark-tfhe-v${version//[.-]/_}"  # a package name has no dots
mkdir -p "$work"
sed -e "s|^tfhe = { version = \"=$pinned\"|tfhe = { version = \"=$version\"|" \
    -e "s|^name = \"fhemark-tfhe\"|name = \"$name\"|" \
    -e "s|^path = \"src/main.rs\"|path = \"$here/src/main.rs\"|" \
    -e "s|^edition = \"2021\"|edition = \"2021\"\nbuild = \"$here/build.rs\"|" \
    "$here/Cargo.toml" > "$work/Cargo.toml.new"
if ! cmp -s "$work/Cargo.toml.new" "$work/Cargo.toml" || [ ! -f "$work/Cargo.lock" ]; then
    mv "$work/Cargo.toml.new" "$work/Cargo.toml"
    cp "$here/Cargo.lock" "$work/Cargo.lock"
    (cd "$work" && cargo update --quiet -p "tfhe@$pinned" --precise "$version")
else
    rm -f "$work/Cargo.toml.new"
fi
cd "$work"
# The driver names its parameter sets by the version's module (current_params: V1_7_...).
prefix="$(echo "$version" | awk -F. '{ printf "V%s_%s_", $1, $2 }')"
FHEMARK_TFHE_VERSION="$version" FHEMARK_TFHE_PARAMS_PREFIX="$prefix" \
    FHEMARK_TFHE_SHORTINT_DEFAULT="${prefix}PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128" \
    cargo build --release --locked
install -m 0755 "$CARGO_TARGET_DIR/release/$name" "$cache/bin/fhemark-tfhe-$version"
echo "tfhe-rs driver: built $cache/bin/fhemark-tfhe-$version (tfhe $version)"
