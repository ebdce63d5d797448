#!/usr/bin/env bash
# The long reliability runs, one after the other, with a summary to copy into BENCHMARKS.md:
#   crash (kill -9 mid-answer)             ITERATIONS / 10 times   bench/crash.sh
#   client leaving mid-answer              ITERATIONS / 10 times   reliability::a_client_that_leaves_...
#   resume at random points                ITERATIONS times        reliability::resuming_at_random_points_...
#   provider faults                        ITERATIONS turns        reliability::every_provider_fault_...
#   50 and 500 parallel sends, idempotent  ITERATIONS / 100 rounds reliability::*parallel*
#   Schemathesis                           ITERATIONS / 2 examples per operation   bench/api-fuzz.sh
#   cargo-fuzz, each target                FUZZ_SECONDS (default 300) seconds       bench/fuzz.sh (needs nightly)
#
# Usage: bench/reliability.sh [ITERATIONS]   (default 1000). QUIRE_RELIABILITY_SEED fixes the random choices.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
cd "$ROOT"

n="${1:-1000}"
tenth=$(( n / 10 > 0 ? n / 10 : 1 ))
rounds=$(( n / 100 > 0 ? n / 100 : 1 ))
summary=()
timed() {
  local label="$1"
  shift
  local start=$SECONDS
  "$@"
  summary+=("$label: passed in $((SECONDS - start)) s")
}

step "building the test binary and the server"
cargo test -q -p server --test it --no-run
suite() {
  QUIRE_RELIABILITY_ITERATIONS="$1" cargo test -q -p server --test it "$2" -- --nocapture --test-threads 1
}

timed "crash, $tenth kills" env QUIRE_BIN="$ROOT/target/debug/quire" bench/crash.sh "$tenth"
timed "client leaving mid-answer, $tenth times" suite "$tenth" reliability::a_client_that_leaves
timed "resume at random points, $n times" suite "$n" reliability::resuming_at_random_points
timed "provider faults, $n turns" suite "$n" reliability::every_provider_fault
timed "parallel sends (50 to one thread, 500 to 50, 20 idempotent retries), $rounds rounds" suite "$rounds" parallel
timed "Schemathesis, $((n / 2)) examples per operation" env QUIRE_BIN="$ROOT/target/debug/quire" bench/api-fuzz.sh "$((n / 2))"
if rustup toolchain list | grep -q '^nightly'; then
  timed "cargo-fuzz, ${FUZZ_SECONDS:-300} s per target" bench/fuzz.sh "${FUZZ_SECONDS:-300}"
else
  summary+=("cargo-fuzz: skipped (no nightly toolchain)")
fi

printf '\nreliability, %s, commit %s:\n' "$(date -u +%Y-%m-%d)" "$(git rev-parse --short HEAD)"
printf '  %s\n' "${summary[@]}"
