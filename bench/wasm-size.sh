#!/usr/bin/env bash
# Builds the release site and prints the size of the wasm bundle: raw, gzip -9 and brotli (quality 11).
# Usage: bench/wasm-size.sh   (needs the build tools scripts/run installs; brotli from Debian's `brotli` package)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
cd "$ROOT"
ensure_build_tools
command -v brotli >/dev/null || apt_install brotli
cargo leptos build --release >/dev/null
wasm=target/site/pkg/quire.wasm
raw=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
br=$(brotli -q 11 -c "$wasm" | wc -c)
printf 'wasm raw %d bytes, gzip %d bytes, brotli %d bytes (%s)\n' "$raw" "$gz" "$br" "$(git rev-parse --short HEAD)"
