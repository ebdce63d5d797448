import { expect, Page, test } from './fixtures';
import { conversationId, send } from './conversation';
import { openHydrated, reloadHydrated, signUp } from './helpers';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

/**
 * A message with many long requirements: the built-in assistant restates them, so its answer streams for a few
 * seconds (a word every 25 ms).
 */
function longMessage(topic: string) {
  return [
    `We are building ${topic}.`,
    'Dispatchers must be able to assign every incoming job to the nearest available technician within the same region.',
    'Technicians must be able to see their full schedule for the coming week even when their phone has no signal at all.',
    'Customers must be able to book a visit online and choose a two hour window that suits them on any working day.',
    'Managers must be able to export a monthly report of completed jobs, travel times and parts used for the accounts team.',
    'The system must send each customer a reminder by text message on the evening before the visit with the arrival window.',
    'Technicians must be able to record the parts they used and take photos of the finished work before closing the job.',
    'Customers must be able to rate the visit afterwards and leave a comment that the manager of the region can read.',
    'The system must keep an audit trail of every change to a job, with who made it and when, for at least seven years.',
  ].join(' ');
}

const streamingAnswer = (page: Page) => page.locator('[data-testid="message-assistant"][aria-busy="true"]');

test('Enter sends the message; Shift+Enter starts a new line and sends nothing', async ({ page }) => {
  await openHydrated(page);
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.click();
  await page.keyboard.type('Riders must see the next bus.');
  await page.keyboard.press('Shift+Enter');
  await page.keyboard.type('Drivers must report delays.');

  // Nothing was sent: both lines are still in the box and no bubble appeared.
  await expect(box).toHaveValue('Riders must see the next bus.\nDrivers must report delays.');
  await expect(page.getByTestId('message-user')).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();

  await page.keyboard.press('Enter');
  const user = page.getByTestId('message-user');
  await expect(user).toHaveCount(1);
  // The bubble keeps the line break (plain text, pre-wrapped).
  expect(await user.innerText()).toContain('Riders must see the next bus.\nDrivers must report delays.');
  await expect(box).toHaveValue('');
  await expect(page.getByTestId('message-assistant')).toHaveAttribute('aria-busy', 'false');
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await expect(user).toHaveCount(1);
});

test('Stop ends the answer being written; it is marked as stopped, also after a reload', async ({ page }) => {
  await openHydrated(page);
  await page.getByRole('textbox', { name: 'Message' }).fill(longMessage('a field service app'));
  await page.getByRole('button', { name: 'Send' }).click();

  // Stop once the answer is visibly being written.
  await expect(streamingAnswer(page)).toContainText('Got it.');
  await page.getByRole('button', { name: 'Stop' }).click();

  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Stop' })).toHaveCount(0);
  const answer = page.getByTestId('message-assistant');
  await expect(answer).toHaveCount(1);
  await expect(answer).toHaveAttribute('aria-busy', 'false');
  await expect(answer).toContainText('Stopped.');
  // Cut short: the answer's closing offer was never written.
  await expect(answer).not.toContainText('Just ask');

  await reloadHydrated(page);
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await expect(page.getByTestId('message-assistant')).toContainText('Got it.');
  await expect(page.getByTestId('message-assistant')).toContainText('Stopped.');
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
});

test('a failed send shows the error in place with Retry, and Retry sends the message once', async ({ page }) => {
  await openHydrated(page);
  const chat = '**/api/threads/*/chat';
  await page.route(chat, (route) =>
    route.fulfill({
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({ error: { code: 'unavailable', message: 'The assistant is not available right now.' } }),
    }),
  );
  const text = 'A florist wants online orders. Customers must choose a delivery day.';
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();

  const alert = page.getByRole('alert').filter({ hasText: 'The assistant is not available right now.' });
  await expect(alert).toBeVisible();
  const retry = alert.getByRole('button', { name: 'Retry' });
  await expect(retry).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await expect(page.getByTestId('message-assistant')).toHaveCount(0);

  await page.unroute(chat);
  await retry.click();
  await expect(alert).toHaveCount(0);
  const answer = page.getByTestId('message-assistant');
  await expect(answer).toHaveCount(1);
  await expect(answer).toHaveAttribute('aria-busy', 'false');
  await expect(answer).toContainText('Customers must choose a delivery day');
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(page.getByTestId('message-user')).toContainText(text);

  // The server has it once too.
  await reloadHydrated(page);
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(page.getByTestId('message-user')).toContainText(text);
});

