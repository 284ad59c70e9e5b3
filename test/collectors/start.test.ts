/**
 * The collectors' composition (src/collectors/start.ts) as `quotegate collect --once` runs it, with the settings read
 * as the command reads them (the process environment and `loadEnv`):
 * - credentials from COLLECTOR_CREDENTIALS_FILE (a JSON object, owner-only): a source configured only there runs and
 *   sends it, the environment variable wins, a source in neither is not configured; a bad file is a start-up error
 *   naming the file and never a value; the values never reach the log, the run records, /status or the status page;
 * - the exchange rates run before the sources, so a source's conversions use the rates of the same pass.
 * Real PGlite (or PostgreSQL with TEST_DATABASE_URL), fake sources against local upstreams (test/collectors/upstream.ts).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CSGOTRADER_RATES, ECB_RATES } from '../../src/collectors/rates.js';
import { collectOnce } from '../../src/collectors/start.js';
import { loadEnv } from '../../src/env.js';
import { Money, formatDecimal, toMoney } from '../../src/lib/money.js';
import { projectRoot } from '../../src/lib/paths.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { fakeBody, fakeSource, type FakeItem } from './fake-source.js';
import { startUpstream, type LocalUpstream } from './upstream.js';

const FILE_SECRET = 'file_sk_8d1e0c4b77';
const ENV_SECRET = 'env_sk_2a95f3e610';
const KEY = 'FAKE_KEYED_API_KEY';
/** A keyed fake source: sends its key as a Bearer header and in the query (so failed paths would name it). */
const keyed = fakeSource({ id: 'fake-keyed', providerCode: 'FAKE', markets: ['BITSKINS'], credentialEnv: KEY, completeListing: false, limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 300, retries: 0 } });
const item = (name: string, over: Partial<FakeItem> = {}): FakeItem => ({ name, market: 'BITSKINS', side: 'ask', currency: 'USD', price: '4.20', quantity: 2, ...over });

let t: TestApp;
let up: LocalUpstream;
let tmp: string;
let logLines: string[] = [];
const logger = pino(
  { level: 'debug' },
  new Writable({
    write(chunk, _enc, cb) {
      logLines.push(chunk.toString());
      cb();
    },
  }),
);
const saved = new Map<string, string | undefined>();

/** Sets (or, with undefined, unsets) process environment variables as a user would; all restored after the file. */
function setEnv(vars: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (!saved.has(k)) saved.set(k, process.env[k]);
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

let fileNo = 0;
/** Writes a credentials file (JSON of `body`, or the text itself) with `mode`; returns its path. */
function credentialsFile(body: unknown, mode = 0o600): string {
  const file = path.join(tmp, `credentials-${++fileNo}.json`);
  fs.writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body), { mode });
  fs.chmodSync(file, mode); // the umask may have taken bits away
  return file;
}

/** `quotegate collect --once --only fake-keyed` with COLLECTOR_CREDENTIALS_FILE = `file` (unset when undefined). */
function collectKeyed(file: string | undefined) {
  return collectOnce(t.db, logger, loadEnv(file ? { COLLECTOR_CREDENTIALS_FILE: file } : {}), { extraSources: [keyed], only: [keyed.id] });
}

beforeAll(async () => {
  t = await testApp();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-start-'));
  up = await startUpstream([{ path: '/v1/list', body: fakeBody([item('Keyed item 1'), item('Keyed item 2')]) }]);
  setEnv({ COLLECTOR_FAKE_KEYED_URL: up.url, [KEY]: undefined });
});
afterAll(async () => {
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await up.close();
  await t.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});
beforeEach(() => {
  up.play('/v1/list', null);
  setEnv({ [KEY]: undefined });
});

