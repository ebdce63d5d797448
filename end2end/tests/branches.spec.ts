import { expect, Locator, Page, test } from './fixtures';
import { send } from './conversation';
import { expectHydrated, openHydrated, reloadHydrated, signUp } from './helpers';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

const userMessages = (page: Page) => page.getByTestId('message-user');
const answers = (page: Page) => page.getByTestId('message-assistant');
const composer = (page: Page) => page.getByRole('textbox', { name: 'Message', exact: true });

/** The "‹ 2 / 3 ›" of a message. */
const versions = (message: Locator) => message.getByRole('group', { name: 'Versions' });

/** Opens the edit of a message of the person's, types `text` and sends it; waits until the answer is written. */
async function editAndSend(page: Page, message: Locator, text: string) {
  await message.getByRole('button', { name: 'Edit message' }).click();
  const editor = page.getByRole('form', { name: 'Edit message' });
  await editor.getByRole('textbox').fill(text);
  await editor.getByRole('button', { name: 'Send' }).click();
  await expect(editor).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();
}

test('an edit sends a new version; both versions stay reachable and a reload keeps the one chosen', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Plan A: riders must see when the next bus comes.');
  await send(page, 'Drivers must report delays.');
  await expect(userMessages(page)).toHaveCount(2);

  await editAndSend(page, userMessages(page).first(), 'Plan B: riders must buy tickets on their phone.');
  // The new version is answered like any message; what followed the old one is on the old branch.
  await expect(userMessages(page)).toHaveCount(1);
  await expect(userMessages(page)).toContainText('Plan B');
  await expect(answers(page)).toHaveCount(1);
  await expect(answers(page)).toContainText('buy tickets');
  await expect(answers(page)).toHaveAttribute('aria-busy', 'false');
  const edited = userMessages(page).first();
  await expect(versions(edited)).toContainText('2 / 2');
  await expect(versions(edited).getByRole('button', { name: 'Next version' })).toBeDisabled();

  await versions(edited).getByRole('button', { name: 'Previous version' }).click();
  await expect(userMessages(page)).toHaveCount(2);
  await expect(userMessages(page).first()).toContainText('Plan A');
  await expect(userMessages(page).nth(1)).toContainText('Drivers must report delays.');
  await expect(versions(userMessages(page).first())).toContainText('1 / 2');

  await reloadHydrated(page);
  await expect(userMessages(page)).toHaveCount(2);
  await expect(userMessages(page).first()).toContainText('Plan A');
  await expect(versions(userMessages(page).first())).toContainText('1 / 2');

  await versions(userMessages(page).first()).getByRole('button', { name: 'Next version' }).click();
  await expect(userMessages(page)).toHaveCount(1);
  await expect(userMessages(page)).toContainText('Plan B');
  await reloadHydrated(page);
  await expect(userMessages(page)).toHaveCount(1);
  await expect(userMessages(page)).toContainText('Plan B');
});

test('Cancel leaves a message as it was', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Members must book a court a week ahead.');
  await userMessages(page).getByRole('button', { name: 'Edit message' }).click();
  const editor = page.getByRole('form', { name: 'Edit message' });
  await editor.getByRole('textbox').fill('Something else entirely');
  await editor.getByRole('button', { name: 'Cancel' }).click();
  await expect(editor).toHaveCount(0);
  await expect(userMessages(page)).toContainText('Members must book a court a week ahead.');
  await expect(versions(userMessages(page))).toHaveCount(0);
});

