// An OpenAI-compatible model server for the browser tests, in the ways a real one streams (Chat Completions,
// `stream: true`, server-sent events), so the page is tested against what Quire's own provider makes of it:
//
// - a message saying "echo" while an `…__echo` tool is offered: the model calls it with the message, and once
//   the tool's result comes back it answers with it;
// - any other turn (tools offered): the model first thinks aloud (`reasoning_content`, as DeepSeek, vLLM and
//   llama.cpp send it), then thinks on and answers, each step after a `POST /release` (or 20 s), so a test sees the
//   reasoning while the answer runs;
// - a call without tools (a title): a short plain answer.
//
// Listens on 127.0.0.1:$QUIRE_E2E_FAKE_LLM_PORT.
import { createServer } from 'node:http';

const port = Number(process.env.QUIRE_E2E_FAKE_LLM_PORT ?? 3999);
const MODEL = 'thinker';
/** Answers waiting for `/release`, and releases that came before anything waited. */
let held = [];
let early = 0;

function text(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? '').join('');
  return '';
}

const pause = (ms) => new Promise((done) => setTimeout(done, ms));

/** Waits for `/release`, at most 20 s. */
function hold() {
  if (early > 0) {
    early -= 1;
    return Promise.resolve();
  }
  return new Promise((done) => {
    const timer = setTimeout(done, 20_000);
    held.push(() => {
      clearTimeout(timer);
      done();
    });
  });
}

function chunk(delta, finish = null) {
  return { id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 0, model: MODEL,
    choices: [{ index: 0, delta, finish_reason: finish }] };
}

async function answer(request, res) {
  const messages = request.messages ?? [];
  const last = messages[messages.length - 1] ?? {};
  const tools = (request.tools ?? []).map((t) => t.function?.name ?? '');
  const echo = tools.find((name) => name.endsWith('__echo'));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (data) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  send(chunk({ role: 'assistant', content: '' }));
  if (last.role === 'tool') {
    send(chunk({ content: `The tool answered: ${text(last.content)}` }));
    send(chunk({}, 'stop'));
  } else if (echo && /\becho\b/i.test(text(last.content))) {
    const args = JSON.stringify({ message: text(last.content) });
    send(chunk({ tool_calls: [{ index: 0, id: 'call_echo_1', type: 'function', function: { name: echo, arguments: '' } }] }));
    send(chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }));
    send(chunk({}, 'tool_calls'));
  } else if (tools.length === 0) {
    send(chunk({ content: 'Clinic bookings' }));
    send(chunk({}, 'stop'));
  } else {
    // Thinks, waits, thinks on, waits, answers: each `/release` moves it one step.
    for (const piece of ['The person asks about ', 'their project; ', 'the answer should name its first step.']) {
      await pause(30);
      send(chunk({ reasoning_content: piece }));
    }
    await hold();
    send(chunk({ reasoning_content: ' Who books first?' }));
    await hold();
    for (const piece of ['Start with ', 'the people who will use it.']) {
      await pause(20);
      send(chunk({ content: piece }));
    }
    send(chunk({}, 'stop'));
  }
  send({ ...chunk({}), choices: [], usage: { prompt_tokens: 20, completion_tokens: 12, total_tokens: 32 } });
  res.end('data: [DONE]\n\n');
}

createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (piece) => {
    body += piece;
  });
  req.on('end', () => {
    const path = new URL(req.url, 'http://fake').pathname;
    if (req.method === 'GET' && path === '/health') {
      res.end('ok');
    } else if (req.method === 'GET' && path === '/v1/models') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model' }] }));
    } else if (req.method === 'POST' && path === '/release') {
      const waiting = held;
      held = [];
      if (waiting.length === 0) early += 1;
      waiting.forEach((release) => release());
      res.end(String(waiting.length));
    } else if (req.method === 'POST' && path === '/v1/chat/completions') {
      let request;
      try {
        request = JSON.parse(body);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'the body is not JSON', type: 'invalid_request_error' } }));
        return;
      }
      answer(request, res).catch(() => res.destroy());
    } else {
      res.writeHead(404);
      res.end();
    }
  });
}).listen(port, '127.0.0.1');
