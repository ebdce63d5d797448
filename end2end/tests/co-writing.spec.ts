import { expect, Page, test } from './fixtures';
import { expectAccessible, openHydrated, signUp } from './helpers';
import { send } from './conversation';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

/** A conversation with one generated document, its viewer open. */
async function openDocument(page: Page, words: string) {
  await openHydrated(page);
  await send(page, words);
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'Requirements Document' }).click();
  await expect(page.getByTestId('generating-indicator')).toHaveCount(0);
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await page.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
  return page.getByRole('dialog');
}

const editor = (page: Page) => page.getByRole('textbox', { name: 'Document text (Markdown)' });

test('a person edits a document: preview, Ctrl+S saves a version, Escape asks before dropping changes', async ({
  page,
}) => {
  const viewer = await openDocument(page, 'We run a dental clinic. Patients book appointments online.');
  await viewer.getByRole('button', { name: 'Edit' }).click();
  await expect(viewer.getByTestId('artifact-editor')).toBeVisible();
  const original = await editor(page).inputValue();
  expect(original.length).toBeGreaterThan(20);

  // The preview follows the text as it is typed.
  await editor(page).fill(`${original}\n\n## Added by hand\n\n- Reminders go out a day before.\n`);
  await expect(viewer.getByTestId('editor-preview').getByRole('heading', { name: 'Added by hand' })).toBeVisible();

  // Escape with changes asks first; keeping on editing keeps the text.
  await page.keyboard.press('Escape');
  const ask = viewer.getByRole('alertdialog', { name: 'Unsaved changes' });
  await expect(ask).toBeVisible();
  await ask.getByRole('button', { name: 'Keep editing' }).click();
  await expect(editor(page)).toHaveValue(/Reminders go out a day before/);

  // Ctrl+S saves: a new version by the person, shown at once.
  await editor(page).press('Control+s');
  await expect(viewer.getByRole('status').filter({ hasText: 'Saved as version 2.' })).toBeVisible();
  await expect(viewer.locator('.viewer-body')).toContainText('Reminders go out a day before.');
  await expect(page.getByTestId('artifact-card')).toContainText('v2');
  const versions = viewer.getByTestId('version-list').getByRole('listitem');
  await expect(versions).toHaveCount(2);
  await expect(versions.nth(1)).toContainText('Edited by you');
  // The changed words are marked inside the changed lines.
  await expect(viewer.getByTestId('version-diff').locator('.diff-insert').first()).toBeVisible();

  // Escape with changes, then dropping them: the saved version stays.
  await viewer.getByRole('button', { name: 'Edit' }).click();
  await editor(page).fill('Nothing worth keeping');
  await page.keyboard.press('Escape');
  await viewer.getByRole('alertdialog', { name: 'Unsaved changes' }).getByRole('button', { name: 'Discard changes' }).click();
  await expect(viewer.getByTestId('artifact-editor')).toHaveCount(0);
  await expect(viewer.locator('.viewer-body')).toContainText('Reminders go out a day before.');
  await expect(page.getByTestId('artifact-card')).toContainText('v2');

  // Without changes, Cancel and Escape leave edit mode at once; a second Escape closes the viewer.
  await viewer.getByRole('button', { name: 'Edit' }).click();
  await viewer.getByRole('button', { name: 'Cancel' }).click();
  await expect(viewer.getByTestId('artifact-editor')).toHaveCount(0);
  await viewer.getByRole('button', { name: 'Edit' }).click();
  await page.keyboard.press('Escape');
  await expect(viewer.getByTestId('artifact-editor')).toHaveCount(0);
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog')).toHaveCount(0);
});

test('at phone width the editor shows the text or the preview, chosen by tabs', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  const viewer = await openDocument(page, 'We run a bike shop. Customers book repairs.');
  await viewer.getByRole('button', { name: 'Edit' }).click();
  const tabs = viewer.getByRole('tablist', { name: 'Editor view' });
  await expect(tabs).toBeVisible();
  await expect(editor(page)).toBeVisible();
  await expect(viewer.getByTestId('editor-preview')).toBeHidden();
  await tabs.getByRole('tab', { name: 'Preview' }).click();
  await expect(tabs.getByRole('tab', { name: 'Preview' })).toHaveAttribute('aria-selected', 'true');
  await expect(viewer.getByTestId('editor-preview')).toBeVisible();
  await expect(editor(page)).toBeHidden();
});

