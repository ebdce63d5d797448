import AxeBuilder from '@axe-core/playwright';
import { expect, Page, test } from './fixtures';

/** Waits until the WASM client has hydrated the page. */
export async function expectHydrated(page: Page) {
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
}

/** Opens a page and waits until the WASM client has hydrated it. */
export async function openHydrated(page: Page, path = '/') {
  await page.goto(path);
  await expectHydrated(page);
}

/** Reloads the page and waits until the WASM client has hydrated it again. */
export async function reloadHydrated(page: Page) {
  await page.reload();
  await expectHydrated(page);
}

/** Saves a full-page screenshot into the test output for people to look at. */
export async function snapshot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/screens/${name}.png`, fullPage: true });
}

/**
 * Runs axe-core's WCAG 2.1 A/AA rules on the page as it is (colour contrast included) and fails with the rule,
 * the elements and axe's summary of each violation.
 */
export async function expectAccessible(page: Page, screen: string) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const problems = results.violations.flatMap((v) =>
    v.nodes.map((n) => `${screen}: ${v.id} at ${n.target.join(' ')}: ${n.failureSummary ?? v.help}`),
  );
  expect(problems).toEqual([]);
}

/** An e-mail address no other test uses. */
export function uniqueEmail(prefix = 'user') {
  return `${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e9)}@example.com`;
}

export const PASSWORD = 'correct horse battery';

/**
 * Signs up a fresh account through the API. The page's request context shares the browser's cookies, so the
 * HttpOnly session cookie the server sets signs the page in.
 */
export async function signUp(page: Page, email = uniqueEmail()) {
  const response = await page.request.post('/api/auth/register', { data: { email, password: PASSWORD } });
  expect(response.status()).toBe(201);
  return email;
}

/**
 * The header a browser adds to a request of Quire's own pages. Requests made through `page.request` share the
 * page's session cookie but are not sent by a page, so they name Quire's origin themselves: Quire refuses a
 * cookie-authenticated change that does not say where it comes from.
 */
export function sameOrigin() {
  return { origin: new URL(test.info().project.use.baseURL!).origin };
}

/** The administrator: the first account, signed up before every other test (`admin.setup.ts`). */
export const ADMIN_EMAIL = 'admin@example.com';

/** Signs the page in as the administrator through the API (the session cookie comes with the answer). */
export async function signInAsAdmin(page: Page) {
  const response = await page.request.post('/api/auth/login', { data: { email: ADMIN_EMAIL, password: PASSWORD } });
  expect(response.status()).toBe(200);
}
