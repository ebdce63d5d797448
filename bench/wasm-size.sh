#!/usr/bin/env bash
# Builds the release wasm (split as `scripts/run` builds it) and prints its sizes: raw, gzip -9 and brotli
# (quality 11), for the main module the page loads and for the lazily loaded pieces together.
# Usage: bench/wasm-size.sh   (needs the build tools scripts/run installs; brotli from Debian's `brotli` package)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
cd "$ROOT"
ensure_build_tools
command -v brotli >/dev/null || apt_install brotli
cargo leptos build --release --split --frontend-only >/dev/null
pkg=target/site/pkg
sizes() { # files...
  local raw=0 gz=0 br=0 f
  for f in "$@"; do
    raw=$((raw + $(stat -c %s "$f")))
    gz=$((gz + $(gzip -9 -c "$f" | wc -c)))
    br=$((br + $(brotli -q 11 -c "$f" | wc -c)))
  done
  printf 'raw %d bytes, gzip %d bytes, brotli %d bytes' "$raw" "$gz" "$br"
}
# The main module is named by its content's hash (`quire.<hash>.wasm`); the newest is this build's.
main=$(ls -t "$pkg"/quire*.wasm | sed -n 1p)
lazy=()
for f in "$pkg"/*.wasm; do case "$f" in "$pkg"/quire*.wasm) ;; *) lazy+=("$f") ;; esac; done
printf 'main module (loaded with the page): %s (%s)\n' "$(sizes "$main")" "$(git rev-parse --short HEAD)"
printf 'lazily loaded pieces (%d files): %s\n' "${#lazy[@]}" "$(sizes "${lazy[@]}")"
