import { expect, test } from './fixtures';
import { send } from './conversation';
import {
  expectAccessible,
  expectHydrated,
  openHydrated,
  reloadHydrated,
  signInAsAdmin,
  signUp,
} from './helpers';

for (const theme of ['light', 'dark'] as const) {
  test(`the main screens pass the WCAG A/AA checks in the ${theme} theme`, async ({ page }) => {
    await page.emulateMedia({ colorScheme: theme });
    await openHydrated(page, '/signin');
    await expectAccessible(page, 'sign-in');
    await openHydrated(page, '/signup');
    await expectAccessible(page, 'sign-up');

    await signUp(page);
    await openHydrated(page);
    // A new account follows the system's theme.
    await expect.poll(() => page.evaluate(() => getComputedStyle(document.documentElement).colorScheme)).toBe(theme);
    await expectAccessible(page, 'empty chat');

    await send(page, 'We are opening a bakery. Customers order cakes online. Staff must see the orders of the day.');
    await send(page, 'Generate user stories from this conversation');
    await expect(page.getByTestId('artifact-card')).toHaveCount(1);
    await expectAccessible(page, 'chat with a document');

    await page.getByTestId('message-assistant').first().getByRole('button', { name: 'What the model saw' }).click();
    await expect(page.getByRole('region', { name: 'What the model saw' }).getByRole('heading').first()).toBeVisible();
    await expectAccessible(page, 'what the model saw');

    await page.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
    await expect(page.getByRole('dialog')).toBeVisible();
    await expectAccessible(page, 'document viewer');
    await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();

    await page.getByTestId('thread-item').first().getByRole('button', { name: /^Conversation options/ }).click();
    await expect(page.getByRole('menu')).toBeVisible();
    await expectAccessible(page, 'conversation menu');
    await page.keyboard.press('Escape');

    await page.getByRole('searchbox').fill('bakery');
    await page.getByRole('searchbox').press('Enter');
    await expect(page.getByTestId('search-result').first()).toBeVisible();
    await expectAccessible(page, 'search results');

    await page.getByRole('link', { name: 'Stats' }).click();
    await expect(page.getByRole('heading', { name: 'Stats' })).toBeVisible();
    await expect(page.locator('svg').first()).toBeVisible();
    await expectAccessible(page, 'stats');
  });
}

