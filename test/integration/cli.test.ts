import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { authenticateKey as authenticate } from '../../src/services/accounts.js';
import { projectRoot } from '../../src/lib/paths.js';

const run = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('quotegate account create', () => {
  it('creates an account and prints its key once; only the hash is stored', async () => {
    const env = { ...process.env, PGLITE_DIR: dir, DATABASE_URL: '' };
    delete (env as Record<string, string | undefined>).DATABASE_URL;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'account', 'create', '--credits', '250', '--json'], { cwd: projectRoot, env });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(out.credits).toBe(250);
    expect(out.api_key).toMatch(/^qg_[A-Za-z0-9_-]{32}$/);
    const db = await openDatabase({ pgliteDir: dir });
    try {
      const caller = await authenticate(db, out.api_key);
      expect(caller?.accountId).toBe(out.account_id);
      const account = await db.prisma.account.findUniqueOrThrow({ where: { id: out.account_id } });
      expect(account.creditsTotal).toBe(250n);
      const dump = JSON.stringify(await db.prisma.apiKey.findMany(), (_k, v) => (typeof v === 'bigint' ? String(v) : v));
      expect(dump).not.toContain(out.api_key);
    } finally {
      await db.close();
    }
  });

  it('rejects a credit count that is not a whole number', async () => {
    await expect(
      run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'account', 'create', '--credits', '-3'], { cwd: projectRoot, env: { ...process.env, PGLITE_DIR: dir } }),
    ).rejects.toMatchObject({ code: 1 });
  });
});

describe('embedded database directory lock', () => {
  it('a second process-level open of a PGlite directory in use is refused with a clear message; reopening after close works', async () => {
    const lockDir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-lock-'));
    try {
      const first = await openDatabase({ pgliteDir: lockDir });
      await expect(openDatabase({ pgliteDir: lockDir })).rejects.toThrow(/in use by process/);
      await first.close();
      const again = await openDatabase({ pgliteDir: lockDir });
      await again.close();
    } finally {
      fs.rmSync(lockDir, { recursive: true, force: true });
    }
  });
});
