#!/usr/bin/env python3
"""The seed scenarios through Quire's chat API, against whatever model the Quire at BASE is configured with, and
how Quire handled each turn: did it finish, was the answer saved, how many documents did it make or revise (and
were any duplicates), did any tool call fail, how soon did the first words come and how fast did the model write.

Usage: real-model.py BASE OUT.json [ROUNDS] [MODEL_LOG]   (bench/real-model.sh starts the model server and Quire
first; MODEL_LOG, llama.cpp's timing lines, gives the model's own prompt and generation speed)

Each round is a new conversation of four turns, one after the other:
  request    a person asks for a document                      -> one new document
  follow-up  a question about it                               -> no document
  silent     the Generate button (`artifact_generation: true`) -> exactly one new document, no message
  change     a changed requirement                             -> the first document revised, nothing new

Standard library only. A model this small writes poor documents; what is counted is Quire's handling.
"""

from __future__ import annotations

import http.client
import json
import re
import sys
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field

# The longest one turn may take before it is stopped (a small model may write until `max_tokens`, in up to five
# rounds of tool calls).
TURN_DEADLINE_S = 900
# Quire sends a keep-alive comment at least every 15 s, so a read that waits this long means a dead stream.
READ_TIMEOUT_S = 60


@dataclass
class Scenario:
    name: str
    content: str
    silent: bool
    expect_new: int
    expect_revised: int


SCENARIOS = [
    Scenario("request", "Generate user stories for a library app where members borrow and return books.", False, 1, 0),
    Scenario("follow-up", "Which of these stories should come first in a first release, and why?", False, 0, 0),
    # What the Generate menu sends for a requirements document.
    Scenario("silent", "Generate Requirements Document from this conversation", True, 1, 0),
    Scenario("change", "Members may now borrow at most 3 books at once; update the user stories.", False, 0, 1),
]


@dataclass
class Turn:
    scenario: str
    round: int
    silent: bool
    expect_new: int
    expect_revised: int
    status: int = 0
    completed: bool = False
    saved: bool = False
    error: str | None = None
    turn_id: str | None = None
    message_id: str | None = None
    first_event_ms: float | None = None
    first_text_ms: float | None = None
    total_ms: float = 0.0
    deltas: int = 0
    text_chars: int = 0
    text_start: str = ""
    text_span_ms: float = 0.0
    new_documents: list = field(default_factory=list)
    revisions: list = field(default_factory=list)
    duplicates: int = 0
    tool_calls: int = 0
    tool_call_errors: list = field(default_factory=list)
    model_calls: int = 0
    model_call_errors: list = field(default_factory=list)
    stop_reasons: list = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    generation_ms: float = 0.0
    server_first_token_ms: float | None = None
    usage_counted_by_quire: bool = False

    @property
    def first_token_ms(self):
        """Time to first token: the first text a person sees, or for a silent generation (which shows no text) the
        model's first token as the trace has it."""
        return self.server_first_token_ms if self.silent else self.first_text_ms


