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
    await expect(page.locator('html')).toHaveAttribute('data-theme', theme);
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
