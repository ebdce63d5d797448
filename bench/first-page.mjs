// The first page in a real browser (Debian's Chromium through Playwright): bytes transferred and the time until
// the page is hydrated and accepts input, for a cold first visit (empty cache) and a warm second visit, on the
// sign-in page and on a conversation of 200 messages. Run by bench/first-page.sh, which starts the server.
//
// Usage: node bench/first-page.mjs <base url> [rounds]
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { chromium } = createRequire(join(root, 'end2end', 'package.json'))('@playwright/test');

const base = process.argv[2];
const rounds = Number(process.argv[3] ?? 5);
if (!base) {
  console.error('usage: node bench/first-page.mjs <base url> [rounds]');
  process.exit(2);
}

async function api(path, init = {}, cookie = '') {
  const response = await fetch(base + path, {
    ...init,
    headers: { 'content-type': 'application/json', origin: base, cookie, ...(init.headers ?? {}) },
  });
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${await response.text()}`);
  return response;
}

// An account with one conversation of 200 messages (added without the model, so no assistant is needed).
const email = `bench-${Date.now()}@example.com`;
const password = 'a long and unusual bench passphrase';
const signup = await api('/api/auth/register', { method: 'POST', body: JSON.stringify({ email, password }) });
const cookie = signup.headers.get('set-cookie').split(';')[0];
const [cookieName, cookieValue] = [cookie.slice(0, cookie.indexOf('=')), cookie.slice(cookie.indexOf('=') + 1)];
const thread = await (await api('/api/threads', { method: 'POST', body: JSON.stringify({ title: 'Launch plan' }) }, cookie)).json();
for (let i = 0; i < 200; i++) {
  const content = `Message ${i + 1}: the launch needs a checklist, owners for each step and a date for the review. `.repeat(3);
  await api(`/api/threads/${thread.id}/messages`, { method: 'POST', body: JSON.stringify({ content }) }, cookie);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

// One visit: bytes over the wire (CDP's encoded lengths: headers and bodies as sent), requests, and the time from
// the navigation's start until the page is hydrated and its first input is enabled.
async function visit(page, cdp, path, ready) {
  let bytes = 0;
  let requests = 0;
  const finished = (event) => { bytes += event.encodedDataLength; requests += 1; };
  cdp.on('Network.loadingFinished', finished);
  await page.goto(base + path, { waitUntil: 'commit' });
  const ms = await page.waitForFunction((selector) => {
    const field = document.querySelector(selector);
    return document.body?.dataset.hydrated === 'true' && field && !field.disabled ? performance.now() : null;
  }, ready, { polling: 'raf', timeout: 60_000 }).then((handle) => handle.jsonValue());
  // Whatever the page fetches right after it starts (the Markdown renderer) counts too.
  await page.waitForLoadState('networkidle');
  cdp.off('Network.loadingFinished', finished);
  return { bytes, requests, ms };
}

const pages = [
  { name: 'sign-in page', path: '/signin', ready: 'input[type=email]', signedIn: false },
  { name: 'conversation of 200 messages', path: `/c/${thread.id}`, ready: 'textarea[aria-label=Message]', signedIn: true },
];
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results = [];
for (const target of pages) {
  const runs = { cold: [], warm: [] };
  for (let round = 0; round < rounds; round++) {
    const context = await browser.newContext();
    if (target.signedIn) {
      await context.addCookies([{ name: cookieName, value: cookieValue, url: base }]);
    }
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    runs.cold.push(await visit(page, cdp, target.path, target.ready));
    runs.warm.push(await visit(page, cdp, target.path, target.ready));
    await context.close();
  }
  for (const kind of ['cold', 'warm']) {
    const list = runs[kind];
    results.push({
      page: target.name,
      visit: kind,
      bytes: median(list.map((r) => r.bytes)),
      requests: median(list.map((r) => r.requests)),
      ms: median(list.map((r) => r.ms)),
      each: list.map((r) => `${(r.bytes / 1024).toFixed(1)} KB / ${r.ms.toFixed(0)} ms`).join(', '),
    });
  }
}
await browser.close();

console.log(`| page | visit | transferred (median) | requests | hydrated and accepting input (median) | each run |`);
console.log(`|---|---|---|---|---|---|`);
for (const r of results) {
  console.log(`| ${r.page} | ${r.visit} | ${(r.bytes / 1024).toFixed(1)} KB | ${r.requests} | ${r.ms.toFixed(0)} ms | ${r.each} |`);
}
