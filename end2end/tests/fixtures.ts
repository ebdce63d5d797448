import { expect, test as base } from '@playwright/test';

export * from '@playwright/test';

/**
 * Playwright's `test`, and every test fails when the page's WebAssembly panics: a hydration that met other
 * elements than the server rendered, or any other bug in the browser code, leaves a page that no longer answers
 * people, whatever the test goes on to see.
 */
export const test = base.extend<{ noPanics: void }>({
  noPanics: [
    async ({ context }, use) => {
      const panics: string[] = [];
      context.on('console', (message) => {
        if (message.type() === 'error' && message.text().includes('panicked at')) {
          panics.push(message.text().split('\n').slice(0, 3).join(' '));
        }
      });
      await use();
      expect(panics, "the page's WebAssembly panicked").toEqual([]);
    },
    { auto: true },
  ],
});
