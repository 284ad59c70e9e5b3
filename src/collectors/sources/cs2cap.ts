/**
 * CS2Cap (cs2cap.com, api.cs2c.app), an aggregator, keyed: the lowest asks of DMARKET, HALOSKINS, SHADOWPAY and
 * WHITEMARKET and the highest bids of DMARKET and WHITEMARKET, from CS2Cap's two bulk snapshot streams. Provider code
 * `CS2CAP` (the data is CS2Cap's view of those markets, not the markets' own answer).
 *
 * Documentation: the `CS2Cap/docs` repository (the public source of docs.cs2cap.com, MIT), `api-reference/prices.mdx`,
 * `api-reference/bids.mdx`, `reference/field-reference.mdx`, `guides/rate-limits.mdx`, `openapi.json`; the tests'
 * fixtures are its examples (test/collectors/fixtures/cs2cap/PROVENANCE.md).
 * - Endpoints: `POST /v1/prices?providers=…` ("Stream full prices snapshot") and `POST /v1/bids?providers=…` ("Stream
 *   full bids snapshot") on `https://api.cs2c.app`, each answering NDJSON (`application/x-ndjson`): one JSON object a
 *   line, the whole live catalogue of the asked providers, "captured once at request start and then streamed in full".
 * - Auth: the API key as `Authorization: Bearer <key>` (`CS2CAP_API_KEY`); the streams need the Pro or Quant tier.
 *   Without a key the source is not configured and never calls CS2Cap.
 * - Rows: prices `{provider, item_id, market_hash_name, phase, lowest_ask, quantity, link, url, timestamp,
 *   last_updated}`, bids `{provider, item_id, market_hash_name, phase, highest_bid, num_bids, timestamp,
 *   last_updated}`. `lowest_ask` / `highest_bid` are integers in minor units of the response currency ("Divide by 100
 *   to get the display value": field-reference.mdx); the streams are "in USD" (openapi.json), which the
 *   `X-Snapshot-Currency` header states: a stream in another currency fails the run (its minor unit is not
 *   established), a price that is not an integer too.
 * - Mapping: price = minor units / 100 (decimal.js) in USD. Ask quantity = `quantity`, documented as "Number of
 *   listings at or near the lowest ask on this provider": a lower bound of the listings (`isQuantityMinimum` true);
 *   `lowest_ask` null or `quantity` 0 reports the item delisted. Bid quantity = `num_bids` ("Total number of active buy
 *   orders": exact); `highest_bid` null gives no bid row. Rows of a Doppler or Gamma Doppler phase (`phase` not null)
 *   are skipped: a market hash name does not name the phase. Rows of providers not asked for are ignored.
 * - Whole-body failures (`format`): HTML, invalid UTF-8, a body cut short, a line that is not a JSON object, a line
 *   over MAX_LINE_CHARS (not NDJSON), a row without one of its fields (renamed), a 200 with an error object (a line
 *   without `provider`), an empty prices stream.
 * - Limits (rate-limits.mdx): 100 requests a minute on Pro, and a rolling 24-hour cap of 50 successful stream starts
 *   per endpoint on Pro (300 on Quant), one stream per endpoint and key at a time (409 otherwise). One run is one
 *   stream of each endpoint, one after the other, every hour: 24 starts a day per endpoint.
 * - Not a complete listing: CS2Cap's catalogue of a market is not the market's own listing (as for csgotrader, the
 *   aggregator's feed never completes a scan or delists what it did not see).
 */
import { parse as parseLossless } from 'lossless-json';
import { formatDecimal, toMoney } from '../../lib/money.js';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, numberText } from './keyed-json.js';

/** CS2Cap provider keys of the catalogue markets whose lowest asks the prices stream gives. */
export const CS2CAP_ASK_MARKETS: Readonly<Record<string, string>> = { dmarket: 'DMARKET', haloskins: 'HALOSKINS', shadowpay: 'SHADOWPAY', whitemarket: 'WHITEMARKET' };
/** CS2Cap provider keys of the catalogue markets whose highest bids the bids stream gives (buy-order providers only). */
export const CS2CAP_BID_MARKETS: Readonly<Record<string, string>> = { dmarket: 'DMARKET', whitemarket: 'WHITEMARKET' };

