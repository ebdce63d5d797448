#!/usr/bin/env bash
# How long the server takes to rebuild after one file changes: a handler (server/src/http/threads.rs) and a store
# file (crates/store/src/threads.rs), for the binary and for the test build of every crate. The build environment
# is the test command's (no incremental cache, views compiled as cargo-leptos compiles them). Each build is warmed
# first, so only the touched file's crates are rebuilt.
#   bench/rebuild.sh [runs]   (default 1)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_INCREMENTAL=0 RUSTFLAGS="--cfg erase_components"
runs="${1:-1}"
crates=(-p wire -p analysis -p store -p llm -p app -p server)

timed() {
  local start=$EPOCHREALTIME
  "$@" >/dev/null 2>&1
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }'
}

cargo build -q -p server --bin quire
cargo test -q "${crates[@]}" --no-run >/dev/null 2>&1
for ((run = 1; run <= runs; run++)); do
  for file in server/src/http/threads.rs crates/store/src/threads.rs; do
    touch "$file"
    printf 'binary  %-32s %6.1f s\n' "$file" "$(timed cargo build -p server --bin quire)"
    touch "$file"
    printf 'tests   %-32s %6.1f s\n' "$file" "$(timed cargo test "${crates[@]}" --no-run)"
  done
done
