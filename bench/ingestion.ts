/**
 * `npm run bench:ingest`: quote ingestion rate on the PostgreSQL server, three ways, the same rows in the
 * same run, each into a fresh database with the bundled catalogue:
 *
 * 1. mutation: `ingestQuotes` batches of 10,000 rows over HTTP to a `quotegate serve` child process
 *    (machine token, validation, one transaction per batch, daily closes, ingestion counters), one batch
 *    at a time as a collector sends them;
 * 2. bulk path: `ingestQuotes()` of the ingestion service in slices of 20,000 (what `quotegate import` and
 *    the first start use; also writes closes and counters);
 * 3. raw: a plain multi-row `INSERT INTO source_quote (...) VALUES (...), (...)` of the same rows, 1,000
 *    per statement, items created beforehand (not timed): the floor for writing these rows at all.
 *
 * Rows: BENCH_ROWS (default 150,000) = real market hash names (data/items/market_hash_names.txt) x the 15 current
 * catalogue markets, ask side, in each market's currency. Pass 1 inserts them (new quotes); pass 2 (paths
 * 1 and 2) observes them all again an hour later, a third with a new price (updates, the steady state).
 * BENCH_DATABASE_URL: the server (default postgresql://postgres@127.0.0.1:5432/postgres); the databases
 * qg_bench_ingest_* are created and dropped. Writes bench/results/ingestion-<time>.json.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { createServiceToken } from '../src/accounts/accounts.js';
import { ensureItems, ingestQuotes } from '../src/quotes/ingestion.js';
import type { QuoteObservation } from '../src/validation/ingest.js';
import { toMoney } from '../src/lib/money.js';
import { projectRoot } from '../src/lib/paths.js';
import { NAMES_FILE } from './scale-data.js';
import { startServerProcess } from '../test/helpers/server.js';

const server = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.BENCH_ROWS ?? 150_000);
const BATCH = 10_000;

async function freshDatabase(suffix: string): Promise<{ db: Database; url: string; drop: () => Promise<void> }> {
  const name = `qg_bench_ingest_${suffix}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = await openDatabase({ url: url.toString() });
  await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

// The rows: names x current markets, a deterministic price per (name, market).
const websites = (JSON.parse(fs.readFileSync(path.join(projectRoot, 'data', 'websites.json'), 'utf8')) as { websites: { code: string; currency: string; is_deprecated: boolean }[] }).websites.filter(
  (w) => !w.is_deprecated,
);
const names = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean).slice(0, Math.ceil(ROWS / websites.length));
const cents = (seed: string) => 100 + (crypto.createHash('sha256').update(seed).digest().readUInt32BE(0) % 5_000_000);
const at1 = '2026-11-20T10:00:00.000Z';
const at2 = '2026-11-20T11:00:00.000Z';
const rows = (pass: 1 | 2) =>
  names
    .flatMap((name) => websites.map((w) => ({ name, w })))
    .slice(0, ROWS)
    .map(({ name, w }, i) => {
      const c = cents(`${name}\u0000${w.code}`) + (pass === 2 && i % 3 === 0 ? 7 : 0);
      return { name, market: w.code, currency: w.currency, price: `${Math.floor(c / 100)}.${String(c % 100).padStart(2, '0')}`, observedAt: pass === 1 ? at1 : at2 };
    });
type Row = ReturnType<typeof rows>[number];
const observation = (r: Row): QuoteObservation => ({
  appId: '730',
  marketHashName: r.name,
  marketCode: r.market,
  providerCode: r.market,
  side: 'ask',
  currencyCode: r.currency,
  price: toMoney(r.price),
  quantity: 3,
  isQuantityMinimum: false,
  isAllItemsSamePrice: false,
  observedAt: new Date(r.observedAt),
});

const results: Record<string, { rows: number; seconds: number; rows_per_second: number }> = {};
const record = (key: string, n: number, ms: number) => {
  results[key] = { rows: n, seconds: Math.round(ms) / 1000, rows_per_second: Math.round((n / ms) * 1000) };
  console.log(`${key.padEnd(28)} ${String(n).padStart(8)} rows  ${(ms / 1000).toFixed(2).padStart(7)} s  ${results[key].rows_per_second} rows/s`);
};
const pass1 = rows(1);
const pass2 = rows(2);
console.log(`${pass1.length} rows (${names.length} names x ${websites.length} markets), batches of ${BATCH}`);

// 1. Through the mutation, over HTTP.
{
  const { db, url, drop } = await freshDatabase('mutation');
  const token = (await createServiceToken(db, 'bench')).token;
  const proc = await startServerProcess({
    DATABASE_URL: url,
    EXPORT_INTERVAL_SECONDS: '0',
    STATUS_PROBE_INTERVAL_SECONDS: '0',
    VALUATION_JOB: 'off',
    LOG_LEVEL: 'warn',
  });
  const query = `mutation($q: [SourceQuoteInput!]!) { ingestQuotes(quotes: $q) { inserted updated skipped } }`;
  const send = async (part: Row[]) => {
    const q = part.map((r) => ({ marketHashName: r.name, marketCode: r.market, providerCode: r.market, side: 'ask', currencyCode: r.currency, price: r.price, quantity: 3, isQuantityMinimum: false, isAllItemsSamePrice: false, observedAt: r.observedAt }));
    const res = await fetch(`${proc.url}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables: { q } }) });
    const body = (await res.json()) as { data?: unknown; errors?: unknown };
    if (res.status !== 200 || body.errors) throw new Error(`ingestQuotes failed: ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
  };
  for (const [key, list] of [['mutation insert', pass1], ['mutation update', pass2]] as const) {
    const t0 = performance.now();
    for (let i = 0; i < list.length; i += BATCH) await send(list.slice(i, i + BATCH));
    record(key, list.length, performance.now() - t0);
  }
  await proc.stop();
  await drop();
}

// 2. The bulk path (ingestion service, as `quotegate import` uses it).
{
  const { db, drop } = await freshDatabase('bulk');
  for (const [key, list] of [['bulk path insert', pass1], ['bulk path update', pass2]] as const) {
    const obs = list.map(observation);
    const t0 = performance.now();
    for (let i = 0; i < obs.length; i += 20_000) await ingestQuotes(db, obs.slice(i, i + 20_000));
    record(key, obs.length, performance.now() - t0);
  }
  await drop();
}

// 3. A raw multi-row INSERT of the same rows.
{
  const { db, drop } = await freshDatabase('raw');
  const ids = await ensureItems(db, pass1.map((r) => ({ appId: '730', marketHashName: r.name })));
  const per = 1000;
  const t0 = performance.now();
  for (let i = 0; i < pass1.length; i += per) {
    const part = pass1.slice(i, i + per);
    const values: string[] = [];
    const params: unknown[] = [];
    for (const r of part) {
      const b = params.length;
      values.push(`($${b + 1}, $${b + 2}, $${b + 2}, 'ask', $${b + 3}, $${b + 4}::numeric, 3, false, false, $${b + 5}::timestamptz, $${b + 5}::timestamptz, NULL, $${b + 5}::timestamptz)`);
      params.push(ids.get(`730\u0000${r.name}`), r.market, r.currency, r.price, r.observedAt);
    }
    await db.query(
      `INSERT INTO source_quote (item_id, market_code, provider_code, side, currency_code, price, quantity, is_quantity_minimum,
         is_all_items_same_price, changed_at, observed_at, delisted_at, fresh_at) VALUES ${values.join(', ')}`,
      params,
    );
  }
  record('raw multi-row INSERT', pass1.length, performance.now() - t0);
  await drop();
}

const out = path.join(projectRoot, 'bench', 'results', `ingestion-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify({ rows: ROWS, batch: BATCH, results }, null, 2));
console.log(`wrote ${path.relative(projectRoot, out)}`);
