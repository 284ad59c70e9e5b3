/**
 * File importers for the bundled real data (see data/PROVENANCE.md). They turn source files into
 * QuoteObservations and hand them to the ingestion service, so `quotegate import` and the first start
 * share one path and are idempotent (stale observations change nothing).
 *
 * Source mapping (README "Data choices"):
 * - csgotrader daily feed (provider `CSGOTRADER`, an aggregator): `aggregator_buff163` -> BUFF163 ask,
 *   `aggregator_buff163_buy` -> BUFF163 bid, `aggregator_youpin` -> YOUPIN ask, `aggregator_csfloat` ->
 *   CSFLOAT ask, `aggregator_skinport` -> SKINPORT ask, `aggregator_csmoney` -> CSMONEY ask. Steam
 *   7/30/90-day sale averages, csgotrader's composite and the collector's `sync`/fallback values are
 *   not any marketplace's quote and are dropped. The feed's USD prices are converted back into each
 *   marketplace's own currency with the feed's own rate of the same day (units_per_usd), rounded half-even
 *   to the currency's 2 minor digits. The feed has no time of day: observations are stamped at 00:00 UTC
 *   of their day; it has no quantities: quantity and its flags are null.
 * - Buff163 goods pages (provider `BUFF163`, direct): ask = sell_min_price with quantity sell_num, bid =
 *   buy_max_price with quantity buy_num, CNY; only the best price is reported (is_all_items_same_price
 *   false), counts are exact (is_quantity_minimum false). Capture time from the file name, UTC+7.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parse } from 'csv-parse';
import type { Database } from '../db/client.js';
import { Money, toMoney } from '../lib/money.js';
import { byCodePoint } from '../lib/order.js';
import { ingestQuotes, type IngestResult } from '../quotes/ingestion.js';
import type { QuoteObservation } from '../validation/ingest.js';
import { importCatalogue } from '../catalogue/import.js';
import { importCollectorFile, isCollectorFile } from './collector-files.js';
import { buffGoodsQuotes, parseBuffGoodsItem } from '../quotes/buff-goods.js';

/** CS2's Steam app id: every bundled item belongs to it. */
export const CS2_APP_ID = '730';

const CSGOTRADER_SOURCES: Record<string, { market: string; side: 'ask' | 'bid' }> = {
  aggregator_buff163: { market: 'BUFF163', side: 'ask' },
  aggregator_buff163_buy: { market: 'BUFF163', side: 'bid' },
  aggregator_youpin: { market: 'YOUPIN', side: 'ask' },
  aggregator_csfloat: { market: 'CSFLOAT', side: 'ask' },
  aggregator_skinport: { market: 'SKINPORT', side: 'ask' },
  aggregator_csmoney: { market: 'CSMONEY', side: 'ask' },
};

/** Progress of a long import: rows handled so far out of `total` (when known). */
export type ProgressFn = (done: number, total: number) => void;

/** Result of an import: observations read and what ingestion did with them. */
export interface ImportResult extends IngestResult {
  observations: number;
  files: string[];
}

async function readCsv(file: string): Promise<string[][]> {
  const source = fs.createReadStream(file);
  const input = file.endsWith('.gz') ? source.pipe(zlib.createGunzip()) : source;
  const rows: string[][] = [];
  const parser = input.pipe(parse({ relax_column_count: false }));
  for await (const record of parser) rows.push(record as string[]);
  return rows;
}

/**
 * Reads a csgotrader daily folder (prices_daily_*.csv.gz + exchange_rates_*.csv) into observations
 * grouped by day, oldest day first. Throws when a day's rate for a needed currency is missing.
 */