class Quire:
    def __init__(self, base: str):
        parsed = urllib.parse.urlsplit(base)
        self.host, self.port = parsed.hostname, parsed.port
        self.token: str | None = None

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _headers(self, body: bool) -> dict:
        headers = {"accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if body:
            headers["content-type"] = "application/json"
        return headers

    def call(self, method: str, path: str, body=None):
        conn = self._connection(60)
        try:
            data = json.dumps(body) if body is not None else None
            conn.request(method, path, body=data, headers=self._headers(data is not None))
            response = conn.getresponse()
            raw = response.read()
            if response.status >= 300:
                raise RuntimeError(f"{method} {path}: {response.status} {raw[:300]!r}")
            return json.loads(raw) if raw else None
        finally:
            conn.close()

    def sign_up(self) -> None:
        email = f"real-model-{uuid.uuid4().hex[:12]}@example.com"
        answer = self.call("POST", "/api/auth/register", {"email": email, "password": "correct horse battery"})
        self.token = answer["token"]

    def chat(self, thread: str, scenario: Scenario, turn: Turn) -> None:
        """Sends one message and reads its event stream to the end, timing what arrives."""
        body = {"content": scenario.content}
        if scenario.silent:
            body["artifact_generation"] = True
        conn = self._connection(READ_TIMEOUT_S)
        started = time.monotonic()
        last_text = None
        try:
            conn.request("POST", f"/api/threads/{thread}/chat", body=json.dumps(body), headers=self._headers(True))
            response = conn.getresponse()
            turn.status = response.status
            if response.status != 200:
                turn.error = f"http {response.status}: {response.read()[:300]!r}"
                return
            event, data, event_id = None, [], None
            while True:
                if time.monotonic() - started > TURN_DEADLINE_S:
                    turn.error = "deadline"
                    self.stop(thread)
                    break
                line = response.readline()
                if not line:
                    break
                line = line.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if event is not None or data:
                        done = self._event(turn, event or "message", "\n".join(data), event_id, started)
                        if event == "text_delta":
                            last_text = time.monotonic()
                        if done:
                            break
                    event, data, event_id = None, [], None
                elif line.startswith(":"):
                    continue
                else:
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "event":
                        event = value
                    elif name == "data":
                        data.append(value)
                    elif name == "id":
                        event_id = value
        except (OSError, http.client.HTTPException) as e:
            turn.error = f"stream: {e}"
        finally:
            conn.close()
            turn.total_ms = (time.monotonic() - started) * 1000
            if last_text is not None and turn.first_text_ms is not None:
                turn.text_span_ms = (last_text - started) * 1000 - turn.first_text_ms

    def _event(self, turn: Turn, name: str, data: str, event_id: str | None, started: float) -> bool:
        """Records one event; true when it ends the turn."""
        elapsed = (time.monotonic() - started) * 1000
        if event_id and turn.turn_id is None:
            turn.turn_id = event_id.rsplit(":", 1)[0]
        payload = json.loads(data) if data else {}
        # The title is written by a call of its own: the answer's first event is what counts.
        if name != "thread_name" and turn.first_event_ms is None:
            turn.first_event_ms = elapsed
        if name == "text_delta":
            if turn.first_text_ms is None:
                turn.first_text_ms = elapsed
            turn.deltas += 1
            turn.text_chars += len(payload.get("text", ""))
            if len(turn.text_start) < 400:
                turn.text_start = (turn.text_start + payload.get("text", ""))[:400]
        elif name == "artifact_created":
            artifact = payload["artifact"]
            entry = {"id": artifact["id"], "type": artifact["artifact_type"], "title": artifact["title"],
                     "version": artifact["version"], "chars": len(artifact.get("content", ""))}
            (turn.new_documents if artifact["version"] == 1 else turn.revisions).append(entry)
        elif name == "message_complete":
            turn.completed = True
            turn.message_id = payload.get("message_id")
            return True
        elif name == "error":
            turn.error = f"{payload.get('code')}: {payload.get('message')}"
            return True
        return False

    def stop(self, thread: str) -> None:
        try:
            self.call("POST", f"/api/threads/{thread}/stop")
        except RuntimeError:
            pass

    def trace(self, turn: Turn):
        if turn.message_id:
            return self.call("GET", f"/api/messages/{turn.message_id}/trace")
        if turn.turn_id:
            return self.call("GET", f"/api/turns/{turn.turn_id}/trace")
        return None


def read_trace(turn: Turn, trace) -> None:
    for step in (trace or {}).get("steps", []):
        if step["kind"] == "tool_call":
            turn.tool_calls += 1
            if step.get("error"):
                turn.tool_call_errors.append(f"{step['name']}: {step['error']}"[:300])
        elif step["kind"] == "model_call" and step.get("purpose") == "answer":
            turn.model_calls += 1
            if step.get("error"):
                turn.model_call_errors.append(f"{step['error'].get('code')}: {step['error'].get('message')}"[:300])
            turn.stop_reasons.append(step.get("stop_reason") or "failed")
            turn.input_tokens += step.get("input_tokens", 0)
            turn.output_tokens += step.get("output_tokens", 0)
            turn.usage_counted_by_quire |= bool(step.get("counted"))
            first = step.get("first_token_ms")
            if first is not None:
                if turn.server_first_token_ms is None:
                    turn.server_first_token_ms = first
                turn.generation_ms += max(0, step.get("duration_ms", 0) - first)


def run_round(quire: Quire, round_no: int, log) -> tuple[list, list]:
    thread = quire.call("POST", "/api/threads", {"title": f"Library app, round {round_no}"})["id"]
    turns, first_document = [], None
    seen = set()  # (type, title) of the documents this conversation has
    for scenario in SCENARIOS:
        turn = Turn(scenario.name, round_no, scenario.silent, scenario.expect_new, scenario.expect_revised)
        log(f"round {round_no}, {scenario.name}: sending")
        quire.chat(thread, scenario, turn)
        try:
            read_trace(turn, quire.trace(turn))
        except RuntimeError as e:
            turn.model_call_errors.append(f"trace unavailable: {e}"[:300])
        turn.saved = bool(turn.new_documents or turn.revisions) if scenario.silent else bool(turn.message_id)
        keys = [(d["type"], d["title"].strip().lower()) for d in turn.new_documents]
        # Duplicates: two documents of one type and title from one request, a second document from one Generate
        # press, a new document where one of that type and title already was, and, for the change, a new document
        # of the first document's type instead of its revision.
        turn.duplicates = len(keys) - len(set(keys))
        if scenario.silent:
            turn.duplicates = max(turn.duplicates, len(turn.new_documents) - 1)
        turn.duplicates += sum(1 for key in set(keys) if key in seen)
        if scenario.name == "change" and first_document:
            turn.duplicates += sum(1 for key in set(keys) if key not in seen and key[0] == first_document["type"])
        seen.update(keys)
        if scenario.name == "request" and turn.new_documents:
            first_document = turn.new_documents[0]
        if scenario.name == "change":
            # A revision of another document than the one the change is about does not count as the expected one.
            wanted = first_document["id"] if first_document else None
            turn.revisions = [r if r["id"] == wanted else dict(r, other=True) for r in turn.revisions]
        turns.append(turn)
        log(f"round {round_no}, {scenario.name}: {summary_line(turn)}")
    documents = quire.call("GET", f"/api/threads/{thread}/artifacts")["artifacts"]
    return turns, documents


def summary_line(turn: Turn) -> str:
    parts = [
        "completed" if turn.completed else f"NOT completed ({turn.error})",
        "saved" if turn.saved else "not saved",
        f"{len(turn.new_documents)} new / {len(turn.revisions)} revised (expected {turn.expect_new} / {turn.expect_revised})",
        f"{turn.tool_calls} tool calls, {len(turn.tool_call_errors)} failed",
        f"first token {fmt_ms(turn.first_token_ms)}",
        f"{turn.output_tokens} tokens out in {turn.model_calls} model calls ({', '.join(turn.stop_reasons) or '-'})",
        f"{turn.total_ms / 1000:.1f} s",
    ]
    return "; ".join(parts)


def fmt_ms(ms) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def report(turns: list, documents_by_round: list) -> dict:
    rows = []
    for scenario in SCENARIOS:
        mine = [t for t in turns if t.scenario == scenario.name]
        gen_ms = sum(t.generation_ms for t in mine)
        rows.append({
            "scenario": scenario.name,
            "turns": len(mine),
            "completed": sum(t.completed for t in mine),
            "saved": sum(t.saved for t in mine),
            "expected_new": scenario.expect_new,
            "expected_revised": scenario.expect_revised,
            "new_documents": [len(t.new_documents) for t in mine],
            "revisions": [len(t.revisions) for t in mine],
            # Two versions of one document in one turn are one revision.
            "as_expected": sum(len(t.new_documents) == t.expect_new
                               and len({r["id"] for r in t.revisions if not r.get("other")}) == t.expect_revised
                               for t in mine),
            "duplicates": sum(t.duplicates for t in mine),
            "tool_calls": sum(t.tool_calls for t in mine),
            "tool_call_errors": sum(len(t.tool_call_errors) for t in mine),
            "model_call_errors": sum(len(t.model_call_errors) for t in mine),
            "first_token_ms_median": median([t.first_token_ms for t in mine]),
            "server_first_token_ms_median": median([t.server_first_token_ms for t in mine]),
            "input_tokens_per_call_max": max((t.input_tokens // max(t.model_calls, 1) for t in mine), default=0),
            "output_tokens": sum(t.output_tokens for t in mine),
            "tokens_per_second": (sum(t.output_tokens for t in mine) / (gen_ms / 1000)) if gen_ms else None,
        })
    conversation_duplicates = 0
    for documents in documents_by_round:
        keys = [(d["artifact_type"], d["title"].strip().lower()) for d in documents]
        conversation_duplicates += len(keys) - len(set(keys))
    gen_ms = sum(t.generation_ms for t in turns)
    return {
        "rows": rows,
        "turns_started": sum(t.status == 200 for t in turns),
        "turns_sent": len(turns),
        "turns_completed": sum(t.completed for t in turns),
        "answers_saved": sum(t.saved for t in turns),
        "documents_as_expected": sum(r["as_expected"] for r in rows),
        "duplicates": sum(r["duplicates"] for r in rows),
        "same_type_and_title_in_a_conversation": conversation_duplicates,
        "tool_calls": sum(r["tool_calls"] for r in rows),
        "tool_call_errors": sum(r["tool_call_errors"] for r in rows),
        "model_call_errors": sum(r["model_call_errors"] for r in rows),
        "first_token_ms_median": median([t.first_token_ms for t in turns]),
        "first_token_ms_max": max((t.first_token_ms for t in turns if t.first_token_ms is not None), default=None),
        "tokens_per_second": (sum(t.output_tokens for t in turns) / (gen_ms / 1000)) if gen_ms else None,
        "usage_counted_by_quire": any(t.usage_counted_by_quire for t in turns),
    }


def model_speed(log_path: str) -> dict | None:
    """llama.cpp's own timings, one pair of lines per completion: prompt tokens read and tokens written per second,
    over the whole run."""
    try:
        text = open(log_path, errors="replace").read()
    except OSError:
        return None
    # A prompt found whole in the server's cache is reported as read in no time (or, for the first completion, with a
    # count and no time): only lines with work in them count.
    prompt = [(float(ms), int(n)) for ms, n in re.findall(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", text)
              if float(ms) >= 1]
    written = [(float(ms), int(n)) for ms, n in re.findall(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) runs", text)
               if float(ms) >= 1]
    if not written:
        return None

    def rate(pairs):
        ms = sum(p[0] for p in pairs)
        return sum(p[1] for p in pairs) / (ms / 1000) if ms else None

    return {"completions": len(written), "prompt_tokens": sum(p[1] for p in prompt), "prompt_tokens_per_second":
            rate(prompt), "tokens_written": sum(p[1] for p in written), "tokens_per_second": rate(written)}


def print_table(summary: dict) -> None:
    print("\n| Scenario | Turns completed | Answers saved | Documents new / revised (expected) | As expected "
          "| Duplicates | Tool calls (failed) | First token, median | Tokens/s (Quire's count) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in summary["rows"]:
        docs = f"{'/'.join(map(str, r['new_documents']))} / {'/'.join(map(str, r['revisions']))} " \
               f"({r['expected_new']} / {r['expected_revised']})"
        tps = "-" if r["tokens_per_second"] is None else f"{r['tokens_per_second']:.0f}"
        print(f"| {r['scenario']} | {r['completed']}/{r['turns']} | {r['saved']}/{r['turns']} | {docs} "
              f"| {r['as_expected']}/{r['turns']} | {r['duplicates']} | {r['tool_calls']} ({r['tool_call_errors']}) "
              f"| {fmt_ms(r['first_token_ms_median'])} | {tps} |")
    s = summary
    tps = "-" if s["tokens_per_second"] is None else f"{s['tokens_per_second']:.0f}"
    print(f"\nturns completed {s['turns_completed']}/{s['turns_sent']} (started {s['turns_started']}), "
          f"answers saved {s['answers_saved']}/{s['turns_sent']}, documents as expected "
          f"{s['documents_as_expected']}/{s['turns_sent']}, duplicates {s['duplicates']} "
          f"(same type and title twice in a conversation: {s['same_type_and_title_in_a_conversation']}), "
          f"tool calls {s['tool_calls']} ({s['tool_call_errors']} failed), failed model calls "
          f"{s['model_call_errors']}, first token median {fmt_ms(s['first_token_ms_median'])} (longest "
          f"{fmt_ms(s['first_token_ms_max'])}), {tps} tokens/s"
          + (" (usage counted by Quire in o200k tokens: the server reported none)" if s["usage_counted_by_quire"] else ""))
    speed = s.get("model_speed")
    if speed and speed.get("prompt_tokens_per_second") is not None and speed.get("tokens_per_second") is not None:
        print(f"the model server's own timings: {speed['completions']} completions, {speed['prompt_tokens']} prompt "
              f"tokens read at {speed['prompt_tokens_per_second']:.0f}/s, {speed['tokens_written']} tokens written at "
              f"{speed['tokens_per_second']:.1f}/s")


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, out = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    model_log = sys.argv[4] if len(sys.argv) > 4 else None
    quire = Quire(base)
    quire.sign_up()

    def log(message):
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    turns, documents_by_round = [], []
    for round_no in range(1, rounds + 1):
        round_turns, documents = run_round(quire, round_no, log)
        turns += round_turns
        documents_by_round.append(documents)
    summary = report(turns, documents_by_round)
    summary["model_speed"] = model_speed(model_log) if model_log else None
    with open(out, "w") as f:
        json.dump({"summary": summary, "turns": [dict(t.__dict__, first_token_ms=t.first_token_ms) for t in turns],
                   "documents": documents_by_round}, f, indent=2)
    print_table(summary)


if __name__ == "__main__":
    main()
