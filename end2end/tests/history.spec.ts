import { Browser, expect, Page, test } from './fixtures';
import { openHydrated, reloadHydrated, sameOrigin, signUp, snapshot } from './helpers';

/** A conversation as `POST /api/threads/import` takes it (Quire's own export format). */
function conversation(
  title: string,
  messages: string[],
  options: { minutesAgo?: number; tags?: string[]; pinned?: boolean; archived?: boolean } = {},
) {
  const start = Date.now() - (options.minutesAgo ?? 0) * 60_000 - messages.length * 1000;
  const at = (i: number) => new Date(start + i * 1000).toISOString();
  return {
    format: 'quire.thread',
    version: 1,
    exported_at: new Date().toISOString(),
    thread: {
      id: crypto.randomUUID(),
      title,
      tags: options.tags ?? [],
      pinned: options.pinned ?? false,
      archived: options.archived ?? false,
      created_at: at(0),
      updated_at: at(Math.max(messages.length - 1, 0)),
    },
    messages: messages.map((content, i) => ({
      id: crypto.randomUUID(),
      seq: i + 1,
      role: i % 2 === 0 ? 'user' : 'assistant',
      content,
      status: 'complete',
      created_at: at(i),
    })),
    artifacts: [],
  };
}

/** Imports conversations in one request; answers them as the server created them, in order. */
async function importConversations(page: Page, threads: ReturnType<typeof conversation>[]) {
  const response = await page.request.post('/api/threads/import', {
    headers: sameOrigin(),
    data: { format: 'quire.export', version: 1, exported_at: new Date().toISOString(), threads, attachments: [] },
  });
  expect(response.status()).toBe(201);
  return (await response.json()).threads as { id: string; title: string }[];
}

async function createThread(page: Page, title: string) {
  const response = await page.request.post('/api/threads', { headers: sameOrigin(), data: { title } });
  expect(response.status()).toBe(201);
  return (await response.json()) as { id: string; title: string };
}

function item(page: Page, title: string) {
  return page.getByTestId('thread-item').filter({ hasText: title });
}

async function openMenu(page: Page, title: string) {
  await item(page, title).getByRole('button', { name: /Conversation options/ }).click();
  await expect(page.getByRole('menu')).toBeVisible();
}

async function choose(page: Page, entry: string) {
  await page.getByRole('menuitem', { name: entry, exact: true }).click();
  await expect(page.getByRole('menu')).toHaveCount(0);
}

test.beforeEach(async ({ page }) => {
  await signUp(page);
});

test('search finds an earlier message and opens it, scrolled into view and highlighted', async ({ page }) => {
  const filler = (i: number) =>
    `Point ${i}: the dispatch board lists every open job with its address, its due time and who takes it. ` +
    'Managers reassign jobs by dragging them; technicians confirm on their phones.';
  const long = Array.from({ length: 48 }, (_, i) => filler(i));
  long[24] = 'The forklift telemetry must use the zephyrine protocol on every charging dock.';
  await importConversations(page, [
    conversation('Warehouse robots', long, { minutesAgo: 30 }),
    conversation('Vendor shortlist', ['Ask the vendors whether they support zephyrine.', 'Noted.'], { minutesAgo: 5 }),
  ]);

  await openHydrated(page);
  // Ctrl+K (Cmd+K on a Mac) focuses the search box from anywhere.
  const search = page.getByRole('searchbox', { name: 'Search conversations' });
  await page.getByRole('textbox', { name: 'Message' }).focus();
  await page.keyboard.press('Meta+K');
  await expect(search).toBeFocused();
  await page.getByRole('textbox', { name: 'Message' }).focus();
  await page.keyboard.press('Control+K');
  await expect(search).toBeFocused();
  await page.keyboard.type('zephyrine');
  await page.keyboard.press('Enter');

  await expect(page).toHaveURL(/\/search\?q=zephyrine$/);
  const results = page.getByTestId('search-result');
  await expect(results).toHaveCount(2);
  // Grouped by conversation, each hit with the matching word marked.
  const warehouse = page.getByRole('region', { name: 'Warehouse robots' });
  await expect(warehouse.getByRole('heading', { name: 'Warehouse robots' })).toBeVisible();
  await expect(warehouse.getByTestId('search-result')).toHaveCount(1);
  await expect(page.getByRole('region', { name: 'Vendor shortlist' }).getByTestId('search-result')).toHaveCount(1);
  await expect(warehouse.getByTestId('search-result').locator('mark')).toHaveText(/zephyrine/i);
  await snapshot(page, 'search-light');

  await warehouse.getByTestId('search-result').click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}\?m=[0-9a-f-]{36}$/);
  await expect(page.getByTestId('message-user')).toHaveCount(24);
  const highlighted = page.locator('[data-testid="message-user"][aria-current="true"]');
  await expect(highlighted).toHaveCount(1);
  await expect(highlighted).toContainText('zephyrine protocol');
  await expect(highlighted).toBeInViewport();
  // The hit is in the middle of a conversation much taller than the window: the view went to it, neither staying
  // at the start nor following to the end.
  await expect(page.getByTestId('message-user').first()).not.toBeInViewport();
  await expect(page.getByTestId('message-assistant').last()).not.toBeInViewport();
});

