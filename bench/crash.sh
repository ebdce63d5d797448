#!/usr/bin/env bash
# Crash test: starts the real `quire` binary on a temporary SQLite data directory with a slow built-in
# assistant, begins a streamed answer, kills the server with SIGKILL in the middle of it, restarts it and
# checks that
#   - every user message the server acknowledged (answered 200 and started streaming) is still there,
#   - the partial answer is kept with status `interrupted`, and is the beginning of the real answer,
#   - `PRAGMA integrity_check` of the database says `ok` (checked while the server is down),
# for this iteration, and for every earlier one each tenth iteration and at the end (the data directory is
# kept across all iterations).
#
# Usage: bench/crash.sh [ITERATIONS]   (default 3; the long run is 100). QUIRE_BIN: a quire binary to use
# instead of building target/debug/quire. Needs curl, jq, python3 and the sqlite3 CLI (installed from Debian
# when missing). Prints one summary line; exits non-zero on the first failed check.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
source "$ROOT/bench/quire-server.sh"
cd "$ROOT"

iterations="${1:-3}"
missing=()
command -v sqlite3 >/dev/null || missing+=(sqlite3)
command -v jq >/dev/null || missing+=(jq)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
ensure_quire_bin

tmp="$(mktemp -d "${TMPDIR:-/tmp}/quire-crash.XXXXXX")"
QUIRE_PID=
stream_pid=
cleanup() {
  [ -n "$stream_pid" ] && kill "$stream_pid" 2>/dev/null || true
  stop_quire KILL
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

data="$tmp/data"
log="$tmp/quire.log"
port="$(free_port)"
base="http://127.0.0.1:$port"
# 40 ms a piece: the answer below takes over 4 seconds; the kill comes 0.4 to 1.3 s after the first piece.
export QUIRE_BUILTIN_DELAY_MS=40
start_quire "$data" "$port" "$log"
token="$(register "$base" crash@example.com)"
auth=(-H "authorization: Bearer $token")

fail() {
  echo "crash: FAILED at iteration $1: $2" >&2
  echo "--- server log (last lines)" >&2
  tail -n 20 "$log" >&2
  exit 1
}

question="We are building a booking system for a chain of climbing gyms. Members must be able to book a slot \
from their phone. Staff need a daily list of bookings. The system should send a reminder two hours before each \
slot. Admins want a monthly usage report. Payments must be refunded automatically when a gym closes early. \
Instructors should see who booked their classes. Members need to cancel up to an hour before."
body="$(jq -cn --arg c "$question" '{content: $c}')"

new_thread() {
  curl -sf "${auth[@]}" -H 'content-type: application/json' -d '{}' "$base/api/threads" | jq -r .id
}

# The whole answer, from one uninterrupted turn.
reference_thread="$(new_thread)"
curl -sfN "${auth[@]}" -H 'content-type: application/json' -d "$body" "$base/api/threads/$reference_thread/chat" >"$tmp/reference"
deltas="$(grep -c '^event: text_delta' "$tmp/reference")"
# The kill must land mid-answer: the answer has to last far longer than the wait before the kill.
[ "$deltas" -ge 100 ] || fail 0 "the reference answer has only $deltas pieces"
reference="$(curl -sf "${auth[@]}" "$base/api/threads/$reference_thread" | jq -r '.messages[1].content')"
[ -n "$reference" ] || fail 0 "the reference answer is empty"

threads=()
interrupted=0
for i in $(seq 1 "$iterations"); do
  thread="$(new_thread)"
  stream="$tmp/stream"
  : >"$stream"
  curl -sN -D "$tmp/headers" "${auth[@]}" -H 'content-type: application/json' -d "$body" \
    "$base/api/threads/$thread/chat" >"$stream" 2>/dev/null &
  stream_pid=$!
  # Up to a minute: the first answer after a restart waits for the start-up's recovery, and a loaded machine
  # slows both; the loop ends at the first piece, so a healthy run waits no longer.
  for _ in $(seq 1 1200); do
    grep -q '^event: text_delta' "$stream" && break
    sleep 0.05
  done
  grep -q '^event: text_delta' "$stream" || fail "$i" "no answer text arrived"
  head -n 1 "$tmp/headers" | grep -q ' 200' || fail "$i" "the message was not acknowledged: $(head -n 1 "$tmp/headers")"
  threads+=("$thread")
  # Past the first progress write (every 250 ms), well before the end of the answer.
  wait_ms=$((400 + RANDOM % 900))
  sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
  stop_quire KILL
  wait "$stream_pid" 2>/dev/null || true
  stream_pid=

  check="$(sqlite3 "$data/quire.db" 'pragma integrity_check')"
  [ "$check" = "ok" ] || fail "$i" "integrity_check: $check"

  start_quire "$data" "$port" "$log"
  # This iteration's conversation each time; every earlier one too every tenth time and at the end.
  checked=("$thread")
  if [ $((i % 10)) -eq 0 ] || [ "$i" -eq "$iterations" ]; then checked=("${threads[@]}"); fi
  for t in "${checked[@]}"; do
    detail="$(curl -sf "${auth[@]}" "$base/api/threads/$t")" || fail "$i" "thread $t is gone"
    # One line: message count, whether the question is intact, the answer's status, then the answer itself.
    {
      read -r count same status
      partial="$(cat)"
    } < <(jq -r --arg q "$question" '"\(.messages | length) \(.messages[0].content == $q) \(.messages[1].status)", .messages[1].content' <<<"$detail")
    [ "$count" = 2 ] || fail "$i" "thread $t has $count messages: $(jq -c '[.messages[] | {role, status}]' <<<"$detail")"
    [ "$same" = true ] || fail "$i" "thread $t lost the question"
    [ "$status" = interrupted ] || fail "$i" "thread $t: the answer is $status, not interrupted"
    [ -n "$partial" ] || fail "$i" "thread $t: the partial answer is empty"
    [ "${reference#"$partial"}" != "$reference" ] || fail "$i" "thread $t: the partial answer is not the start of the answer"
  done
  interrupted=$((interrupted + 1))
done

echo "crash: $iterations kills mid-answer, $interrupted partial answers kept as interrupted, every acknowledged message kept, integrity_check ok each time ($(git rev-parse --short HEAD))"
