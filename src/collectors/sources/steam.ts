/**
 * Steam Community Market, direct, per item: each watched item's order book (lowest listing and highest buy order,
 * with their counts) from `market/itemordershistogram`, or its lowest listing alone from `market/priceoverview` when its
 * `item_nameid` is not known.
 *
 * - Endpoints, one request per item of `ctx.watchlist` (choosing the watch list is not this adapter's business):
 *   - item with a known `item_nameid` (data/steam/item-nameids.json, `STEAM_ITEM_NAMEIDS_FILE`):
 *     `GET /market/itemordershistogram?country=US&language=english&currency=1&item_nameid=<id>&two_factor=0`;
 *   - any other item: `GET /market/priceoverview/?appid=730&currency=1&market_hash_name=<name>`.
 *   `currency=1` is USD, STEAM's catalogue currency (data/websites.json). The item's listing page (which carries the
 *   id in `Market_LoadOrderSpread( <id> )`) is never read: no recorded page was found to test against, and it would be
 *   a second request per item.
 * - Auth: none (public).
 * - itemordershistogram answer (recorded: test/collectors/fixtures/steam/PROVENANCE.md): `success` 1;
 *   `lowest_sell_order` and `highest_buy_order` are integer minor units (cents) of the asked currency as a string
 *   ("241"), or null when that side has no order; `sell_order_count` / `buy_order_count` (the current format; a
 *   number or a string with separators, "1,234") count every listing / buy order; `price_prefix` and `price_suffix`
 *   show the currency ("$" and ""). Rows: ask = lowest_sell_order / 100 (decimal.js) with quantity sell_order_count,
 *   bid = highest_buy_order / 100 with quantity buy_order_count (exact counts: `isQuantityMinimum` false). An answer
 *   without the count fields (the older format) gives quantity null: its graphs are capped, so they are no count.
 *   lowest_sell_order null: the ask is reported delisted (price null, quantity 0 when counted). highest_buy_order
 *   null: no bid row (as the other sources report a missing bid). `success` other than 1: the item is skipped; if no
 *   histogram answer of a run had success 1, the run fails with `format` (an error object every time). A missing
 *   `success`, `lowest_sell_order` or `highest_buy_order` (renamed field), a price that is not whole minor units, a
 *   count that is not one, or a currency other than USD in `price_prefix`/`price_suffix` fails with `format`.
 * - priceoverview answer: `{"success":true,"lowest_price":"$0.41","volume":"59,613","median_price":"$0.41"}`; prices
 *   are display strings with a currency symbol and thousands separators, parsed here to decimal strings
 *   (parseSteamPrice). `lowest_price` is the ask; `volume` is the number sold in the last 24 hours and `median_price` a
 *   sales median, not a listing count or a quote, so neither becomes a quote field (quantity stays null). A name Steam
 *   does not know answers `{"success":false}`: the item is skipped (no row, no delisting). A known item without
 *   `lowest_price` has no listing: it is reported delisted on the ask side (price null). If no priceoverview answer of a
 *   run had `lowest_price`, the field is taken as renamed and the run fails with `format` (nothing is yielded for
 *   those items before that is known).
 * - Limits: Steam documents none; about 20 requests a minute per address is observed for priceoverview (a 429 on the
 *   21st request in a minute, then a 60 s wait: TheLime1/cs2-price-database `rate_limit_analysis.md`). This source asks
 *   18 a minute, one at a time, whichever endpoint: a watch list of N items takes about N/18 minutes a run. One
 *   community page (Revadike/InternalSteamWebAPI wiki, "Get Market Item Orders Histogram", 2024) reports a tighter
 *   limit for the histogram, 10 unique items an hour; the runner's retries honour a 429's Retry-After either way.
 * - Not a complete listing: a watch list is never the whole market.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { formatDecimal, toMoney } from '../../lib/money.js';
import { projectRoot } from '../../lib/paths.js';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, numberText, readJsonBody } from './keyed-json.js';

/** CS2's Steam app id. */
const APP_ID = 730;
/** Steam's currency id for USD (ECurrencyCode 1). */
const STEAM_USD = 1;

/** A Steam display price read apart: the amount as a plain decimal string and the text around it (symbol, code). */
export interface SteamPrice {
  /** e.g. "1234.56" for "$1,234.56" or "1 234,56€"; the digits as shown, separators normalised, never a float. */
  amount: string;
  /** The currency text around the number, trimmed: "$", "€", "kr", "$ USD"... */
  symbol: string;
}

