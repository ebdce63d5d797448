import { expect, Page, test } from './fixtures';
import { expectAccessible, openHydrated, reloadHydrated, signUp, snapshot } from './helpers';
import { send, sidewaysOverflow } from './conversation';

// The server offering two built-in models and an OpenAI-compatible one that thinks aloud (`fixtures/models.toml`,
// `fakes/openai.mjs`, started by playwright.config.ts).
test.use({ baseURL: process.env.QUIRE_E2E_MODELS_URL });

const QUICK = 'quick/quire-quick';
const CAREFUL = 'careful/quire-careful';
const THINKER = 'thinking/thinker';

function picker(page: Page) {
  return page.getByRole('combobox', { name: 'Model', exact: true });
}

/** Waits for the change a picker makes to be saved. */
function saved(page: Page, path: RegExp) {
  return page.waitForResponse((r) => r.request().method() === 'PATCH' && path.test(new URL(r.url()).pathname));
}

/** Signs up, picks the careful model for a new conversation and sends `text`: the careful model answers. */
async function askTheCarefulModel(page: Page, text: string) {
  await signUp(page);
  await openHydrated(page);
  await picker(page).selectOption(CAREFUL);
  await send(page, text);
  await expect(page.getByTestId('answer-model')).toHaveText(['quire-careful']);
}

test('a conversation answers with the model picked for it, and keeps it after a reload', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  await expect(picker(page)).toHaveValue('');
  await expect(picker(page).locator('option')).toHaveText([`Default (${QUICK})`, QUICK, CAREFUL, THINKER]);

  await send(page, 'We are building a clinic booking app.');
  await expect(page.getByTestId('answer-model')).toHaveText(['quire-quick']);

  const change = saved(page, /^\/api\/threads\/[0-9a-f-]{36}$/);
  await picker(page).selectOption(CAREFUL);
  expect((await change).status()).toBe(200);
  await send(page, 'Patients cancel visits too.');
  await expect(page.getByTestId('answer-model')).toHaveText(['quire-quick', 'quire-careful']);

  await reloadHydrated(page);
  await expect(picker(page)).toHaveValue(CAREFUL);
  await expect(page.getByTestId('answer-model')).toHaveText(['quire-quick', 'quire-careful']);
});

test('a model picked before the first message is the new conversation\'s', async ({ page }) => {
  await askTheCarefulModel(page, 'Doctors see their day.');
  await reloadHydrated(page);
  await expect(picker(page)).toHaveValue(CAREFUL);
});

test('the default model set in Settings answers new conversations', async ({ page }) => {
  await signUp(page);
  await openHydrated(page, '/settings');
  const defaultModel = page.getByRole('combobox', { name: 'Default model' });
  await expect(defaultModel).toHaveValue('');
  await expect(defaultModel.locator('option').first()).toHaveText(`Server default (${QUICK})`);
  const change = saved(page, /^\/api\/settings$/);
  await defaultModel.selectOption(CAREFUL);
  expect((await change).status()).toBe(200);
  await expect(page.getByText('Default model saved.')).toBeVisible();
  for (const theme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: theme });
    await expectAccessible(page, `${theme} settings with the default model`);
  }

  await reloadHydrated(page);
  await expect(defaultModel).toHaveValue(CAREFUL);

  await openHydrated(page, '/');
  await expect(picker(page)).toHaveValue('');
  await expect(picker(page).locator('option').first()).toHaveText(`Default (${CAREFUL})`);
  await send(page, 'We are building a clinic booking app.');
  await expect(page.getByTestId('answer-model')).toHaveText(['quire-careful']);
});

