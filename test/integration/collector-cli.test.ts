/** `quotegate import` of collector files (CSV, NDJSON) and `quotegate jobs run valuation`, as a shell user runs them. */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { projectRoot } from '../../src/lib/paths.js';
import { dataDir } from '../helpers/app.js';

const run = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-collector-cli-'));
const pglite = path.join(dir, 'db');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const cli = async (...args: string[]) => cliWith({}, ...args);
const cliWith = async (extra: Record<string, string>, ...args: string[]) => {
  const env: Record<string, string | undefined> = { ...process.env, PGLITE_DIR: pglite, ...extra };
  delete env.DATABASE_URL;
  return run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: projectRoot, env });
};
const inDb = async <T>(work: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>) => {
  const db = await openDatabase({ pgliteDir: pglite });
  try {
    return await work(db);
  } finally {
    await db.close();
  }
};
const quotes = (name: string) =>
  inDb((db) =>
    db.query<{ market_code: string; side: string; price: string; quantity: number | null }>(
      `SELECT q.market_code, q.side::text AS side, q.price::text AS price, q.quantity FROM source_quote q JOIN item i ON i.id = q.item_id
        WHERE i.market_hash_name = $1 ORDER BY q.market_code, q.side`,
      [name],
    ),
  );

beforeAll(async () => {
  await inDb((db) => importCatalogue(db.prisma, dataDir));
});

describe('quotegate import <collector file>', () => {
  it('imports a CSV file (quoted names, empty cells as null)', async () => {
    const file = path.join(dir, 'scan.csv');
    fs.writeFileSync(
      file,
      [
        'market_hash_name,market_code,provider_code,side,currency_code,price,quantity,is_quantity_minimum,is_all_items_same_price,observed_at,delisted',
        '"AK-47 | Redline (Field-Tested)",BUFF163,BUFF163,ask,CNY,201.85,17,false,false,2026-07-15T10:00:00Z,',
        '"AK-47 | Redline (Field-Tested)",BUFF163,BUFF163,bid,CNY,198.19,,,,2026-07-15T10:00:00Z,false',
        '"AK-47 | Redline, Souvenir",YOUPIN,YOUPIN,ask,CNY,300,1,,,2026-07-16T10:00:00+08:00,',
      ].join('\n'),
    );
    const { stdout } = await cli('import', file);
    expect(stdout).toContain('observations 3: 3 new quotes');
    expect(await quotes('AK-47 | Redline (Field-Tested)')).toEqual([
      { market_code: 'BUFF163', side: 'ask', price: '201.8500000000', quantity: 17 },
      { market_code: 'BUFF163', side: 'bid', price: '198.1900000000', quantity: null },
    ]);
    expect(await quotes('AK-47 | Redline, Souvenir')).toHaveLength(1);
  });

  it('imports a gzip\'d NDJSON file; re-importing it changes nothing', async () => {
    const file = path.join(dir, 'scan.ndjson.gz');
    const lines = [
      { market_hash_name: 'AK-47 | Redline (Field-Tested)', market_code: 'CSFLOAT', provider_code: 'CSFLOAT', side: 'ask', currency_code: 'USD', price: '28.18', quantity: 4, observed_at: '2026-07-16T00:00:00Z' },
      {},
      { market_hash_name: 'AK-47 | Redline (Field-Tested)', market_code: 'BUFF163', provider_code: 'BUFF163', side: 'ask', currency_code: 'CNY', price: null, delisted: true, observed_at: '2026-07-16T00:00:00Z' },
    ];
    fs.writeFileSync(file, zlib.gzipSync(lines.map((l, i) => (i === 1 ? '' : JSON.stringify(l))).join('\n') + '\n'));
    expect((await cli('import', file)).stdout).toContain('observations 2: 1 new quotes, 1 updated');
    expect((await quotes('AK-47 | Redline (Field-Tested)')).map((q) => [q.market_code, q.side, q.quantity])).toEqual([
      ['BUFF163', 'ask', 0],
      ['BUFF163', 'bid', null],
      ['CSFLOAT', 'ask', 4],
    ]);
    expect((await cli('import', file)).stdout).toContain('observations 2: 0 new quotes, 0 updated, 2 unchanged or stale');
  });

  it('refuses a file with invalid rows whole, naming each line and column', async () => {
    const file = path.join(dir, 'broken.ndjson');
    const ok = { market_hash_name: 'Never Imported', market_code: 'BUFF163', provider_code: 'BUFF163', side: 'ask', currency_code: 'CNY', price: '5', observed_at: '2026-07-16T00:00:00Z' };
    fs.writeFileSync(
      file,
      [JSON.stringify(ok), JSON.stringify({ ...ok, price: 5 }), JSON.stringify({ ...ok, market_code: 'NOWHERE' }), '{not json', JSON.stringify({ ...ok, colour: 'red' })].join('\n'),
    );
    const err = await cli('import', file).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(1);
    expect(err?.stderr).toContain('line 2: price: ');
    expect(err?.stderr).toContain('line 4: is not valid JSON');
    expect(err?.stderr).toContain('line 5: unknown column "colour"');
    expect(await quotes('Never Imported')).toEqual([]);
    // Shape problems come first; once the shapes are right, the catalogue names the unknown market.
    fs.writeFileSync(file, [JSON.stringify(ok), JSON.stringify({ ...ok, market_code: 'NOWHERE' })].join('\n'));
    const err2 = await cli('import', file).catch((e: { stderr: string }) => e);
    expect((err2 as { stderr: string }).stderr).toContain('line 2: market_code: unknown market NOWHERE');
    expect(await quotes('Never Imported')).toEqual([]);
  });
});

describe('quotegate jobs run valuation', () => {
  it('values a date from the closes before it and publishes it', async () => {
    const { stdout } = await cli('jobs', 'run', 'valuation', '--date', '2026-07-17', '--json');
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toMatchObject({ date: '2026-07-17', items: 2, two_sided: 1, one_sided: 1 });
    const rows = await inDb((db) => db.query<{ valuation_date: string }>(`SELECT valuation_date::text AS valuation_date FROM valuation`));
    expect(rows).toEqual([{ valuation_date: '2026-07-17' }, { valuation_date: '2026-07-17' }]);
    await expect(cli('jobs', 'run', 'valuation', '--date', '2026-02-30')).rejects.toMatchObject({ code: 1 });
  });

  it('runs the job under the VALUATION_JOB_HEAP_MB cap: one too small for the job fails it with V8\'s out-of-memory error', async () => {
    const failed = (await cliWith({ VALUATION_JOB_HEAP_MB: '8' }, 'jobs', 'run', 'valuation', '--date', '2026-07-17').catch((e) => e)) as { code: number; stderr: string };
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/heap out of memory|heap limit/i);
    // 0: in the CLI's own process, uncapped
    const { stdout } = await cliWith({ VALUATION_JOB_HEAP_MB: '0' }, 'jobs', 'run', 'valuation', '--date', '2026-07-17', '--json');
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toMatchObject({ date: '2026-07-17', items: 2 });
  });
});
