import { expect, test as setup } from './fixtures';
import { ADMIN_EMAIL, PASSWORD } from './helpers';

// The first account administers Quire: it is made before any other test signs anyone up.
setup('the administrator signs up first', async ({ request }) => {
  const response = await request.post('/api/auth/register', { data: { email: ADMIN_EMAIL, password: PASSWORD } });
  expect(response.status()).toBe(201);
  expect((await response.json()).user.admin).toBe(true);
});