const providersQuery = (m: Readonly<Record<string, string>>) => Object.keys(m).map((k) => `providers=${k}`).join('&');
/** Request path (as upstream, POST) of the prices snapshot of the ask markets. */
export const CS2CAP_PRICES_PATH = `/v1/prices?${providersQuery(CS2CAP_ASK_MARKETS)}`;
/** Request path (as upstream, POST) of the bids snapshot of the bid markets. */
export const CS2CAP_BIDS_PATH = `/v1/bids?${providersQuery(CS2CAP_BID_MARKETS)}`;

/** Longest line accepted (a row is about 400 characters; a body that is one huge JSON document is not NDJSON). */
export const MAX_LINE_CHARS = 1 << 20;
const ASK_FIELDS = ['provider', 'market_hash_name', 'phase', 'lowest_ask', 'quantity'] as const;
const BID_FIELDS = ['provider', 'market_hash_name', 'phase', 'highest_bid', 'num_bids'] as const;

/**
 * The lines of an NDJSON body, each parsed with lossless-json (numbers keep their source text), as they arrive: the
 * body is decoded as UTF-8 (fatal on invalid bytes, a leading BOM dropped) chunk by chunk and only the line being
 * read is held. Blank lines are skipped, a final line without its newline counts. Throws UpstreamError('format') on
 * HTML, invalid UTF-8, a line that is not a JSON object or longer than MAX_LINE_CHARS, and a body cut short.
 */
