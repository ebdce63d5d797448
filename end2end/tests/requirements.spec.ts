import { expect, Page, test } from './fixtures';
import { expectAccessible, openHydrated, signUp } from './helpers';
import { send } from './conversation';

/** What the app wrote to the console as a panic (a panic in the browser leaves the page half working). */
let panics: string[] = [];

test.beforeEach(async ({ page }) => {
  panics = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && message.text().includes('panicked')) panics.push(message.text());
  });
  await signUp(page);
});

test.afterEach(() => {
  expect(panics).toEqual([]);
});

const SALON =
  "We are building a salon booking app. Customers must be able to book 30-minute slots. Staff should see the day's bookings. Write user stories.";

/** A conversation whose first message states two requirements and asks for user stories. */
async function salon(page: Page) {
  await openHydrated(page);
  await send(page, SALON);
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
}

const panel = (page: Page) => page.getByRole('region', { name: 'Requirements' });
const requirement = (page: Page, key: string) =>
  panel(page).locator(`[data-testid="requirement"][data-key="${key}"]`);

/** Opens the requirements panel from the header. */
async function openPanel(page: Page) {
  await page.getByRole('button', { name: /^Requirements \(\d+\)$/ }).click();
  await expect(panel(page)).toBeVisible();
  await expect(panel(page).getByTestId('requirement').first()).toBeVisible();
}

/** Changes R-1's text in the panel. */
async function editFirst(page: Page, text: string) {
  const r1 = requirement(page, 'R-1');
  await r1.getByRole('button', { name: 'Edit R-1' }).click();
  const field = r1.getByRole('textbox', { name: 'Requirement text' });
  await expect(field).toBeFocused();
  await field.fill(text);
  await r1.getByRole('button', { name: 'Save' }).click();
  await expect(field).toHaveCount(0);
  await expect(r1.getByRole('button', { name: 'Edit R-1' })).toBeFocused();
}

test('the ledger beside the conversation: covered, edited, out of date, updated, followed from a document, dropped', async ({
  page,
}) => {
  await salon(page);
  await expect(page.getByRole('button', { name: 'Requirements (2)' })).toBeVisible();
  await openPanel(page);

  // Both requirements, from the message, covered by the stories.
  await expect(panel(page).getByTestId('requirement')).toHaveCount(2);
  const r1 = requirement(page, 'R-1');
  const r2 = requirement(page, 'R-2');
  await expect(r1).toContainText('Customers must be able to book 30-minute slots.');
  await expect(r1).toContainText('Functional');
  await expect(r2).toContainText("Staff should see the day's bookings.");
  for (const entry of [r1, r2]) {
    await expect(entry.getByRole('button', { name: /\(v1\)$/ })).toBeVisible();
  }
  await expect(panel(page).getByTestId('uncovered')).toHaveCount(0);

  // A covering document opens from the panel.
  await r2.getByRole('button', { name: /\(v1\)$/ }).click();
  await expect(page.getByRole('dialog')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(r2.getByRole('button', { name: /\(v1\)$/ })).toBeFocused();

  // Changed by hand: the document says plainly that it no longer reflects R-1.
  await editFirst(page, 'Customers must be able to book 60-minute slots.');
  await expect(r1).toHaveAttribute('data-status', 'changed');
  await expect(r1).toContainText('Changed');
  await expect(r1).toContainText('out of date');
  const card = page.getByTestId('artifact-card');
  const notice = card.getByTestId('out-of-date');
  await expect(notice).toContainText('R-1 changed (30-minute → 60-minute)');

  // The history tells who changed what.
  await r1.getByText('History').click();
  const steps = r1.getByRole('group').getByRole('listitem');
  await expect(steps).toHaveCount(2);
  await expect(steps.nth(0)).toContainText('Added from a message');
  await expect(steps.nth(1)).toContainText('Changed by you');
  await expect(steps.nth(1)).toContainText('Before: Customers must be able to book 30-minute slots.');

  // "Update document" revises it silently: the indicator, no new bubbles, then the card at its new version.
  const bubbles = await page.locator('[data-testid^="message-"]').count();
  await notice.getByRole('button', { name: 'Update document' }).click();
  await expect(page.getByTestId('generating-indicator')).toHaveCount(0);
  await expect(card).toContainText('v2');
  await expect(card.getByTestId('out-of-date')).toHaveCount(0);
  await expect(page.locator('[data-testid^="message-"]')).toHaveCount(bubbles);
  await expect(r1).not.toContainText('out of date');

  // The viewer shows the new value, and its cited keys lead to the requirement and the message it came from.
  await card.getByRole('button', { name: /^Open / }).click();
  const viewer = page.getByRole('dialog');
  await expect(viewer.locator('.viewer-body')).toContainText('60-minute');
  await expect(viewer.locator('.viewer-body')).not.toContainText('30-minute');
  await expect(viewer.getByTestId('out-of-date')).toHaveCount(0);
  const link = viewer.getByRole('button', { name: 'Requirement R-1' }).first();
  await expect(link).toHaveAttribute('data-testid', 'requirement-link');
  await link.click();
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(r1).toBeFocused();
  const source = page.getByTestId('message-user').first();
  await expect(source).toHaveAttribute('data-highlighted', 'true');
  await expect(source).toHaveClass(/highlighted/);
  await expect(source).toBeInViewport();

  // Dropped: shown as dropped, no longer counted, and the document is out of date for it; restored again.
  await r2.getByRole('button', { name: 'Drop R-2' }).click();
  await expect(r2).toHaveAttribute('data-status', 'dropped');
  await expect(r2).toContainText('Dropped');
  await expect(r2.getByRole('button', { name: 'Restore R-2' })).toBeFocused();
  await expect(page.getByRole('button', { name: 'Requirements (1)' })).toBeVisible();
  await expect(card.getByTestId('out-of-date')).toContainText('R-2 dropped');
  await r2.getByRole('button', { name: 'Restore R-2' }).click();
  await expect(r2).not.toHaveAttribute('data-status', 'dropped');
  await expect(page.getByRole('button', { name: 'Requirements (2)' })).toBeVisible();

  // The ledger and the traceability matrix download from the panel.
  const exports = panel(page).getByRole('group', { name: 'Export requirements' });
  const matrix = await exports.getByRole('link', { name: 'Traceability (CSV)' }).getAttribute('href');
  const csv = await page.request.get(matrix!);
  expect(csv.status()).toBe(200);
  expect(await csv.text()).toContain('R-1');
  await expect(exports.getByRole('link')).toHaveCount(4);

  // Escape closes the panel and gives focus back to its toggle.
  await page.keyboard.press('Escape');
  await expect(panel(page)).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Requirements (2)' })).toBeFocused();
});

test('requirements no document covers stand out, and a document is generated for them', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We are building a bike repair app. Customers must be able to book a repair slot.');
  await send(page, 'Mechanics should see the repairs of the day.');
  await expect(page.getByTestId('artifact-card')).toHaveCount(0);

  // The model was given the ledger with the second message.
  const answer = page.getByTestId('message-assistant').last();
  await answer.getByRole('button', { name: 'What the model saw' }).click();
  const ledger = answer.getByTestId('context-ledger');
  await expect(ledger).toBeVisible();
  await expect(ledger.getByRole('listitem')).toHaveCount(1);
  await expect(ledger).toContainText('R-1 (active) Customers must be able to book a repair slot.');

  await openPanel(page);
  await expect(panel(page).getByTestId('uncovered')).toHaveCount(2);
  await expect(requirement(page, 'R-1').getByTestId('uncovered')).toHaveText('Not covered');
  await expect(panel(page)).toContainText('Not covered by any document: R-1, R-2.');
  const bubbles = await page.locator('[data-testid^="message-"]').count();
  await panel(page).getByRole('button', { name: 'Generate document' }).click();
  await expect(page.getByTestId('generating-indicator')).toHaveCount(0);
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await expect(page.locator('[data-testid^="message-"]')).toHaveCount(bubbles);
  await expect(panel(page).getByTestId('uncovered')).toHaveCount(0);
  await expect(panel(page).getByRole('button', { name: 'Generate document' })).toHaveCount(0);
  for (const key of ['R-1', 'R-2']) {
    await expect(requirement(page, key).getByRole('button', { name: /\(v1\)$/ })).toBeVisible();
  }
});

