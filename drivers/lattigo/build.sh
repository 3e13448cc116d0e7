#!/usr/bin/env bash
# Builds the Lattigo driver into the fhemark build cache (outside the clone).
# Go's own build and module caches stay where Go keeps them.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v go >/dev/null 2>&1; then
    echo "lattigo driver skipped: Go toolchain not found; install Go 1.24+ (Lattigo v6.2.0 needs it)"
    exit 0
fi

# Lattigo v6.2.0 declares go 1.24.0 in its go.mod.
ver="$(go env GOVERSION 2>/dev/null || true)"   # e.g. go1.26.8
minor="$(printf '%s' "$ver" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [ -n "$minor" ] && [ "$minor" -lt 24 ] && [ "${GOTOOLCHAIN:-local}" = "local" ]; then
    echo "lattigo driver skipped: $ver is too old; install Go 1.24+ (Lattigo v6.2.0 needs it)"
    exit 0
fi

cache="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"
mkdir -p "$cache/bin"
# -trimpath keeps local paths out of the binary; go.mod/go.sum pin Lattigo v6.2.0
# (-mod=readonly: never rewrite them). GOTOOLCHAIN=local: use the Go found
# here, never download another one. -buildvcs=false: the build does not need git.
GOTOOLCHAIN="${GOTOOLCHAIN:-local}" \
    go build -trimpath -buildvcs=false -mod=readonly -o "$cache/bin/fhemark-lattigo.tmp" .
mv -f "$cache/bin/fhemark-lattigo.tmp" "$cache/bin/fhemark-lattigo"
echo "lattigo driver built: $cache/bin/fhemark-lattigo"