export async function readCsgotraderDaily(dir: string, currencyOf: Map<string, string>): Promise<Map<string, QuoteObservation[]>> {
  const files = fs.readdirSync(dir);
  const pricesFile = files.find((f) => /^prices_daily_.*\.csv(\.gz)?$/.test(f));
  const ratesFile = files.find((f) => /^exchange_rates_.*\.csv$/.test(f));
  if (!pricesFile || !ratesFile) throw new Error(`${dir}: expected prices_daily_*.csv.gz and exchange_rates_*.csv`);
  const rates = new Map<string, Map<string, Money>>();
  const rateRows = await readCsv(path.join(dir, ratesFile));
  for (const [day, code, unitsPerUsd] of rateRows.slice(1)) {
    if (!day || !code || !unitsPerUsd) continue;
    let m = rates.get(day);
    if (!m) rates.set(day, (m = new Map()));
    m.set(code, toMoney(unitsPerUsd));
  }
  const byDay = new Map<string, QuoteObservation[]>();
  const rows = await readCsv(path.join(dir, pricesFile));
  const header = rows[0];
  if (!header || header.join(',') !== 'market_hash_name,day,source,price_usd') throw new Error(`${pricesFile}: unexpected header`);
  for (let i = 1; i < rows.length; i++) {
    const [name, day, source, priceUsd] = rows[i]!;
    const mapping = source ? CSGOTRADER_SOURCES[source] : undefined;
    if (!mapping || !name || !day || !priceUsd) continue;
    const currency = currencyOf.get(mapping.market);
    if (!currency) throw new Error(`market ${mapping.market} is not in the catalogue`);
    let price = toMoney(priceUsd);
    if (currency !== 'USD') {
      const rate = rates.get(day)?.get(currency);
      if (!rate) throw new Error(`${ratesFile}: no ${currency} rate for ${day}`);
      price = price.times(rate).toDecimalPlaces(2, Money.ROUND_HALF_EVEN);
    }
    let list = byDay.get(day);
    if (!list) byDay.set(day, (list = []));
    list.push({
      appId: CS2_APP_ID,
      marketHashName: name,
      marketCode: mapping.market,
      providerCode: 'CSGOTRADER',
      side: mapping.side,
      currencyCode: currency,
      price,
      quantity: null,
      isQuantityMinimum: null,
      isAllItemsSamePrice: null,
      observedAt: new Date(`${day}T00:00:00Z`),
    });
  }
  return new Map([...byDay.entries()].sort(([a], [b]) => byCodePoint(a, b)));
}

/**
 * Reads one Buff163 `/api/market/goods` page (goods_YYYYMMDD_HHMMSS.json, local time UTC+7); the item mapping is
 * quotes/buff-goods.ts, shared with the live Buff163 collector. Throws BuffFormatError on an item of another format.
 */
