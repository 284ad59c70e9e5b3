/**
 * Export snapshot builds that fail (issue: reliability suite, part 4), on a private PostgreSQL server
 * with a real `quotegate serve` process serving GET /prices/export and the real CLI building:
 * - the build throws (an error raised while a chunk is written);
 * - the disk is full (PostgreSQL's own `disk_full` error, SQLSTATE 53100, raised the same way);
 * - the building process is killed in the middle of a build (SIGKILL).
 * In every case the previous snapshot keeps being served with the same bytes and ETag (and 304 for it),
 * and the next good build cleans up the leftovers and publishes the new data.
 * The faults are injected with a trigger on export_chunk: the service's code is not touched.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { ingestQuotes, obs, dataDir } from '../helpers/app.js';
import { startServerProcess, type ServerProcess } from '../helpers/server.js';
import { projectRoot } from '../../src/lib/paths.js';
import { createDatabase, sleep, startPrivatePostgres, type PrivatePostgres } from './servers.js';
import { writeFigures } from './figures.js';

const run = promisify(execFile);
const CLI = ['--import', 'tsx', path.join(projectRoot, 'src/cli/main.ts')];
let pgServer: PrivatePostgres;
let url: string;
let db: Database;
let svc: ServerProcess;
let key: string;

beforeAll(async () => {
  pgServer = await startPrivatePostgres();
  url = await createDatabase(pgServer, 'qg_faults');
  db = await openDatabase({ url });
  await importCatalogue(db.prisma, dataDir);
  await ingestQuotes(
    db,
    Array.from({ length: 300 }, (_, i) => obs(`Fault Item ${String(i).padStart(3, '0')}`, { price: `${100 + i}.5` })),
  );
  key = (await createAccount(db, { credits: 1_000_000n })).key;
  svc = await startServerProcess({ DATABASE_URL: url, QUOTEGATE_RATE_LIMITS: 'off', EXPORT_INTERVAL_SECONDS: '0', STATUS_PROBE_INTERVAL_SECONDS: '0', LOG_LEVEL: 'error' });
});
afterAll(async () => {
  await svc?.stop();
  await db?.close();
  await pgServer?.destroy();
});

/** `quotegate export build` against the test database: exit code and output. */
async function build(): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI, 'export', 'build', '--side', 'ask', '--json'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'error' },
    });
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

/** GET /prices/export (side ask): status, ETag and the decoded body. */
async function download(ifNoneMatch?: string) {
  const res = await fetch(`${svc.url}/prices/export`, {
    headers: { Authorization: `Bearer ${key}`, ...(ifNoneMatch ? { 'If-None-Match': ifNoneMatch } : {}) },
  });
  const raw = Buffer.from(await res.arrayBuffer());
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    // fetch undoes Content-Encoding: gzip, so these are the JSON bytes.
    sha: raw.length ? crypto.createHash('sha256').update(raw).digest('hex') : null,
    body: res.status === 200 ? JSON.parse(raw.toString('utf8')) : null,
  };
}

async function injectFault(body: string) {
  await db.query(`CREATE OR REPLACE FUNCTION qg_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NEW; END $$`);
  await db.query(`DROP TRIGGER IF EXISTS qg_fault ON export_chunk`);
  await db.query(`CREATE TRIGGER qg_fault BEFORE INSERT ON export_chunk FOR EACH ROW EXECUTE FUNCTION qg_fault()`);
}
async function clearFault() {
  await db.query(`DROP TRIGGER IF EXISTS qg_fault ON export_chunk`);
}

const priceOf = (body: any, name: string) => body.items.find((i: any) => i.market_hash_name === name)?.markets[0]?.market_price_amount;

describe('export snapshot builds that fail', () => {
  let first: Awaited<ReturnType<typeof download>>;
  const figures: Record<string, unknown> = {};

  it('publishes the first snapshot, then the data changes', async () => {
    expect((await build()).code).toBe(0);
    first = await download();
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(300);
    expect(priceOf(first.body, 'Fault Item 000')).toBe('100.5');
    await ingestQuotes(db, [obs('Fault Item 000', { price: '99.9', observedAt: new Date('2026-07-17T00:00:00Z') })]);
  });

  const stillServed = async () => {
    const now = await download();
    expect(now.status).toBe(200);
    expect(now.etag).toBe(first.etag);
    expect(now.sha).toBe(first.sha);
    expect(priceOf(now.body, 'Fault Item 000')).toBe('100.5');
    expect((await download(first.etag!)).status).toBe(304);
  };

  it('a build that throws: the CLI fails, the previous snapshot and ETag are still served', async () => {
    await injectFault(`RAISE EXCEPTION 'simulated builder failure';`);
    try {
      const r = await build();
      expect(r.code).not.toBe(0);
      expect(r.out).toContain('simulated builder failure');
    } finally {
      await clearFault();
    }
    await stillServed();
    figures.thrown = 'previous snapshot served, same ETag and bytes, 304 for it';
  });

  it('a full disk (SQLSTATE 53100): the previous snapshot and ETag are still served', async () => {
    await injectFault(`RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';`);
    try {
      const r = await build();
      expect(r.code).not.toBe(0);
      expect(r.out).toContain('No space left on device');
    } finally {
      await clearFault();
    }
    await stillServed();
    figures.disk_full = 'previous snapshot served, same ETag and bytes, 304 for it';
  });

  it('the builder is killed mid-build: the previous snapshot is served; the next build cleans up and publishes', async () => {
    await injectFault(`PERFORM pg_sleep(60);`);
    const child = spawn(process.execPath, [...CLI, 'export', 'build', '--side', 'ask'], { cwd: projectRoot, env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'error' }, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal === 'SIGKILL' ? -9 : _code)));
    // Wait until the build is writing its first chunk (stuck in the trigger), then kill it.
    let writing = false;
    for (let i = 0; i < 150 && !writing; i += 1) {
      const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'INSERT INTO export_chunk%' AND state = 'active'`);
      writing = (rows[0]?.n ?? 0) > 0;
      if (!writing) await sleep(200);
    }
    expect(writing).toBe(true);
    child.kill('SIGKILL');
    expect(await exited).toBe(-9);
    await clearFault();
    const leftovers = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM export_build WHERE NOT complete`);
    expect(leftovers[0]!.n).toBeGreaterThan(0);
    await stillServed();
    // The killed build's session ends once PostgreSQL sees its client gone (client_connection_check_interval);
    // until then it holds the builder lock and a new build is refused, never run twice.
    let r = await build();
    const started = Date.now();
    while (r.code !== 0 && r.out.includes('another process is building') && Date.now() - started < 90_000) {
      await sleep(1000);
      r = await build();
    }
    expect(r.code).toBe(0);
    figures.killed = { lock_released_after_ms: Date.now() - started };
    const after = await download();
    expect(after.etag).not.toBe(first.etag);
    expect(priceOf(after.body, 'Fault Item 000')).toBe('99.9');
    expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM export_build WHERE NOT complete`))[0]!.n).toBe(0);
    writeFigures('export', figures);
  });
});
