#!/usr/bin/env bash
# API fuzzing with Schemathesis (from PyPI): starts the real `quire` binary on a temporary data directory,
# signs up a user and runs every operation of /api/openapi.json with generated valid and invalid requests,
# authenticated with that user's Bearer token. Fails on any 5xx answer, on any answer that does not match the
# OpenAPI document (status code, content type, headers, body schema), that accepts invalid data or that refuses
# valid data (bench/schemathesis.toml names the few refusals the document cannot state).
#
# Usage: bench/api-fuzz.sh [MAX_EXAMPLES]   (per operation; default 10, the long run uses 500)
# Schemathesis is installed once into a virtualenv under ${XDG_CACHE_HOME:-~/.cache}/quire (skipped when
# present). QUIRE_BIN: a quire binary to use instead of building target/debug/quire.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
source "$ROOT/bench/quire-server.sh"
cd "$ROOT"

SCHEMATHESIS_VERSION=4.32.5
max_examples="${1:-10}"

venv="${XDG_CACHE_HOME:-$HOME/.cache}/quire/schemathesis-$SCHEMATHESIS_VERSION"
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  step "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv" || { apt_install python3-venv && python3 -m venv "$venv"; }
  "$venv/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION"
fi
missing=()
command -v jq >/dev/null || missing+=(jq)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
ensure_quire_bin

tmp="$(mktemp -d "${TMPDIR:-/tmp}/quire-api-fuzz.XXXXXX")"
QUIRE_PID=
cleanup() {
  stop_quire KILL
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port="$(free_port)"
base="http://127.0.0.1:$port"
export QUIRE_BUILTIN_DELAY_MS=0
start_quire "$tmp/data" "$port" "$tmp/quire.log"
token="$(register "$base" fuzz@example.com)"
# A conversation with an answer and a document, so that generated requests find real things too.
thread="$(curl -sf -H "authorization: Bearer $token" -H 'content-type: application/json' -d '{"title":"Seed"}' \
  "$base/api/threads" | jq -r .id)"
curl -sfN -H "authorization: Bearer $token" -H 'content-type: application/json' \
  -d '{"content":"Members must be able to book a slot. Generate user stories."}' "$base/api/threads/$thread/chat" >/dev/null

step "schemathesis: at most $max_examples examples per operation"
# Logging out (here, everywhere, or this session from the list of sessions) would end the session the whole run uses;
# it is covered by the integration tests instead. A conversation's change stream stays open for as long as it is
# watched, so each request would wait out the timeout; the integration tests cover it too.
status=0
(cd "$tmp" && "$venv/bin/schemathesis" --config-file "$ROOT/bench/schemathesis.toml" run "$base/api/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,positive_data_acceptance \
  --exclude-path /api/auth/logout \
  --exclude-path /api/auth/logout-all \
  --exclude-path '/api/auth/sessions/{id}' \
  --exclude-path '/api/threads/{id}/changes' \
  --max-examples "$max_examples" \
  --workers "${QUIRE_FUZZ_WORKERS:-1}" \
  --request-timeout 30 \
  --suppress-health-check all \
  --no-color) || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- server log (last lines)" >&2
  tail -n 40 "$tmp/quire.log" >&2
fi
exit "$status"
