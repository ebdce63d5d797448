import { expect, test } from './fixtures';
import { readFileSync } from 'node:fs';
import { openHydrated, sameOrigin, signUp } from './helpers';
import { conversationId, send } from './conversation';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

test('the stats page shows the numbers and two charts after a conversation', async ({ page }) => {
  await openHydrated(page, '/stats');
  await expect(page.getByRole('heading', { name: 'Stats' })).toBeVisible();
  await expect(page.getByTestId('stat-threads')).toHaveText('0');

  await page.getByRole('link', { name: 'Chat' }).click();
  await send(page, 'We plan a library app. Members must renew loans online. Librarians want overdue reports.');
  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);

  await page.getByRole('link', { name: 'Stats' }).click();
  await expect(page).toHaveURL(/\/stats$/);
  await expect(page.getByTestId('stat-threads')).toHaveText('1');
  await expect(page.getByTestId('stat-messages')).toHaveText('4');
  const tokensIn = Number((await page.getByTestId('stat-tokens-in').innerText()).replace(/,/g, ''));
  expect(tokensIn).toBeGreaterThan(0);
  await expect(page.getByTestId('stat-documents')).toContainText('User Stories');

  const messagesChart = page.getByRole('img', { name: /messages per day/ });
  const tokensChart = page.getByRole('img', { name: /tokens per day/ });
  await expect(messagesChart).toBeVisible();
  await expect(tokensChart).toBeVisible();
  // Today's bars are drawn: one for the messages, two stacked parts for tokens in and out.
  await expect(messagesChart.locator('rect')).toHaveCount(1);
  await expect(tokensChart.locator('rect')).toHaveCount(2);
  await expect(messagesChart).toHaveAccessibleName(/4 in all/);

  // The same numbers as a table, newest day first.
  await page.getByText('The last 30 days as a table').click();
  const table = page.getByRole('table');
  await expect(table.getByRole('row')).toHaveCount(31);
  await expect(table.getByRole('row').nth(1).getByRole('cell').first()).toHaveText('4');
});

test('"What the model saw" lists the messages sent, those left out and the tokens', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We are building a recipe app. Cooks want to save favourite recipes.');
  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await send(page, 'What should the first release include?');

  const answers = page.getByTestId('message-assistant');
  await expect(answers).toHaveCount(3);
  const last = answers.nth(2);
  const control = last.getByRole('button', { name: 'What the model saw' });
  await expect(control).toHaveAttribute('aria-expanded', 'false');
  await control.click();
  await expect(control).toHaveAttribute('aria-expanded', 'true');
  const panel = last.getByRole('region', { name: 'What the model saw' });
  await expect(panel).toBeVisible();
  await expect(panel.getByTestId('context-tokens')).toHaveText(/^[1-9][\d,]* of 24,000 budget$/);
  // The request that made the document, and its answer, were left out; the rest was sent.
  await expect(panel.getByRole('heading', { name: 'Included (3)' })).toBeVisible();
  await expect(panel.getByRole('heading', { name: 'Left out: already fulfilled (2)' })).toBeVisible();
  await expect(panel.getByRole('heading', { name: 'Left out: over the token budget (0)' })).toBeVisible();
  const included = panel.getByRole('list').first();
  await expect(included.getByRole('listitem')).toHaveCount(3);
  await expect(included.getByRole('listitem').first()).toContainText('recipe app');
  await expect(included.getByRole('listitem').last()).toContainText('first release');
  await expect(panel).toContainText('Already fulfilled: “');
  await expect(panel).toContainText('(User Stories) was made from it.');

  await control.click();
  await expect(panel).toHaveCount(0);
});

