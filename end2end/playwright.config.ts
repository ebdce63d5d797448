import { defineConfig } from '@playwright/test';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The server under test: a freshly built `quire` binary with a throwaway data directory.
const root = resolve(__dirname, '..');
const port = process.env.QUIRE_E2E_PORT ?? '3917';
const baseURL = `http://127.0.0.1:${port}`;
// Workers load this file too: they inherit the runner's directory rather than each making one of their own.
// `teardown.ts` removes it at the end.
process.env.QUIRE_E2E_OWN_DATA_DIR ??= mkdtempSync(join(tmpdir(), 'quire-e2e-'));
const dataDir = process.env.QUIRE_E2E_OWN_DATA_DIR;
const binary = process.env.QUIRE_E2E_BIN ?? join(root, 'target', 'debug', 'quire');
// A second server offers two models (`fixtures/models.toml`) to `models.spec.ts` alone: on the first, every other
// spec sees the one built-in model and no model picker.
const modelsPort = process.env.QUIRE_E2E_MODELS_PORT ?? String(Number(port) + 1);
process.env.QUIRE_E2E_MODELS_URL ??= `http://127.0.0.1:${modelsPort}`;

// The OpenAI-compatible model the models server offers beside its built-in ones (`fakes/openai.mjs`): its address
// goes into a copy of `fixtures/models.toml`.
const fakeLlmPort = String(Number(port) + 5);
process.env.QUIRE_E2E_FAKE_LLM_URL ??= `http://127.0.0.1:${fakeLlmPort}`;
const modelsConfig = join(dataDir, 'models.toml');
writeFileSync(
  modelsConfig,
  readFileSync(join(root, 'end2end', 'fixtures', 'models.toml'), 'utf8').replaceAll(
    '@FAKE_LLM_URL@',
    process.env.QUIRE_E2E_FAKE_LLM_URL,
  ),
);

// A third server signs people in only through a real OpenID provider (`oidc/provider.mjs`) for `sso.spec.ts`
// (`no-script.spec.ts` starts a server of its own on the port after the models server's).
const ssoPort = String(Number(port) + 3);
const providerPort = String(Number(port) + 4);
process.env.QUIRE_E2E_SSO_URL ??= `http://127.0.0.1:${ssoPort}`;
process.env.QUIRE_E2E_OIDC_URL ??= `http://127.0.0.1:${providerPort}`;

/** The environment of a server under test on `serverPort` with its data in `dir`. */
function serverEnv(serverPort: string, dir: string, extra: Record<string, string> = {}) {
  return {
    LEPTOS_SITE_ADDR: `127.0.0.1:${serverPort}`,
    LEPTOS_SITE_ROOT: join(root, 'target', 'site'),
    QUIRE_DATA_DIR: dir,
    QUIRE_BUILTIN_DELAY_MS: process.env.QUIRE_BUILTIN_DELAY_MS ?? '25',
    RUST_LOG: 'warn',
    // Every test signs up from the same address; the limits themselves are covered by the server's tests.
    QUIRE_RATE_LIMIT_AUTH: '1000',
    QUIRE_RATE_LIMIT_GENERAL: '10000',
    // Every test signs up people of its own (the first one, `admin.setup.ts`, administers Quire).
    QUIRE_SIGNUP: 'open',
    ...extra,
  };
}

export default defineConfig({
  testDir: './tests',
  globalTeardown: './teardown.ts',
  timeout: 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  outputDir: 'test-results',
  use: {
    baseURL,
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  projects: [
    // The first account administers Quire: the administrator signs up before anyone else.
    { name: 'setup', testMatch: /admin\.setup\.ts/ },
    { name: 'chromium', use: { browserName: 'chromium' }, dependencies: ['setup'] },
  ],
  webServer: [
    {
      command: binary,
      cwd: root,
      url: `${baseURL}/api/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: serverEnv(port, dataDir),
    },
    {
      command: 'node fakes/openai.mjs',
      cwd: __dirname,
      url: `${process.env.QUIRE_E2E_FAKE_LLM_URL}/health`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: { QUIRE_E2E_FAKE_LLM_PORT: fakeLlmPort },
    },
    {
      command: binary,
      cwd: root,
      url: `${process.env.QUIRE_E2E_MODELS_URL}/api/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: serverEnv(modelsPort, join(dataDir, 'models'), {
        QUIRE_CONFIG: modelsConfig,
      }),
    },
    {
      command: 'node oidc/provider.mjs',
      cwd: __dirname,
      url: `${process.env.QUIRE_E2E_OIDC_URL}/.well-known/openid-configuration`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: { QUIRE_E2E_OIDC_PORT: providerPort, QUIRE_E2E_OIDC_QUIRE: process.env.QUIRE_E2E_SSO_URL },
    },
    {
      command: binary,
      cwd: root,
      url: `${process.env.QUIRE_E2E_SSO_URL}/api/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: serverEnv(ssoPort, join(dataDir, 'sso'), {
        QUIRE_PUBLIC_URL: process.env.QUIRE_E2E_SSO_URL,
        QUIRE_PASSWORD_LOGIN: 'false',
        QUIRE_SIGNUP: 'invite',
        QUIRE_OIDC_ISSUER: process.env.QUIRE_E2E_OIDC_URL,
        QUIRE_OIDC_CLIENT_ID: 'quire-e2e',
        QUIRE_OIDC_CLIENT_SECRET: 'quire-e2e-secret',
        QUIRE_OIDC_SCOPES: 'openid email profile groups',
        QUIRE_OIDC_LABEL: 'Acme ID',
        QUIRE_OIDC_AUTO_CREATE: 'true',
        QUIRE_OIDC_ADMIN_GROUPS: 'quire-admins',
      }),
    },
  ],
});
