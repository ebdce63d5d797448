import { expect, Page, test } from './fixtures';
import { openHydrated, signUp } from './helpers';
import { send } from './conversation';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

async function generate(page: Page, kind: string) {
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: kind }).click();
  await expect(page.getByTestId('generating-indicator')).toHaveCount(0);
}

test('the viewer lists versions, compares any two and restores one as a new version', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We run a library. Members borrow books. Librarians must see overdue loans.');
  await generate(page, 'User Stories');
  await send(page, 'Members must also be able to reserve books that are on loan.');
  await generate(page, 'User Stories');
  const card = page.getByTestId('artifact-card');
  await expect(card).toHaveCount(1);
  await expect(card).toContainText('v2');

  const opener = card.getByRole('button', { name: /^Open / });
  await opener.click();
  const viewer = page.getByRole('dialog');
  // Focus moves into the viewer.
  await expect(viewer.getByRole('button', { name: 'Close' })).toBeFocused();
  const versions = viewer.getByTestId('version-list');
  await expect(versions.getByRole('listitem')).toHaveCount(2);
  await expect(versions.getByRole('listitem').nth(1)).toContainText('Current');
  // Each version says who wrote it.
  await expect(versions.getByRole('listitem').nth(0)).toContainText('Written by the assistant (quire-builtin-1)');
  await expect(versions.getByRole('listitem').nth(1)).toContainText('Revised by the assistant (quire-builtin-1)');

  // The changes from version 1 to version 2: the new requirement shows as added.
  const diff = viewer.getByTestId('version-diff');
  await expect(diff.locator('.diff-insert').filter({ hasText: /reserve/i }).first()).toBeVisible();
  // The other way round it is removed.
  await viewer.getByRole('combobox', { name: 'Compare from version' }).selectOption('2');
  await viewer.getByRole('combobox', { name: 'Compare to version' }).selectOption('1');
  await expect(diff.locator('.diff-delete').filter({ hasText: /reserve/i }).first()).toBeVisible();
  await expect(diff.locator('.diff-insert').filter({ hasText: /reserve/i })).toHaveCount(0);

  await viewer.getByRole('button', { name: 'Restore version 1' }).click();
  await expect(versions.getByRole('listitem')).toHaveCount(3);
  await expect(versions.getByRole('listitem').nth(2)).toContainText('Current');
  await expect(versions.getByRole('listitem').nth(2)).toContainText('Edited by you');
  await expect(viewer.locator('.viewer-body')).not.toContainText(/reserve/i);
  await expect(card).toContainText('v3');

  // Escape closes the viewer and gives focus back to what opened it.
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(opener).toBeFocused();
});

test('popovers close on a click back in the chat or Escape, and the viewer returns focus', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We run a bakery. Customers order cakes online.');
  await generate(page, 'User Stories');
  const toggle = page.getByRole('button', { name: 'Documents (1)' });
  await toggle.click();
  const panel = page.getByTestId('artifacts-panel');
  await expect(panel).toBeVisible();
  // A click back on the message box (it lands on the popover's backdrop, as a person's would).
  const box = await page.getByRole('textbox', { name: 'Message' }).boundingBox();
  await page.mouse.click(box!.x + 20, box!.y + 10);
  await expect(panel).toHaveCount(0);
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');

  await toggle.click();
  await panel.getByRole('button', { name: /^Open / }).click();
  await expect(page.getByRole('dialog').getByRole('button', { name: 'Close' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(toggle).toBeFocused();

  // The Generate menu closes the same ways.
  const generateButton = page.getByRole('button', { name: 'Generate', exact: true });
  await generateButton.click();
  await expect(page.getByRole('menu', { name: 'Document type' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('menu', { name: 'Document type' })).toHaveCount(0);
  await expect(generateButton).toBeFocused();
  await generateButton.click();
  await page.mouse.click(box!.x + 20, box!.y + 10);
  await expect(page.getByRole('menu', { name: 'Document type' })).toHaveCount(0);
});