describe('credentials from COLLECTOR_CREDENTIALS_FILE', () => {
  it('a source configured only in the file runs, sends its credential, and its quotes are served', async () => {
    const seen = up.requests.length;
    const runs = await collectKeyed(credentialsFile({ [KEY]: FILE_SECRET }));
    expect(runs.map((r) => [r.sourceId, r.outcome, r.rowsAccepted])).toEqual([['fake-keyed', 'ok', 2]]);
    expect(up.requests.slice(seen).map((r) => r.headers.authorization)).toEqual([`Bearer ${FILE_SECRET}`]);
    const res = await t.get(`/prices?market_hash_name=${encodeURIComponent('Keyed item 1')}`, t.auth());
    expect(res.status).toBe(200);
    expect(res.body.data.markets.find((q: { provider_code: string }) => q.provider_code === 'FAKE')).toMatchObject({ market_code: 'BITSKINS', market_price_amount: '4.2' });
  });

  it('the environment variable wins over the file; a blank one counts as unset', async () => {
    const file = credentialsFile({ [KEY]: FILE_SECRET });
    setEnv({ [KEY]: ENV_SECRET });
    let seen = up.requests.length;
    expect((await collectKeyed(file)).map((r) => r.outcome)).toEqual(['ok']);
    expect(up.requests.slice(seen).map((r) => r.headers.authorization)).toEqual([`Bearer ${ENV_SECRET}`]);

    setEnv({ [KEY]: '  ' });
    seen = up.requests.length;
    expect((await collectKeyed(file)).map((r) => r.outcome)).toEqual(['ok']);
    expect(up.requests.slice(seen).map((r) => r.headers.authorization)).toEqual([`Bearer ${FILE_SECRET}`]);
  });

  it('in neither the environment nor the file: not configured, recorded so, its upstream never called', async () => {
    const seen = up.requests.length;
    // The file gives another source's credential (a registry source's name is known), and a blank value.
    for (const file of [credentialsFile({ CSFLOAT_API_KEY: 'another-key' }), credentialsFile({ [KEY]: '' }), undefined]) {
      const runs = await collectKeyed(file);
      expect(runs.map((r) => [r.sourceId, r.outcome, r.errorKind])).toEqual([['fake-keyed', 'not_configured', null]]);
    }
    expect(up.requests.length).toBe(seen);
    const [last] = await t.db.query<{ outcome: string }>(`SELECT outcome FROM collector_run WHERE source_id = 'fake-keyed' ORDER BY id DESC LIMIT 1`);
    expect(last?.outcome).toBe('not_configured');
    expect(logLines.join('')).toMatch(/FAKE_KEYED_API_KEY is not set/);
  });

  it('a bad file is an error naming the file and what is wrong, never a value of it; nothing runs', async () => {
    const runsBefore = await t.db.query(`SELECT id FROM collector_run`);
    const seen = up.requests.length;
    const cases: [file: string, message: RegExp][] = [
      [path.join(tmp, 'no-such-file.json'), /no such file/],
      [credentialsFile({ [KEY]: FILE_SECRET }, 0o644), /accessible by group or others \(mode 644\).*chmod 600/],
      [credentialsFile({ [KEY]: FILE_SECRET }, 0o640), /accessible by group or others \(mode 640\)/],
      [credentialsFile({ [KEY]: FILE_SECRET }, 0o604), /accessible by group or others \(mode 604\)/],
      [credentialsFile(`{"${KEY}": "${FILE_SECRET}"`), /is not JSON/],
      [credentialsFile(`${KEY}=${FILE_SECRET}\n`), /is not JSON/],
      [credentialsFile([FILE_SECRET]), /not a JSON object/],
      [credentialsFile({ [KEY]: 12345 }), /FAKE_KEYED_API_KEY is not a string/],
      // A misspelt name, and a value pasted as a name: counted, never shown; the known names are listed.
      [credentialsFile({ FAKE_KEYED_APIKEY: FILE_SECRET, [FILE_SECRET]: 'x' }), /2 names are not the credential variable of any source \(known: .*BUFF163_COOKIE.*FAKE_KEYED_API_KEY/],
      [tmp, /is not a regular file/],
    ];
    const messages: string[] = [];
    for (const [file, message] of cases) {
      const err = await collectKeyed(file).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(err, file).toBeInstanceOf(Error);
      expect(err!.message, file).toContain(`COLLECTOR_CREDENTIALS_FILE ${file}: `);
      expect(err!.message, file).toMatch(message);
      messages.push(err!.message);
    }
    expect(messages.join('\n')).not.toContain(FILE_SECRET);
    expect(messages.join('\n')).not.toContain('12345');
    expect(up.requests.length).toBe(seen);
    expect(await t.db.query(`SELECT id FROM collector_run`)).toEqual(runsBefore);
  });

  it('`quotegate collect --once` refuses a file open to others at start: exit status 1, the file named, no value printed', async () => {
    const file = credentialsFile({ [KEY]: FILE_SECRET }, 0o644);
    // The real command, on an embedded in-memory database of its own (the file is refused before anything runs).
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/cli/collect.ts'), 'collect', '--once', '--only', 'rates'], {
      cwd: projectRoot,
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'DATABASE_URL')), PGLITE_DIR: 'memory://', COLLECTOR_CREDENTIALS_FILE: file, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, out).toBe(1);
    expect(out).toContain(`error: COLLECTOR_CREDENTIALS_FILE ${file}: is accessible by group or others (mode 644)`);
    expect(out).not.toContain(FILE_SECRET);
  });

  it('the credential from the file never reaches the log, the run records, /status or the status page', async () => {
    const file = credentialsFile({ [KEY]: FILE_SECRET });
    logLines = [];
    expect((await collectKeyed(file)).map((r) => r.outcome)).toEqual(['ok']);
    // Failures whose messages would name the requested path, which holds the key in its query.
    for (const mode of ['503', 'hang', 'html', 'truncated'] as const) {
      up.play('/v1/list', mode);
      expect((await collectKeyed(file)).map((r) => r.outcome), mode).not.toEqual(['ok']);
    }
    const rows = await t.db.query<{ row: string }>(`SELECT row_to_json(r)::text AS row FROM collector_run r WHERE source_id = 'fake-keyed'`);
    expect(rows.map((r) => r.row).join('\n')).toMatch(/\[credential\]/); // the scrubbed path is there, the key is not
    const status = await t.get('/status');
    expect(status.status).toBe(200);
    const page = await t.get('/status/page');
    expect(page.status).toBe(200);
    expect(page.text).toContain('BITSKINS'); // the page shows the collection it counted
    const everything = [logLines.join(''), rows.map((r) => r.row).join('\n'), status.text, page.text].join('\n');
    expect(everything).not.toContain(FILE_SECRET);
    expect(everything).not.toContain(encodeURIComponent(FILE_SECRET));
    expect(logLines.length).toBeGreaterThan(0);
  });
});

