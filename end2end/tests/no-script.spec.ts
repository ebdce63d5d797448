import { expect, Page, Request, test } from './fixtures';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expectHydrated, PASSWORD, sameOrigin, signUp, uniqueEmail } from './helpers';

// The forms before and without the page's WebAssembly: they post to the server the plain way, and nothing typed
// ever goes into an address the browser asks for, nor into the server's log.

/** Every address the page's browser asks for, with the method and body of each request. */
function recordRequests(page: Page) {
  const requests: Request[] = [];
  page.on('request', (request) => requests.push(request));
  return requests;
}

/** Fails when a request's address holds one of `secrets` (in any encoding a form would use). */
function expectNoSecretInAddresses(requests: Request[], secrets: string[]) {
  expect(requests.length).toBeGreaterThan(0);
  for (const request of requests) {
    for (const secret of secrets) {
      for (const form of [secret, encodeURIComponent(secret), secret.replaceAll(' ', '+')]) {
        expect(request.url(), `${request.method()} ${request.url()}`).not.toContain(form);
      }
    }
  }
}

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('people sign up, sign in, change the password and delete the account with the plain forms', async ({ page, context }) => {
    const requests = recordRequests(page);
    const email = uniqueEmail('plain');
    const newPassword = 'another long passphrase 42';
    const me = async () => (await page.request.get('/api/auth/me')).status();

    await page.goto('/signup');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect(page).toHaveURL(/\/$/);
    expect(await me()).toBe(200);

    await context.clearCookies();
    await page.goto('/signin');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(/\/signin\?error=invalid_credentials$/);
    await expect(page.getByRole('alert')).toHaveText('Wrong e-mail or password.');
    expect(await me()).toBe(401);

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(/\/$/);
    expect(await me()).toBe(200);

    await page.goto('/settings');
    const change = page.getByRole('form', { name: 'Change password' });
    await change.getByLabel('Current password').fill('not the password');
    await change.getByLabel('New password').fill(newPassword);
    await change.getByRole('button', { name: 'Change password' }).click();
    await expect(page).toHaveURL(/\/settings\?form=change-password&error=current_password_wrong$/);
    await expect(page.getByRole('form', { name: 'Change password' }).getByRole('alert')).toHaveText(
      'The current password is wrong.',
    );
    await change.getByLabel('Current password').fill(PASSWORD);
    await change.getByLabel('New password').fill(newPassword);
    await change.getByRole('button', { name: 'Change password' }).click();
    await expect(page).toHaveURL(/\/settings\?form=change-password&done=password_changed$/);
    await expect(change.getByRole('status')).toHaveText('Password changed. Other devices are signed out.');
    const signIn = (password: string) =>
      page.request.post('/api/auth/login', { data: { email, password }, headers: sameOrigin() });
    expect((await signIn(PASSWORD)).status()).toBe(401);

    const remove = page.getByRole('form', { name: 'Delete account' });
    await remove.getByLabel('Password', { exact: true }).fill(newPassword);
    await remove.getByRole('button', { name: 'Delete account' }).click();
    await expect(page).toHaveURL(/\/signin\?done=account_deleted$/);
    await expect(page.getByRole('status')).toHaveText('Your account and everything in it are deleted.');
    expect(await me()).toBe(401);
    expect((await signIn(newPassword)).status()).toBe(401);

    // Every form went as a POST to its page's own server route, and no address held a password.
    const posts = requests.filter((r) => r.method() === 'POST' && r.isNavigationRequest()).map((r) => new URL(r.url()).pathname);
    expect(posts).toEqual(['/signup', '/signin', '/signin', '/settings/password', '/settings/password', '/settings/delete-account']);
    expectNoSecretInAddresses(requests, [PASSWORD, newPassword, 'not the password']);
  });

  test('the search box opens the search page', async ({ page }) => {
    // Signed in: the server sends a browser without a session from the chat page to the sign-in page.
    await signUp(page);
    await page.goto('/');
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('library loans');
    await page.getByRole('searchbox', { name: 'Search conversations' }).press('Enter');
    await expect(page).toHaveURL(/\/search\?q=library\+loans$/);
  });
});