test('a document on every branch cites a requirement stated on another, and following it says so', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We are building a bike repair app. Customers must be able to book a repair slot.');
  // Generated silently, the stories belong to no answer: every branch shows them.
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'User Stories' }).click();
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await expect(page.getByTestId('generating-indicator')).toHaveCount(0);

  // A branch where the requirement was never said.
  await page.getByTestId('message-user').first().getByRole('button', { name: 'Edit message' }).click();
  const editor = page.getByRole('form', { name: 'Edit message' });
  await editor.getByRole('textbox').fill('Hello there.');
  await editor.getByRole('button', { name: 'Send' }).click();
  await expect(editor).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeVisible();
  await expect(page.getByTestId('message-user')).toHaveText(/Hello there\./);

  await page.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Requirement R-1' }).first().click();
  await expect(panel(page).getByTestId('requirement-elsewhere')).toHaveText(
    "R-1 is not in this branch's ledger: it came from a message on another branch.",
  );
  await expect(requirement(page, 'R-1')).toHaveCount(0);
});

for (const theme of ['light', 'dark'] as const) {
  test(`the requirements panel and an out-of-date document pass the WCAG A/AA checks in the ${theme} theme`, async ({
    page,
  }) => {
    await page.emulateMedia({ colorScheme: theme });
    await salon(page);
    await openPanel(page);
    await editFirst(page, 'Customers must be able to book 45-minute slots.');
    await requirement(page, 'R-2').getByRole('button', { name: 'Drop R-2' }).click();
    await expect(requirement(page, 'R-2')).toHaveAttribute('data-status', 'dropped');
    await requirement(page, 'R-1').getByText('History').click();
    await expect(page.getByTestId('artifact-card').getByTestId('out-of-date')).toContainText('R-2 dropped');
    await expectAccessible(page, 'requirements panel and an out-of-date document');

    await page.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
    await expect(page.getByRole('dialog').getByTestId('out-of-date')).toBeVisible();
    await expect(page.getByRole('dialog').getByTestId('requirement-link').first()).toBeVisible();
    await expectAccessible(page, 'out-of-date document viewer');
  });
}

test('at phone width the requirements panel covers the conversation and closes again', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await salon(page);
  await openPanel(page);
  await expect(panel(page).getByRole('heading', { name: 'Requirements' })).toBeFocused();
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  const box = await panel(page).boundingBox();
  expect(box!.width).toBeGreaterThan(380);
  await panel(page).getByRole('button', { name: 'Close requirements' }).click();
  await expect(panel(page)).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Requirements (2)' })).toBeFocused();
});
