import { expect, Page } from './fixtures';

/** Sends a message and waits until its turn is over (Send comes back once Stop goes). */
export async function send(page: Page, text: string) {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
}

/** The id of the conversation on screen, from the address. */
export function conversationId(page: Page) {
  const match = /\/c\/([0-9a-f-]{36})$/.exec(page.url());
  expect(match, `a conversation address, got ${page.url()}`).not.toBeNull();
  return match![1];
}

/** The document's computed background colour (changes with the theme). */
export function background(page: Page) {
  return page.evaluate(() => getComputedStyle(document.body).backgroundColor);
}

/** Whether the page, or any scroll box in it, is wider than the window (people would scroll sideways). */
export function sidewaysOverflow(page: Page, selectors: string[]) {
  return page.evaluate((boxes) => {
    const wide: string[] = [];
    if (document.documentElement.scrollWidth > window.innerWidth) wide.push('page');
    for (const selector of boxes) {
      for (const el of Array.from(document.querySelectorAll(selector))) {
        if (el.scrollWidth > el.clientWidth + 1) wide.push(selector);
      }
    }
    return wide;
  }, selectors);
}