test('Regenerate writes another answer in place; the first stays one version back', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Guests must check in with a QR code.');
  const first = await answers(page).getAttribute('data-message-id');

  await answers(page).getByRole('button', { name: 'Regenerate' }).click();
  // Streamed like any answer, and stoppable meanwhile.
  await expect(page.getByRole('button', { name: 'Stop' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();
  await expect(answers(page)).toHaveCount(1);
  await expect(answers(page)).toHaveAttribute('aria-busy', 'false');
  await expect(answers(page)).toContainText('QR code');
  await expect(versions(answers(page))).toContainText('2 / 2');
  const second = await answers(page).getAttribute('data-message-id');
  expect(second).not.toBe(first);

  await versions(answers(page)).getByRole('button', { name: 'Previous version' }).click();
  await expect(answers(page)).toHaveAttribute('data-message-id', first!);
  await expect(versions(answers(page))).toContainText('1 / 2');
  await expect(userMessages(page)).toHaveCount(1);
});

test('ArrowUp in the empty message box edits the last message of the person', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Tenants must report repairs online.');
  await send(page, 'Landlords must answer within two days.');
  await composer(page).focus();
  await page.keyboard.press('ArrowUp');
  const editor = page.getByRole('form', { name: 'Edit message' });
  const box = editor.getByRole('textbox');
  await expect(box).toBeFocused();
  await expect(box).toHaveValue('Landlords must answer within two days.');
  await box.fill('Landlords must answer within one day.');
  await page.keyboard.press('Enter');
  await expect(editor).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();
  await expect(userMessages(page)).toHaveCount(2);
  await expect(userMessages(page).nth(1)).toContainText('within one day');
  await expect(versions(userMessages(page).nth(1))).toContainText('2 / 2');
  await expect(versions(userMessages(page).first())).toHaveCount(0);

  // Not while the box holds text: the cursor moves as usual.
  await composer(page).fill('draft');
  await page.keyboard.press('ArrowUp');
  await expect(editor).toHaveCount(0);
});

test('deleting a message asks first and takes what follows it too', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Shoppers must compare prices.');
  await send(page, 'Shops must update stock hourly.');
  await expect(answers(page)).toHaveCount(2);

  await userMessages(page).nth(1).getByRole('button', { name: 'Delete message' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete message?' });
  await expect(dialog).toContainText('every later message');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(userMessages(page)).toHaveCount(2);

  await userMessages(page).nth(1).getByRole('button', { name: 'Delete message' }).click();
  await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  await expect(userMessages(page)).toHaveCount(1);
  await expect(answers(page)).toHaveCount(1);
  await expect(userMessages(page)).toContainText('compare prices');

  await reloadHydrated(page);
  await expect(userMessages(page)).toHaveCount(1);
  await expect(answers(page)).toHaveCount(1);
});

test('a search hit on a branch that is not shown opens that branch at the message', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Keepers must feed the quokkaroo twice a day.');
  await editAndSend(page, userMessages(page).first(), 'Keepers must clean the pens every morning.');
  await expect(userMessages(page)).not.toContainText('quokkaroo');

  await page.goto('/search?q=quokkaroo');
  const hit = page.getByTestId('search-result').filter({ hasText: 'You' });
  await expect(hit).toHaveCount(1);
  await hit.click();
  const found = page.locator('[data-testid="message-user"][aria-current="true"]');
  await expect(found).toContainText('quokkaroo');
  await expect(found).toBeInViewport();
  await expect(versions(found)).toContainText('1 / 2');

  // The switch is stored: the conversation opens on that branch.
  await page.goto(page.url().replace(/\?.*$/, ''));
  await expectHydrated(page);
  await expect(userMessages(page)).toContainText('quokkaroo');
});

test('the versions and the tools fit a phone', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  await openHydrated(page);
  await send(page, 'Runners must log a route.');
  await answers(page).getByRole('button', { name: 'Regenerate' }).click();
  await expect(versions(answers(page))).toContainText('2 / 2');
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();
  const wide = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  expect(wide).toBe(false);
  await expect(versions(answers(page)).getByRole('button', { name: 'Previous version' })).toBeInViewport();
});

test('switching while an answer is written is refused, and the refusal is shown', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Patients must book appointments online.');
  await answers(page).getByRole('button', { name: 'Regenerate' }).click();
  await expect(versions(answers(page))).toContainText('2 / 2');
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();

  const long = Array.from({ length: 8 }, (_, i) => `Requirement ${i + 1}: the clinic must be able to see every booking of the week in one calendar view.`);
  await composer(page).fill(long.join(' '));
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(page.locator('[data-testid="message-assistant"][aria-busy="true"]')).toBeVisible();
  await versions(answers(page).first()).getByRole('button', { name: 'Previous version' }).click();
  await expect(page.getByRole('alert')).toContainText('already being written');
  await expect(versions(answers(page).first())).toContainText('2 / 2');
  await page.getByRole('button', { name: 'Stop' }).click();
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();
});
