/**
 * Buff163 (buff.163.com), direct: the market's goods pages, walked from page 1 to the last page.
 *
 * - Endpoint: `GET /api/market/goods?game=csgo&page_num=N&page_size=80` (page size 80 as used by
 *   EricZhu-42/SteamTradingSiteTracker `scripts/url_formats.py`; the bundled pages were fetched with Buff's default 20).
 * - Auth: a logged-in session cookie, `BUFF163_COOKIE` (the whole Cookie header, e.g. `session=...; csrf_token=...`;
 *   a bare value is sent as `session=<value>`). Without it the source is not configured and never calls Buff163.
 *   Buff163 answers a missing or expired session with a 200 `{"code":"Login Required",...}` (or a login HTML page):
 *   both fail the run as `format`.
 * - Format: `{code:"OK", data:{items[], page_num, page_size, total_page, total_count}}`; the item mapping (ask
 *   `sell_min_price`/`sell_num`, bid `buy_max_price`/`buy_num`, CNY, exact counts) is quotes/buff-goods.ts, shared
 *   with the file importer of data/prices/buff163_goods_2026-04-27.
 * - Limits: Buff163 documents none; a polite 20 requests a minute, one at a time (about 400 pages of 80: ~20 min a run).
 * - A walk of every page is a complete listing (the market's scan completes; items not seen are delisted).
 */
import { BuffFormatError, buffGoodsQuotes, parseBuffGoodsItem } from '../../quotes/buff-goods.js';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, readJsonBody } from './keyed-json.js';

/** Goods per page asked of Buff163. */
export const BUFF163_PAGE_SIZE = 80;
/** A walk longer than this many pages is refused as a format failure (Buff163 had ~32k goods: ~400 pages of 80). */
const MAX_PAGES = 5_000;

/** The Cookie header for a configured credential: the header itself, or a bare session value. */
function buffCookieHeader(credential: string): string {
  return credential.includes('=') ? credential : `session=${credential}`;
}

interface BuffPage {
  items: unknown[];
  totalPage: number;
}

function readPage(doc: unknown, what: string): BuffPage {
  if (!isObject(doc)) throw new UpstreamError('format', `${what}: not a JSON object`);
  if (doc.code !== 'OK') {
    const code = typeof doc.code === 'string' ? doc.code : JSON.stringify(doc.code ?? null);
    const hint = code === 'Login Required' ? ' (BUFF163_COOKIE missing, expired or rejected)' : '';
    throw new UpstreamError('format', `${what}: Buff163 answered code ${code}${hint}`);
  }
  const data = doc.data;
  if (!isObject(data)) throw new UpstreamError('format', `${what}: no data object`);
  if (!Array.isArray(data.items)) throw new UpstreamError('format', `${what}: data.items missing or not a list`);
  const totalPage = data.total_page;
  if (typeof totalPage !== 'number' || !Number.isSafeInteger(totalPage) || totalPage < 0) {
    throw new UpstreamError('format', `${what}: data.total_page missing or not a count`);
  }
  if (totalPage > MAX_PAGES) throw new UpstreamError('format', `${what}: data.total_page ${totalPage} is over ${MAX_PAGES}`);
  return { items: data.items, totalPage };
}

async function* collect(ctx: SourceContext): AsyncIterable<RawQuote> {
  if (ctx.credential === null || ctx.credential === '') throw new UpstreamError('not_configured', 'BUFF163_COOKIE is not set');
  const headers = { Cookie: buffCookieHeader(ctx.credential), Accept: 'application/json' };
  const seen = new Set<string>();
  let last = 1;
  for (let page = 1; page <= last; page++) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
    const path = `/api/market/goods?game=csgo&page_num=${page}&page_size=${BUFF163_PAGE_SIZE}`;
    const what = `buff163 goods page ${page}`;
    const res = await ctx.fetch(path, { headers });
    const { items, totalPage } = readPage(await readJsonBody(res, what), what);
    if (page === 1) last = totalPage;
    for (let i = 0; i < items.length; i++) {
      let item;
      try {
        item = parseBuffGoodsItem(items[i], `${what}: data.items[${i}]`);
      } catch (err) {
        if (err instanceof BuffFormatError) throw new UpstreamError('format', err.message);
        throw err;
      }
      // Items move between pages while the walk runs (prices change the order): the first sighting wins.
      if (seen.has(item.market_hash_name)) continue;
      seen.add(item.market_hash_name);
      for (const q of buffGoodsQuotes(item)) {
        yield {
          marketHashName: item.market_hash_name,
          marketCode: 'BUFF163',
          side: q.side,
          currencyCode: 'CNY',
          price: q.price,
          quantity: q.quantity,
          isQuantityMinimum: false,
          isAllItemsSamePrice: false,
        };
      }
    }
  }
}

/** Buff163 goods pages (session cookie), ask and bid with exact counts, CNY; a complete listing. */
export const buff163Source: CollectorSource = {
  id: 'buff163',
  providerCode: 'BUFF163',
  markets: ['BUFF163'],
  defaultBaseUrl: 'https://buff.163.com',
  intervalSeconds: 3600,
  limits: { requestsPerMinute: 20, concurrency: 1, timeoutMs: 30_000, retries: 3 },
  credentialEnv: 'BUFF163_COOKIE',
  completeListing: true,
  collect,
};
