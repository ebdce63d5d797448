import { expect, test } from './fixtures';
import { send } from './conversation';
import { openHydrated, signUp } from './helpers';

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

// The server's refusal over the daily token budget (its behaviour is covered by the server's tests; the test
// server runs without a budget, so the answer is played here).
const refusal = {
  status: 429,
  contentType: 'application/json',
  headers: { 'Retry-After': '3600' },
  body: JSON.stringify({
    error: { code: 'budget_exceeded', message: 'The daily token budget is used up. It resets at 2030-01-02 00:00 UTC.' },
  }),
};

test('a message refused over the daily token budget shows a plain notice and gives the text back', async ({ page }) => {
  await openHydrated(page);
  await send(page, 'Riders must see the next bus.');
  await expect(page.getByTestId('message-assistant')).toHaveCount(1);
  await expect(page.getByTestId('budget-banner')).toHaveCount(0);

  await page.route('**/api/threads/*/chat', (route) => route.fulfill(refusal));
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('Drivers must report delays.');
  await page.getByRole('button', { name: 'Send' }).click();

  const banner = page.getByTestId('budget-banner');
  await expect(banner).toHaveAttribute('role', 'alert');
  await expect(banner).toContainText('It resets at 2030-01-02 00:00 UTC.');
  // Not stored: no bubble for it, the text is back in the box, and no retry is offered.
  await expect(page.getByTestId('message-user')).toHaveCount(1);
  await expect(box).toHaveValue('Drivers must report delays.');
  await expect(page.getByRole('button', { name: 'Retry' })).toHaveCount(0);

  // Once messages go through again, the notice goes.
  await page.unroute('**/api/threads/*/chat');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.getByTestId('message-user')).toHaveCount(2);
  await expect(banner).toHaveCount(0);
});
