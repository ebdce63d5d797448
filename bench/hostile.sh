#!/usr/bin/env bash
# Hostile uploads against the release build, with the built-in assistant and SQLite: while four crafted files
# are uploaded at once (a Flate bomb PDF, a PDF whose form draws itself, 8 MiB of text without whitespace, a
# text of 1,000,000 lines), round after round, it measures
#   - /api/health latency, polled every 20 ms (goal: p99 <= 50 ms),
#   - the gaps between the text deltas of chats streaming meanwhile (goal: p99 <= 100 ms; the built-in
#     assistant pauses 20 ms between tokens, so that is the floor),
#   - the server's peak resident memory (VmHWM, goal: under 1 GB), and the largest extraction child seen.
#
# Usage: bench/hostile.sh [ROUNDS]   (default 5). QUIRE_BIN names a binary instead of building
# target/server-release/quire (the build scripts/run serves). Needs curl, jq and python3.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
source "$ROOT/bench/quire-server.sh"
cd "$ROOT"

rounds="${1:-5}"
if [ -z "$QUIRE_BIN_GIVEN" ]; then
  QUIRE_BIN="$ROOT/target/server-release/quire"
  step "building target/server-release/quire"
  cargo build -q --profile server-release -p server --bin quire
fi

tmp="$(mktemp -d)"
cleanup() {
  stop_quire
  rm -rf "$tmp"
}
trap cleanup EXIT

