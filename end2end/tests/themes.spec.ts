import { expect, Page, test } from './fixtures';
import { openHydrated, reloadHydrated, signUp, snapshot } from './helpers';
import { background, send, sidewaysOverflow } from './conversation';

/** Picks a theme with the toggle (and checks that it really changed the colours). */
async function useTheme(page: Page, theme: 'light' | 'dark') {
  const toggle = page.getByRole('button', { name: /Switch to (dark|light) theme/ });
  const current = (await toggle.getAttribute('aria-pressed')) === 'true' ? 'dark' : 'light';
  if (current !== theme) {
    const before = await background(page);
    await toggle.click();
    await expect(toggle).toHaveAttribute('aria-pressed', theme === 'dark' ? 'true' : 'false');
    await expect.poll(() => background(page)).not.toBe(before);
  }
  // Chosen or followed from the system: the theme in effect either way.
  await expect.poll(() => page.evaluate(() => getComputedStyle(document.documentElement).colorScheme)).toBe(theme);
}

test('sign-in follows the system theme', async ({ page }) => {
  await page.emulateMedia({ colorScheme: 'light' });
  await openHydrated(page, '/signin');
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  const light = await background(page);
  await snapshot(page, 'light/signin');

  await page.emulateMedia({ colorScheme: 'dark' });
  await expect.poll(() => background(page)).not.toBe(light);
  await snapshot(page, 'dark/signin');
});

test('the toggle switches the theme, and it stays switched across pages and reloads', async ({ page }) => {
  await signUp(page);
  await page.emulateMedia({ colorScheme: 'light' });
  await openHydrated(page);
  const light = await background(page);
  await useTheme(page, 'dark');
  const dark = await background(page);
  expect(dark).not.toBe(light);

  await page.getByRole('link', { name: 'Stats' }).click();
  await expect(page.getByRole('heading', { name: 'Stats' })).toBeVisible();
  expect(await background(page)).toBe(dark);
  await reloadHydrated(page);
  await expect.poll(() => background(page)).toBe(dark);

  await useTheme(page, 'light');
  expect(await background(page)).toBe(light);
});

test('screens in both themes: chat with a document, document viewer, stats', async ({ page }) => {
  await signUp(page);
  await page.emulateMedia({ colorScheme: 'light' });
  await openHydrated(page);
  await send(page, 'We are building a clinic booking app. Patients book and cancel visits. Doctors see their day.');
  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await expect(page.getByTestId('message-assistant')).toHaveCount(2);

  for (const theme of ['light', 'dark'] as const) {
    await page.getByRole('link', { name: 'Chat' }).click();
    await expect(page.getByTestId('artifact-card')).toHaveCount(1);
    await useTheme(page, theme);
    await page.getByTestId('message-assistant').first().getByRole('button', { name: 'What the model saw' }).click();
    await expect(page.getByTestId('context-tokens')).toBeVisible();
    await snapshot(page, `${theme}/chat`);

    await page.getByTestId('artifact-card').getByRole('button').click();
    const viewer = page.getByRole('dialog');
    await expect(viewer).toContainText('As a');
    await snapshot(page, `${theme}/document-viewer`);
    await viewer.getByRole('button', { name: 'Close' }).click();

    await page.getByRole('link', { name: 'Stats' }).click();
    await expect(page.getByRole('img', { name: /tokens per day/ })).toBeVisible();
    await snapshot(page, `${theme}/stats`);
  }
});

test('at phone width the chat and the stats page need no sideways scrolling', async ({ page }) => {
  await signUp(page);
  await page.setViewportSize({ width: 390, height: 844 });
  await openHydrated(page);
  await send(page, 'A neighbourhood tool library: members borrow drills and ladders, and return them within a week.');
  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await page.getByTestId('message-assistant').first().getByRole('button', { name: 'What the model saw' }).click();
  await expect(page.getByTestId('context-tokens')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send' })).toBeInViewport();
  expect(await sidewaysOverflow(page, ['.main', '.chat', '.messages', '.composer'])).toEqual([]);
  await snapshot(page, 'phone/chat');

  await page.getByRole('link', { name: 'Stats' }).click();
  await expect(page.getByRole('img', { name: /tokens per day/ })).toBeVisible();
  await page.getByText('The last 30 days as a table').click();
  expect(await sidewaysOverflow(page, ['.main', '.page', '.stat-tiles', '.charts'])).toEqual([]);
  await snapshot(page, 'phone/stats');
});

test('at phone width the conversations fold behind a button and fold again once one is opened', async ({ page }) => {
  await signUp(page);
  await page.setViewportSize({ width: 390, height: 844 });
  await openHydrated(page);
  await send(page, 'A packing list app: travellers tick off what they packed.');
  const toggle = page.getByRole('button', { name: 'Conversations', exact: true });
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await expect(page.getByTestId('thread-item')).toBeHidden();
  await expect(page.getByRole('button', { name: 'Send' })).toBeInViewport();

  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(page.getByTestId('thread-item')).toBeVisible();
  await snapshot(page, 'phone/conversations');
  await page.getByRole('button', { name: 'New chat' }).click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await expect(page.getByTestId('message-user')).toHaveCount(0);

  await toggle.click();
  await page.getByTestId('thread-item').getByRole('link').click();
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await expect(page.getByTestId('thread-item')).toBeHidden();
});