test('"What the model saw" names the passages of an attached file the model was given', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We are building a billing portal for small businesses.');
  const notes =
    'Invoices are sent on the first working day of each month.\n\n' +
    'The refund window for annual plans is forty-five days after purchase.';
  // Files are attached through the API: the page offers no upload.
  const upload = await page.request.post(`/api/threads/${conversationId(page)}/attachments`, {
    headers: sameOrigin(),
    multipart: { file: { name: 'billing-notes.txt', mimeType: 'text/plain', buffer: Buffer.from(notes) } },
  });
  expect(upload.status()).toBe(201);
  await send(page, 'What does the attached document say about the refund window?');

  const answers = page.getByTestId('message-assistant');
  await expect(answers).toHaveCount(2);
  await expect(answers.nth(1)).toContainText('forty-five days');
  await answers.nth(1).getByRole('button', { name: 'What the model saw' }).click();
  const panel = answers.nth(1).getByRole('region', { name: 'What the model saw' });
  await expect(panel.getByRole('heading', { name: 'Passages from attached files (1)' })).toBeVisible();
  const passage = panel.getByTestId('context-passages').getByRole('listitem');
  await expect(passage).toHaveCount(1);
  await expect(passage).toContainText('billing-notes.txt');
  await expect(passage).toContainText(/passage 1, score \d/);
  await expect(passage).toContainText('The refund window for annual plans');

  // An answer given without a search names no passages.
  await answers.nth(0).getByRole('button', { name: 'What the model saw' }).click();
  const first = answers.nth(0).getByRole('region', { name: 'What the model saw' });
  await expect(first.getByRole('heading', { name: /^Included/ })).toBeVisible();
  await expect(first.getByTestId('context-passages')).toHaveCount(0);
});

test('a conversation downloads as JSON and as Markdown', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Our bakery needs an order form. Customers pick a pickup time.');
  const id = conversationId(page);
  const exports = page.getByRole('group', { name: 'Export conversation' });

  const [json] = await Promise.all([
    page.waitForEvent('download'),
    exports.getByRole('link', { name: 'Export JSON' }).click(),
  ]);
  expect(json.suggestedFilename()).toMatch(/^Our bakery[\p{L}\p{N} _-]*\.json$/u);
  const exported = JSON.parse(readFileSync(await json.path(), 'utf8'));
  expect(exported.format).toBe('quire.thread');
  expect(exported.thread.id).toBe(id);
  expect(exported.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  expect(exported.messages[0].content).toContain('Customers pick a pickup time');

  const [markdown] = await Promise.all([
    page.waitForEvent('download'),
    exports.getByRole('link', { name: 'Export Markdown' }).click(),
  ]);
  expect(markdown.suggestedFilename()).toMatch(/^Our bakery[\p{L}\p{N} _-]*\.md$/u);
  const text = readFileSync(await markdown.path(), 'utf8');
  expect(text).toMatch(/^# /);
  expect(text).toContain('### You');
  expect(text).toContain('Customers pick a pickup time');
});

test('importing an exported conversation opens a new copy; a foreign file is refused', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'A gym wants class bookings. Members cancel up to two hours before.');
  const original = conversationId(page);
  const response = await page.request.get(`/api/threads/${original}/export?format=json`);
  expect(response.ok()).toBeTruthy();
  const body = await response.body();
  await expect(page.getByTestId('thread-item')).toHaveCount(1);

  const picker = page.getByLabel('Import conversation');
  await picker.setInputFiles({ name: 'gym.json', mimeType: 'application/json', buffer: body });
  await expect(page.getByRole('status').filter({ hasText: 'Imported “' })).toBeVisible();
  await expect(page).not.toHaveURL(new RegExp(original));
  const copy = conversationId(page);
  expect(copy).not.toBe(original);
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(page.getByTestId('message-user')).toContainText('Members cancel up to two hours before');
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await expect(page.getByTestId('thread-item')).toHaveCount(2);

  await picker.setInputFiles({ name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from('{"hello": 1}') });
  const alert = page.getByRole('alert').filter({ hasText: 'Could not import notes.json' });
  await expect(alert).toBeVisible();
  await expect(alert).toContainText('Expected a Quire export');
  await expect(page).toHaveURL(new RegExp(copy));
  await expect(page.getByTestId('thread-item')).toHaveCount(2);
  await alert.getByRole('button', { name: 'Dismiss' }).click();
  await expect(alert).toHaveCount(0);
});
