import { expect, test } from './fixtures';
import { send } from './conversation';
import { openHydrated, reloadHydrated, signUp, snapshot } from './helpers';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

test('the page hydrates: a click handled by WASM changes the page', async ({ page }) => {
  await openHydrated(page);
  const toggle = page.getByRole('button', { name: /Switch to (dark|light) theme/ });
  const before = await toggle.getAttribute('aria-pressed');
  await toggle.click();
  await expect(toggle).not.toHaveAttribute('aria-pressed', before ?? '');
  const theme = await page.locator('html').getAttribute('data-theme');
  expect(theme === 'dark' || theme === 'light').toBeTruthy();
});

test('a message streams an answer and both survive a reload', async ({ page }) => {
  await openHydrated(page);
  const text = 'We need a field service app. Technicians must see their jobs offline. Managers want a daily report.';
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();

  const user = page.getByTestId('message-user');
  await expect(user).toHaveCount(1);
  await expect(user).toContainText('Technicians must see their jobs offline');

  // The answer is visible while it is still being written, and grows word by word.
  const streaming = page.locator('[data-testid="message-assistant"][aria-busy="true"]');
  await expect(streaming).toBeVisible();
  const early = (await streaming.innerText()).length;
  const assistant = page.getByTestId('message-assistant');
  await expect(assistant).toHaveAttribute('aria-busy', 'false');
  await expect(assistant).toContainText('Managers want a daily report');
  const final = (await assistant.innerText()).length;
  expect(final).toBeGreaterThan(early);

  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId('thread-item').first()).toContainText('We need a field service');
  await snapshot(page, 'chat-light');

  await reloadHydrated(page);
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(page.getByTestId('message-user')).toContainText('Technicians must see their jobs offline');
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await expect(page.getByTestId('message-assistant')).toContainText('Managers want a daily report');
});

test('the composer and the title stay put while an answer streams in', async ({ page }) => {
  await openHydrated(page);
  const box = page.getByRole('textbox', { name: 'Message' });
  const title = page.getByRole('heading', { level: 1 });
  const place = async () => ({ box: await box.boundingBox(), title: await title.boundingBox() });
  await box.fill('A bike repair shop wants online booking. Customers must get a reminder the day before.');
  const before = await place();
  await page.getByRole('button', { name: 'Send' }).click();

  await expect(page.locator('[data-testid="message-assistant"][aria-busy="true"]')).toBeVisible();
  const streaming = await place();
  await expect(page.getByTestId('message-assistant')).toHaveAttribute('aria-busy', 'false');
  const done = await place();
  expect(streaming.box).toEqual(before.box);
  expect(done.box).toEqual(before.box);
  expect(streaming.title?.y).toEqual(before.title?.y);
  expect(done.title?.y).toEqual(before.title?.y);
});

// The Markdown renderer reaches the browser after the page is interactive (it is loaded lazily): answers must be
// rendered whether they stream in, come with the page, or arrive with another conversation opened in the page.
test('answers render as Markdown as they stream, after a reload and in a conversation opened in the page', async ({ page }) => {
  await openHydrated(page);
  const rendered = async () => {
    const answer = page.getByTestId('message-assistant').last();
    await expect(answer.locator('strong').first()).toBeVisible();
    await expect(answer.getByRole('listitem').first()).toBeVisible();
    await expect(page.locator('.md-pending')).toHaveCount(0);
  };
  await send(page, 'We need a booking app. Guests must pay online. Staff want a weekly report.');
  await rendered();
  const first = page.url();

  await reloadHydrated(page);
  await rendered();

  await page.getByRole('button', { name: 'New chat' }).click();
  await send(page, 'We need a parking app. Drivers must find free spaces. Owners want monthly invoices.');
  await rendered();
  await page.getByTestId('thread-item').filter({ hasText: 'We need a booking app' }).getByRole('link').first().click();
  await expect(page).toHaveURL(first);
  await expect(page.getByTestId('message-assistant')).toContainText('Staff want a weekly report');
  await rendered();
});
