import { expect, Page, test } from './fixtures';
import { readFileSync } from 'node:fs';
import { openHydrated, reloadHydrated, signUp, snapshot } from './helpers';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

async function send(page: Page, text: string) {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  // The turn is over once Send is back (Stop shows while it runs).
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
}

test('a typed request makes exactly one document card', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We are building a recipe app. Cooks want to save favourite recipes. Users must be able to share lists.');
  await send(page, 'Generate user stories from this conversation');
  const cards = page.getByTestId('artifact-card');
  await expect(cards).toHaveCount(1);
  await expect(cards.first()).toContainText('User Stories');
  await expect(page.getByTestId('message-assistant')).toHaveCount(2);

  await cards.first().getByRole('button').click();
  const viewer = page.getByRole('dialog');
  await expect(viewer).toBeVisible();
  await expect(viewer).toContainText('As a');
  await expect(viewer.getByRole('link', { name: 'Export Markdown' })).toHaveAttribute('href', /format=md/);
  await snapshot(page, 'document-viewer-light');
  await viewer.getByRole('button', { name: 'Close' }).click();
  await expect(viewer).toHaveCount(0);

  await reloadHydrated(page);
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
});

test('"What the model saw" lists the steps of an answer: the model calls and the document it saved', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We are building a recipe app. Cooks want to save favourite recipes.');
  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);

  await page.getByTestId('message-assistant').nth(1).getByRole('button', { name: 'What the model saw' }).click();
  const panel = page.getByRole('region', { name: 'What the model saw' });
  await expect(panel.getByRole('heading', { name: /^Steps \(\d+\)$/ })).toBeVisible();
  const steps = panel.getByTestId('trace-steps').getByRole('listitem');
  await expect(steps.filter({ hasText: /^Model call/ }).first()).toContainText('tokens in');
  const saved = steps.filter({ hasText: 'Tool call: save_artifact' });
  await expect(saved).toHaveCount(1);
  await expect(saved).toContainText('User Stories');
  await expect(saved).toContainText('Result: ');
  await panel.getByTestId('trace-steps').scrollIntoViewIfNeeded();
  await snapshot(page, 'answer-steps');
});

test('Generate makes a card silently: an indicator, no new bubble', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Our team needs a shared calendar. Managers must approve leave requests.');
  const users = page.getByTestId('message-user');
  const assistants = page.getByTestId('message-assistant');
  await expect(users).toHaveCount(1);
  await expect(assistants).toHaveCount(1);

  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'Business Requirements' }).click();
  const indicator = page.getByTestId('generating-indicator');
  await expect(indicator).toBeVisible();
  await expect(indicator).toHaveAttribute('role', 'status');
  await expect(indicator).toContainText('Business Requirements');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await expect(indicator).toHaveCount(0);
  await expect(page.getByTestId('artifact-card')).toContainText('Business Requirements');
  await expect(users).toHaveCount(1);
  await expect(assistants).toHaveCount(1);

  await reloadHydrated(page);
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
});

test('the documents panel lists every document of the conversation and opens it', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We run a library. Members borrow books. Librarians must see overdue loans.');
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'User Stories' }).click();
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'Meeting Summary' }).click();
  await expect(page.getByTestId('artifact-card')).toHaveCount(2);

  const toggle = page.getByRole('button', { name: 'Documents (2)' });
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  const panel = page.getByTestId('artifacts-panel');
  await expect(panel.getByRole('listitem')).toHaveCount(2);
  await expect(panel).toContainText('User Stories');
  await expect(panel).toContainText('Meeting Summary');
  await snapshot(page, 'documents-panel-light');

  await panel.getByRole('button', { name: /^Open / }).last().click();
  const viewer = page.getByRole('dialog');
  await expect(viewer).toContainText('Meeting Summary');
  // The document is rendered Markdown, not its source.
  await expect(viewer.locator('.viewer-body').locator('h1, h2, h3, li, strong').first()).toBeVisible();
  await expect(viewer.locator('.viewer-body')).not.toContainText('**');
  await expect(panel).toHaveCount(0);
  await viewer.getByRole('button', { name: 'Close' }).click();

  await reloadHydrated(page);
  await expect(page.getByRole('button', { name: 'Documents (2)' })).toBeVisible();
});

test('raw HTML in a message renders inert', async ({ page }) => {
  await openHydrated(page);
  let dialogs = 0;
  page.on('dialog', async (d) => {
    dialogs += 1;
    await d.dismiss();
  });
  await send(page, 'We need this: <img src=x onerror="alert(1)"> and <script>alert(2)</script> must be safe.');
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await expect(page.locator('.messages img')).toHaveCount(0);
  await expect(page.locator('.messages script')).toHaveCount(0);
  await expect(page.getByTestId('message-user')).toContainText('<script>alert(2)</script>');
  expect(dialogs).toBe(0);
});

test('a document downloads as Markdown, PDF and Word from its viewer, and can be deleted', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'We run a bike rental. Riders must unlock bikes with the app. Staff want a daily repair list.');
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'Requirements Document' }).click();
  const card = page.getByTestId('artifact-card');
  await expect(card).toHaveCount(1);
  await card.getByRole('button').click();
  const viewer = page.getByRole('dialog');

  const downloads: Array<[string, RegExp, string]> = [
    ['Export Markdown', /\.md$/, '# '],
    ['Export PDF', /\.pdf$/, '%PDF-'],
    ['Export Word', /\.docx$/, 'PK'],
  ];
  for (const [name, extension, start] of downloads) {
    const [download] = await Promise.all([page.waitForEvent('download'), viewer.getByRole('link', { name }).click()]);
    expect(download.suggestedFilename()).toMatch(extension);
    const body = readFileSync(await download.path());
    expect(body.length).toBeGreaterThan(100);
    expect(body.subarray(0, start.length).toString('latin1')).toBe(start);
  }

  await viewer.getByRole('button', { name: 'Delete', exact: true }).click();
  await viewer.getByRole('button', { name: 'Delete document' }).click();
  await expect(viewer).toHaveCount(0);
  await expect(card).toHaveCount(0);
  await reloadHydrated(page);
  await expect(page.getByTestId('message-assistant').first()).toBeVisible();
  await expect(page.getByTestId('artifact-card')).toHaveCount(0);
});
