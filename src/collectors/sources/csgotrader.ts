/**
 * csgotrader's latest price files (issue 42, bulk sources): `GET https://prices.csgotrader.app/latest/{file}.json`,
 * one public static file per upstream marketplace, each a JSON object keyed by Steam market hash name. The
 * bundled data's own feed (data/prices/csgotrader_daily_2026-07/PROVENANCE.md). Provider code `CSGOTRADER` (an
 * aggregator: csgotrader reports the marketplaces, it is none of them).
 *
 * One source per file (`csgotrader_<file>`), so one file's failure (HTML, truncated, renamed field) leaves only
 * that market's quotes as they were, and each file has its own shrink check and run record. Files, markets and
 * fields (the formats as csgotrader's own extension reads them: gergelyszabo94/csgo-trader-extension,
 * extension/src/utils/pricing.js `updatePrices`; the mapping of the bundled importer, src/collectors/importers.ts):
 *
 * | file | market | side | field |
 * |---|---|---|---|
 * | buff163 | BUFF163 | ask | `starting_at.price` (lowest sell listing) |
 * | buff163 | BUFF163 | bid | `highest_order.price` (highest buy order) |
 * | youpin | YOUPIN | ask | the bare number (or `price`) |
 * | csfloat | CSFLOAT | ask | `price` |
 * | skinport | SKINPORT | ask | `starting_at` (Skinport's `min_price`); `suggested_price` is not an offer |
 * | csmoney | CSMONEY | ask | `price` (the bot's sell price) |
 * | csgotm | MARKETCSGO | ask | the bare number (csgotrader's published scraper read market.csgo's `api/v2/prices/USD.json` `price`, the lowest offer) |
 * | lisskins | LISSKINS | ask | `price` |
 *
 * Not collected, because they are not any catalogue market's ask or bid: `steam.json` (`last_24h`, `last_7d`,
 * `last_30d`, `last_90d`: averages of completed Steam sales, not the Steam order book: the bundled data's
 * PROVENANCE and the archive's own audit say so; a Steam quote must come from Steam's own listings),
 * `csgotrader.json` (csgotrader's own composite price), `bitskins.json` (BitSkins' price database entry and
 * its own instant-buy price, not the lowest listing), `prices_v6.json` (all of the above in one file); and
 * `lootfarm`, `csgoempire`, `swapgg`, `cstrade`, `skinwallet` (not catalogue markets). Doppler phase prices
 * (`doppler` objects) are skipped: a market hash name does not name the phase.
 *
 * Prices are USD (csgotrader converts every marketplace to USD) and are handed on as such (`currencyCode`
 * 'USD', the number's source text): the runner converts them into the market's own currency with the official
 * USD rates, one conversion path for every source. csgotrader's own `exchange_rates.json` is not used here: its
 * rates are csgotrader's, and the service's conversions use the official ones (issue point 4 collects those).
 * A price that is null or csgotrader's `"null"` string gives no row: the file cannot tell an empty side from an
 * item csgotrader did not fetch, so no delisting is claimed. The files carry no listing counts (quantity null)
 * and no time of their own (the runner stamps the run's clock; the `Last-Modified` header says when csgotrader
 * wrote the file). None of the files is a whole market listing (they hold csgotrader's item list, fetched at
 * csgotrader's moments): `completeListing` is false, so a run never completes a market's scan or delists.
 *
 * Format checks (a changed upstream fails loudly, UpstreamError('format'), and the market keeps its quotes):
 * an item that is not an object (a bare-number file: not a number, a string or null), or lacks the file's
 * field (`starting_at`/`highest_order`, `price`), or whose side object lacks `price`; plus the body checks of
 * json-stream.ts. Unknown extra fields are ignored.
 */
import type { CollectorSource, RawQuote, SourceContext, SourceLimits } from '../source.js';
import { UpstreamError } from '../source.js';
import { isJsonObject, jsonEntries, priceText, requireFields, type JsonValue } from './json-stream.js';

/** Provider code of every csgotrader quote (an aggregator). */
export const CSGOTRADER_PROVIDER = 'CSGOTRADER';
/** csgotrader's price host (no trailing slash); `COLLECTOR_CSGOTRADER_<FILE>_URL` overrides it per file. */
const CSGOTRADER_BASE_URL = 'https://prices.csgotrader.app';

/** How one file holds its prices. */
export type CsgotraderFormat =
  /** `{name: {<field>: {price} | null, ...}}`: one side per field (buff163). */
  | { kind: 'sides'; fields: ReadonlyArray<{ field: string; side: 'ask' | 'bid' }> }
  /** `{name: {<field>: number | null, ...}}`: the ask (csfloat, csmoney, lisskins: `price`; skinport: `starting_at`). */
  | { kind: 'field'; field: string }
  /** `{name: number | string | null}` (or `{name: {price}}`): the ask (youpin, csgotm). */
  | { kind: 'bare' };

