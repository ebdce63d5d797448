import { expect, test } from './fixtures';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { send } from './conversation';
import { openHydrated, sameOrigin, signUp } from './helpers';

/** The text of a tool's answer (its first content block), and whether it is a tool error. */
function answer(result: Awaited<ReturnType<Client['callTool']>>) {
  const content = result.content as Array<{ type: string; text?: string }>;
  expect(content[0]?.type).toBe('text');
  return { text: content[0].text ?? '', isError: result.isError === true };
}

test("an MCP client reads the token owner's conversations and documents over /mcp", async ({ page, baseURL }) => {
  await signUp(page);
  const made = await page.request.post('/api/tokens', {
    headers: sameOrigin(),
    data: { name: 'Assistant', scope: 'read', expires_in_days: 1 },
  });
  expect(made.status()).toBe(201);
  const token: string = (await made.json()).token;

  await openHydrated(page);
  await send(page, 'Members must be able to book a slot. Generate user stories.');
  await expect(page.getByTestId('artifact-card')).toHaveCount(1);

  // The official TypeScript SDK, as an assistant's program would use it: the token alone, no cookie.
  const client = new Client({ name: 'quire-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', baseURL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    expect(client.getServerVersion()?.name).toBe('quire');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'search_conversations',
      'list_conversations',
      'list_documents',
      'read_document',
      'list_requirements',
    ]);

    const search = answer(await client.callTool({ name: 'search_conversations', arguments: { query: 'book slot' } }));
    expect(search.isError).toBe(false);
    const hits = JSON.parse(search.text).results as Array<{ kind: string; thread_id: string; artifact_id?: string }>;
    const documentHit = hits.find((h) => h.kind === 'artifact' && h.artifact_id);
    expect(documentHit, search.text).toBeDefined();

    const read = answer(
      await client.callTool({ name: 'read_document', arguments: { document_id: documentHit!.artifact_id } }),
    );
    expect(read.isError).toBe(false);
    const document = JSON.parse(read.text);
    expect(document.version).toBe(1);
    expect(document.content).toContain('As a');
    expect(document.content.toLowerCase()).toContain('book');

    const listed = answer(
      await client.callTool({ name: 'list_documents', arguments: { conversation_id: documentHit!.thread_id } }),
    );
    expect(JSON.parse(listed.text).map((d: { id: string }) => d.id)).toEqual([documentHit!.artifact_id]);

    // A wrong argument is the tool's error, not a broken connection; the client goes on.
    const wrong = answer(await client.callTool({ name: 'read_document', arguments: { document_id: 'nope' } }));
    expect(wrong.isError).toBe(true);
    expect(wrong.text).toContain('invalid_arguments');
    const missing = answer(
      await client.callTool({ name: 'read_document', arguments: { document_id: '00000000-0000-7000-8000-000000000000' } }),
    );
    expect(missing).toEqual({ text: 'not_found: Not found.', isError: true });
  } finally {
    await client.close();
  }

  // The page's session cookie does not sign in at /mcp, even from Quire's own origin.
  const withCookie = await page.request.post('/mcp', {
    headers: { Accept: 'application/json, text/event-stream', ...sameOrigin() },
    data: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  expect(withCookie.status()).toBe(401);
});