test('the picker and the answer\'s model in both themes and at phone width', async ({ page }) => {
  await askTheCarefulModel(page, 'We are building a clinic booking app.');
  for (const theme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: theme });
    const label = page.getByTestId('answer-model');
    // Muted: another colour than the answer's text.
    const [labelColour, textColour] = await label.evaluate((el) => [
      getComputedStyle(el).color,
      getComputedStyle(el.closest('[data-testid="message-assistant"]') ?? document.body).color,
    ]);
    expect(labelColour).not.toBe(textColour);
    await snapshot(page, `${theme}/models-chat`);
    await expectAccessible(page, `${theme} chat with the model picker`);
  }
  await page.setViewportSize({ width: 375, height: 740 });
  await expect(picker(page)).toBeVisible();
  const box = await picker(page).boundingBox();
  expect(box!.x).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width).toBeLessThanOrEqual(375);
  expect(await sidewaysOverflow(page, ['.chat-head', '.messages'])).toEqual([]);
  await snapshot(page, 'light/models-chat-phone');
});

/** Answers the next PATCH of `path` as the server does for a model it does not offer (any more). */
async function refuseNextChoice(page: Page, path: RegExp, field: string) {
  let refused = false;
  await page.route(
    (url) => path.test(url.pathname),
    async (route) => {
      if (refused || route.request().method() !== 'PATCH') return route.fallback();
      refused = true;
      await route.fulfill({
        status: 422,
        contentType: 'application/json',
        body: JSON.stringify({
          error: { code: 'validation_failed', message: 'That is not a model of this server.', field },
        }),
      });
    },
  );
}

test('a refused choice of model goes back to the one in use, on the chat page and in Settings', async ({ page }) => {
  await askTheCarefulModel(page, 'We are building a clinic booking app.');

  await refuseNextChoice(page, /^\/api\/threads\/[0-9a-f-]{36}$/, 'model');
  await picker(page).selectOption(QUICK);
  await expect(page.getByRole('alert').filter({ hasText: 'That is not a model of this server.' })).toBeVisible();
  await expect(picker(page)).toHaveValue(CAREFUL);
  // What the picker shows is what answers.
  await send(page, 'Patients cancel visits too.');
  await expect(page.getByTestId('answer-model')).toHaveText(['quire-careful', 'quire-careful']);

  await openHydrated(page, '/settings');
  const defaultModel = page.getByRole('combobox', { name: 'Default model' });
  await expect(defaultModel).toHaveValue('');
  await refuseNextChoice(page, /^\/api\/settings$/, 'default_model');
  await defaultModel.selectOption(CAREFUL);
  await expect(page.getByText('That is not a model of this server.')).toBeVisible();
  await expect(defaultModel).toHaveValue('');
  await reloadHydrated(page);
  await expect(defaultModel).toHaveValue('');
});

/** Lets the model server's thinking model take its next step (`fakes/openai.mjs`). */
async function release(page: Page) {
  expect((await page.request.post(`${process.env.QUIRE_E2E_FAKE_LLM_URL}/release`)).ok()).toBe(true);
}

test('a model\'s reasoning shows folded under the answer while it runs, stays open as it grows, and is not kept', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  await picker(page).selectOption(THINKER);
  await page.getByRole('textbox', { name: 'Message' }).fill('We are building a clinic booking app.');
  await page.getByRole('button', { name: 'Send' }).click();

  const fold = page.getByTestId('reasoning');
  const summary = fold.getByText('Reasoning', { exact: true });
  await expect(summary).toBeVisible();
  const thought = fold.getByText(/The person asks about their project; the answer should name its first step\./);
  // Folded: the thinking is there, not shown until asked for.
  await expect(thought).toBeHidden();
  await summary.click();
  await expect(thought).toBeVisible();
  await expectAccessible(page, 'an answer with its reasoning open');
  await snapshot(page, 'light/reasoning');

  // More reasoning arrives: the fold stays open and shows it.
  await release(page);
  await expect(fold.getByText(/Who books first\?/)).toBeVisible();
  await expect(fold).toHaveAttribute('open', '');

  // The answer ends: its text stays, the reasoning goes, and it is not in what was saved.
  await release(page);
  await expect(page.getByText('Start with the people who will use it.')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await expect(page.getByTestId('answer-model')).toHaveText(['thinker']);
  await expect(fold).toHaveCount(0);
  await reloadHydrated(page);
  await expect(page.getByText('Start with the people who will use it.')).toBeVisible();
  await expect(page.getByText(/Who books first/)).toHaveCount(0);
  await expect(fold).toHaveCount(0);
});
