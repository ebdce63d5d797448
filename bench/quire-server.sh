# Sourced by the reliability scripts: start, stop and talk to a real `quire` binary on a temporary data
# directory. Needs curl, jq and python3 (for a free port).

QUIRE_BIN_GIVEN="${QUIRE_BIN:+yes}"
QUIRE_BIN="${QUIRE_BIN:-$ROOT/target/debug/quire}"

# Builds the debug binary unless QUIRE_BIN names one (cargo skips the work when it is current).
ensure_quire_bin() {
  if [ -z "$QUIRE_BIN_GIVEN" ]; then
    step "building target/debug/quire"
    cargo build -q -p server --bin quire
  fi
  [ -x "$QUIRE_BIN" ] || { echo "no quire binary at $QUIRE_BIN" >&2; exit 1; }
}

# A free port below the kernel's ephemeral range: a port the kernel hands out (bind to 0) may be taken as the
# source port of an outgoing connection before the server binds it.
free_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for candidate in random.sample(range(min(20000, low - 1000), low), 200):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", candidate))
    except OSError:
        continue
    finally:
        s.close()
    print(candidate)
    break
'
}

# start_quire DATA_DIR PORT LOG: starts the server in the background (extra settings come from the
# environment) and sets QUIRE_PID; returns once /api/health answers.
start_quire() {
  local data="$1" port="$2" log="$3"
  QUIRE_DATA_DIR="$data" LEPTOS_SITE_ADDR="127.0.0.1:$port" QUIRE_RATE_LIMITS=off QUIRE_SIGNUP=open RUST_LOG="${RUST_LOG:-warn}" \
    "$QUIRE_BIN" >>"$log" 2>&1 &
  QUIRE_PID=$!
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$port/api/health" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$QUIRE_PID" 2>/dev/null; then
      echo "quire exited during start-up; log:" >&2
      tail -n 30 "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "quire did not answer on port $port" >&2
  return 1
}

# stop_quire [SIGNAL]: stops the server started last (TERM by default) and waits for it.
stop_quire() {
  if [ -n "${QUIRE_PID:-}" ] && kill -0 "$QUIRE_PID" 2>/dev/null; then
    kill "-${1:-TERM}" "$QUIRE_PID" 2>/dev/null || true
    wait "$QUIRE_PID" 2>/dev/null || true
  fi
  QUIRE_PID=
}

# register BASE EMAIL: signs up and prints the session token.
register() {
  curl -sf -X POST "$1/api/auth/register" -H 'content-type: application/json' \
    -d "{\"email\":\"$2\",\"password\":\"correct horse battery\"}" | jq -r .token
}
