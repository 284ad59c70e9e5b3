/**
 * Full-scale synthetic catalogue for the export benchmark: the real market hash names of
 * `data/items/market_hash_names.txt` (36,307, see data/items/PROVENANCE.md) on 40 marketplaces (the 16 of
 * data/websites.json in their own currencies plus 24 synthetic ones), ask and bid, loaded through the
 * ingestion service's bulk path (`ingestQuotes`), exactly as real feeds are.
 *
 * Realism, deterministic per name (seeded by its hash): a base price log-normal around 3 USD (cases
 * and stickers cheap, a long tail to thousands); each market within +-6 % of it, in its currency at a
 * fixed rate; bids 3-15 % below the market's ask; quantities long-tailed (1 to a few thousand, fewer
 * for dear items); every item on every market, both sides (the full scale); 4 % of quotes
 * delisted. Prices are drawn as floats and enter as decimal.js at 6 places, rounded to the market's
 * precision (synthetic data only; real feeds never pass through a float).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import cliProgress from 'cli-progress';
import pg from 'pg';
import type { Database } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { ingestQuotes } from '../src/quotes/ingestion.js';
import type { QuoteObservation } from '../src/validation/ingest.js';
import { toMoney } from '../src/lib/money.js';
import { projectRoot } from '../src/lib/paths.js';

/** The real CS2 market hash names in the repository, one per line (data/items/PROVENANCE.md). */
export const NAMES_FILE = path.join(projectRoot, 'data', 'items', 'market_hash_names.txt');

/** Fixed rates from USD used to express synthetic prices in each market's currency. */
const RATES: Record<string, string> = { USD: '1', CNY: '7.1', EUR: '0.92', RUB: '92' };

interface MarketSpec {
  code: string;
  currency: string;
  /** Share of items listed there. */
  coverage: number;
}

/** The 40 markets: the catalogue's 16 (in their currencies) and 24 synthetic ones. */
export function scaleMarkets(): MarketSpec[] {
  const file = JSON.parse(fs.readFileSync(path.join(projectRoot, 'data', 'websites.json'), 'utf8')) as { websites: { code: string; currency: string }[] };
  const websites = file.websites;
  const real = websites.map((w) => ({ code: w.code, currency: RATES[w.currency] ? w.currency : 'USD', coverage: 1 }));
  const synthetic = Array.from({ length: 40 - real.length }, (_, i) => ({
    code: `SYNTH${String(i + 1).padStart(2, '0')}`,
    currency: ['USD', 'EUR', 'CNY', 'RUB'][i % 4]!,
    coverage: 1,
  }));
  return [...real, ...synthetic];
}

/** Uniform numbers in [0, 1) from a name and a salt (deterministic). */
function uniforms(seed: string, n: number): number[] {
  const h = crypto.createHash('sha256').update(seed).digest();
  return Array.from({ length: n }, (_, i) => h.readUInt32BE((i * 4) % 28) / 2 ** 32);
}

/** A standard normal from two uniforms (Box-Muller). */
const normal = (u1: number, u2: number) => Math.sqrt(-2 * Math.log(Math.max(u1, 1e-12))) * Math.cos(2 * Math.PI * u2);

/** The observations of one item on every market it is listed on (ask and bid). */
export function itemObservations(name: string, markets: MarketSpec[], observedAt: Date): QuoteObservation[] {
  const [a, b] = uniforms(name, 2) as [number, number];
  const baseUsd = Math.min(20_000, Math.max(0.03, 3 * Math.exp(1.6 * normal(a, b))));
  const out: QuoteObservation[] = [];
  for (const m of markets) {
    const [cover, spread, bidGap, qty, gone, gone2] = uniforms(`${name}\u0000${m.code}`, 6) as number[];
    if (cover! > m.coverage) continue;
    const ask = baseUsd * (0.94 + 0.12 * spread!) * Number(RATES[m.currency]);
    const bid = ask * (0.85 + 0.12 * bidGap!);
    const quantity = Math.max(1, Math.round(Math.exp(8 * qty! * qty!) / Math.sqrt(baseUsd + 1)));
    const base = { appId: '730', marketHashName: name, marketCode: m.code, providerCode: m.code, currencyCode: m.currency, observedAt, isQuantityMinimum: false, isAllItemsSamePrice: false };
    // Prices as the markets publish them: 2 decimals (0 for RUB), via decimal.js only.
    const dp = m.currency === 'RUB' ? 0 : 2;
    out.push({ ...base, side: 'ask', price: toMoney(ask.toFixed(6)).toDecimalPlaces(dp), quantity, delisted: gone! < 0.04 });
    out.push({ ...base, side: 'bid', price: toMoney(bid.toFixed(6)).toDecimalPlaces(dp), quantity: Math.max(1, Math.round(quantity / 3)), delisted: gone2! < 0.04 });
  }
  return out;
}