test('a status line shows while a document is saved, and goes when the turn ends', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We plan a school app. Parents must see homework. Teachers want to message a whole class.');

  // The status may show only briefly: record every status line the conversation shows from now on (a line still
  // on screen from the turn before changes its text in place).
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { statusLines: string[] }).statusLines = seen;
    const log = document.querySelector('[role="log"]')!;
    new MutationObserver(() => {
      for (const status of Array.from(log.querySelectorAll('[role="status"]'))) seen.push(status.textContent ?? '');
    }).observe(log, { childList: true, subtree: true, characterData: true });
  });

  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  const seen = await page.evaluate(() => (window as unknown as { statusLines: string[] }).statusLines);
  expect(seen).toContain('Saving artifact…');
  await expect(page.getByRole('log').getByRole('status')).toHaveCount(0);
  await expect(page.getByRole('log')).not.toContainText('Saving artifact…');
});

test('a code block in an answer renders highlighted in both themes and its "Copy code" button copies the code', async ({ page, context, baseURL }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL });
  await openHydrated(page);
  await send(page, 'We need a deploy script. Operators must run it from a laptop.');
  const response = await page.request.get(`/api/threads/${conversationId(page)}/export?format=json`);
  expect(response.ok()).toBeTruthy();
  const exported = await response.json();
  const code = '# build, then copy\ncargo build --release\nscp target/release/app "host:/srv/app"';
  exported.thread.title = 'Deploy script';
  exported.messages[1].content = `Here is a first version:\n\n\`\`\`sh\n${code}\n\`\`\`\n\nRun it from the project root.`;

  await page.getByLabel('Import conversation').setInputFiles({
    name: 'deploy.json',
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(exported)),
  });
  await expect(page.getByRole('status').filter({ hasText: 'Imported “' })).toBeVisible();
  const answer = page.getByTestId('message-assistant');
  await expect(answer).toHaveCount(1);
  await expect(answer.locator('pre')).toHaveCount(1);
  await expect(answer.locator('pre')).toContainText('scp target/release/app "host:/srv/app"');
  await expect(answer).not.toContainText('```');

  // Highlighted: the comment and the string have colours of their own, in the light and the dark theme.
  const comment = answer.locator('pre .tok-comment');
  await expect(comment).toHaveText('# build, then copy');
  await expect(answer.locator('pre .tok-string')).toHaveText('"host:/srv/app"');
  const colours = () =>
    comment.evaluate((el) => [getComputedStyle(el).color, getComputedStyle(el.closest('pre')!).color]);
  await page.emulateMedia({ colorScheme: 'light' });
  const [lightComment, lightText] = await colours();
  expect(lightComment).not.toBe(lightText);
  await page.emulateMedia({ colorScheme: 'dark' });
  await expect.poll(async () => (await colours())[0]).not.toBe(lightComment);
  const [darkComment, darkText] = await colours();
  expect(darkComment).not.toBe(darkText);
  await page.emulateMedia({ colorScheme: 'light' });

  // Something else on the clipboard first, so the check below sees what the button put there.
  await page.evaluate(() => navigator.clipboard.writeText('nothing copied yet'));
  const copy = answer.getByRole('button', { name: 'Copy code' });
  await copy.click();
  await expect(copy).toHaveText('Copied');
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(`${code}\n`);
});

test('the view follows the answer unless the person scrolled up; a new message follows again', async ({ page }) => {
  await page.setViewportSize({ width: 1000, height: 600 });
  await openHydrated(page);
  const log = page.getByRole('log');
  const fromBottom = () => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  await send(page, longMessage('a booking app for a chain of bike repair shops'));
  await send(page, longMessage('the same app for the workshops of a car dealer'));
  expect(await log.evaluate((el) => el.scrollHeight - el.clientHeight)).toBeGreaterThan(300);
  // Followed so far: the end of the last answer is in view.
  expect(await fromBottom()).toBeLessThan(2);

  await page.getByRole('textbox', { name: 'Message' }).fill(longMessage('the same app for a boat yard'));
  await page.getByRole('button', { name: 'Send' }).click();
  const live = streamingAnswer(page);
  await expect(live).toContainText('Got it.');

  // The person scrolls to the top. (Tried again until the scroll has been seen: a word arriving in between may
  // move the view before the page hears of the scroll.)
  await expect
    .poll(() =>
      log.evaluate(async (el) => {
        el.scrollTop = 0;
        for (let i = 0; i < 2; i++) await new Promise((r) => requestAnimationFrame(r));
        return el.scrollTop;
      }),
    )
    .toBe(0);
  const before = (await live.innerText()).length;
  await expect.poll(async () => (await live.innerText()).length).toBeGreaterThan(before + 40);
  expect(await log.evaluate((el) => el.scrollTop)).toBe(0);
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await expect(page.getByTestId('message-assistant').last()).toContainText('Just ask');
  expect(await log.evaluate((el) => el.scrollTop)).toBe(0);

  // Sending again follows the new answer down to its end.
  await send(page, 'Owners want a weekly summary of bookings by e-mail.');
  await expect(page.getByTestId('message-assistant')).toHaveCount(4);
  await expect.poll(fromBottom).toBeLessThan(2);
});
