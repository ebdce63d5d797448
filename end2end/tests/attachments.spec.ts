import { expect, Page, test } from './fixtures';
import { openHydrated, reloadHydrated, signUp } from './helpers';
import { conversationId, send } from './conversation';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

/** A one-page PDF whose only text is `text`, with a correct cross-reference table. */
function onePagePdf(text: string): Buffer {
  const content = `BT /F1 12 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  pdf += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

type Upload = { name: string; mimeType: string; buffer: Buffer };

/** Picks files through the paperclip button, as a person would. */
async function attach(page: Page, files: Upload[]) {
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles(files);
}

const chip = (page: Page, name: string) => page.getByTestId('attachment-chip').filter({ hasText: name });

test('attached files are read, cited in answers, and listed with the documents', async ({ page }) => {
  await openHydrated(page);
  await attach(page, [
    {
      name: 'billing-notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('Billing notes.\n\nThe refund policy for annual plans gives forty-five days after purchase.\n'),
    },
    { name: 'plans.pdf', mimeType: 'application/pdf', buffer: onePagePdf('The refund policy for monthly plans gives ten days.') },
  ]);
  // The first file started the conversation, as a first message does.
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await expect(chip(page, 'billing-notes.txt')).toContainText('Attached');
  await expect(chip(page, 'plans.pdf')).toContainText('Attached');

  // Refused files say why, each on its own chip; the good ones are not held up.
  await attach(page, [
    { name: 'photo.png', mimeType: 'image/png', buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]) },
    { name: 'huge.txt', mimeType: 'text/plain', buffer: Buffer.alloc(10 * 1024 * 1024 + 1, 'a') },
  ]);
  await expect(chip(page, 'photo.png')).toContainText("This kind of file can't be attached");
  await expect(chip(page, 'huge.txt')).toContainText('larger than 10 MiB');
  await expect(page.getByTestId('attachment-chip')).toHaveCount(4);
  await page.getByRole('button', { name: 'Remove photo.png' }).click();
  await page.getByRole('button', { name: 'Remove huge.txt' }).click();
  await expect(page.getByTestId('attachment-chip')).toHaveCount(2);

  await send(page, 'What do the attached files say about the refund policy?');
  const answer = page.getByTestId('message-assistant').last();
  await expect(answer).toContainText('billing-notes.txt');
  await expect(answer).toContainText('plans.pdf');
  await expect(answer).toContainText('forty-five days');
  await expect(answer).toContainText('ten days');
  // Sent: the chips go, the files stay with the conversation.
  await expect(page.getByTestId('attachment-chip')).toHaveCount(0);

  const toggle = page.getByRole('button', { name: 'Documents (2)' });
  await toggle.click();
  const panel = page.getByTestId('artifacts-panel');
  await expect(panel.getByTestId('attached-file')).toHaveCount(2);
  await panel.getByRole('button', { name: 'Remove plans.pdf from the conversation' }).click();
  await expect(panel.getByTestId('attached-file')).toHaveCount(1);
  await expect(panel).toContainText('billing-notes.txt');
  // Escape closes the panel and leaves focus on its toggle.
  await page.keyboard.press('Escape');
  await expect(panel).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Documents (1)' })).toBeFocused();

  const id = conversationId(page);
  const listed = await page.request.get(`/api/threads/${id}/attachments`);
  expect((await listed.json()).attachments.map((a: { filename: string }) => a.filename)).toEqual(['billing-notes.txt']);
  await reloadHydrated(page);
  await expect(page.getByRole('button', { name: 'Documents (1)' })).toBeVisible();
});

test('files can be dropped or pasted onto the message box, and removed before sending', async ({ page }) => {
  await openHydrated(page);
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('A draft typed before the first file');
  const dropped = await page.evaluateHandle(() => {
    const data = new DataTransfer();
    data.items.add(new File(['# Dropped\n\nShipping takes three days.\n'], 'dropped.md', { type: 'text/markdown' }));
    return data;
  });
  await box.dispatchEvent('drop', { dataTransfer: dropped });
  await expect(chip(page, 'dropped.md')).toContainText('Attached');
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  // The draft survives the conversation being created under it.
  await expect(box).toHaveValue('A draft typed before the first file');

  await box.evaluate((el) => {
    const data = new DataTransfer();
    data.items.add(new File(['Pasted text about returns.\n'], 'pasted.txt', { type: 'text/plain' }));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  });
  await expect(chip(page, 'pasted.txt')).toContainText('Attached');

  // Removing an attached file's chip deletes the file from the conversation.
  await page.getByRole('button', { name: 'Remove dropped.md' }).click();
  await expect(page.getByTestId('attachment-chip')).toHaveCount(1);
  await expect(page.getByRole('button', { name: 'Documents (1)' })).toBeVisible();
  const listed = await page.request.get(`/api/threads/${conversationId(page)}/attachments`);
  expect((await listed.json()).attachments.map((a: { filename: string }) => a.filename)).toEqual(['pasted.txt']);
});
