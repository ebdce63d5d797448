import { expect, test } from './fixtures';
import { expectAccessible, openHydrated, sameOrigin, signUp, uniqueEmail } from './helpers';
import { send } from './conversation';

test('a lead makes a project, adds a colleague as viewer and moves a conversation in; the colleague reads it only', async ({ page, browser }) => {
  const colleague = await (await browser.newContext()).newPage();
  const colleagueEmail = uniqueEmail('vera');
  await signUp(colleague, colleagueEmail);
  await signUp(page);

  // The lead's conversation, with an answer.
  await openHydrated(page);
  await send(page, 'Nurses must see the ward roster for the week.');
  await expect(page.getByTestId('message-assistant')).toHaveAttribute('aria-busy', 'false');
  const conversation = page.url();

  // A new project, from the sidebar.
  await page.getByRole('button', { name: 'New project' }).click();
  await page.getByRole('textbox', { name: 'Project name' }).fill('Ward rota');
  await page.getByRole('form', { name: 'New project' }).getByRole('button', { name: 'Create' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Ward rota' })).toBeVisible();
  await expect(page.getByTestId('project-item')).toContainText('Ward rota');
  const projectUrl = page.url();

  // The colleague, added by e-mail as a viewer.
  const add = page.getByRole('form', { name: 'Add member' });
  await add.getByRole('textbox', { name: 'E-mail' }).fill(colleagueEmail.toUpperCase());
  await add.getByRole('combobox', { name: 'Role' }).selectOption('viewer');
  await add.getByRole('button', { name: 'Add member' }).click();
  await expect(page.getByRole('main').getByRole('status')).toContainText('was added as viewer');
  await expect(page.getByTestId('project-member')).toHaveCount(2);
  await expect(page.getByRole('combobox', { name: `Role of ${colleagueEmail}` })).toHaveValue('viewer');
  // An address no account has is invited (they join when they sign up), and can be taken back.
  const newcomer = uniqueEmail('nina');
  await add.getByRole('textbox', { name: 'E-mail' }).fill(newcomer);
  await add.getByRole('combobox', { name: 'Role' }).selectOption('viewer');
  await add.getByRole('button', { name: 'Add member' }).click();
  await expect(page.getByRole('main').getByRole('status')).toContainText('invited as viewer');
  await expect(page.getByTestId('project-invitation')).toContainText(newcomer);
  await expectAccessible(page, 'project page');
  await page.getByRole('button', { name: `Take back the invitation of ${newcomer}` }).click();
  await expect(page.getByTestId('project-invitation')).toHaveCount(0);

  // The conversation moves in from its menu.
  await page.goto(conversation);
  await page.getByRole('button', { name: /^Conversation options for / }).first().click();
  await page.getByRole('menuitem', { name: 'Move to project…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Move to project' });
  await dialog.getByRole('combobox', { name: 'Project' }).selectOption({ label: 'Ward rota' });
  await dialog.getByRole('button', { name: 'Move' }).click();
  await expect(dialog).toHaveCount(0);

  // The colleague finds it under the project and reads it, without a message box or message tools.
  await openHydrated(colleague);
  await colleague.getByTestId('project-item').getByRole('link', { name: 'Ward rota' }).click();
  await expect(colleague.getByRole('heading', { level: 1, name: /Ward rota/ })).toBeVisible();
  await expect(colleague.getByTestId('activity-log')).toContainText('into the project');
  await expect(colleague.getByTestId('project-requirements')).toContainText('ward roster');
  await expect(colleague.getByRole('form', { name: 'Add member' })).toHaveCount(0);
  // The project's stats count its conversations, the lead's too, under its name.
  await colleague.getByRole('link', { name: 'Project stats' }).click();
  await expect(colleague.getByRole('heading', { level: 1, name: 'Stats of Ward rota' })).toBeVisible();
  await expect(colleague.getByTestId('stat-threads')).toHaveText('1');
  await colleague.goBack();
  // The project's search finds the lead's conversation for the colleague.
  const search = colleague.getByRole('search', { name: 'Search the project' });
  await search.getByRole('searchbox').fill('roster');
  await search.getByRole('searchbox').press('Enter');
  await expect(colleague.getByRole('heading', { level: 1, name: 'Search in the project' })).toBeVisible();
  await expect(colleague.getByTestId('search-result').first()).toContainText('roster');
  await colleague.goBack();
  await colleague.getByTestId('project-threads').getByRole('link').first().click();
  await expect(colleague.getByTestId('message-user')).toContainText('ward roster');
  await expect(colleague.getByTestId('read-only-note')).toBeVisible();
  await expect(colleague.getByRole('textbox', { name: 'Message' })).toHaveCount(0);
  await expect(colleague.getByRole('button', { name: 'Edit message' })).toHaveCount(0);
  await expect(colleague.getByRole('button', { name: 'Regenerate' })).toHaveCount(0);

  // A write sent anyway is refused as read only.
  const id = conversation.split('/c/')[1];
  const refused = await colleague.request.patch(`/api/threads/${id}`, { headers: sameOrigin(), data: { title: 'Mine' } });
  expect(refused.status()).toBe(403);

  // Removed, the colleague no longer sees the project.
  await page.getByTestId('project-item').getByRole('link', { name: 'Ward rota' }).click();
  await page.getByRole('button', { name: `Remove ${colleagueEmail}` }).click();
  await expect(page.getByTestId('project-member')).toHaveCount(1);
  await expect(page.getByTestId('activity-log')).toContainText(`removed ${colleagueEmail}`);
  await openHydrated(colleague, new URL(projectUrl).pathname);
  await expect(colleague.getByText('Project not found')).toBeVisible();
  await expect(colleague.getByTestId('project-item')).toHaveCount(0);
  const gone = await colleague.request.get(`/api/threads/${id}`);
  expect(gone.status()).toBe(404);
  await colleague.context().close();
});

test('an editor of the project writes in a colleague\'s conversation and edits its document; the author sees who did', async ({ page, browser }) => {
  const colleague = await (await browser.newContext()).newPage();
  const colleagueEmail = uniqueEmail('ed');
  await signUp(colleague, colleagueEmail);
  await signUp(page);

  // The lead's conversation with a document, moved into a project where the colleague edits.
  await openHydrated(page);
  await send(page, 'We run a dental clinic. Patients book appointments online.');
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.getByRole('menuitem', { name: 'Requirements Document' }).click();
  await expect(page.getByTestId('generating-indicator')).toHaveCount(0);
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);
  const id = page.url().split('/c/')[1];
  const made = await page.request.post('/api/projects', { headers: sameOrigin(), data: { name: 'Clinic' } });
  const project = (await made.json()).id;
  const added = await page.request.post(`/api/projects/${project}/members`, {
    headers: sameOrigin(),
    data: { email: colleagueEmail, role: 'editor' },
  });
  expect(added.status()).toBe(201);
  const moved = await page.request.patch(`/api/threads/${id}`, { headers: sameOrigin(), data: { project_id: project } });
  expect(moved.status()).toBe(200);

  // The colleague opens it and writes in it, as themselves; the author, watching, sees the message under the
  // colleague's name and its answer as it comes.
  await openHydrated(colleague, `/c/${id}`);
  await expect(colleague.getByTestId('read-only-note')).toHaveCount(0);
  // (A person is named by their display name, the e-mail's first part unless they chose one.)
  await expect(colleague.getByTestId('message-writer').first()).not.toHaveText('You');
  await send(colleague, 'Patients must get a reminder a day before.');
  await expect(colleague.getByTestId('message-assistant').last()).toHaveAttribute('aria-busy', 'false');
  const theirs = colleague.getByTestId('message-user').last();
  await expect(theirs).toContainText('reminder a day before');
  await expect(theirs.getByTestId('message-writer')).toHaveText('You');
  await expect(colleague.getByRole('button', { name: 'Delete message' })).toHaveCount(0);
  const seen = page.getByTestId('message-user').last();
  await expect(seen).toContainText('reminder a day before');
  await expect(seen.getByTestId('message-writer')).toHaveText(colleagueEmail.split('@')[0]);
  await expect(page.getByTestId('message-user').first().getByTestId('message-writer')).toHaveText('You');
  await expect(page.getByTestId('message-assistant').last()).toHaveAttribute('aria-busy', 'false');
  await expect(page.getByTestId('message-assistant')).toHaveCount(2);

  // The document opens for the colleague with Edit, not Delete.
  await colleague.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
  const viewer = colleague.getByRole('dialog');
  await expect(viewer.getByRole('button', { name: 'Delete' })).toHaveCount(0);
  await viewer.getByRole('button', { name: 'Edit' }).click();
  const text = viewer.getByRole('textbox', { name: 'Document text (Markdown)' });
  await text.fill(`${await text.inputValue()}\n\n- Reminders go out a day before.\n`);
  await viewer.getByRole('button', { name: 'Save' }).click();
  await expect(viewer.getByRole('status').filter({ hasText: 'Saved as version 2.' })).toBeVisible();
  await expect(viewer.getByTestId('version-list').getByRole('listitem').nth(1)).toContainText('Edited by you');

  // The author, who watches the conversation, sees the new version and who wrote it.
  await expect(page.getByTestId('artifact-card')).toContainText('v2');
  await page.getByTestId('artifact-card').getByRole('button', { name: /^Open / }).click();
  const versions = page.getByRole('dialog').getByTestId('version-list').getByRole('listitem');
  await expect(versions.nth(1)).toContainText('Edited by ');
  await expect(versions.nth(1)).not.toContainText('Edited by you');
  await colleague.context().close();
});

test('a document cites a requirement of another conversation of the project: it says when that one changed, and its key leads there', async ({ page }) => {
  await signUp(page);
  await openHydrated(page);
  const api = page.request;
  const headers = sameOrigin();
  const project = (await (await api.post('/api/projects', { headers, data: { name: 'Ward' } })).json()).id;
  const conversation = async (title: string, message: string) => {
    const made = await api.post('/api/threads', { headers, data: { title } });
    const id = (await made.json()).id;
    expect((await api.patch(`/api/threads/${id}`, { headers, data: { project_id: project } })).status()).toBe(200);
    // The built-in assistant answers (and keeps the ledger) before the stream ends.
    const answered = await api.post(`/api/threads/${id}/chat`, { headers, data: { content: message } });
    expect(answered.status()).toBe(200);
    await answered.body();
    return id as string;
  };
  const rota = await conversation('Rota', 'Shifts must be 8 hours long.');
  const plans = await conversation('Plans', 'Write user stories for the ward staff to see their rota.');

  // Plans' document, edited by hand to cite Rota's requirement.
  const documents = (await (await api.get(`/api/threads/${plans}/artifacts`)).json()).artifacts;
  expect(documents.length).toBe(1);
  const [doc] = documents;
  const key = `R-1@${rota.replace(/-/g, '').slice(-12)}`;
  const edited = await api.put(`/api/artifacts/${doc.id}`, {
    headers,
    data: { content: `${doc.content}\n\n- Staff work 8-hour shifts [${key}]\n`, base_version: doc.version },
  });
  expect(edited.status()).toBe(200);
  expect((await edited.json()).requirements).toContain(key);
  const changed = await api.patch(`/api/threads/${rota}/requirements/R-1`, {
    headers,
    data: { text: 'Shifts must be 12 hours long.' },
  });
  expect(changed.status()).toBe(200);

  // The card says which requirement of which conversation changed.
  await page.goto(`/c/${plans}`);
  const card = page.getByTestId('artifact-card');
  await expect(card.getByTestId('out-of-date')).toContainText('R-1 of “Rota” changed (8 → 12)');

  // The cited key leads to Rota, its requirement shown and the message it came from highlighted.
  await card.getByRole('button', { name: /^Open / }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Requirement R-1 of another conversation' }).click();
  await expect(page).toHaveURL(new RegExp(`/c/${rota}\\?requirement=R-1$`));
  const requirement = page.getByRole('region', { name: 'Requirements' }).locator('[data-testid="requirement"][data-key="R-1"]');
  await expect(requirement).toContainText('12 hours');
  await expect(requirement.getByTestId('coverage-elsewhere')).toContainText('in “Plans”');
  await expect(page.getByTestId('message-user').first()).toHaveAttribute('data-highlighted', 'true');

  // The owner takes Rota out of the project from its page; Plans' document no longer cites it.
  await page.goto(`/projects/${project}`);
  await page.getByRole('button', { name: 'Take “Rota” out of the project' }).click();
  await expect(page.getByRole('main').getByRole('status')).toContainText('“Rota” was taken out of the project.');
  await expect(page.getByTestId('project-threads').getByRole('link')).toHaveCount(1);
  const after = await (await api.get(`/api/artifacts/${doc.id}`)).json();
  expect(after.requirements).not.toContain(key);
});