export async function* ndjsonObjects(res: Response, what: string, signal?: AbortSignal): AsyncGenerator<Record<string, unknown>> {
  if (/text\/html/i.test(res.headers.get('content-type') ?? '')) throw new UpstreamError('format', `${what}: an HTML page instead of NDJSON (login wall or CDN page)`);
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let pending = '';
  let lineNo = 0;
  const parseLine = (raw: string): Record<string, unknown> | null => {
    lineNo += 1;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return null;
    if (lineNo === 1 && line.trimStart().startsWith('<')) throw new UpstreamError('format', `${what}: an HTML page instead of NDJSON (login wall or CDN page)`);
    let v: unknown;
    try {
      v = parseLossless(line);
    } catch (err) {
      throw new UpstreamError('format', `${what}: line ${lineNo} is not JSON (${(err as Error).message})`);
    }
    if (!isObject(v)) throw new UpstreamError('format', `${what}: line ${lineNo} is not a JSON object`);
    return v;
  };
  try {
    for (;;) {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (err instanceof UpstreamError || signal?.aborted) throw err;
        throw new UpstreamError('format', `${what}: body cut short (${(err as Error).message})`);
      }
      let text: string;
      try {
        text = chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      } catch {
        throw new UpstreamError('format', `${what}: not UTF-8 text`);
      }
      pending += text;
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const row = parseLine(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        if (row) yield row;
      }
      if (pending.length > MAX_LINE_CHARS) throw new UpstreamError('format', `${what}: line ${lineNo + 1} longer than ${MAX_LINE_CHARS} characters (not NDJSON)`);
      if (chunk.done) {
        const row = parseLine(pending);
        pending = '';
        if (row) yield row;
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** The row's fields, each present (a missing one is a renamed field: `format`). A line without `provider` is read as an error object. */
function fieldsOf<K extends string>(row: Record<string, unknown>, keys: readonly K[], what: string): Record<K, unknown> {
  if (!('provider' in row)) {
    const detail = typeof row.detail === 'string' ? row.detail : typeof row.error === 'string' ? row.error : JSON.stringify(row).slice(0, 120);
    throw new UpstreamError('format', `${what}: a line without provider (an error object?): ${detail}`);
  }
  for (const k of keys) if (!(k in row)) throw new UpstreamError('format', `${what}: row field ${k} missing (renamed?)`);
  if (typeof row.provider !== 'string') throw new UpstreamError('format', `${what}: row field provider is not a string`);
  if (typeof row.market_hash_name !== 'string') throw new UpstreamError('format', `${what}: row field market_hash_name is not a string`);
  if (row.phase !== null && typeof row.phase !== 'string') throw new UpstreamError('format', `${what}: row field phase is neither null nor a string`);
  return row as Record<K, unknown>;
}

/** Integer minor units (`2550`) to a decimal string of the major unit (`"25.5"`); null stays null. Anything else: `format`. */
export function cs2capPrice(v: unknown, field: string, what: string): string | null {
  if (v === null) return null;
  const text = numberText(v);
  if (text === null || !/^\d{1,18}$/.test(text)) throw new UpstreamError('format', `${what}: ${field} ${JSON.stringify(text ?? v)} is not an integer in minor units`);
  return formatDecimal(toMoney(text).dividedBy(100));
}

/** A count: a whole JSON number, or null. Anything else: `format`. */
function countOf(v: unknown, field: string, what: string): number | null {
  if (v === null) return null;
  const text = numberText(v);
  if (text === null || !/^\d{1,15}$/.test(text)) throw new UpstreamError('format', `${what}: ${field} ${JSON.stringify(text ?? v)} is not a count`);
  return Number(text);
}

/** Checks the stream's declared currency (`X-Snapshot-Currency`; absent: USD, as documented) and returns it. */
function snapshotCurrency(res: Response, what: string): string {
  const declared = res.headers.get('x-snapshot-currency')?.trim();
  if (declared && declared.toUpperCase() !== 'USD') throw new UpstreamError('format', `${what}: X-Snapshot-Currency ${declared}, the documented stream is USD`);
  return 'USD';
}

async function* collect(ctx: SourceContext): AsyncGenerator<RawQuote> {
  if (ctx.credential === null || ctx.credential === '') throw new UpstreamError('not_configured', 'CS2CAP_API_KEY is not set');
  const headers = { Authorization: `Bearer ${ctx.credential}`, Accept: 'application/x-ndjson' };

  let what = 'CS2Cap POST /v1/prices';
  let res = await ctx.fetch(CS2CAP_PRICES_PATH, { method: 'POST', headers });
  let currencyCode = snapshotCurrency(res, what);
  let lines = 0;
  for await (const line of ndjsonObjects(res, what, ctx.signal)) {
    lines += 1;
    const row = fieldsOf(line, ASK_FIELDS, what);
    const market = CS2CAP_ASK_MARKETS[row.provider as string];
    if (market === undefined || row.phase !== null) continue;
    const where = `${what}, ${row.provider as string} ${JSON.stringify(row.market_hash_name)}`;
    const price = cs2capPrice(row.lowest_ask, 'lowest_ask', where);
    const quantity = countOf(row.quantity, 'quantity', where);
    const q: RawQuote = { marketHashName: row.market_hash_name as string, marketCode: market, side: 'ask', currencyCode, price, quantity, isQuantityMinimum: true };
    if (price === null || quantity === 0) Object.assign(q, { price: null, quantity: 0, isQuantityMinimum: false, delisted: true });
    yield q;
  }
  if (lines === 0) throw new UpstreamError('format', `${what}: an empty snapshot`);

  what = 'CS2Cap POST /v1/bids';
  res = await ctx.fetch(CS2CAP_BIDS_PATH, { method: 'POST', headers });
  currencyCode = snapshotCurrency(res, what);
  for await (const line of ndjsonObjects(res, what, ctx.signal)) {
    const row = fieldsOf(line, BID_FIELDS, what);
    const market = CS2CAP_BID_MARKETS[row.provider as string];
    if (market === undefined || row.phase !== null) continue;
    const where = `${what}, ${row.provider as string} ${JSON.stringify(row.market_hash_name)}`;
    const price = cs2capPrice(row.highest_bid, 'highest_bid', where);
    const quantity = countOf(row.num_bids, 'num_bids', where);
    if (price === null) continue;
    yield { marketHashName: row.market_hash_name as string, marketCode: market, side: 'bid', currencyCode, price, quantity, isQuantityMinimum: false };
  }
}

/** CS2Cap's snapshots of DMarket, HaloSkins, ShadowPay and white.market (asks; DMarket and white.market bids), USD; key in CS2CAP_API_KEY. */
export const cs2capSource: CollectorSource = {
  id: 'cs2cap',
  providerCode: 'CS2CAP',
  markets: ['DMARKET', 'HALOSKINS', 'SHADOWPAY', 'WHITEMARKET'],
  defaultBaseUrl: 'https://api.cs2c.app',
  intervalSeconds: 3600,
  limits: { requestsPerMinute: 10, concurrency: 1, timeoutMs: 300_000, retries: 1 },
  credentialEnv: 'CS2CAP_API_KEY',
  completeListing: false,
  collect,
};
