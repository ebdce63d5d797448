import { Browser, expect, Page, test } from './fixtures';
import { ADMIN_EMAIL, openHydrated, PASSWORD, sameOrigin, signInAsAdmin, signUp, uniqueEmail } from './helpers';

/** Opens the admin page as the administrator. */
async function openAdmin(page: Page) {
  await signInAsAdmin(page);
  await openHydrated(page, '/admin');
  await expect(page.getByRole('heading', { name: 'Administration' })).toBeVisible();
}

/** A person signed up in a browser of their own, beside the administrator's. */
async function signedUpPerson(browser: Browser) {
  const person = await (await browser.newContext()).newPage();
  return { person, email: await signUp(person) };
}

/** The admin page's notice of what an action did (or why it failed). */
function adminNote(page: Page) {
  return page.getByRole('region', { name: 'Administration' }).getByRole('status');
}

/** The account's row on the admin page, going on through the pages of accounts (oldest first) until it shows. */
async function accountRow(page: Page, email: string) {
  const row = page.getByTestId('account-row').filter({ hasText: email });
  const shown = page.getByTestId('accounts-shown');
  const next = page.getByRole('navigation', { name: 'Pages of accounts' }).getByRole('button', { name: 'Next' });
  await expect(shown).toHaveText(/^Accounts \d+ to \d+$/);
  while ((await row.count()) === 0 && (await next.isEnabled())) {
    const before = await shown.textContent();
    await next.click();
    await expect(shown).not.toHaveText(before!);
  }
  await expect(row).toHaveCount(1);
  return row;
}

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
    const row = await accountRow(page, email);
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

test('the admin page shows the accounts a page of 200 at a time, with Next and Previous', async ({
  page,
  request,
}) => {
  test.setTimeout(180_000);
  await signInAsAdmin(page);
  // Enough accounts for a second page, made beside the page's session.
  let accounts = 0;
  for (let offset: number | null = 0; offset !== null; ) {
    const list = await (await page.request.get(`/api/admin/users?offset=${offset}`)).json();
    accounts += list.accounts.length;
    offset = list.next_offset;
  }
  for (let missing = 201 - accounts; missing > 0; missing -= 10) {
    const batch = Array.from({ length: Math.min(10, missing) }, () =>
      request.post('/api/auth/register', {
        data: { email: uniqueEmail('paged'), password: PASSWORD },
        headers: sameOrigin(),
      }),
    );
    for (const response of await Promise.all(batch)) expect(response.status()).toBe(201);
  }

  await openHydrated(page, '/admin');
  const shown = page.getByTestId('accounts-shown');
  const pages = page.getByRole('navigation', { name: 'Pages of accounts' });
  const admin = page.getByTestId('account-row').filter({ hasText: ADMIN_EMAIL });
  await expect(shown).toHaveText('Accounts 1 to 200');
  await expect(page.getByTestId('account-row')).toHaveCount(200);
  await expect(admin).toHaveCount(1);
  await expect(pages.getByRole('button', { name: 'Previous' })).toBeDisabled();

  await pages.getByRole('button', { name: 'Next' }).click();
  await expect(shown).toHaveText(/^Accounts 201 to \d+$/);
  await expect(admin).toHaveCount(0);
  await expect(page.getByTestId('account-row').first()).toBeVisible();

  await pages.getByRole('button', { name: 'Previous' }).click();
  await expect(shown).toHaveText('Accounts 1 to 200');
  await expect(admin).toHaveCount(1);
  await expect(pages.getByRole('button', { name: 'Previous' })).toBeDisabled();
});