/**
 * Loads the full-scale catalogue (idempotent: a second run changes nothing). Two passes: listings
 * first, then delistings of the chosen 4 %, so delisted quotes keep their last price as in real feeds.
 * Returns the number of observations sent.
 */
/** Quotes the full-scale catalogue holds once loaded. */
export function expectedScaleQuotes(): number {
  const names = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').filter((s) => s.trim()).length;
  return names * scaleMarkets().length * 2;
}

export async function loadScaleData(db: Database, onProgress?: (done: number, total: number) => void): Promise<number> {
  const names = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
  const markets = scaleMarkets();
  const listedAt = new Date('2026-11-20T00:00:00Z');
  const delistedAt = new Date('2026-11-20T06:00:00Z');
  let sent = 0;
  const perBatch = 400; // items per ingestion call (about 25k observations)
  for (let i = 0; i < names.length; i += perBatch) {
    const obs = names.slice(i, i + perBatch).flatMap((n) => itemObservations(n, markets, listedAt));
    await ingestQuotes(db, obs.map((o) => ({ ...o, delisted: false })));
    const gone = obs.filter((o) => o.delisted).map((o) => ({ ...o, price: null, observedAt: delistedAt }));
    await ingestQuotes(db, gone);
    sent += obs.length + gone.length;
    onProgress?.(Math.min(i + perBatch, names.length), names.length);
  }
  await db.execute(`ANALYZE item, source_quote`);
  return sent;
}

/** Creates the PostgreSQL database `url` names when it does not exist (benchmarks' own databases, e.g. qg_scale). */
export async function ensurePostgresDatabase(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: new URL('/postgres', url).toString() });
  await admin.connect();
  try {
    const name = new URL(url).pathname.slice(1);
    const exists = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await admin.end();
  }
}

/**
 * A new empty database `name` on the PostgreSQL server of `serverUrl` (dropped first when it exists, its sessions
 * ended): a benchmark's own database. Returns its connection string.
 */
export async function freshPostgresDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops the database `name` of the PostgreSQL server of `serverUrl` when it exists (its sessions ended). */
export async function dropPostgresDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/**
 * Loads the full-scale catalogue into `db` unless it already holds it (the quote count reaches
 * `expectedScaleQuotes()`): the bundled catalogue (marketplaces, currencies, fees), then `loadScaleData` with a
 * progress bar on stderr. Shared by `npm run bench:export` and `BENCH_SCALE=full npm run bench`, so both measure
 * the same catalogue. Returns the catalogue's counts.
 */
export async function ensureScaleCatalogue(db: Database): Promise<{ items: number; quotes: number; markets: number; delisted: number }> {
  const [{ n: quotesBefore }] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM source_quote`)) as [{ n: number }];
  if (quotesBefore < expectedScaleQuotes()) {
    await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
    const bar = new cliProgress.SingleBar({ format: 'scale data [{bar}] {value}/{total} items | {eta}s left', stream: process.stderr }, cliProgress.Presets.shades_classic);
    const started = Date.now();
    let begun = false;
    const sent = await loadScaleData(db, (done, total) => {
      if (!begun) bar.start(total, 0);
      begun = true;
      bar.update(done);
    });
    bar.stop();
    console.error(`loaded ${sent} observations in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  const [scale] = await db.query<{ items: number; quotes: number; markets: number; delisted: number }>(
    `SELECT (SELECT count(*)::int FROM item) AS items, count(*)::int AS quotes, count(DISTINCT market_code)::int AS markets,
            count(*) FILTER (WHERE delisted_at IS NOT NULL)::int AS delisted FROM source_quote`,
  );
  return scale!;
}
