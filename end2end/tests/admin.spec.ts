import { expect, test } from '@playwright/test';
import { openHydrated, PASSWORD, sameOrigin, signInAsAdmin, signUp, uniqueEmail } from './helpers';

test('an administrator invites a person, who signs up with the link, and then disables them', async ({
  page,
  browser,
}) => {
  await signInAsAdmin(page);
  await openHydrated(page);
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Admin' }).click();
  await expect(page.getByRole('heading', { name: 'Administration' })).toBeVisible();

  // Sign-up by invitation only, for this test; the other tests sign people up freely again afterwards.
  try {
    await page.getByLabel('Who may sign up').selectOption('invite');
    await expect(page.getByText('Sign-up mode saved.')).toBeVisible();
    await page.getByLabel('Uses').fill('1');
    await page.getByRole('button', { name: 'Create invitation' }).click();
    const link = await page.getByTestId('invite-link').inputValue();
    expect(link).toContain('/signup?invite=');
    await expect(page.getByTestId('invites').getByRole('row').filter({ hasText: '0 of 1' })).toHaveCount(1);

    // The invited person, in a browser of their own.
    const guest = await (await browser.newContext()).newPage();
    const email = uniqueEmail('invited');
    await openHydrated(guest, new URL(link).pathname + new URL(link).search);
    await guest.getByLabel('Email').fill(email);
    await guest.getByLabel('Password').fill(PASSWORD);
    await guest.getByRole('button', { name: 'Create account' }).click();
    await expect(guest).toHaveURL(/\/$/);
    await expect(guest.getByRole('link', { name: 'Settings' })).toBeVisible();
    await expect(guest.getByRole('link', { name: 'Admin' })).toHaveCount(0);
    // Without the invitation, nobody else gets in meanwhile.
    const uninvited = await guest.request.post('/api/auth/register', {
      data: { email: uniqueEmail('uninvited'), password: PASSWORD },
      headers: sameOrigin(),
    });
    expect(uninvited.status()).toBe(403);
    expect((await uninvited.json()).error.code).toBe('invite_required');

    // The administrator sees them, with their usage, and disables them: their session ends at once.
    await page.reload();
    await expect(page.getByTestId('invites').getByRole('row').filter({ hasText: '1 of 1' })).toHaveCount(1);
    const row = page.getByTestId('account-row').filter({ hasText: email });
    await expect(row.getByTestId('account-state')).toHaveText('active');
    await row.getByRole('button', { name: 'Disable' }).click();
    await expect(row.getByTestId('account-state')).toHaveText('disabled');
    expect((await guest.request.get('/api/auth/me')).status()).toBe(401);
    await guest.reload();
    await expect(guest).toHaveURL(/\/signin$/);
    await guest.close();
  } finally {
    const reopened = await page.request.put('/api/admin/signup', { data: { mode: 'open' }, headers: sameOrigin() });
    expect(reopened.status()).toBe(200);
  }
});

test('someone who is not an administrator has no admin link and no admin page', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  await expect(page.getByRole('link', { name: 'Settings' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Admin' })).toHaveCount(0);
  expect((await page.request.get('/api/admin/users')).status()).toBe(404);
  await openHydrated(page, '/admin');
  await expect(page.getByText('Page not found.')).toBeVisible();
});
