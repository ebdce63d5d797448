#!/usr/bin/env bash
# Runs each cargo-fuzz target in fuzz/ for a bounded time: the SSE parser, the OpenAI and Anthropic stream
# decoders, the search query translation, the Markdown renderer, the import planner and the PDF extraction
# child (run as the server runs it, from QUIRE_BIN or target/release/quire). Fails when a target
# finds a crash (its input is left in fuzz/artifacts/<target>/).
#
# Usage: bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60 seconds, every target)
# Needs a nightly toolchain (`rustup toolchain list`; it is not installed here because toolchains cannot be
# downloaded on every machine) and installs cargo-fuzz from crates.io when missing. The build goes to
# target/fuzz (release, debug assertions on, no sanitizer: our crates forbid unsafe code; the properties
# are assertions). The same properties run on stable in the test suite (proptest), a few hundred cases each.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
cd "$ROOT"

CARGO_FUZZ_VERSION=0.13.2
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(sse openai_stream anthropic_stream search_query markdown import_json extract_pdf)

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: needs a nightly toolchain (rustup toolchain install nightly); the stable property tests cover the same ground" >&2
  exit 2
fi
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
  step "installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi

fuzz=(cargo +nightly fuzz)
options=(--fuzz-dir fuzz --target-dir "$ROOT/target/fuzz" --sanitizer none --debug-assertions)
step "building the fuzz targets"
"${fuzz[@]}" build "${options[@]}"

corpus_root="$ROOT/target/fuzz/corpus"
results=()
for target in "${targets[@]}"; do
  step "fuzzing $target for ${seconds}s"
  mkdir -p "$corpus_root/$target"
  log="$ROOT/target/fuzz/$target.log"
  seeds=()
  # The extraction child starts from the crafted files of the hostile suite (read only; new inputs go to the first folder).
  [ "$target" = extract_pdf ] && seeds=("$ROOT/server/tests/fixtures/hostile")
  # The corpus lives in target/ (not committed): each run starts from what earlier runs found.
  if ! "${fuzz[@]}" run "${options[@]}" "$target" "$corpus_root/$target" "${seeds[@]}" -- \
    -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz: $target FAILED (input in fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  runs="$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  results+=("$target: $runs runs, no crash")
done
printf 'fuzz (%ss each, %s):\n' "$seconds" "$(git rev-parse --short HEAD)"
printf '  %s\n' "${results[@]}"