test('an administrator makes someone an administrator and takes the role back', async ({ page, browser }) => {
  const { person, email } = await signedUpPerson(browser);
  await openAdmin(page);
  const row = await accountRow(page, email);
  await expect(row.getByRole('cell', { name: 'member', exact: true })).toBeVisible();

  await row.getByRole('button', { name: 'Make admin' }).click();
  await expect(adminNote(page)).toHaveText('Role changed.');
  await expect(row.getByRole('cell', { name: 'admin', exact: true })).toBeVisible();
  // The new administrator finds the admin page in their app bar.
  await openHydrated(person);
  await expect(person.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Admin' })).toBeVisible();
  expect((await person.request.get('/api/admin/users')).status()).toBe(200);

  await row.getByRole('button', { name: 'Remove admin' }).click();
  await expect(row.getByRole('cell', { name: 'member', exact: true })).toBeVisible();
  await person.reload();
  await expect(person.getByRole('link', { name: 'Settings' })).toBeVisible();
  await expect(person.getByRole('link', { name: 'Admin' })).toHaveCount(0);
  expect((await person.request.get('/api/admin/users')).status()).toBe(404);
  await person.close();
});

test('an administrator sets a daily token budget, which the person sees on their statistics', async ({
  page,
  browser,
}) => {
  const { person, email } = await signedUpPerson(browser);
  await openHydrated(person, '/stats');
  await expect(person.getByRole('heading', { name: 'Today\'s token budget' })).toHaveCount(0);

  await openAdmin(page);
  const budget = (await accountRow(page, email)).getByLabel(`Daily budget of ${email}`);
  await budget.fill('750');
  await budget.press('Enter');
  await expect(adminNote(page)).toHaveText('Budget saved.');
  await page.reload();
  await expect((await accountRow(page, email)).getByLabel(`Daily budget of ${email}`)).toHaveValue('750');

  await person.reload();
  await expect(person.getByTestId('stat-budget')).toContainText('750 of 750 tokens left today');
  await person.close();
});

test('an administrator makes a reset link, with which the person sets a new password and signs in', async ({
  page,
  browser,
}) => {
  const { person, email } = await signedUpPerson(browser);
  await openAdmin(page);
  await (await accountRow(page, email)).getByRole('button', { name: 'Reset link' }).click();
  await expect(adminNote(page)).toContainText('Password reset link (one use, 24 hours): ');
  const link = new URL(((await adminNote(page).textContent()) ?? '').split(': ')[1].trim());
  expect(link.pathname).toBe('/reset-password');

  // The person, who forgot their password, opens the link in a browser without a session.
  const visitor = await (await browser.newContext()).newPage();
  await openHydrated(visitor, link.pathname + link.search);
  const form = visitor.getByRole('region', { name: 'Set a new password' });
  const newPassword = 'plum tractor orbit lantern';
  await form.getByLabel('New password').fill(newPassword);
  await form.getByRole('button', { name: 'Set password' }).click();
  await expect(form.getByRole('status')).toHaveText('Password set. Sign in with it now.');

  // The link works once; the old password and the sessions made with it no longer do.
  await form.getByRole('button', { name: 'Set password' }).click();
  await expect(form.getByRole('alert')).toBeVisible();
  expect((await person.request.get('/api/auth/me')).status()).toBe(401);
  const old = await visitor.request.post('/api/auth/login', { data: { email, password: PASSWORD } });
  expect(old.status()).toBe(401);

  await form.getByRole('link', { name: 'Sign in' }).click();
  await expect(visitor).toHaveURL(/\/signin$/);
  await visitor.getByLabel('Email').fill(email);
  await visitor.getByLabel('Password').fill(newPassword);
  await visitor.getByRole('button', { name: 'Sign in' }).click();
  await expect(visitor).toHaveURL(/\/$/);
  await expect(visitor.getByTestId('account-email')).toHaveText(email);
  await person.close();
  await visitor.close();
});

test('an administrator deletes an account after confirming, and not before', async ({ page, browser }) => {
  const { person, email } = await signedUpPerson(browser);
  await openAdmin(page);
  const row = await accountRow(page, email);

  const asked: string[] = [];
  page.once('dialog', (dialog) => {
    asked.push(dialog.message());
    void dialog.dismiss();
  });
  await row.getByRole('button', { name: 'Delete' }).click();
  await expect.poll(() => asked).toEqual([`Delete ${email} and everything it owns?`]);
  await page.reload();
  await accountRow(page, email);
  expect((await person.request.get('/api/auth/me')).status()).toBe(200);

  page.once('dialog', (dialog) => void dialog.accept());
  await (await accountRow(page, email)).getByRole('button', { name: 'Delete' }).click();
  await expect(adminNote(page)).toHaveText('Account deleted.');
  await expect(page.getByTestId('account-row').filter({ hasText: email })).toHaveCount(0);
  expect((await person.request.get('/api/auth/me')).status()).toBe(401);
  const again = await person.request.post('/api/auth/login', {
    data: { email, password: PASSWORD },
    headers: sameOrigin(),
  });
  expect(again.status()).toBe(401);
  await person.close();
});

test('an administrator lists a person\'s API tokens and revokes one', async ({ page, browser, request }) => {
  const { person, email } = await signedUpPerson(browser);
  const made = await person.request.post('/api/tokens', {
    data: { name: 'Sync job', scope: 'chat', expires_in_days: 30 },
    headers: sameOrigin(),
  });
  expect(made.status()).toBe(201);
  const { token } = await made.json();
  const bearer = { Authorization: `Bearer ${token}` };
  expect((await request.get('/api/threads', { headers: bearer })).status()).toBe(200);

  await openAdmin(page);
  const row = await accountRow(page, email);
  await row.getByRole('button', { name: 'API tokens' }).click();
  const tokens = row.getByRole('list', { name: `API tokens of ${email}` });
  await expect(tokens.getByRole('listitem')).toHaveCount(1);
  await expect(tokens).toContainText('Sync job (chat, ');
  expect(await tokens.textContent()).not.toContain(token);
  await tokens.getByRole('button', { name: 'Revoke token “Sync job”' }).click();
  await expect(adminNote(page)).toContainText('API token revoked.');
  await expect(row).toContainText('No API tokens.');
  expect((await request.get('/api/threads', { headers: bearer })).status()).toBe(401);
});
