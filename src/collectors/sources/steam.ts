/**
 * Steam Community Market, direct, per item: the lowest listing (ask) of each watched item from `market/priceoverview`.
 *
 * - Endpoint: `GET /market/priceoverview/?appid=730&currency=1&market_hash_name=<name>`, one request per item of
 *   `ctx.watchlist` (choosing the watch list is not this adapter's business). `currency=1` is USD, STEAM's catalogue
 *   currency (data/websites.json).
 * - Auth: none (public).
 * - Answer: `{"success":true,"lowest_price":"$0.41","volume":"59,613","median_price":"$0.41"}`; prices are display
 *   strings with a currency symbol and thousands separators, parsed here to decimal strings (parseSteamPrice).
 *   `lowest_price` is the ask; `volume` is the number sold in the last 24 hours and `median_price` a sales median, not
 *   a listing count or a quote, so neither becomes a quote field (quantity stays null).
 * - A name Steam does not know answers `{"success":false}`: the item is skipped (no row, no delisting). A known item
 *   without `lowest_price` has no listing: it is reported delisted on the ask side (price null). If no answered item of
 *   a run had `lowest_price`, the field is taken as renamed and the run fails with `format` (nothing is yielded for
 *   those items before that is known).
 * - Limits: Steam documents none; about 20 requests a minute per address is observed (a 429 on the 21st request in a
 *   minute, then a 60 s wait: TheLime1/cs2-price-database `rate_limit_analysis.md`). This source asks 18 a minute,
 *   one at a time: a watch list of N items takes about N/18 minutes a run.
 * - Not a complete listing: a watch list is never the whole market.
 * - Bid and listing counts (`market/itemordershistogram`) need each item's `item_nameid`, read from its listing page;
 *   not collected here (one more request per item, and the listing page's format is in flux).
 */
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, readJsonBody } from './keyed-json.js';

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

async function* collect(ctx: SourceContext): AsyncIterable<RawQuote> {
  let sawAsk = false;
  const withoutAsk: string[] = [];
  for (const name of ctx.watchlist) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
    const path = `/market/priceoverview/?appid=${APP_ID}&currency=${STEAM_USD}&market_hash_name=${encodeURIComponent(name)}`;
    const what = `steam priceoverview ${JSON.stringify(name)}`;
    const res = await ctx.fetch(path, { headers: { Accept: 'application/json' } });
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
  if (!sawAsk && withoutAsk.length > 0) {
    throw new UpstreamError('format', `steam priceoverview: none of ${withoutAsk.length} answered items had lowest_price (renamed field?)`);
  }
}

/** Steam Community Market asks (USD) of the watched items, from priceoverview; public, 18 requests a minute. */
export const steamSource: CollectorSource = {
  id: 'steam',
  providerCode: 'STEAM',
  markets: ['STEAM'],
  defaultBaseUrl: 'https://steamcommunity.com',
  intervalSeconds: 3600,
  limits: { requestsPerMinute: 18, concurrency: 1, timeoutMs: 15_000, retries: 2 },
  completeListing: false,
  perItem: true,
  collect,
};