const ENTITY = /&(#\d+|#x[0-9a-f]+|nbsp|euro|pound|yen);/gi;
const NAMED: Record<string, string> = { nbsp: '\u00a0', euro: '€', pound: '£', yen: '¥' };

function decodeEntities(s: string): string {
  return s.replace(ENTITY, (_, e: string) => {
    const k = e.toLowerCase();
    if (k.startsWith('#x')) return String.fromCodePoint(parseInt(k.slice(2), 16));
    if (k.startsWith('#')) return String.fromCodePoint(parseInt(k.slice(1), 10));
    return NAMED[k] ?? '';
  });
}

/**
 * Parses a Steam display price ("$1,234.56", "1 234,56€", "1,66€", "261,35&#8364; ", "22,12 kr", "¥ 1.17") into a
 * decimal string and its currency text. The last `.` or `,` followed by one or two digits at the end of the number is
 * the decimal separator; every other `.`, `,`, space, no-break space or apostrophe groups thousands. Returns null for
 * a price Steam shows as absent (empty, "--"). Throws RangeError when the text holds no single well-formed number.
 */
export function parseSteamPrice(text: string): SteamPrice | null {
  const s = decodeEntities(text).trim();
  if (s === '' || /^-+$/.test(s)) return null;
  const found = s.match(/\d(?:[\d.,' \u00a0\u202f\u2009]*\d)?/g);
  if (!found || found.length !== 1) throw new RangeError(`not a price: ${JSON.stringify(text)}`);
  const number = found[0];
  const symbol = s.replace(number, ' ').replace(/\s+/g, ' ').trim();
  if (/\d/.test(symbol)) throw new RangeError(`not a price: ${JSON.stringify(text)}`);
  const compact = number.replace(/[' \u00a0\u202f\u2009]/g, '');
  const m = /^(.*)[.,](\d{1,2})$/.exec(compact);
  const whole = (m ? m[1]! : compact).replace(/[.,]/g, '');
  // A grouped number has groups of three after its first separator ("1,234,567"; "12,34,567" is not one).
  const groups = (m ? m[1]! : compact).split(/[.,]/);
  if (groups.slice(1).some((g) => g.length !== 3) || !/^\d+$/.test(whole)) throw new RangeError(`not a price: ${JSON.stringify(text)}`);
  return { amount: m ? `${whole}.${m[2]}` : whole, symbol };
}

/** Parses Steam's 24-hour `volume` ("59,613", "108") to a count. Throws RangeError on anything else. */
export function parseSteamCount(text: string): number {
  if (!/^\d{1,3}([, .\u00a0]\d{3})*$|^\d+$/.test(text)) throw new RangeError(`not a count: ${JSON.stringify(text)}`);
  const n = Number(text.replace(/\D/g, ''));
  if (!Number.isSafeInteger(n)) throw new RangeError(`not a count: ${JSON.stringify(text)}`);
  return n;
}

/** One item's priceoverview answer: unknown to Steam, or its ask (null when nothing is listed). */
type Overview = { known: false } | { known: true; ask: string | null };

/** Reads one `priceoverview` answer. Throws UpstreamError('format') on a malformed answer or a non-USD price. */
function readPriceOverview(doc: unknown, what: string): Overview {
  if (!isObject(doc)) throw new UpstreamError('format', `${what}: not a JSON object`);
  if (typeof doc.success !== 'boolean') throw new UpstreamError('format', `${what}: field success missing or not a boolean`);
  if (!doc.success) return { known: false };
  const low = doc.lowest_price;
  if (low !== undefined && typeof low !== 'string') throw new UpstreamError('format', `${what}: field lowest_price is not a string`);
  if (doc.volume !== undefined) {
    if (typeof doc.volume !== 'string') throw new UpstreamError('format', `${what}: field volume is not a string`);
    try {
      parseSteamCount(doc.volume);
    } catch (err) {
      throw new UpstreamError('format', `${what}: ${(err as Error).message}`);
    }
  }
  if (low === undefined) return { known: true, ask: null };
  let price: SteamPrice | null;
  try {
    price = parseSteamPrice(low);
  } catch (err) {
    throw new UpstreamError('format', `${what}: lowest_price ${(err as Error).message}`);
  }
  if (price === null) return { known: true, ask: null };
  if (price.symbol !== '$' && price.symbol !== '$ USD') {
    throw new UpstreamError('format', `${what}: lowest_price ${JSON.stringify(low)} is not in USD (asked currency=${STEAM_USD})`);
  }
  return { known: true, ask: price.amount };
}

function askRow(name: string, ask: string | null): RawQuote {
  const row: RawQuote = { marketHashName: name, marketCode: 'STEAM', side: 'ask', currencyCode: 'USD', price: ask, quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null };
  if (ask === null) row.delisted = true;
  return row;
}

/** Where the bundled map of CS2 market hash names to Steam `item_nameid`s lives (its PROVENANCE.md beside it). */
export const STEAM_ITEM_NAMEIDS_FILE = path.join(projectRoot, 'data', 'steam', 'item-nameids.json');

const nameIdsSchema = z.record(z.string().min(1), z.int().positive().max(Number.MAX_SAFE_INTEGER));

/**
 * Reads a map of market hash names to Steam `item_nameid`s: a JSON object `{"<market hash name>": <positive integer>}`
 * (the shape of somespecialone/steam-item-name-ids `data/cs2.json`). Throws an Error naming `file` when it cannot be
 * read, is not JSON or breaks that shape.
 */
export function readSteamItemNameIds(file: string): ReadonlyMap<string, number> {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not a readable JSON file (${(err as Error).message})`, { cause: err });
  }
  const parsed = nameIdsSchema.safeParse(doc);
  if (!parsed.success) throw new Error(`${file}: not an object of market hash names to positive integer item_nameids (${parsed.error.issues[0]?.message ?? 'invalid'})`);
  return new Map(Object.entries(parsed.data));
}

let bundled: ReadonlyMap<string, number> | undefined;
/** The bundled map (STEAM_ITEM_NAMEIDS_FILE), read on first use and kept. Throws as readSteamItemNameIds. */
function bundledItemNameIds(): ReadonlyMap<string, number> {
  bundled ??= readSteamItemNameIds(STEAM_ITEM_NAMEIDS_FILE);
  return bundled;
}

/** One item's order book from itemordershistogram: prices as decimal USD strings, counts when the answer has them. */
export interface SteamOrderBook {
  /** Lowest listing in USD, null when nothing is listed. */
  ask: string | null;
  /** Listings at any price (`sell_order_count`), null when the answer does not count them. */
  askCount: number | null;
  /** Highest buy order in USD, null when there is none. */
  bid: string | null;
  /** Buy orders at any price (`buy_order_count`), null when the answer does not count them. */
  bidCount: number | null;
}

/** `{ ok: false }` carries the answer's `success` as sent (e.g. "16", "false") for the run's error message. */
export type Histogram = { ok: true; book: SteamOrderBook } | { ok: false; success: string };

/** A histogram price: whole minor units (a digit string or a JSON integer) / 100, or null for null (or 0). */
function histogramPrice(doc: Record<string, unknown>, field: string, what: string): string | null {
  if (!(field in doc)) throw new UpstreamError('format', `${what}: field ${field} missing (renamed?)`);
  const v = doc[field];
  if (v === null) return null;
  const text = typeof v === 'string' ? v : numberText(v);
  if (text === null || !/^\d{1,15}$/.test(text)) throw new UpstreamError('format', `${what}: field ${field} is not whole minor units: ${text ?? JSON.stringify(v)}`);
  const cents = toMoney(text);
  return cents.isZero() ? null : formatDecimal(cents.dividedBy(100));
}

/** A histogram count: absent (null), a JSON integer, or a string with separators ("1,234"). */
function histogramCount(doc: Record<string, unknown>, field: string, what: string): number | null {
  const v = doc[field];
  if (v === undefined || v === null) return null;
  const text = typeof v === 'string' ? v : numberText(v);
  try {
    if (text === null) throw new RangeError(`not a count: ${JSON.stringify(v)}`);
    return parseSteamCount(text);
  } catch (err) {
    throw new UpstreamError('format', `${what}: field ${field} ${(err as Error).message}`);
  }
}

/**
 * Reads one itemordershistogram answer (parsed with lossless-json: numbers as their source text). Returns the order
 * book when `success` is 1, else `{ ok: false }`. Throws UpstreamError('format') on a missing (renamed) field, a price
 * that is not whole minor units, a bad count, or a currency other than USD.
 */
export function readItemOrdersHistogram(doc: unknown, what: string): Histogram {
  if (!isObject(doc)) throw new UpstreamError('format', `${what}: not a JSON object`);
  if (!('success' in doc)) throw new UpstreamError('format', `${what}: field success missing (renamed?)`);
  const success = numberText(doc.success);
  if (success !== '1') return { ok: false, success: success ?? JSON.stringify(doc.success) };
  const prefix = doc.price_prefix;
  const suffix = doc.price_suffix;
  if (prefix !== undefined || suffix !== undefined) {
    if (typeof prefix !== 'string' || typeof suffix !== 'string') throw new UpstreamError('format', `${what}: price_prefix or price_suffix is not a string`);
    if (prefix.trim() !== '$' || !['', 'USD'].includes(suffix.trim())) {
      throw new UpstreamError('format', `${what}: prices not in USD (price_prefix ${JSON.stringify(prefix)}, price_suffix ${JSON.stringify(suffix)}; asked currency=${STEAM_USD})`);
    }
  }
  const ask = histogramPrice(doc, 'lowest_sell_order', what);
  const bid = histogramPrice(doc, 'highest_buy_order', what);
  return {
    ok: true,
    book: { ask, askCount: histogramCount(doc, 'sell_order_count', what), bid, bidCount: histogramCount(doc, 'buy_order_count', what) },
  };
}

/** The quote rows of one order book: the ask (delisted when nothing is listed) and the bid when there is one. */
function bookRows(name: string, b: SteamOrderBook): RawQuote[] {
  const base = { marketHashName: name, marketCode: 'STEAM', currencyCode: 'USD', isAllItemsSamePrice: null } as const;
  const rows: RawQuote[] = [];
  if (b.ask === null) rows.push({ ...base, side: 'ask', price: null, quantity: b.askCount === null ? null : 0, isQuantityMinimum: b.askCount === null ? null : false, delisted: true });
  else rows.push({ ...base, side: 'ask', price: b.ask, quantity: b.askCount, isQuantityMinimum: b.askCount === null ? null : false });
  if (b.bid !== null) rows.push({ ...base, side: 'bid', price: b.bid, quantity: b.bidCount, isQuantityMinimum: b.bidCount === null ? null : false });
  return rows;
}

/** The path of an item's itemordershistogram request (USD, English, US). */
export function steamHistogramPath(itemNameId: number): string {
  return `/market/itemordershistogram?country=US&language=english&currency=${STEAM_USD}&item_nameid=${itemNameId}&two_factor=0`;
}

/** The path of an item's priceoverview request (CS2, USD). */
export function steamPriceOverviewPath(name: string): string {
  return `/market/priceoverview/?appid=${APP_ID}&currency=${STEAM_USD}&market_hash_name=${encodeURIComponent(name)}`;
}

function collectWith(nameIds: () => ReadonlyMap<string, number>): (ctx: SourceContext) => AsyncIterable<RawQuote> {
  return async function* collect(ctx: SourceContext): AsyncIterable<RawQuote> {
    const ids = ctx.watchlist.length > 0 ? nameIds() : new Map<string, number>();
    let sawAsk = false;
    const withoutAsk: string[] = [];
    let histograms = 0;
    let histogramsOk = 0;
    let firstFailure = '';
    for (const name of ctx.watchlist) {
      if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
      const id = ids.get(name);
      if (id !== undefined) {
        const what = `steam itemordershistogram ${JSON.stringify(name)} (item_nameid ${id})`;
        const res = await ctx.fetch(steamHistogramPath(id), { headers: { Accept: 'application/json' } });
        const answer = readItemOrdersHistogram(await readJsonBody(res, what, { lossless: true }), what);
        histograms += 1;
        if (!answer.ok) {
          firstFailure ||= `${what}: success ${answer.success}`;
          continue;
        }
        histogramsOk += 1;
        yield* bookRows(name, answer.book);
        continue;
      }
      const what = `steam priceoverview ${JSON.stringify(name)}`;
      const res = await ctx.fetch(steamPriceOverviewPath(name), { headers: { Accept: 'application/json' } });
      const answer = readPriceOverview(await readJsonBody(res, what), what);
      if (!answer.known) continue;
      if (answer.ask === null) {
        if (sawAsk) yield askRow(name, null);
        else withoutAsk.push(name);
        continue;
      }
      if (!sawAsk) {
        sawAsk = true;
        for (const n of withoutAsk.splice(0)) yield askRow(n, null);
      }
      yield askRow(name, answer.ask);
    }
    if (histograms > 0 && histogramsOk === 0) {
      throw new UpstreamError('format', `steam itemordershistogram: none of ${histograms} answers had success 1 (an error object?); first: ${firstFailure}`);
    }
    if (!sawAsk && withoutAsk.length > 0) {
      throw new UpstreamError('format', `steam priceoverview: none of ${withoutAsk.length} answered items had lowest_price (renamed field?)`);
    }
  };
}

/**
 * A Steam source that finds items' `item_nameid`s in `nameIds()` (called once a run with a non-empty watch list;
 * what it throws fails the run): order books for the items it maps, priceoverview asks for the others.
 */
export function createSteamSource(nameIds: () => ReadonlyMap<string, number>): CollectorSource {
  return {
    id: 'steam',
    providerCode: 'STEAM',
    markets: ['STEAM'],
    defaultBaseUrl: 'https://steamcommunity.com',
    intervalSeconds: 3600,
    limits: { requestsPerMinute: 18, concurrency: 1, timeoutMs: 15_000, retries: 2 },
    completeListing: false,
    perItem: true,
    collect: collectWith(nameIds),
  };
}

/**
 * Steam Community Market ask and bid (USD) of the watched items, with listing and buy-order counts, from
 * itemordershistogram (items in data/steam/item-nameids.json) or the ask alone from priceoverview; public, 18 requests
 * a minute.
 */
export const steamSource: CollectorSource = createSteamSource(bundledItemNameIds);