describe('`quotegate collect --once`: the exchange rates first', () => {
  let ecb: LocalUpstream;
  let csgotrader: LocalUpstream;
  let eurUp: LocalUpstream;
  const NAME = 'Converted at the new rate';
  const eurSource = fakeSource({ id: 'fake-eur', providerCode: 'FAKE', markets: ['BITSKINS'], completeListing: false });

  beforeAll(async () => {
    ecb = await startUpstream([{ path: ECB_RATES.path, file: path.join(import.meta.dirname, 'fixtures/ecb/eurofxref-daily-2025-05-09.xml'), contentType: 'text/xml' }]);
    csgotrader = await startUpstream([
      { path: CSGOTRADER_RATES.path, file: path.join(import.meta.dirname, 'fixtures/csgotrader/exchange_rates_2026-07-16.json'), headers: { 'Last-Modified': 'Thu, 16 Jul 2026 06:00:00 GMT' } },
    ]);
    // A EUR price on BITSKINS, a USD market: converted with EUR's official rate.
    eurUp = await startUpstream([{ path: '/v1/list', body: fakeBody([item(NAME, { currency: 'EUR', price: '1000.00' })]) }]);
    setEnv({ COLLECTOR_ECB_URL: ecb.url, COLLECTOR_CSGOTRADER_URL: csgotrader.url, COLLECTOR_FAKE_EUR_URL: eurUp.url });
  });
  afterAll(async () => {
    await Promise.all([ecb, csgotrader, eurUp].map((u) => u.close()));
  });

  it('runs the rates before the sources: the conversions of the pass use the rates it collected', async () => {
    // The stored rates are older than the recorded ECB day, which the pass therefore writes.
    await t.db.query(`UPDATE currency SET rate_date = '2025-01-01'`);
    const rate = async (code: string) => {
      const r = await t.get(`/currencies?search=${code}`);
      expect(r.status).toBe(200);
      return r.body.data.find((c: { code: string }) => c.code === code).usd_rate as string;
    };
    const eurBefore = await rate('EUR');
    expect(eurBefore).not.toBe('1.1252'); // else this test could not tell the rates apart

    const runs = await collectOnce(t.db, logger, loadEnv(), { extraSources: [eurSource], only: ['fake-eur', 'rates'] });

    expect(runs.map((r) => [r.sourceId, r.outcome])).toEqual([
      ['rates', 'ok'],
      ['fake-eur', 'ok'],
    ]);
    const eurAfter = await rate('EUR');
    expect(eurAfter).toBe('1.1252'); // the recorded USD per EUR
    const usd = await rate('USD');
    const res = await t.get(`/prices?market_hash_name=${encodeURIComponent(NAME)}`, t.auth());
    expect(res.status).toBe(200);
    const q = res.body.data.markets.find((m: { provider_code: string }) => m.provider_code === 'FAKE');
    const at = (eur: string) => formatDecimal(toMoney('1000.00').times(toMoney(eur)).div(toMoney(usd)).toDecimalPlaces(2, Money.ROUND_HALF_EVEN));
    expect(q).toMatchObject({ market_code: 'BITSKINS', market_currency_code: 'USD', market_price_amount: at(eurAfter) });
    expect(q.market_price_amount).not.toBe(at(eurBefore));
  });
});