step "writing the large text files"
python3 - "$tmp" <<'EOF'
import sys
with open(f"{sys.argv[1]}/no-whitespace.txt", "wb") as f:
    f.write((b"abcdefghij" * (8 * 1024 * 1024 // 10 + 1))[: 8 * 1024 * 1024])
with open(f"{sys.argv[1]}/million-lines.txt", "wb") as f:
    f.write(b"ab\n" * 1_000_000)
EOF

port="$(free_port)"
step "starting $QUIRE_BIN on port $port"
mkdir -p "$tmp/data"
QUIRE_BUILTIN_DELAY_MS=20 start_quire "$tmp/data" "$port" "$tmp/quire.log"
base="http://127.0.0.1:$port"
tokens="$(register "$base" uploader-one@example.com) $(register "$base" uploader-two@example.com)"
chat_token="$(register "$base" chatter@example.com)"

step "$rounds rounds of four hostile uploads, with health polls and a chat streaming meanwhile"
BASE="$base" TOKENS="$tokens" CHAT_TOKEN="$chat_token" PID="$QUIRE_PID" ROUNDS="$rounds" TMP="$tmp" \
  FIXTURES="$ROOT/server/tests/fixtures/hostile" python3 - <<'EOF'
import json, os, subprocess, threading, time, urllib.request

base, pid, tmp, fixtures = os.environ["BASE"], os.environ["PID"], os.environ["TMP"], os.environ["FIXTURES"]
tokens, chat_token, rounds = os.environ["TOKENS"].split(), os.environ["CHAT_TOKEN"], int(os.environ["ROUNDS"])
files = [
    (f"{fixtures}/flate_bomb.pdf", "application/pdf"),
    (f"{fixtures}/self_drawing_xobject.pdf", "application/pdf"),
    (f"{tmp}/no-whitespace.txt", "text/plain"),
    (f"{tmp}/million-lines.txt", "text/plain"),
]
question = ("We are building a booking system for a chain of climbing gyms. Members must be able to book a slot "
            "from their phone. Staff need a daily list of bookings. The system should send a reminder two hours "
            "before each slot. Admins want a monthly usage report. Payments must be refunded automatically when a "
            "gym closes early. Instructors should see who booked their classes. Members need to cancel up to an "
            "hour before.")

def request(method, path, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("content-type", "application/json")
    return urllib.request.urlopen(req, timeout=120)

def new_thread(token):
    with request("POST", "/api/threads", token, {}) as r:
        return json.load(r)["id"]

def status_kib(proc, key):
    try:
        with open(f"/proc/{proc}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def children(proc):
    found = []
    try:
        for task in os.listdir(f"/proc/{proc}/task"):
            with open(f"/proc/{proc}/task/{task}/children") as f:
                found += f.read().split()
    except OSError:
        pass
    return found

done = threading.Event()
health, gaps, child_peak = [], [], [0]

def poll_health():
    while not done.is_set():
        start = time.perf_counter()
        with urllib.request.urlopen(base + "/api/health", timeout=30) as r:
            r.read()
        health.append((time.perf_counter() - start) * 1000)
        time.sleep(max(0.0, 0.020 - (time.perf_counter() - start)))

def watch_children():
    while not done.is_set():
        for child in children(pid):
            child_peak[0] = max(child_peak[0], status_kib(child, "VmRSS"))
        time.sleep(0.005)

def chat_on():
    turns = 0
    while not done.is_set():
        thread = new_thread(chat_token)
        with request("POST", f"/api/threads/{thread}/chat", chat_token, {"content": question}) as r:
            last, event = None, None
            for raw in r:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line == "" and event == "text_delta":
                    now = time.perf_counter()
                    if last is not None:
                        gaps.append((now - last) * 1000)
                    last = now
            if event != "message_complete":
                raise SystemExit(f"a chat ended with {event}")
        turns += 1
    return turns

def upload(token, thread, path, mime, results):
    start = time.perf_counter()
    out = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"authorization: Bearer {token}",
         "-F", f"file=@{path};type={mime}", f"{base}/api/threads/{thread}/attachments"],
        capture_output=True, text=True, check=True)
    results.append((os.path.basename(path), out.stdout, time.perf_counter() - start))

workers = [threading.Thread(target=poll_health), threading.Thread(target=watch_children)]
chat_turns = []
workers.append(threading.Thread(target=lambda: chat_turns.append(chat_on())))
for w in workers:
    w.start()
time.sleep(0.5)
results = []
began = time.perf_counter()
for _ in range(rounds):
    # Two uploads per account: each person may run two heavy jobs at once.
    threads = [new_thread(t) for t in tokens]
    jobs = [threading.Thread(target=upload, args=(tokens[i % 2], threads[i % 2], path, mime, results))
            for i, (path, mime) in enumerate(files)]
    for j in jobs:
        j.start()
    for j in jobs:
        j.join()
uploading = time.perf_counter() - began
done.set()
for w in workers:
    w.join()

def p(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")

by_file = {}
for name, code, seconds in results:
    by_file.setdefault(name, []).append((code, seconds))
print(f"uploads: {len(results)} in {uploading:.1f} s ({rounds} rounds of 4 at once)")
for name, runs in by_file.items():
    codes = ",".join(sorted({c for c, _ in runs}))
    print(f"  {name:28} status {codes:8} slowest {max(s for _, s in runs):.2f} s")
print(f"health: {len(health)} polls, p50 {p(health, .5):.1f} ms, p99 {p(health, .99):.1f} ms, "
      f"max {max(health):.1f} ms (goal p99 <= 50 ms)")
print(f"chat: {chat_turns[0] if chat_turns else 0} turns, {len(gaps)} gaps, p50 {p(gaps, .5):.1f} ms, "
      f"p99 {p(gaps, .99):.1f} ms, max {max(gaps):.1f} ms (goal p99 <= 100 ms)")
hwm = status_kib(pid, "VmHWM")
print(f"server peak RSS (VmHWM): {hwm / 1024:.0f} MiB (goal < 1024 MiB); "
      f"largest extraction child seen: {child_peak[0] / 1024:.0f} MiB")
ok = p(health, .99) <= 50 and p(gaps, .99) <= 100 and hwm < 1024 * 1024
print("goals met" if ok else "GOALS MISSED")
raise SystemExit(0 if ok else 1)
EOF
