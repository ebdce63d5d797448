import { expect, test } from './fixtures';
import { openHydrated, reloadHydrated, signUp } from './helpers';

test('an API token made in settings is shown once, reads as its owner, and is refused once revoked', async ({ page, request }) => {
  await signUp(page);
  await openHydrated(page, '/settings');
  const tokens = page.getByRole('region', { name: 'API tokens' });
  await expect(tokens).toContainText('No API tokens.');

  const form = tokens.getByRole('form', { name: 'Make an API token' });
  await form.getByLabel('Name').fill('Nightly report');
  await form.getByLabel('Scope').selectOption({ label: 'Read' });
  await form.getByLabel('Expires in (days)').fill('7');
  await form.getByRole('button', { name: 'Create token' }).click();

  const secret = tokens.getByTestId('api-token-secret');
  await expect(secret).toHaveValue(/^quire_pat_[A-Za-z0-9_-]{43}$/);
  const token = await secret.inputValue();
  await expect(tokens.getByRole('status')).toContainText('will not be shown again');
  const list = tokens.getByTestId('api-tokens');
  await expect(list.getByRole('listitem')).toHaveCount(1);
  const item = list.getByRole('listitem').first();
  await expect(item).toContainText('Nightly report');
  await expect(item).toContainText(`${token.slice(0, 'quire_pat_'.length + 8)}…`);
  await expect(item).toContainText('never used');

  // A program with the token alone (no cookie) reads as the person; a read token writes nothing.
  const bearer = { Authorization: `Bearer ${token}` };
  const read = await request.get('/api/threads', { headers: bearer });
  expect(read.status()).toBe(200);
  expect(await read.json()).toHaveProperty('threads');
  const write = await request.post('/api/threads', { headers: bearer, data: {} });
  expect(write.status()).toBe(403);
  expect((await write.json()).error.code).toBe('token_scope');

  // Shown once: after a reload only its first characters are, with when it was last used.
  await reloadHydrated(page);
  await expect(tokens.getByTestId('api-token-secret')).toHaveCount(0);
  await expect(page.getByText(token)).toHaveCount(0);
  await expect(item).toContainText('last used');

  await tokens.getByRole('button', { name: 'Revoke token “Nightly report”' }).click();
  await expect(tokens).toContainText('No API tokens.');
  expect((await request.get('/api/threads', { headers: bearer })).status()).toBe(401);
});