for (const theme of ['light', 'dark'] as const) {
  test(`files, tags and document versions pass the WCAG A/AA checks in the ${theme} theme`, async ({ page }) => {
    await page.emulateMedia({ colorScheme: theme });
    await signUp(page);
    await openHydrated(page);
    // A document with two versions: generated, then generated again after a new requirement.
    for (const requirement of [
      'We run a library. Members borrow books. Librarians must see overdue loans.',
      'Members must also be able to reserve books that are on loan.',
    ]) {
      await send(page, requirement);
      await page.getByRole('button', { name: 'Generate', exact: true }).click();
      await page.getByRole('menuitem', { name: 'User Stories' }).click();
      await expect(page.getByTestId('generating-indicator')).toHaveCount(0);
    }
    await expect(page.getByTestId('artifact-card')).toContainText('v2');

    // Chips: one attached, one refused.
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach files' }).click();
    await (await chooser).setFiles([
      { name: 'loans.md', mimeType: 'text/markdown', buffer: Buffer.from('# Loans\n\nA loan lasts three weeks.\n') },
      { name: 'cover.png', mimeType: 'image/png', buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
    ]);
    await expect(page.getByTestId('attachment-chip').filter({ hasText: 'loans.md' })).toContainText('Attached');
    await expect(page.getByTestId('attachment-chip').filter({ hasText: 'cover.png' })).toContainText("can't be attached");
    await expectAccessible(page, 'file chips');

    await page.getByRole('button', { name: /^Documents \(/ }).click();
    await expect(page.getByTestId('attached-file')).toHaveCount(1);
    await expectAccessible(page, 'documents panel with files');
    await page.keyboard.press('Escape');

    const id = /\/c\/([0-9a-f-]{36})$/.exec(page.url())![1];
    const tagged = await page.request.patch(`/api/threads/${id}`, {
      headers: { origin: new URL(page.url()).origin },
      data: { tags: ['library', 'loans'] },
    });
    expect(tagged.status()).toBe(200);
    await reloadHydrated(page);
    await page.getByRole('button', { name: 'Show conversations tagged library' }).click();
    await page.getByRole('button', { name: 'Tags', exact: true }).click();
    await expect(page.getByTestId('tag-filter')).toBeVisible();
    await expectAccessible(page, 'tag filter');

    await page.getByTestId('artifact-card').first().getByRole('button', { name: /^Open / }).click();
    await expect(page.getByTestId('version-diff').locator('.diff-line').first()).toBeVisible();
    await expectAccessible(page, 'document versions');
  });
}

for (const theme of ['light', 'dark'] as const) {
  test(`versions of a message, settings, a shared conversation and the admin page pass the WCAG A/AA checks in the ${theme} theme`, async ({
    page,
    browser,
  }) => {
    await page.emulateMedia({ colorScheme: theme });
    await signUp(page);
    await openHydrated(page);
    await send(page, 'Riders must see when the next bus comes.');
    // A second version of the message: "< 2 / 2 >", Edit, Regenerate and Delete under the messages.
    const message = page.getByTestId('message-user').first();
    await message.getByRole('button', { name: 'Edit message' }).click();
    const editor = page.getByRole('form', { name: 'Edit message' });
    await editor.getByRole('textbox').fill('Riders must buy tickets on their phone.');
    await expectAccessible(page, 'message editor');
    await editor.getByRole('button', { name: 'Send' }).click();
    await expect(editor).toHaveCount(0);
    await expect(page.getByTestId('message-assistant')).toHaveAttribute('aria-busy', 'false');
    await expect(message.getByRole('group', { name: 'Versions' })).toContainText('2 / 2');
    await expectAccessible(page, 'message versions');

    await page.getByRole('button', { name: 'Share' }).click();
    const url = (await page.getByTestId('share-url').textContent())!;
    const stranger = await browser.newContext({ colorScheme: theme });
    const reader = await stranger.newPage();
    await reader.goto(url);
    await expectHydrated(reader);
    await expect(reader.getByTestId('message-user')).toBeVisible();
    await expectAccessible(reader, 'shared conversation');
    await stranger.close();

    await openHydrated(page, '/settings');
    await expect(page.getByRole('heading', { name: 'Settings', exact: true })).toBeVisible();
    await expect(page.getByRole('list', { name: 'Shared links' }).getByRole('listitem')).toHaveCount(1);
    await expectAccessible(page, 'settings');

    // Signed out first: a signed-in browser's requests must come from Quire's own pages.
    await page.context().clearCookies();
    await signInAsAdmin(page);
    await openHydrated(page, '/admin');
    await expect(page.getByTestId('account-row').first()).toBeVisible();
    await expectAccessible(page, 'admin');
  });
}

test('at phone width the admin tables scroll sideways inside the page, not the page itself', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  await signInAsAdmin(page);
  await openHydrated(page, '/admin');
  const accounts = page.getByTestId('accounts');
  await expect(accounts.getByTestId('account-row').first()).toBeVisible();
  // The page does not scroll sideways; the table's own box does, and every row's actions stay reachable.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  const scroller = page.locator('.table-scroll').filter({ has: accounts });
  expect(await scroller.evaluate((box) => box.scrollWidth > box.clientWidth)).toBe(true);
  const remove = accounts.getByTestId('account-row').first().getByRole('button', { name: 'Delete' });
  await remove.scrollIntoViewIfNeeded();
  await expect(remove).toBeInViewport();
});
