/**
 * Importers of the bundled price history (issue: price history; the PROVENANCE.md of each data/history folder). Imported
 * history is its own kind of series, never a quote: it lands in `candle_month` only, through the history
 * writer (src/history/candles.ts `writeMonths`), whole months at a time, so a replay writes the same rows.
 *
 * - Buff163 bi-weekly archive (`price-history-weekly-2.json.gz`): series `listing_minimum` of BUFF163,
 *   provider `BUFF_ARCHIVE`, CNY = integer / 100; listing count as quantity (null where upstream has 0, before
 *   2023-01-25); points of value 0 (no data in the window) skipped.
 * - Steam daily sales (`steam_daily_sales_*.csv.gz`): series `sales` of STEAM, provider `STEAM_PRICEHISTORY`,
 *   USD rounded half-even to 6 places (upstream floats), volume = units sold.
 * Names the service does not know (not an item and not in `knownNames`) are skipped and counted.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parse } from 'csv-parse';
import { Decimal } from 'decimal.js';
import { prismaSql, type Database } from '../db/client.js';
import type { StoredCandle } from './candle-codec.js';
import { ensureItems } from '../quotes/ingestion.js';
import { CS2_APP_ID } from '../collectors/importers.js';
import { writeMonths, type HistorySeriesKind, type MonthWrite } from './candles.js';

/** Provider code of the Buff163 archive's series. */
const BUFF_ARCHIVE_PROVIDER = 'BUFF_ARCHIVE';
/** Provider code of the Steam price-history series. */
const STEAM_SALES_PROVIDER = 'STEAM_PRICEHISTORY';

/** One imported daily point of a named item. */
interface Point {
  name: string;
  day: string;
  close: string;
  quantity: number | null;
}

/** What a history import did. */
export interface HistoryImportResult {
  files: string[];
  /** Points written as candles. */
  points: number;
  /** Month rows written (replaced when they existed). */
  months: number;
  /** Items whose names the service does not know, skipped. */
  skippedNames: number;
}

/** Listing counts are only recorded upstream from this day on (data/history/buff163_biweekly_2021-2024/PROVENANCE.md). */
const BUFF_COUNTS_FROM = '2023-01-25';

/** Reads the Buff163 archive: `{name: [[unix s], [price x 100 CNY], [listings]]}`. Throws on a malformed file. */
function readBuffArchive(file: string): Point[] {
  const json = JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString('utf8')) as Record<string, [number[], number[], number[]]>;
  const out: Point[] = [];
  for (const [name, [times, prices, counts]] of Object.entries(json)) {
    if (!Array.isArray(times) || !Array.isArray(prices) || times.length !== prices.length) throw new Error(`${file}: malformed series for ${name}`);
    for (let i = 0; i < times.length; i++) {
      const cents = prices[i]!;
      if (!Number.isSafeInteger(cents) || cents <= 0) continue;
      const day = new Date(times[i]! * 1000).toISOString().slice(0, 10);
      const count = counts?.[i] ?? 0;
      out.push({ name, day, close: new Decimal(cents).div(100).toFixed(), quantity: day < BUFF_COUNTS_FROM && count === 0 ? null : count });
    }
  }
  return out;
}

/** Reads the Steam daily sales CSV (market_hash_name, day, mean_price_usd, median_price_usd, volume). */
async function readSteamSales(file: string): Promise<Point[]> {
  const out: Point[] = [];
  const parser = fs.createReadStream(file).pipe(zlib.createGunzip()).pipe(parse({ columns: true }));
  for await (const r of parser as AsyncIterable<Record<string, string>>) {
    const price = new Decimal(r.median_price_usd!).toDecimalPlaces(6, Decimal.ROUND_HALF_EVEN);
    const volume = Number(r.volume);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(r.day ?? '') || !price.isPositive() || !Number.isSafeInteger(volume)) throw new Error(`${file}: malformed row ${JSON.stringify(r)}`);
    out.push({ name: r.market_hash_name!, day: r.day!, close: price.toFixed(), quantity: volume });
  }
  return out;
}

