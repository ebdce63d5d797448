import { rmSync } from 'node:fs';

// Removes the server's throwaway data directory made by playwright.config.ts.
export default function teardown() {
  const dir = process.env.QUIRE_E2E_OWN_DATA_DIR;
  if (dir) rmSync(dir, { recursive: true, force: true });
}
