import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { authenticateKey as authenticate } from '../../src/accounts/accounts.js';
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

describe('quotegate admin commands', () => {
  const cli = async (...args: string[]) => {
    const env = { ...process.env, PGLITE_DIR: dir };
    delete (env as Record<string, string | undefined>).DATABASE_URL;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot, env });
    return stdout.trim().split('\n').pop()!;
  };
  const json = async (...args: string[]) => JSON.parse(await cli(...args, '--json'));
  const inDb = async <T>(work: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>) => {
    const db = await openDatabase({ pgliteDir: dir });
    try {
      return await work(db);
    } finally {
      await db.close();
    }
  };

  it('creates, keys, grants, subscribes, disables and revokes, as the database then shows', async () => {
    const made = await json('account', 'create', '--id', 'user-42', '--credits', '10', '--subscription', 'pro', '--days', '30', '--name', 'Ann');
    expect(made).toMatchObject({ account_id: 'user-42', credits: 10, subscription: { plan_id: 'pro' } });
    const second = await json('key', 'create', '--account', 'user-42', '--operations', 'getMe');
    expect(second.api_key).toMatch(/^qg_/);
    const granted = await json('credits', 'grant', 'user-42', '5');
    expect(granted.total).toBe(15);
    await json('subscription', 'set', 'user-42', '--none');
    const machine = await json('token', 'create', '--name', 'dashboard');
    expect(machine.token).toMatch(/^qgs_[A-Za-z0-9_-]{32}$/);
    await inDb(async (db) => {
      const caller = await authenticate(db, made.api_key);
      expect(caller).toMatchObject({ accountId: 'user-42', creditsTotal: 15n, subscription: null, disabled: false });
      expect((await authenticate(db, second.api_key))?.allowedOperations).toEqual(['getMe']);
      const ledger = await db.query<{ kind: string; amount: string }>(`SELECT kind, amount::text FROM credit_ledger WHERE account_id = 'user-42' ORDER BY id`);
      expect(ledger).toEqual([{ kind: 'grant', amount: '10' }, { kind: 'grant', amount: '5' }]);
    });
    await cli('account', 'disable', 'user-42');
    await cli('key', 'revoke', second.key_id);
    await inDb(async (db) => {
      expect((await authenticate(db, made.api_key))?.disabled).toBe(true);
      expect(await authenticate(db, second.api_key)).toBeNull();
    });
  });

  it('fails with exit code 1 and one line for an unknown account, and never half-writes', async () => {
    await expect(cli('credits', 'grant', 'nobody', '5')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/No account nobody/) });
    await expect(cli('key', 'create', '--account', 'nobody')).rejects.toMatchObject({ code: 1 });
    await expect(cli('account', 'create', '--id', 'user-42')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/already exists/) });
    await expect(cli('key', 'create', '--account', 'user-42', '--operations', 'getPrices,doEverything')).rejects.toMatchObject({ code: 1 });
    await inDb(async (db) => {
      expect(await db.query(`SELECT id FROM account WHERE id = 'nobody'`)).toEqual([]);
    });
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

describe('the quotegate command (package.json bin)', () => {
  it('is an executable file that prints the help and runs commands from the clone', async () => {
    const bin = path.join(projectRoot, (JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { bin: { quotegate: string } }).bin.quotegate);
    expect(fs.statSync(bin).mode & 0o100).toBe(0o100);
    const help = await run(bin, ['--help'], { cwd: projectRoot });
    expect(help.stdout).toMatch(/^Usage: quotegate /);
    for (const command of ['serve', 'import', 'account', 'key', 'credits', 'subscription', 'token']) expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    const binDir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-bin-'));
    try {
      const env = { ...process.env, PGLITE_DIR: binDir };
      delete (env as Record<string, string | undefined>).DATABASE_URL;
      const { stdout } = await run(bin, ['account', 'create', '--credits', '5', '--json'], { cwd: projectRoot, env });
      // stdout is exactly the JSON line (nothing else printed before it).
      const out = JSON.parse(stdout);
      expect(out).toMatchObject({ credits: 5, subscription: null, api_key: expect.stringMatching(/^qg_/) });
      const db = await openDatabase({ pgliteDir: binDir });
      try {
        expect((await authenticate(db, out.api_key))?.creditsTotal).toBe(5n);
      } finally {
        await db.close();
      }
    } finally {
      fs.rmSync(binDir, { recursive: true, force: true });
    }
  });
});