/** One csgotrader file and the market it reports. */
export interface CsgotraderFile {
  /** The file's name under `/latest/`, without `.json`. */
  file: string;
  /** Catalogue market code (data/websites.json). */
  market: string;
  format: CsgotraderFormat;
}

/** The files collected (see the module doc for why each is that market's ask or bid, and which are not). */
export const CSGOTRADER_FILES: readonly CsgotraderFile[] = [
  { file: 'buff163', market: 'BUFF163', format: { kind: 'sides', fields: [{ field: 'starting_at', side: 'ask' }, { field: 'highest_order', side: 'bid' }] } },
  { file: 'youpin', market: 'YOUPIN', format: { kind: 'bare' } },
  { file: 'csfloat', market: 'CSFLOAT', format: { kind: 'field', field: 'price' } },
  { file: 'skinport', market: 'SKINPORT', format: { kind: 'field', field: 'starting_at' } },
  { file: 'csmoney', market: 'CSMONEY', format: { kind: 'field', field: 'price' } },
  { file: 'csgotm', market: 'MARKETCSGO', format: { kind: 'bare' } },
  { file: 'lisskins', market: 'LISSKINS', format: { kind: 'field', field: 'price' } },
];

/**
 * Seconds between runs of each file (1 hour). csgotrader rewrites its files about daily and documents no
 * schedule or limit for the latest files; hourly catches a new file within the hour at one download per file.
 */
const CSGOTRADER_INTERVAL_SECONDS = 3600;

/**
 * Limits of each file's source. The host is a CDN serving static files and documents no limit: a polite
 * budget (6 requests a minute, one at a time), a 2-minute timeout for a file of several megabytes, 3 retries.
 */
const CSGOTRADER_LIMITS: SourceLimits = { requestsPerMinute: 6, concurrency: 1, timeoutMs: 120_000, retries: 3 };

/** The rows of one item of `f` (see CsgotraderFormat); throws UpstreamError('format') when its shape changed. */
export function csgotraderRows(f: CsgotraderFile, name: string, value: JsonValue): RawQuote[] {
  const where = `csgotrader ${f.file}.json, item ${JSON.stringify(name)}`;
  const row = (side: 'ask' | 'bid', price: string | null): RawQuote[] =>
    price === null
      ? []
      : [{ marketHashName: name, marketCode: f.market, side, currencyCode: 'USD', price, quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null }];
  const fmt = f.format;
  if (fmt.kind === 'bare') {
    if (!isJsonObject(value)) return row('ask', priceText(value, where));
    if (!('price' in value)) throw new UpstreamError('format', `${where}: an object without \`price\` (renamed upstream?)`);
    return row('ask', priceText(value.price, `${where}, price`));
  }
  if (fmt.kind === 'field') {
    const item = requireFields(value, [fmt.field], where, 'an object of fields');
    return row('ask', priceText(item[fmt.field], `${where}, ${fmt.field}`));
  }
  const rows: RawQuote[] = [];
  for (const { field, side } of fmt.fields) {
    const sideValue = requireFields(value, [field], where, 'an object of fields')[field]!;
    if (sideValue === null || sideValue === 'null') continue;
    const sideObject = requireFields(sideValue, ['price'], `${where}, ${field}`, 'an object with `price`');
    rows.push(...row(side, priceText(sideObject.price, `${where}, ${field}.price`)));
  }
  return rows;
}

/** The collector source of one csgotrader file (id `csgotrader_<file>`). */
export function csgotraderSource(f: CsgotraderFile): CollectorSource {
  const path = `/latest/${f.file}.json`;
  return {
    id: `csgotrader_${f.file}`,
    providerCode: CSGOTRADER_PROVIDER,
    markets: [f.market],
    defaultBaseUrl: CSGOTRADER_BASE_URL,
    intervalSeconds: CSGOTRADER_INTERVAL_SECONDS,
    limits: CSGOTRADER_LIMITS,
    completeListing: false,
    async *collect(ctx: SourceContext) {
      const res = await ctx.fetch(path, { headers: { Accept: 'application/json' } });
      for await (const { key, value } of jsonEntries(res, { what: `csgotrader ${path}`, list: 'object', signal: ctx.signal })) {
        yield* csgotraderRows(f, key as string, value);
      }
    },
  };
}

/** Every csgotrader source, in CSGOTRADER_FILES order (the lead lists them in src/collectors/registry.ts). */
export const CSGOTRADER_SOURCES: readonly CollectorSource[] = CSGOTRADER_FILES.map(csgotraderSource);
