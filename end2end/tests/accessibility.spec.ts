import AxeBuilder from '@axe-core/playwright';
import { expect, Page, test } from '@playwright/test';
import { send } from './conversation';
import { openHydrated, signUp } from './helpers';

/**
 * Runs axe-core's WCAG 2.1 A/AA rules on the page as it is (colour contrast included) and fails with the rule,
 * the elements and axe's summary of each violation.
 */
async function expectAccessible(page: Page, screen: string) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const problems = results.violations.flatMap((v) =>
    v.nodes.map((n) => `${screen}: ${v.id} at ${n.target.join(' ')}: ${n.failureSummary ?? v.help}`),
  );
  expect(problems).toEqual([]);
}

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
    await page.reload();
    await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
    await page.getByRole('button', { name: 'Show conversations tagged library' }).click();
    await page.getByRole('button', { name: 'Tags', exact: true }).click();
    await expect(page.getByTestId('tag-filter')).toBeVisible();
    await expectAccessible(page, 'tag filter');

    await page.getByTestId('artifact-card').first().getByRole('button', { name: /^Open / }).click();
    await expect(page.getByTestId('version-diff').locator('.diff-line').first()).toBeVisible();
    await expectAccessible(page, 'document versions');
  });
}
