import { expect, test } from './fixtures';

// A Quire that signs people in only through a real OpenID provider (oidc-provider, `oidc/provider.mjs`):
// password sign-in is off there, a first sign-in makes the account, and the provider's `quire-admins` group
// makes administrators.
const quire = process.env.QUIRE_E2E_SSO_URL!;

test('signing in and out through the organisation\'s identity provider', async ({ page }) => {
  await page.goto(`${quire}/signin`);
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  // Password sign-in is off: no form, only the provider's button.
  await expect(page.getByLabel('Password')).toHaveCount(0);
  await page.getByRole('link', { name: 'Sign in with Acme ID' }).click();

  // The provider's own login and consent pages.
  await page.locator('input[name="login"]').fill('admin.ana@example.com');
  await page.locator('input[name="password"]').fill('anything');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();

  await expect(page).toHaveURL(`${quire}/`);
  await expect(page.getByTestId('account-email')).toHaveText('admin.ana@example.com');
  const me = await (await page.request.get(`${quire}/api/auth/me`)).json();
  expect(me).toMatchObject({ email: 'admin.ana@example.com', display_name: 'Admin.ana', admin: true });

  // No password to change; deleting the account is confirmed with the address.
  await page.goto(`${quire}/settings`);
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  await expect(page.getByRole('heading', { name: 'Delete account' })).toBeVisible();
  await expect(page.getByLabel('Your e-mail address, to confirm')).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Change password' })).toHaveCount(0);

  // Signing out ends Quire's session and the provider's, which sends the browser back to sign in.
  await page.getByRole('navigation', { name: 'Conversations' }).getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: /Yes, sign me out/i }).click();
  await expect(page).toHaveURL(`${quire}/signin`);
  expect((await page.request.get(`${quire}/api/auth/me`)).status()).toBe(401);

  // Signing in again asks for the login again (the provider's session ended too) and finds the same account.
  await page.getByRole('link', { name: 'Sign in with Acme ID' }).click();
  await page.locator('input[name="login"]').fill('admin.ana@example.com');
  await page.locator('input[name="password"]').fill('anything');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  // The provider may ask for consent again, its session having ended.
  const consent = page.getByRole('button', { name: 'Continue' });
  await Promise.race([page.waitForURL(`${quire}/`), consent.waitFor()]);
  if (await consent.isVisible()) await consent.click();
  await expect(page).toHaveURL(`${quire}/`);
  const again = await (await page.request.get(`${quire}/api/auth/me`)).json();
  expect(again.id).toBe(me.id);
});

test('a sign-in that did not start in this browser is refused plainly', async ({ page }) => {
  await page.goto(`${quire}/api/auth/oidc/callback?state=forged&code=stolen`);
  await expect(page).toHaveURL(`${quire}/signin?error=sso_expired`);
  await expect(page.getByRole('alert')).toContainText('did not start in this browser');
  await expect(page.getByRole('link', { name: 'Sign in with Acme ID' })).toBeVisible();
});