export function readBuffGoods(file: string): QuoteObservation[] {
  const m = /goods_(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})\.json$/.exec(file);
  if (!m) throw new Error(`${file}: expected goods_YYYYMMDD_HHMMSS.json`);
  const observedAt = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}+07:00`);
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { data: { items: unknown[] } };
  const out: QuoteObservation[] = [];
  doc.data.items.forEach((raw, i) => {
    const it = parseBuffGoodsItem(raw, `${file}: data.items[${i}]`);
    const base = { appId: String(it.appid), marketHashName: it.market_hash_name, marketCode: 'BUFF163', providerCode: 'BUFF163', currencyCode: 'CNY', isQuantityMinimum: false, isAllItemsSamePrice: false, observedAt };
    for (const q of buffGoodsQuotes(it)) out.push({ ...base, side: q.side, price: toMoney(q.price), quantity: q.quantity });
  });
  return out;
}

async function marketCurrencies(db: Pick<Database, 'query'>): Promise<Map<string, string>> {
  const rows = await db.query<{ code: string; currency_code: string }>(`SELECT code, currency_code FROM website`);
  return new Map(rows.map((r) => [r.code, r.currency_code]));
}

function add(into: ImportResult, r: IngestResult, n: number): void {
  into.inserted += r.inserted;
  into.updated += r.updated;
  into.skipped += r.skipped;
  into.confirmed += r.confirmed;
  into.observations += n;
}

/** Ingests observations in slices of `slice`, reporting progress after each. */
async function ingestWithProgress(db: Database, obs: QuoteObservation[], result: ImportResult, progress: ProgressFn | undefined, base: { done: number; total: number }): Promise<void> {
  const slice = 20_000;
  for (let i = 0; i < obs.length; i += slice) {
    const part = obs.slice(i, i + slice);
    add(result, await ingestQuotes(db, part), part.length);
    base.done += part.length;
    progress?.(base.done, base.total);
  }
}

/**
 * Imports a file or folder: a csgotrader daily folder, a Buff163 goods page, a collector CSV/NDJSON
 * file (collector-files.ts; refused whole with a 422 ServiceError naming lines when a row is invalid), or a
 * data folder holding websites.json/currencies.json/fees.json and prices/ (the bundled layout). Idempotent.
 * Throws for a path it does not recognise.
 */
export async function importPath(db: Database, target: string, progress?: ProgressFn): Promise<ImportResult> {
  const result: ImportResult = { inserted: 0, updated: 0, skipped: 0, confirmed: 0, observations: 0, files: [] };
  const stat = fs.statSync(target);
  const batches: { file: string; load: () => Promise<QuoteObservation[][]> }[] = [];
  const collectorFiles: string[] = [];
  const plan = async (p: string): Promise<void> => {
    const st = fs.statSync(p);
    if (st.isDirectory()) {
      const names = fs.readdirSync(p).sort();
      if (names.includes('websites.json') && names.includes('currencies.json') && names.includes('fees.json')) {
        await importCatalogue(db.prisma, p);
        result.files.push(path.join(p, 'websites.json'), path.join(p, 'currencies.json'), path.join(p, 'fees.json'));
      }
      if (names.some((n) => /^prices_daily_.*\.csv(\.gz)?$/.test(n))) {
        const currencies = await marketCurrencies(db);
        batches.push({ file: p, load: async () => [...(await readCsgotraderDaily(p, currencies)).values()] });
        return;
      }
      for (const n of names) {
        const child = path.join(p, n);
        if (fs.statSync(child).isDirectory() || /^goods_\d{8}_\d{6}\.json$/.test(n)) await plan(child);
      }
      return;
    }
    if (/goods_\d{8}_\d{6}\.json$/.test(p)) {
      batches.push({ file: p, load: async () => [readBuffGoods(p)] });
      return;
    }
    if (p === target && isCollectorFile(p)) {
      collectorFiles.push(p);
      return;
    }
    throw new Error(`${p}: not a recognised data file (csgotrader daily folder, Buff163 goods page, collector CSV/NDJSON file, or data folder)`);
  };
  if (!stat.isDirectory() && !stat.isFile()) throw new Error(`${target}: not a file or folder`);
  await plan(target);
  const loaded: { file: string; groups: QuoteObservation[][] }[] = [];
  for (const b of batches) loaded.push({ file: b.file, groups: await b.load() });
  const counter = { done: 0, total: loaded.reduce((n, l) => n + l.groups.reduce((m, g) => m + g.length, 0), 0) };
  for (const l of loaded) {
    for (const group of l.groups) await ingestWithProgress(db, group, result, progress, counter);
    result.files.push(l.file);
  }
  for (const file of collectorFiles) {
    const r = await importCollectorFile(db, file, progress);
    add(result, r, r.observations);
    result.files.push(file);
  }
  // Fresh planner statistics after a bulk load: without them PostgreSQL scans every quote per
  // /prices request or export page until autovacuum catches up.
  if (result.inserted > 0) await db.execute(`ANALYZE item, source_quote`);
  return result;
}

/** True when the database holds no quotes yet (first start). */
export async function isEmpty(db: Pick<Database, 'query'>): Promise<boolean> {
  const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM source_quote LIMIT 1) s`);
  return (rows[0]?.n ?? 0) === 0;
}