test('a page the server sent back with an error hydrates with it, and shows only the fixed texts', async ({ page, context }) => {
  const email = await signUp(page);
  await context.clearCookies();
  await page.goto('/signin?error=invalid_credentials');
  await expectHydrated(page);
  await expect(page.getByRole('alert')).toHaveText('Wrong e-mail or password.');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('account-email')).toHaveText(email);

  // A crafted address cannot put words on the page.
  await context.clearCookies();
  await page.goto('/signin?error=Call%20us%20at%20555&done=invalid_credentials');
  await expectHydrated(page);
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(page.getByRole('status')).toHaveCount(0);
});

test('an invitation a refused plain sign-up brought back in the fragment goes with the next sign-up', async ({ page }) => {
  await page.goto('/signup?error=weak_password#invite=an-invitation-token');
  await expectHydrated(page);
  await expect(page.getByRole('alert')).toContainText('Choose another password');
  await page.getByLabel('Email').fill(uniqueEmail('invited'));
  await page.getByLabel('Password').fill(PASSWORD);
  const [register] = await Promise.all([
    page.waitForRequest((r) => new URL(r.url()).pathname === '/api/auth/register'),
    page.getByRole('button', { name: 'Create account' }).click(),
  ]);
  expect(register.postDataJSON().invite).toBe('an-invitation-token');
  expect(register.url()).not.toContain('an-invitation-token');
});

/** A server of its own whose log (requests included) the test reads. */
class LoggedServer {
  log = '';
  readonly url: string;
  private readonly process: ChildProcess;
  private readonly dir: string;

  constructor(port: number) {
    const root = resolve(__dirname, '..', '..');
    this.dir = mkdtempSync(join(tmpdir(), 'quire-e2e-log-'));
    this.url = `http://127.0.0.1:${port}`;
    this.process = spawn(process.env.QUIRE_E2E_BIN ?? join(root, 'target', 'debug', 'quire'), [], {
      cwd: root,
      env: {
        ...process.env,
        LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
        LEPTOS_SITE_ROOT: join(root, 'target', 'site'),
        QUIRE_DATA_DIR: this.dir,
        // Every request, as an access log would have it.
        RUST_LOG: 'info,tower_http=debug',
        QUIRE_SIGNUP: 'open',
      },
    });
    const keep = (chunk: Buffer) => (this.log += chunk.toString());
    this.process.stdout!.on('data', keep);
    this.process.stderr!.on('data', keep);
  }

  async ready() {
    for (let i = 0; i < 600; i++) {
      try {
        if ((await fetch(`${this.url}/api/health`)).ok) return;
      } catch {
        // Not listening yet.
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    throw new Error(`the server did not start:\n${this.log}`);
  }

  stop() {
    this.process.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

test.describe('before the page is alive', () => {
  let server: LoggedServer;

  test.beforeAll(async () => {
    server = new LoggedServer(Number(process.env.QUIRE_E2E_PORT ?? '3917') + 2);
    await server.ready();
  });

  test.afterAll(() => server.stop());

  test('signing in while the WebAssembly still loads keeps the password out of every address and the log', async ({ page, playwright }) => {
    const email = uniqueEmail('early');
    const password = 'an early passphrase 7Q';
    const api = await playwright.request.newContext({ baseURL: server.url });
    expect((await api.post('/api/auth/register', { data: { email, password } })).status()).toBe(201);
    await api.dispose();

    // The page's WebAssembly arrives only when the test lets it.
    let release = () => {};
    const released = new Promise<void>((done) => (release = done));
    await page.route('**/*.wasm', async (route) => {
      await released;
      await route.continue();
    });
    const requests = recordRequests(page);
    await page.goto(`${server.url}/signin`, { waitUntil: 'domcontentloaded' });
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await expect(page.locator('body')).not.toHaveAttribute('data-hydrated', 'true');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(`${server.url}/`);
    release();
    await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
    await expect(page.getByTestId('account-email')).toHaveText(email);

    const signIn = requests.find((r) => r.isNavigationRequest() && new URL(r.url()).pathname === '/signin' && r.method() === 'POST');
    expect(signIn, 'the form was posted').toBeTruthy();
    expect(signIn!.postData()).toContain('password=');
    expectNoSecretInAddresses(requests, [password]);
    expect(server.log).toContain('uri=/signin');
    for (const form of [password, encodeURIComponent(password), password.replaceAll(' ', '+')]) {
      expect(server.log).not.toContain(form);
    }
  });
});
