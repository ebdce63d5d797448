#!/usr/bin/env bash
# The first page in Chromium against a built server: bytes transferred and time until hydrated and accepting
# input, cold and warm, on the sign-in page and on a conversation of 200 messages (bench/first-page.mjs).
# Usage: bench/first-page.sh [rounds]   (QUIRE_BIN: the server, default the release build of `scripts/run`;
# the site in target/site must be built and precompressed by the same build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin="${QUIRE_BIN:-target/server-release/quire}"
[ -x "$bin" ] || { echo "no server at $bin: run scripts/run once, or set QUIRE_BIN" >&2; exit 2; }
[ -d end2end/node_modules/@playwright/test ] || (cd end2end && npm ci --no-audit --no-fund)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data=$(mktemp -d)
LEPTOS_SITE_ADDR="127.0.0.1:$port" LEPTOS_SITE_ROOT="$PWD/target/site" QUIRE_DATA_DIR="$data" QUIRE_RATE_LIMITS=off QUIRE_SIGNUP=open \
  RUST_LOG=warn "$bin" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/api/health" >/dev/null && break; sleep 0.1; done
echo "server: $bin ($(git rev-parse --short HEAD))"
node bench/first-page.mjs "http://127.0.0.1:$port" "${1:-5}"
