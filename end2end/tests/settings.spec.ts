import { expect, test } from './fixtures';
import { readFile } from 'node:fs/promises';
import { expectHydrated, openHydrated, PASSWORD, signUp } from './helpers';
import { send } from './conversation';

test('settings keep the name, instructions and theme; a shared link is read signed out until revoked', async ({ page, browser }) => {
  const email = await signUp(page);
  await page.emulateMedia({ colorScheme: 'light' });
  await openHydrated(page, '/settings');
  await expect(page.getByRole('heading', { name: 'Settings', exact: true })).toBeVisible();
  await expect(page.getByTestId('settings-email')).toHaveText(email);

  const profile = page.getByRole('form', { name: 'Profile' });
  await profile.getByLabel('Display name').fill('Ada Lovelace');
  await profile.getByRole('button', { name: 'Save name' }).click();
  await expect(profile.getByRole('status')).toContainText('Name saved');

  const instructions = page.getByRole('form', { name: 'Custom instructions' });
  await instructions.getByLabel('Instructions').fill('Keep answers short.');
  await instructions.getByRole('button', { name: 'Save instructions' }).click();
  await expect(instructions.getByRole('status')).toContainText('Instructions saved');

  await page.getByRole('radiogroup', { name: 'Theme' }).getByLabel('Dark').check();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');

  // Another device of the same person shows what was saved.
  const device = await browser.newContext();
  const other = await device.newPage();
  expect((await other.request.post('/api/auth/login', { data: { email, password: PASSWORD } })).status()).toBe(200);
  await openHydrated(other, '/settings');
  await expect(other.locator('html')).toHaveAttribute('data-theme', 'dark');
  await expect(other.getByLabel('Display name')).toHaveValue('Ada Lovelace');
  await expect(other.getByRole('textbox', { name: 'Instructions' })).toHaveValue('Keep answers short.');
  await device.close();

  // Share a conversation, read it signed out, revoke it.
  await openHydrated(page, '/');
  await send(page, 'We need a booking app for a small library');
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await page.getByRole('button', { name: 'Share' }).click();
  const link = page.getByTestId('share-url');
  await expect(link).toBeVisible();
  const url = (await link.textContent())!;
  expect(url).toMatch(/\/s\/[A-Za-z0-9_-]{43}$/);

  const stranger = await browser.newContext();
  const reader = await stranger.newPage();
  const response = await reader.goto(url);
  expect(response!.headers()['x-robots-tag']).toContain('noindex');
  await expectHydrated(reader);
  await expect(reader.locator('meta[name="robots"]')).toHaveAttribute('content', /noindex/);
  await expect(reader.getByTestId('message-user')).toContainText('booking app for a small library');
  await expect(reader.getByText(email)).toHaveCount(0);
  await expect(reader.getByText('Ada Lovelace')).toHaveCount(0);

  await openHydrated(page, '/settings');
  const links = page.getByRole('list', { name: 'Shared links' });
  await expect(links.getByRole('listitem')).toHaveCount(1);
  await links.getByRole('button', { name: 'Revoke' }).click();
  await expect(page.getByRole('region', { name: 'Shared links' })).toContainText('No shared links.');

  const gone = await reader.goto(url);
  expect(gone!.status()).toBe(404);
  await expect(reader.getByTestId('share-missing')).toBeVisible();
  await stranger.close();
});

test('"Download all my data" on the settings page downloads every conversation of the person as JSON', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  await send(page, 'We need a booking app for a small library');
  await expect(page.getByTestId('message-assistant')).toHaveAttribute('aria-busy', 'false');

  await openHydrated(page, '/settings');
  const download = page.waitForEvent('download');
  await page.getByRole('link', { name: 'Download all my data' }).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/\.json$/);
  const data = JSON.parse(await readFile((await file.path())!, 'utf8'));
  expect(data.threads).toHaveLength(1);
  const messages = data.threads[0].messages.map((m: { role: string; content: string }) => [m.role, m.content]);
  expect(messages[0]).toEqual(['user', 'We need a booking app for a small library']);
  expect(messages[1][0]).toBe('assistant');
});
