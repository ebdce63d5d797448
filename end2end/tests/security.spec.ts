import { expect, Page, test } from './fixtures';
import { expectHydrated, openHydrated, PASSWORD, reloadHydrated, signUp, uniqueEmail } from './helpers';
import { send } from './conversation';

/**
 * Collects every Content Security Policy violation of a page: the browser's own console reports and the
 * `securitypolicyviolation` events the document fires.
 */
async function watchViolations(page: Page) {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content[ -]Security[ -]Policy/i.test(message.text())) violations.push(`console: ${message.text()}`);
  });
  await page.exposeFunction('reportCspViolation', (text: string) => violations.push(`event: ${text}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      const report = (window as unknown as { reportCspViolation: (text: string) => void }).reportCspViolation;
      report(`${event.violatedDirective} blocked ${event.blockedURI || 'inline code'}`);
    });
  });
  return violations;
}

test('every page works under the Content Security Policy without a violation', async ({ page }) => {
  const violations = await watchViolations(page);

  // Pages open to visitors.
  for (const path of ['/signin', '/signup']) {
    const response = await page.goto(path);
    const policy = response!.headers()['content-security-policy'];
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    await expectHydrated(page);
  }

  // Signed in: the chat with an answer and a document, the document viewer, search, stats, a missing page.
  await signUp(page, uniqueEmail('csp'));
  await openHydrated(page);
  await send(page, 'We plan a library app. Members must renew loans online. Librarians want **overdue** reports.');
  await send(page, 'Generate user stories from this conversation');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  await page.getByTestId('artifact-card').first().getByRole('button').click();
  await expect(page.getByRole('dialog')).toContainText('As a');
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();

  await reloadHydrated(page);
  await expect(page.getByTestId('message-assistant')).toHaveCount(2);

  await page.getByRole('link', { name: 'Stats' }).click();
  await expect(page.getByRole('heading', { name: 'Stats' })).toBeVisible();
  for (const path of ['/search?q=library', '/stats', '/account', '/no-such-page']) {
    await openHydrated(page, path);
  }
  await expect(page.getByText('Page not found.')).toBeVisible();

  expect(violations).toEqual([]);
});

test('Quire cannot be framed by another page', async ({ page }) => {
  const response = await page.goto('/signin');
  expect(response!.headers()['x-frame-options']).toBe('DENY');
  expect(response!.headers()['x-content-type-options']).toBe('nosniff');
});

test('the settings page changes the password, signs out everywhere and deletes the account', async ({ page, browser }) => {
  const email = await signUp(page, uniqueEmail('account'));
  await openHydrated(page);
  await page.getByRole('link', { name: 'Settings' }).click();
  await expect(page.getByRole('heading', { name: 'Settings', exact: true })).toBeVisible();

  const form = page.getByRole('form', { name: 'Change password' });
  await form.getByLabel('Current password').fill('not the password');
  await form.getByLabel('New password').fill('lantern orchard velvet');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(form.getByRole('alert')).toContainText('current password is wrong');
  await form.getByLabel('Current password').fill(PASSWORD);
  await form.getByLabel('New password').fill('passwordpassword');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(form.getByRole('alert')).toContainText('lists of breached passwords');
  await form.getByLabel('New password').fill('P@ssw0rd12345');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(form.getByRole('alert')).toContainText('too common');
  await form.getByLabel('New password').fill('lantern orchard velvet');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(form.getByRole('status')).toContainText('Password changed');

  // Another browser signed in to the account is signed out by "Sign out everywhere".
  const context = await browser.newContext();
  const other = await context.newPage();
  const signIn = await other.request.post('/api/auth/login', { data: { email, password: 'lantern orchard velvet' } });
  expect(signIn.status()).toBe(200);
  await page.getByRole('button', { name: 'Sign out everywhere' }).click();
  await expect(page).toHaveURL(/\/signin$/);
  expect((await other.request.get('/api/auth/me')).status()).toBe(401);
  await context.close();

  // Deleting needs the password, then nothing of the account is left.
  const again = await page.request.post('/api/auth/login', { data: { email, password: 'lantern orchard velvet' } });
  expect(again.status()).toBe(200);
  await openHydrated(page, '/account');
  const deletion = page.getByRole('form', { name: 'Delete account' });
  await deletion.getByLabel('Password').fill('not the password');
  await deletion.getByRole('button', { name: 'Delete account' }).click();
  await expect(deletion.getByRole('alert')).toContainText('password is wrong');
  await deletion.getByLabel('Password').fill('lantern orchard velvet');
  await deletion.getByRole('button', { name: 'Delete account' }).click();
  await expect(page).toHaveURL(/\/signin$/);
  const gone = await page.request.post('/api/auth/login', { data: { email, password: 'lantern orchard velvet' } });
  expect(gone.status()).toBe(401);
});

test('the account page lists the signed-in devices and signs out one of them', async ({ page, browser }) => {
  const email = await signUp(page, uniqueEmail('devices'));

  // A second browser signs in through the sign-in page.
  const context = await browser.newContext();
  const other = await context.newPage();
  await openHydrated(other, '/signin');
  await other.getByLabel('Email').fill(email);
  await other.getByLabel('Password').fill(PASSWORD);
  await other.getByRole('button', { name: 'Sign in' }).click();
  await expect(other).toHaveURL(/\/$/);

  await openHydrated(page, '/account');
  const devices = page.getByRole('list', { name: 'Signed-in devices' });
  await expect(devices.getByRole('listitem')).toHaveCount(2);
  const thisDevice = devices.getByRole('listitem').filter({ hasText: 'This device' });
  await expect(thisDevice).toHaveCount(1);
  await expect(thisDevice).toContainText('Chrome on Linux');
  await expect(thisDevice).toContainText('network 127.0.0.0/24');
  const otherDevice = devices.getByRole('listitem').filter({ hasNotText: 'This device' });
  await otherDevice.getByRole('button', { name: 'Sign out' }).click();
  await expect(devices.getByRole('listitem')).toHaveCount(1);
  await expect(devices.getByRole('listitem')).toContainText('This device');

  // The other browser is signed out on its next request, and this one is not.
  await openHydrated(other, '/');
  await expect(other).toHaveURL(/\/signin$/);
  expect((await other.request.get('/api/auth/me')).status()).toBe(401);
  expect((await page.request.get('/api/auth/me')).status()).toBe(200);
  await context.close();

  // Signing out this device from the list is signing out.
  await thisDevice.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/signin$/);
  expect((await page.request.get('/api/auth/me')).status()).toBe(401);
});