test('rename, tag, pin, archive and delete a conversation from its menu', async ({ page }) => {
  await createThread(page, 'Alpha plan');
  const beta = await createThread(page, 'Beta plan');
  await createThread(page, 'Gamma plan');
  await openHydrated(page);
  const items = page.getByTestId('thread-item');
  await expect(items).toHaveCount(3);

  // Escape closes a dialog without change and gives focus back to the conversation's options button.
  await openMenu(page, 'Beta plan');
  await choose(page, 'Rename');
  await expect(page.getByRole('dialog', { name: 'Rename conversation' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await expect(item(page, 'Beta plan').getByRole('button', { name: /Conversation options/ })).toBeFocused();

  // Rename, by keyboard: the menu focuses its first entry, arrows move between entries.
  await item(page, 'Beta plan').getByRole('button', { name: /Conversation options/ }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('menuitem', { name: 'Rename' })).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(page.getByRole('menuitem', { name: 'Edit tags' })).toBeFocused();
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  const rename = page.getByRole('dialog', { name: 'Rename conversation' });
  await expect(rename).toBeVisible();
  await expect(rename.getByRole('textbox', { name: 'Title' })).toHaveValue('Beta plan');
  await rename.getByRole('textbox', { name: 'Title' }).fill('Beta launch');
  await rename.getByRole('button', { name: 'Save' }).click();
  await expect(rename).toHaveCount(0);
  await expect(item(page, 'Beta launch')).toHaveCount(1);
  await expect(item(page, 'Beta plan')).toHaveCount(0);
  await expect(item(page, 'Beta launch').getByRole('button', { name: /Conversation options/ })).toBeFocused();

  // Tags show as chips.
  await openMenu(page, 'Beta launch');
  await choose(page, 'Edit tags');
  const tags = page.getByRole('dialog', { name: 'Edit tags' });
  await tags.getByRole('textbox', { name: 'Tags' }).fill('design, urgent');
  await page.keyboard.press('Enter');
  await expect(tags).toHaveCount(0);
  await expect(item(page, 'Beta launch').getByText('design', { exact: true })).toBeVisible();
  await expect(item(page, 'Beta launch').getByText('urgent', { exact: true })).toBeVisible();

  // Pinned conversations come first, also after a reload.
  await expect(items.first()).toContainText('Beta launch');
  await openMenu(page, 'Alpha plan');
  await choose(page, 'Pin');
  await expect(items.first()).toContainText('Alpha plan');
  await expect(items.first()).toContainText('Pinned');
  await reloadHydrated(page);
  await expect(items).toHaveCount(3);
  await expect(items.first()).toContainText('Alpha plan');
  await openMenu(page, 'Alpha plan');
  await expect(page.getByRole('menuitem', { name: 'Unpin', exact: true })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('menu')).toHaveCount(0);
  await expect(item(page, 'Alpha plan').getByRole('button', { name: /Conversation options/ })).toBeFocused();

  // Archived conversations hide behind the toggle.
  await openMenu(page, 'Gamma plan');
  await choose(page, 'Archive');
  await expect(items).toHaveCount(2);
  await expect(item(page, 'Gamma plan')).toHaveCount(0);
  const toggle = page.getByRole('button', { name: 'Show archived' });
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-pressed', 'true');
  await expect(items).toHaveCount(1);
  await expect(items.first()).toContainText('Gamma plan');
  await snapshot(page, 'archived-light');
  await openMenu(page, 'Gamma plan');
  await choose(page, 'Unarchive');
  await expect(items).toHaveCount(0);
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-pressed', 'false');
  await expect(items).toHaveCount(3);

  // Delete asks first; deleting the open conversation leaves it.
  await item(page, 'Beta launch').getByRole('link').click();
  await expect(page).toHaveURL(new RegExp(`/c/${beta.id}$`));
  await openMenu(page, 'Beta launch');
  await choose(page, 'Delete');
  const confirm = page.getByRole('dialog', { name: 'Delete conversation?' });
  await expect(confirm).toContainText('Beta launch');
  await snapshot(page, 'delete-dialog-light');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(confirm).toHaveCount(0);
  await expect(items).toHaveCount(3);
  expect((await page.request.get(`/api/threads/${beta.id}`)).status()).toBe(200);

  await openMenu(page, 'Beta launch');
  await choose(page, 'Delete');
  await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(confirm).toHaveCount(0);
  await expect(items).toHaveCount(2);
  await expect(item(page, 'Beta launch')).toHaveCount(0);
  await expect(page).toHaveURL(/\/$/);
  expect((await page.request.get(`/api/threads/${beta.id}`)).status()).toBe(404);
});

test('the list of conversations loads more as it is scrolled', async ({ page }) => {
  const titles = Array.from({ length: 60 }, (_, i) => `Topic ${String(i + 1).padStart(2, '0')}`);
  await importConversations(
    page,
    titles.map((title, i) => conversation(title, [`About ${title}.`], { minutesAgo: i + 1 })),
  );
  await openHydrated(page);
  const items = page.getByTestId('thread-item');
  await expect(items).toHaveCount(50);
  await expect(items.first()).toContainText('Topic 01');
  await expect(items.last()).toContainText('Topic 50');
  // Nothing more comes before the list is scrolled.
  await expect(page.getByRole('status').filter({ hasText: 'Loading' })).toHaveCount(0);
  expect(await items.count()).toBe(50);

  await page.locator('.thread-scroll').hover();
  await page.mouse.wheel(0, 10_000);
  await expect(items).toHaveCount(60);
  await expect(items.last()).toContainText('Topic 60');
  const shown = await items.locator('.thread-title').allInnerTexts();
  expect(new Set(shown).size).toBe(60);
});

async function searchAs(page: Page, q: string) {
  await openHydrated(page, `/search?q=${encodeURIComponent(q)}`);
  await expect(page.getByRole('status').filter({ hasText: /match/ })).toBeVisible();
}

test('a second user finds none of the first user\'s conversations', async ({ page, browser }) => {
  await importConversations(page, [conversation('Quokka merger', ['The quokka merger closes in May.', 'Noted.'])]);
  await searchAs(page, 'quokka');
  await expect(page.getByTestId('search-result')).not.toHaveCount(0);
  await expect(page.getByTestId('thread-item')).toHaveCount(1);

  const other = await newUser(browser);
  await searchAs(other, 'quokka');
  await expect(other.getByText('Nothing matches “quokka”.')).toBeVisible();
  await expect(other.getByTestId('search-result')).toHaveCount(0);
  await expect(other.getByTestId('thread-item')).toHaveCount(0);
  await other.context().close();
});

async function newUser(browser: Browser) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signUp(page);
  return page;
}

test('HTML in a message shows as text in search results', async ({ page }) => {
  let dialogs = 0;
  page.on('dialog', async (d) => {
    dialogs += 1;
    await d.dismiss();
  });
  await importConversations(page, [
    conversation('Markup', ['The wombat plan: <img src=x onerror="alert(1)"> <script>alert(2)</script> done.', 'Ok.']),
  ]);
  await searchAs(page, 'wombat');
  const result = page.getByTestId('search-result');
  await expect(result).toHaveCount(1);
  await expect(result.locator('mark')).toHaveText('wombat');
  await expect(result).toContainText('<img src=x onerror="alert(1)">');
  await expect(result).toContainText('<script>alert(2)</script>');
  await expect(page.locator('main img')).toHaveCount(0);
  await expect(page.locator('main script')).toHaveCount(0);
  expect(dialogs).toBe(0);
});
