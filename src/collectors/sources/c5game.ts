/**
 * C5GAME (c5game.com), direct, per watched item in batches: lowest sell price and listing count from C5GAME's open
 * platform (opendoc.c5game.com, "MarketHashNames批量查询在售最低价和数量": batch query of lowest price and count on sale).
 *
 * - Endpoint: `POST /merchant/product/price/batch` on `https://openapi.c5game.com`, JSON body
 *   `{"appId":"730","marketHashNames":[...]}`. The documentation marks it "开发中" (in development) and states no
 *   batch size: this adapter asks 50 names a request.
 * - Auth: the open platform's `app-key`, `C5GAME_APP_KEY`, sent as the `app-key` header (the documentation accepts it
 *   as a header or a query parameter; a header keeps it out of logged URLs). Without it the source is not configured
 *   and never calls C5GAME.
 * - Answer: `{"success":true,"data":{"<name>":{"itemId","marketHashName","price":391,"count":104,"website"}},
 *   "errorCode":0,...}`. ask = `price` (its JSON source text; CNY, C5GAME's catalogue currency: the documentation's
 *   example, 391 for `M4A4 | Temukau (Minimal Wear)`, is a yuan price), quantity = `count` (exact). A name the answer
 *   leaves out is not reported (the documentation does not say why a name would be missing); `count` 0 or `price` 0
 *   reports the item delisted. `success` false or a non-zero `errorCode` fails the run (`format`).
 * - Limits: the documentation gives 5 requests a second for its new listing endpoint and none for this one; this
 *   source asks 60 a minute, one at a time.
 * - A POST with a JSON body through `ctx.fetch` (`method`, `body` in its init).
 */
import { toMoney } from '../../lib/money.js';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, numberText, readJsonBody } from './keyed-json.js';

/** Names asked per request (C5GAME documents no maximum). */
export const C5GAME_BATCH = 50;
const PATH = '/merchant/product/price/batch';

/**
 * Reads one batch answer into quote rows for the asked `names`, in their order. Throws UpstreamError('format') on an
 * error answer, a renamed field, a non-decimal price or an entry under another name.
 */
function c5gameRows(doc: unknown, names: readonly string[], what: string): RawQuote[] {
  if (!isObject(doc)) throw new UpstreamError('format', `${what}: not a JSON object`);
  if (doc.success !== true) {
    const msg = typeof doc.errorMsg === 'string' ? doc.errorMsg : typeof doc.error === 'string' ? doc.error : 'no message';
    throw new UpstreamError('format', `${what}: success is not true (${msg})`);
  }
  const code = numberText(doc.errorCode);
  if (code !== null && code !== '0') throw new UpstreamError('format', `${what}: errorCode ${code}`);
  if (!isObject(doc.data)) throw new UpstreamError('format', `${what}: field data missing or not an object`);
  const data = doc.data;
  const rows: RawQuote[] = [];
  for (const name of names) {
    const entry = data[name];
    if (entry === undefined || entry === null) continue;
    if (!isObject(entry)) throw new UpstreamError('format', `${what}: entry of ${JSON.stringify(name)} is not an object`);
    if (entry.marketHashName !== name) throw new UpstreamError('format', `${what}: entry of ${JSON.stringify(name)} has marketHashName ${JSON.stringify(entry.marketHashName)}`);
    const price = numberText(entry.price);
    if (price === null || !/^\d{1,15}(\.\d{1,10})?$/.test(price)) throw new UpstreamError('format', `${what}: field price of ${JSON.stringify(name)} missing or not a decimal`);
    const count = numberText(entry.count);
    if (count === null || !/^\d{1,12}$/.test(count)) throw new UpstreamError('format', `${what}: field count of ${JSON.stringify(name)} missing or not a count`);
    const quantity = Number(count);
    const listed = quantity > 0 && toMoney(price).gt(0);
    const row: RawQuote = {
      marketHashName: name,
      marketCode: 'C5GAME',
      side: 'ask',
      currencyCode: 'CNY',
      price: listed ? price : null,
      quantity: listed ? quantity : 0,
      isQuantityMinimum: false,
      isAllItemsSamePrice: null,
    };
    if (!listed) row.delisted = true;
    rows.push(row);
  }
  return rows;
}

async function* collect(ctx: SourceContext): AsyncIterable<RawQuote> {
  if (ctx.credential === null || ctx.credential === '') throw new UpstreamError('not_configured', 'C5GAME_APP_KEY is not set');
    const headers = { 'app-key': ctx.credential, 'Content-Type': 'application/json', Accept: 'application/json' };
  for (let i = 0; i < ctx.watchlist.length; i += C5GAME_BATCH) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
    const names = ctx.watchlist.slice(i, i + C5GAME_BATCH);
    const what = `c5game price batch ${i / C5GAME_BATCH + 1}`;
    const res = await ctx.fetch(PATH, { method: 'POST', headers, body: JSON.stringify({ appId: '730', marketHashNames: names }) });
    yield* c5gameRows(await readJsonBody(res, what, { lossless: true }), names, what);
  }
}

/** C5GAME lowest sell prices and counts (CNY) of the watched items; app-key in C5GAME_APP_KEY. */
export const c5gameSource: CollectorSource = {
  id: 'c5game',
  providerCode: 'C5GAME',
  markets: ['C5GAME'],
  defaultBaseUrl: 'https://openapi.c5game.com',
  intervalSeconds: 3600,
  limits: { requestsPerMinute: 60, concurrency: 1, timeoutMs: 15_000, retries: 2 },
  credentialEnv: 'C5GAME_APP_KEY',
  completeListing: false,
  perItem: true,
  collect,
};
