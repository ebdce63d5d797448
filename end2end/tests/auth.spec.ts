import { expect, Page, test } from './fixtures';
import { openHydrated, PASSWORD, signUp, uniqueEmail } from './helpers';

async function fillCredentials(page: Page, email: string, password = PASSWORD) {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
}

test('a visitor without a session is sent to sign in', async ({ page }) => {
  await openHydrated(page);
  await expect(page).toHaveURL(/\/signin$/);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
});

test('sign up, sign out and sign in again', async ({ page }) => {
  const email = uniqueEmail('ui');
  await openHydrated(page, '/signup');
  await fillCredentials(page, email);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('account-email')).toHaveText(email);
  await expect(page.getByRole('textbox', { name: 'Message' })).toBeVisible();

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/signin$/);
  // The session is gone on the server too: the API refuses the old cookie.
  expect((await page.request.get('/api/auth/me')).status()).toBe(401);

  await fillCredentials(page, email, 'not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('Wrong e-mail or password');

  await fillCredentials(page, email);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('account-email')).toHaveText(email);
});

test('a second user sees none of the first user\'s conversations', async ({ page, browser }) => {
  await signUp(page);
  await openHydrated(page);
  await page.getByRole('textbox', { name: 'Message' }).fill('Our secret merger plan needs a data room.');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.getByTestId('message-assistant')).toHaveAttribute('aria-busy', 'false');
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  const privateUrl = new URL(page.url()).pathname;
  await expect(page.getByTestId('thread-item')).toHaveCount(1);

  const context = await browser.newContext();
  const other = await context.newPage();
  await signUp(other);
  await openHydrated(other);
  await expect(other.getByTestId('account-email')).not.toHaveText('');
  await expect(other.getByTestId('thread-item')).toHaveCount(0);
  await openHydrated(other, privateUrl);
  await expect(other.getByRole('alert')).toContainText('Not found');
  await expect(other.getByText('secret merger')).toHaveCount(0);
  await context.close();
});
