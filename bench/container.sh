#!/usr/bin/env bash
# Container smoke test: packs the already built binary and site into an image FROM scratch (scripts/image),
# starts it with a published port and checks, from outside, health and readiness, sign-up and one streamed
# chat turn; then `docker compose config` validates deploy/compose.yaml. Starts dockerd when none runs (and
# installs Debian's docker.io when it is missing) and stops what it started.
#
#   QUIRE_BIN=target/debug/quire bench/container.sh
#
# Needs curl and a built site with its compressed copies (`quire precompress`) in target/site (QUIRE_SITE to use
# another).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
cd "$ROOT"
export QUIRE_BIN="${QUIRE_BIN:-$ROOT/target/debug/quire}"
export QUIRE_SITE="${QUIRE_SITE:-$ROOT/target/site}"

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
command -v curl >/dev/null || missing+=(curl)
command -v jq >/dev/null || missing+=(jq)
command -v objcopy >/dev/null || missing+=(binutils)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

work="$(mktemp -d)"
tag="quire-smoke:$$"
name="quire-smoke-$$"
dockerd_pid=
cleanup() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker rmi -f "$tag" >/dev/null 2>&1 || true
  if [ -n "$dockerd_pid" ]; then
    kill "$dockerd_pid" 2>/dev/null || true
    # dockerd stops its containerd with it.
    for _ in $(seq 1 50); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if ! docker info >/dev/null 2>&1; then
  step "starting dockerd (log: $work/dockerd.log)"
  dockerd >"$work/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 100); do docker info >/dev/null 2>&1 && break; sleep 0.3; done
  docker info >/dev/null 2>&1 || { tail -20 "$work/dockerd.log"; echo "dockerd did not start" >&2; exit 1; }
fi

step "image from the test build"
scripts/image "$tag"

step "starting the container"
docker run -d --name "$name" -p 127.0.0.1::3000 \
  -e QUIRE_RATE_LIMITS=off -e QUIRE_SIGNUP=open -e QUIRE_BUILTIN_DELAY_MS=5 -e QUIRE_SHUTDOWN_SECONDS=5 "$tag" >/dev/null
# No reader that stops early in a pipeline: under pipefail the writer's SIGPIPE (exit 141) would end the script.
base="http://$(docker port "$name" 3000/tcp | sed -n 1p)"
for _ in $(seq 1 100); do curl -fsS "$base/api/health" >/dev/null 2>&1 && break; sleep 0.2; done
fail() {
  echo "container smoke test failed: $*" >&2
  docker logs "$name" 2>&1 | tail -30 >&2
  exit 1
}
grep -q '"ok"' <<<"$(curl -fsS "$base/api/health")" || fail "no health at $base"
grep -q '"ready"' <<<"$(curl -fsS "$base/api/ready")" || fail "not ready"
[ "$(docker exec "$name" /app/quire probe >/dev/null 2>&1; echo $?)" = 0 ] || fail "the health check command fails"
user="$(docker inspect --format '{{.Config.User}}' "$name")"
[ "$user" = "10001:10001" ] || fail "runs as '$user'"

token="$(curl -fsS -H 'content-type: application/json' \
  -d '{"email":"smoke@example.com","password":"correct horse battery"}' "$base/api/auth/register" | jq -r .token)"
[ -n "$token" ] && [ "$token" != null ] || fail "sign-up"
auth=(-H "authorization: Bearer $token" -H 'content-type: application/json')
thread="$(curl -fsS "${auth[@]}" -d '{}' "$base/api/threads" | jq -r .id)"
curl -fsSN "${auth[@]}" -d '{"content":"Hello from the container"}' "$base/api/threads/$thread/chat" >"$work/stream" ||
  fail "chat"
grep -q '^event: text_delta' "$work/stream" || fail "no streamed text: $(head -c 500 "$work/stream")"
grep -q '^event: message_complete' "$work/stream" || fail "the turn did not complete: $(tail -c 500 "$work/stream")"
answer="$(curl -fsS "${auth[@]}" "$base/api/threads/$thread" | jq -r '.messages[] | select(.role == "assistant") | .content')"
[ -n "$answer" ] || fail "the answer was not saved"

# The image keeps the site's files compressed only: each goes out as the client accepts, decoded for one that
# takes no compression.
# The main module, named by its content's hash (quire.<hash>.wasm): the newest, this build's.
wasm=
for f in "$QUIRE_SITE"/pkg/quire*.wasm; do [ -n "$wasm" ] && ! [ "$f" -nt "$wasm" ] || wasm="$f"; done
[ -f "$wasm" ] || fail "no quire*.wasm in $QUIRE_SITE/pkg"
docker cp "$name:/app/site/pkg/$(basename "$wasm")" "$work/wasm" >/dev/null 2>&1 &&
  fail "the image keeps the uncompressed wasm"
docker cp "$name:/app/site/pkg/$(basename "$wasm").br" "$work/wasm.br" >/dev/null 2>&1 || fail "no brotli copy of the wasm"
# Files the server reads itself stay whole: the page renderer reads the wasm split's manifest.
for manifest in "$QUIRE_SITE"/pkg/__wasm_split_manifest*.json; do
  [ -f "$manifest" ] || continue
  docker cp "$name:/app/site/pkg/$(basename "$manifest")" "$work/manifest" >/dev/null 2>&1 ||
    fail "the image lacks $(basename "$manifest")"
done
url="$base/pkg/$(basename "$wasm")"
curl -fsS -H 'accept-encoding: identity' -o "$work/wasm.fetched" "$url" || fail "the wasm could not be fetched"
cmp -s "$work/wasm.fetched" "$wasm" || fail "the wasm decoded is not the built one"
encoding="$(curl -fsS -o /dev/null -w '%header{content-encoding}' -H 'accept-encoding: gzip, br' "$url")"
[ "$encoding" = br ] || fail "the wasm went out as '$encoding' to a client taking brotli"

step "stopping the container (SIGTERM)"
docker stop -t 20 "$name" >/dev/null
[ "$(docker inspect --format '{{.State.ExitCode}}' "$name")" = 0 ] || fail "exit code after SIGTERM"

step "validating deploy/compose.yaml"
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi
# With the example environment files in place of the real ones.
cp -r deploy "$work/deploy"
cp "$work/deploy/quire.env.example" "$work/deploy/quire.env"
cp "$work/deploy/postgres.env.example" "$work/deploy/postgres.env"
config="$(cd "$work/deploy" && QUIRE_IMAGE="$tag" "${compose[@]}" -f compose.yaml config)"
for want in "image: $tag" "/app/quire" "condition: service_healthy" "QUIRE_JWT_SECRET" "POSTGRES_PASSWORD"; do
  grep -qF "$want" <<<"$config" || { echo "$config" >&2; fail "compose.yaml lacks '$want'"; }
done

size="$(docker image inspect --format '{{.Size}}' "$tag")"
echo "container smoke test passed (test image $((size / 1000000)) MB, answer: ${answer:0:60}...)"