test('a save from a second tab shows live, and saving over it shows both versions to merge', async ({ page }) => {
  const viewer = await openDocument(page, 'We run a ferry. Passengers buy tickets online.');
  const address = page.url();
  await viewer.getByRole('button', { name: 'Edit' }).click();

  // The same person in a second tab saves a version first.
  const other = await page.context().newPage();
  await openHydrated(other, new URL(address).pathname);
  await other.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
  const otherViewer = other.getByRole('dialog');
  await otherViewer.getByRole('button', { name: 'Edit' }).click();
  const theirs = await editor(other).inputValue();
  await editor(other).fill(`${theirs}\n- Tickets can be refunded until departure.\n`);
  await otherViewer.getByRole('button', { name: 'Save' }).click();
  await expect(otherViewer.getByRole('status').filter({ hasText: 'Saved as version 2.' })).toBeVisible();

  // The first tab learns of it without a reload, and keeps its text.
  await expect(page.getByTestId('artifact-card')).toContainText('v2');
  await expect(viewer.getByRole('status')).toContainText('Version 2 was saved while you were editing');
  const mine = await editor(page).inputValue();
  await editor(page).fill(`${mine}\n- Vehicles need a separate ticket.\n`);
  await viewer.getByRole('button', { name: 'Save' }).click();

  // Refused: the difference between their version and mine, and the three ways on.
  const conflict = viewer.getByTestId('version-conflict');
  await expect(conflict).toBeVisible();
  const diff = conflict.getByRole('region', { name: 'Changes from version 2 to yours' });
  await expect(diff.locator('.diff-insert').filter({ hasText: 'Vehicles need a separate ticket.' })).toBeVisible();
  await expect(diff.locator('.diff-delete').filter({ hasText: 'refunded until departure' })).toBeVisible();
  await expectAccessible(page, 'save conflict');

  // Merging by hand: their version beside mine, and the merged text saved on top of theirs.
  await conflict.getByRole('button', { name: 'Merge by hand' }).click();
  await expect(viewer.getByTestId('their-version')).toContainText('refunded until departure');
  await editor(page).fill(`${mine}\n- Tickets can be refunded until departure.\n- Vehicles need a separate ticket.\n`);
  await viewer.getByRole('button', { name: 'Save' }).click();
  await expect(viewer.getByRole('status').filter({ hasText: 'Saved as version 3.' })).toBeVisible();
  await expect(viewer.locator('.viewer-body')).toContainText('refunded until departure');
  await expect(viewer.locator('.viewer-body')).toContainText('Vehicles need a separate ticket.');

  // And the second tab's card follows.
  await expect(other.getByTestId('artifact-card')).toContainText('v3');
  await other.close();
});

test('asking about a passage quotes it to the assistant, which edits that passage', async ({ page }) => {
  const viewer = await openDocument(
    page,
    'We run a hair salon. Customers must be able to book appointments online. Appointment slots must be 30 minutes long.',
  );
  const body = viewer.locator('.viewer-body');
  await expect(body).toContainText('30 minutes');
  // Select the words as a person would with the mouse.
  await body.evaluate((root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.textContent!.indexOf('30 minutes');
      if (at >= 0) {
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + '30 minutes'.length);
        const selection = window.getSelection()!;
        selection.removeAllRanges();
        selection.addRange(range);
        return;
      }
    }
    throw new Error('no passage');
  });
  await body.dispatchEvent('mouseup');
  await viewer.getByRole('button', { name: 'Ask about this' }).click();

  // The message box opens with the passage quoted.
  await expect(page.getByRole('dialog')).toHaveCount(0);
  const chip = page.getByTestId('quote-chip');
  await expect(chip).toContainText('30 minutes');
  await expect(page.getByRole('textbox', { name: 'Message' })).toBeFocused();
  await send(page, 'This should be 45 minutes, not 30');

  await expect(chip).toHaveCount(0);
  await expect(page.getByTestId('message-user').last().getByTestId('message-quote')).toContainText('30 minutes');
  const answer = page.getByTestId('message-assistant').last();
  await expect(answer).toContainText('45 minutes');
  await expect(page.getByTestId('artifact-card').first()).toContainText('v2');

  // What the model saw shows the quoted passage with the message.
  await answer.getByRole('button', { name: 'What the model saw' }).click();
  await expect(page.getByRole('region', { name: 'What the model saw' })).toContainText('30 minutes');

  await page.getByTestId('artifact-card').first().getByRole('button', { name: /^Open / }).click();
  await expect(page.getByRole('dialog').locator('.viewer-body')).toContainText('45 minutes');
  const versions = page.getByRole('dialog').getByTestId('version-list').getByRole('listitem');
  await expect(versions.nth(1)).toContainText("for: 'This should be 45 minutes, not 30'");
});

for (const theme of ['light', 'dark'] as const) {
  test(`the editor and a quoted passage pass the WCAG A/AA checks in the ${theme} theme`, async ({ page }) => {
    await page.emulateMedia({ colorScheme: theme });
    const viewer = await openDocument(page, 'We run a museum. Visitors buy tickets online.');
    await viewer.getByRole('button', { name: 'Edit' }).click();
    await editor(page).fill('# Museum\n\n- Visitors **buy** tickets online.\n');
    await expectAccessible(page, 'document editor');
    await editor(page).press('Control+s');
    await expect(viewer.getByRole('status').filter({ hasText: 'Saved as version 2.' })).toBeVisible();
    await expectAccessible(page, 'document with versions by a person');
  });
}