/** Groups points by (name, month) into month writes of one series. */
function monthsOf(points: readonly Point[], ids: Map<string, number>, series: { market: string; provider: string; kind: HistorySeriesKind; currency: string }): MonthWrite[] {
  const months = new Map<string, MonthWrite>();
  for (const p of points) {
    const itemId = ids.get(p.name);
    if (itemId === undefined) continue;
    const month = `${p.day.slice(0, 7)}-01`;
    const key = `${itemId}\u0000${month}`;
    let m = months.get(key);
    if (!m) months.set(key, (m = { itemId, marketCode: series.market, providerCode: series.provider, series: series.kind, month, currencyCode: series.currency, candles: [] }));
    const candle: StoredCandle = { day: Number(p.day.slice(8)), open: p.close, high: p.close, low: p.close, close: p.close, observations: 1, quantity: p.quantity, delisted: false };
    const same = m.candles.findIndex((c) => c.day === candle.day);
    if (same >= 0) m.candles[same] = candle;
    else m.candles.push(candle);
  }
  return [...months.values()];
}

/** True for a file the history importer reads. */
function isHistoryFile(p: string): boolean {
  return /price-history-.*\.json\.gz$/.test(p) || /steam_daily_sales_.*\.csv\.gz$/.test(p);
}

/** The history files under `target` (a file, or a folder searched two levels deep), sorted. */
export function historyFiles(target: string): string[] {
  const st = fs.statSync(target);
  if (st.isFile()) return isHistoryFile(target) ? [target] : [];
  const out: string[] = [];
  for (const n of fs.readdirSync(target).sort()) {
    const child = path.join(target, n);
    if (fs.statSync(child).isDirectory()) out.push(...historyFiles(child));
    else if (isHistoryFile(child)) out.push(child);
  }
  return out;
}

/**
 * Imports the history files under `target` (idempotent: whole months are replaced). `knownNames`: names that
 * may create an item (e.g. data/items/market_hash_names.txt); names that are neither items yet nor in it are
 * skipped. Throws on a malformed file (nothing of that file is written: one transaction per file).
 */
export async function importHistory(db: Database, target: string, knownNames: ReadonlySet<string>): Promise<HistoryImportResult> {
  const result: HistoryImportResult = { files: [], points: 0, months: 0, skippedNames: 0 };
  for (const file of historyFiles(target)) {
    const buff = /price-history-.*\.json\.gz$/.test(file);
    const points = buff ? readBuffArchive(file) : await readSteamSales(file);
    const names = [...new Set(points.map((p) => p.name))];
    const existing = new Set(
      (await db.query<{ market_hash_name: string }>(`SELECT market_hash_name FROM item WHERE app_id = $1 AND market_hash_name = ANY($2::text[])`, [CS2_APP_ID, names])).map(
        (r) => r.market_hash_name,
      ),
    );
    const accepted = names.filter((n) => existing.has(n) || knownNames.has(n));
    result.skippedNames += names.length - accepted.length;
    const series = buff
      ? { market: 'BUFF163', provider: BUFF_ARCHIVE_PROVIDER, kind: 'listing_minimum' as const, currency: 'CNY' }
      : { market: 'STEAM', provider: STEAM_SALES_PROVIDER, kind: 'sales' as const, currency: 'USD' };
    await db.prisma.$transaction(
      async (tx) => {
        const keyed = await ensureItems(prismaSql(tx), accepted.map((marketHashName) => ({ appId: CS2_APP_ID, marketHashName })));
        const ids = new Map<string, number>();
        for (const n of accepted) ids.set(n, keyed.get(`${CS2_APP_ID}\u0000${n}`)!);
        const months = monthsOf(points, ids, series);
        const txDb = { query: <T>(sql: string, params: unknown[] = []) => tx.$queryRawUnsafe<T[]>(sql, ...params) };
        await writeMonths(txDb, months);
        result.months += months.length;
        result.points += points.filter((p) => ids.has(p.name)).length;
      },
      { maxWait: 30_000, timeout: 900_000 },
    );
    result.files.push(file);
  }
  await db.query(`ANALYZE candle_month`);
  return result;
}

/** The names list bundled in `dataDir` (data/items/market_hash_names.txt), or an empty set without it. */
export function bundledNames(dataDir: string): Set<string> {
  const file = path.join(dataDir, 'items', 'market_hash_names.txt');
  if (!fs.existsSync(file)) return new Set();
  return new Set(fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0));
}
