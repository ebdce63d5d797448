import { expect, Page, test } from './fixtures';
import { openHydrated, sameOrigin, signUp } from './helpers';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

async function createConversation(page: Page, title: string, tags: string[]) {
  const response = await page.request.post('/api/threads', { headers: sameOrigin(), data: { title, tags } });
  expect(response.status()).toBe(201);
}

test('a tag narrows the list until the filter is cleared; the tag list gives counts', async ({ page }) => {
  await createConversation(page, 'Invoices', ['billing', 'urgent']);
  await createConversation(page, 'Refunds', ['billing']);
  await createConversation(page, 'Servers', ['ops']);
  await openHydrated(page);
  const items = page.getByTestId('thread-item');
  await expect(items).toHaveCount(3);
  await expect(page.getByTestId('tag-filter')).toHaveCount(0);

  // A chip in the list filters by its tag.
  await items.filter({ hasText: 'Invoices' }).getByRole('button', { name: 'Show conversations tagged billing' }).click();
  const filter = page.getByTestId('tag-filter');
  await expect(filter).toContainText('billing');
  await expect(items).toHaveCount(2);
  await expect(items.filter({ hasText: 'Servers' })).toHaveCount(0);
  await filter.getByRole('button', { name: 'Clear filter' }).click();
  await expect(filter).toHaveCount(0);
  await expect(items).toHaveCount(3);

  // Every tag with its count; the one in use shows pressed, and pressing it again clears the filter.
  await page.getByRole('button', { name: 'Tags', exact: true }).click();
  const tags = page.getByRole('list', { name: 'Tags' });
  await expect(tags.getByRole('button')).toHaveText([/billing\s*2/, /ops\s*1/, /urgent\s*1/]);
  const ops = tags.getByRole('button', { name: 'ops, 1 conversation' });
  await ops.click();
  await expect(ops).toHaveAttribute('aria-pressed', 'true');
  await expect(items).toHaveCount(1);
  await expect(items.first()).toContainText('Servers');
  await expect(page.getByTestId('tag-filter')).toContainText('ops');
  await ops.click();
  await expect(page.getByTestId('tag-filter')).toHaveCount(0);
  await expect(items).toHaveCount(3);

  // Counts follow edits of a conversation's tags.
  await tags.getByRole('button', { name: 'billing, 2 conversations' }).click();
  await expect(items).toHaveCount(2);
  await items.filter({ hasText: 'Refunds' }).getByRole('button', { name: /Conversation options/ }).click();
  await page.getByRole('menuitem', { name: 'Edit tags' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit tags' });
  await dialog.getByRole('textbox', { name: 'Tags' }).fill('ops');
  await page.keyboard.press('Enter');
  await expect(dialog).toHaveCount(0);
  await expect(items).toHaveCount(1);
  await expect(tags.getByRole('button', { name: 'ops, 2 conversations' })).toBeVisible();
  await expect(tags.getByRole('button', { name: 'billing, 1 conversation' })).toBeVisible();
});
