/**
 * Admin commands while the service runs on embedded PGlite (src/admin/channel.ts): the real `quotegate`
 * command (bin/quotegate.js, a child process) hands them to a running `quotegate serve` (a child process on a
 * temporary PGlite directory) over `<PGLITE_DIR>/admin.sock`, and the service's API shows the effect at once.
 * Always on PGlite: the channel exists because that database belongs to one process.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { projectRoot } from '../../src/lib/paths.js';
import { startServerProcess, type ServerProcess } from '../helpers/server.js';

const run = promisify(execFile);
// This file is about the embedded database: the CLI and the server must not pick up a PostgreSQL URL.
delete process.env.DATABASE_URL;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-adm-'));
const pgliteDir = path.join(dir, 'db');
const socket = path.join(pgliteDir, 'admin.sock');
const serverEnv = { PGLITE_DIR: pgliteDir, EXPORT_INTERVAL_SECONDS: '0', VALUATION_JOB: 'off', STATUS_PROBE_INTERVAL_SECONDS: '0' };

/** Runs `quotegate <args>` (bin/quotegate.js) on the test's PGlite directory; resolves with stdout, rejects with code and stderr on failure. */
const cli = async (...args: string[]) => (await run(process.execPath, [path.join(projectRoot, 'bin', 'quotegate.js'), ...args], { cwd: projectRoot, env: { ...process.env, PGLITE_DIR: pgliteDir } })).stdout;
const json = async (...args: string[]) => JSON.parse((await cli(...args, '--json')).trim().split('\n').pop()!);
const me = (server: ServerProcess, key: string) => fetch(`${server.url}/me`, { headers: { Authorization: `Bearer ${key}` } });
const inDb = async <T>(work: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>) => {
  const db = await openDatabase({ pgliteDir });
  try {
    return await work(db);
  } finally {
    await db.close();
  }
};

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('admin commands while `quotegate serve` runs on embedded PGlite', () => {
  let server: ServerProcess;
  let made: { account_id: string; key_id: string; api_key: string };

  beforeAll(async () => {
    server = await startServerProcess(serverEnv);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('listens on an owner-only socket in the data directory and says so in its start-up hint', async () => {
    const st = fs.statSync(socket);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    // The hint is printed just after the line the start-up helper waits for.
    await expect.poll(() => server.output()).toContain('account create --credits 1000   (in another terminal, while the service runs)');
    expect(server.output()).not.toContain('stop the service');
  });

  it('account create, credits grant and key revoke go to the running service, whose API shows them at once', async () => {
    made = await json('account', 'create', '--credits', '5');
    expect(made.api_key).toMatch(/^qg_[A-Za-z0-9_-]{32}$/);
    expect(server.output()).toMatch(/"command":"account\.create","msg":"admin command"/);
    const first = await me(server, made.api_key);
    expect(first.status).toBe(200);
    expect((await first.json()).data.credit).toEqual({ total: 5, used: 0, remaining: 5 });

    expect(await json('credits', 'grant', made.account_id, '7')).toEqual({ account_id: made.account_id, granted: 7, total: 12 });
    expect((await (await me(server, made.api_key)).json()).data.credit).toEqual({ total: 12, used: 0, remaining: 12 });

    expect((await cli('key', 'revoke', made.key_id)).trim()).toBe(`key ${made.key_id} revoked`);
    const revoked = await me(server, made.api_key);
    expect(revoked.status).toBe(401);
    expect((await revoked.json()).error.code).toBe('unauthorized');
  });

  it('a refused command exits 1 with the error message and writes nothing', async () => {
    await expect(cli('credits', 'grant', 'nobody', '5')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: No account nobody\.$/m) });
    await expect(cli('account', 'create', '--id', made.account_id)).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/already exists/) });
    await expect(cli('credits', 'grant', made.account_id, '0')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/<amount> must be a whole number >= 1/) });
    await server.stop();
    expect(fs.existsSync(socket)).toBe(false);
    await inDb(async (db) => {
      expect(await db.query(`SELECT id FROM account ORDER BY id`)).toEqual([{ id: made.account_id }]);
      const ledger = await db.query<{ amount: string }>(`SELECT amount::text FROM credit_ledger ORDER BY id`);
      expect(ledger).toEqual([{ amount: '5' }, { amount: '7' }]);
    });
  });
});

describe('the admin channel after a crash', () => {
  it('a socket left by a killed service is ignored by the CLI and replaced by the next service', async () => {
    const crashed = await startServerProcess(serverEnv);
    const pid = Number(fs.readFileSync(path.join(pgliteDir, 'quotegate.lock'), 'utf8'));
    process.kill(pid, 'SIGKILL');
    await crashed.stop(); // resolves once the killed process has exited
    expect(fs.statSync(socket).isSocket()).toBe(true); // left behind

    // Nothing answers on the stale socket: the CLI opens the database itself (taking over the dead lock).
    const local = await json('token', 'create', '--name', 'offline');
    expect(local.token).toMatch(/^qgs_/);

    const next = await startServerProcess(serverEnv);
    try {
      const made = await json('account', 'create', '--id', 'after-crash', '--credits', '3');
      expect(next.output()).toMatch(/"command":"account\.create","msg":"admin command"/);
      expect((await (await me(next, made.api_key)).json()).data.credit).toEqual({ total: 3, used: 0, remaining: 3 });
    } finally {
      await next.stop();
    }
    expect(fs.existsSync(socket)).toBe(false);
    await inDb(async (db) => {
      expect(await db.query(`SELECT name FROM service_token ORDER BY name`)).toEqual([{ name: 'offline' }]);
    });
  });
});
