import { expect, Page } from '@playwright/test';

/** Opens a page and waits until the WASM client has hydrated it. */
export async function openHydrated(page: Page, path = '/') {
  await page.goto(path);
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
}

/** Saves a full-page screenshot into the test output for people to look at. */
export async function snapshot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/screens/${name}.png`, fullPage: true });
}
