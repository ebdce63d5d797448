import { expect, Page, test } from './fixtures';
import { expectAccessible, openHydrated, reloadHydrated, signUp, snapshot } from './helpers';
import { conversationId, send } from './conversation';

// The server with an MCP server (`fixtures/models.toml`): the first server under test has none, and no Tools menu.
test.use({ baseURL: process.env.QUIRE_E2E_MODELS_URL });

/** Waits for a choice to be saved. */
function saved(page: Page, path: RegExp) {
  return page.waitForResponse((r) => r.request().method() === 'PATCH' && path.test(new URL(r.url()).pathname));
}

/** Opens the conversation's Tools menu: its checkbox of the MCP server. */
async function openTools(page: Page) {
  const menu = page.getByTestId('mcp-servers');
  await menu.getByRole('button', { name: 'Tools' }).click();
  return menu.getByRole('checkbox', { name: 'Everything' });
}

test('a conversation turns a tool server off, and it stays off after a reload', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  await send(page, 'We are building a clinic booking app.');
  const server = await openTools(page);
  // On by default; its echo tool asks first.
  await expect(server).toBeChecked();
  await expect(page.getByTestId('mcp-servers').getByText('asks you before echo')).toBeVisible();
  await expectAccessible(page, 'the Tools menu');
  await snapshot(page, 'light/tools-menu');

  const change = saved(page, /^\/api\/threads\/[0-9a-f-]{36}$/);
  await server.uncheck();
  expect((await change).status()).toBe(200);
  await expect(server).not.toBeChecked();

  await reloadHydrated(page);
  await expect(await openTools(page)).not.toBeChecked();
  // Back to the person's settings: on again.
  const reset = saved(page, /^\/api\/threads\/[0-9a-f-]{36}$/);
  await page.getByRole('button', { name: 'Use my settings' }).click();
  expect((await reset).status()).toBe(200);
  await expect(page.getByRole('checkbox', { name: 'Everything' })).toBeChecked();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('checkbox', { name: 'Everything' })).toHaveCount(0);
});

test('the Tools section of the settings chooses for new conversations', async ({ page }) => {
  await signUp(page);
  await openHydrated(page, '/settings');
  const server = page.getByRole('checkbox', { name: 'Everything' });
  await expect(server).toBeChecked();
  const change = saved(page, /^\/api\/settings$/);
  await server.uncheck();
  expect((await change).status()).toBe(200);
  await expect(page.getByText('Tools saved.')).toBeVisible();
  await reloadHydrated(page);
  await expect(server).not.toBeChecked();

  await openHydrated(page, '/');
  await send(page, 'We are building a clinic booking app.');
  await expect(await openTools(page)).not.toBeChecked();
  await expect(page.getByText('As in your settings.')).toBeVisible();
});

test('a model\'s call that asks first waits for the person, then runs and its result reaches the answer', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  // The OpenAI-compatible model of this server (`fakes/openai.mjs`) calls the echo tool when asked to.
  await page.getByRole('combobox', { name: 'Model', exact: true }).selectOption('thinking/thinker');
  await page.getByRole('textbox', { name: 'Message' }).fill('Please echo the clinic hours.');
  await page.getByRole('button', { name: 'Send' }).click();

  const card = page.getByRole('group', { name: 'Everything wants to run echo' });
  await expect(card).toHaveAttribute('data-testid', 'approval');
  await expect(card.getByLabel('Arguments')).toHaveText('{\n  "message": "Please echo the clinic hours."\n}');
  // Nothing ran yet: the answer waits.
  await expect(page.getByText(/The tool answered/)).toHaveCount(0);
  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(page.getByText(/The tool answered: .*Please echo the clinic hours\./)).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send' })).toBeVisible();
  await reloadHydrated(page);
  await expect(page.getByText(/The tool answered: .*Please echo the clinic hours\./)).toBeVisible();
  await expect(page.getByRole('button', { name: 'Approve' })).toHaveCount(0);
});

test('a call that asks first shows its question again after a reload, and the card answers it', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  await send(page, 'We are building a clinic booking app.');
  const thread = conversationId(page);
  // The built-in models never call a tool: the server's side of a question (kept, listed while the answer runs,
  // replayed, decided) is covered by the server's tests; here the page is given one as the server gives it.
  const turn = '0193a5e4-0000-7000-8000-000000000001';
  const approval = {
    id: '0193a5e4-0000-7000-8000-000000000002',
    thread_id: thread,
    turn_id: turn,
    server: 'everything',
    label: 'Everything',
    tool: 'echo',
    input: { message: 'hello from the clinic' },
    state: 'pending',
    created_at: new Date().toISOString(),
  };
  await page.route(`**/api/threads/${thread}`, async (route) => {
    if (route.request().method() !== 'GET') return route.fallback();
    const detail = await (await route.fetch()).json();
    await route.fulfill({ json: { ...detail, running: true, approvals: [approval] } });
  });
  await page.route(`**/api/threads/${thread}/stream`, (route) =>
    route.fulfill({
      contentType: 'text/event-stream',
      body: `id: ${turn}:1\nevent: approval_requested\ndata: ${JSON.stringify({ approval })}\n\n`,
    }),
  );
  const decisions: unknown[] = [];
  await page.route(`**/api/threads/${thread}/approvals/${approval.id}`, async (route) => {
    decisions.push(route.request().postDataJSON());
    await route.fulfill({ json: { ...approval, state: 'denied', decided_at: new Date().toISOString() } });
  });

  await reloadHydrated(page);
  const card = page.getByRole('group', { name: 'Everything wants to run echo' });
  await expect(card).toHaveAttribute('data-testid', 'approval');
  await expect(card.getByLabel('Arguments')).toHaveText('{\n  "message": "hello from the clinic"\n}');
  await expect(card.getByRole('button', { name: 'Approve' })).toBeVisible();
  await expectAccessible(page, 'a question of a call that asks first');
  await snapshot(page, 'light/approval-card');

  await card.getByRole('button', { name: 'Deny' }).click();
  await expect(card.getByRole('status')).toHaveText('Denied');
  await expect(card.getByRole('button')).toHaveCount(0);
  expect(decisions).toEqual([{ approve: false }]);
});
