/**
 * `/items/{market_hash_name}` and `/items?q=...`: the public item pages (issue: price history, point 5),
 * server-rendered like the status page, readable without JavaScript, nothing loaded from another origin.
 *
 * - The item page: the current quotes per market in their own currency and in one chosen currency (official
 *   USD rates of the `currency` table), each with its age and, when its source has not confirmed it for more
 *   than 3 collection intervals, marked stale (collectors/freshness.ts), the CSCP valuation with its band (mid x e^(+-u)), an inline SVG chart
 *   of the history per market and series (close lines, the CSCP band shaded) with labelled axes and a legend,
 *   and HTML tables of the latest candles as the fallback. Query parameters: `currency` (default USD),
 *   `interval` (day | week | month), `from` / `to` (YYYY-MM-DD). Without a range the page shows everything the
 *   item has (first to last history day) at a week interval when that fits MAX_SPAN_DAYS.week, else month.
 * - The search page: item names containing `q` (case-insensitive), at most SEARCH_LIMIT, each linking to its page.
 *
 * Answers: 200; 404 (unknown item, shown with the search box); 422 (unknown currency, bad interval or dates,
 * reversed or too long a range: the reason on the page); 503 when the database cannot be read. Each request
 * reads one item with a fixed number of small statements (item id, currencies, quotes, history range, the
 * history read, market names). Money stays decimal.js from the database to the text; only the chart's pixel
 * coordinates become JS numbers, at the last step.
 *
 * This file is the handlers; the parts are in `item/`: `params.ts` (query parameters and the range), `data.ts`
 * (the statements), `chart.ts` (the chart's arithmetic), `view.ts` (the HTML); the stylesheet is ITEM_CSS in
 * `styles.ts`.
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { formatDate } from '../lib/time.js';
import { itemIdOf, loadItemHistory } from '../history/candles.js';
import { CS2_APP_ID } from '../collectors/importers.js';
import { loadQuotes, VALUATION_MARKET, type MarketQuote } from '../quotes/quotes.js';
import { htmlResponse } from './layout.js';
import { historyExtent, loadRates, marketNames as readMarketNames, searchItems } from './item/data.js';
import { MAX_QUERY_LENGTH, parseItemQuery, resolveRange, shownText } from './item/params.js';
import { ITEM_PAGE_CSP, renderItemPage, renderNotFound, renderProblemPage, renderSearchPage, renderUnavailable } from './item/view.js';

export { niceTicks, timeTicks } from './item/chart.js';
export type { RateTable } from './item/data.js';
export { parseItemQuery, resolveRange, type ItemQuery, type QueryProblem, type ResolvedRange } from './item/params.js';
export { displayAmount, itemPath, searchForm, type ItemView } from './item/view.js';

/** Seconds a client should wait before reloading after a 503. */
const RETRY_AFTER_SECONDS = 30;

/** What the item pages need. */
export interface ItemPagesDeps {
  db: Pick<Database, 'query'>;
  /** The app's quote cache (same answers as `loadQuotes`); without it the quotes are read each time. */
  quotes?: { load(appId: string, names: readonly string[]): Promise<Map<string, MarketQuote[]>> } | null;
  /** The clock ("today" for the default range). */
  clock: () => Date;
  logger?: () => Logger | undefined;
}

/** The two handlers: `/items` (search) and `/items/{name}` (one item). */
export interface ItemPages {
  search(request: Request): Promise<Response>;
  item(request: Request): Promise<Response>;
}

/** Builds the item page handlers. Each answers an HTML page (200, 404, 422 or 503); none throws. */
export function createItemPages(deps: ItemPagesDeps): ItemPages {
  const send = (request: Request, html: string, status = 200) =>
    htmlResponse(html, { request, status, csp: ITEM_PAGE_CSP, headers: status === 503 ? { 'Retry-After': String(RETRY_AFTER_SECONDS) } : {} });
  const failed = (request: Request, err: unknown) => {
    deps.logger?.()?.warn({ err }, 'item page: the item data could not be read');
    return send(request, renderUnavailable(), 503);
  };

  return {
    async search(request) {
      const q = (new URL(request.url).searchParams.get('q') ?? '').trim();
      if (q === '') return send(request, renderSearchPage('', null));
      if (q.length > MAX_QUERY_LENGTH) return send(request, renderSearchPage(q.slice(0, MAX_QUERY_LENGTH), null, `the search text is longer than ${MAX_QUERY_LENGTH} characters`), 422);
      // PostgreSQL text cannot hold NUL (the API refuses it with 422 too): refused here, not sent to the database.
      if (q.includes('\u0000')) return send(request, renderSearchPage(shownText(q), null, 'the search text must not contain NUL characters'), 422);
      try {
        return send(request, renderSearchPage(q, await searchItems(deps.db, q)));
      } catch (err) {
        return failed(request, err);
      }
    },

    async item(request) {
      const url = new URL(request.url);
      const raw = url.pathname.slice('/items/'.length).replace(/\/$/, '');
      let name: string;
      try {
        name = decodeURIComponent(raw);
      } catch {
        return send(request, renderNotFound(shownText(raw), 'The item name in this address is not valid URL encoding.'), 404);
      }
      const { query, problems } = parseItemQuery(url.searchParams);
      try {
        // No item name is empty, longer than 255 characters or holds NUL (which PostgreSQL text cannot): those are
        // unknown items without a database read.
        const itemId = name.length > 0 && name.length <= 255 && !name.includes('\u0000') ? await itemIdOf(deps.db, CS2_APP_ID, name) : null;
        if (itemId === null) {
          const shown = shownText(name);
          return send(request, renderNotFound(shown, `The service knows no CS2 item named “${shown}” (names are exact, e.g. “AK-47 | Redline (Field-Tested)”).`), 404);
        }
        const rates = await loadRates(deps.db);
        if (!problems.some((p) => p.parameter === 'currency') && !rates.choices.includes(query.currency)) {
          problems.unshift({ parameter: 'currency', message: `${query.currency} is not a currency of this service; choose one of the list below (GET /currencies)` });
        }
        if (problems.length > 0) return send(request, renderProblemPage(name, problems, rates.choices), 422);
        const now = deps.clock();
        const today = formatDate(now);
        const [quotes, extent] = await Promise.all([
          deps.quotes ? deps.quotes.load(CS2_APP_ID, [name]) : loadQuotes(deps.db, CS2_APP_ID, [name]),
          historyExtent(deps.db, itemId),
        ]);
        const range = resolveRange(query, extent, today);
        if (!('interval' in range)) return send(request, renderProblemPage(name, [range], rates.choices), 422);
        const history = await loadItemHistory(deps.db, { itemId, markets: null, series: null, from: range.from, to: range.to, interval: range.interval });
        const itemQuotes = quotes.get(name) ?? [];
        const codes = [...new Set([...itemQuotes.map((q) => q.marketCode), ...history.series.map((s) => s.marketCode)])].filter((c) => c !== VALUATION_MARKET);
        const marketNames = await readMarketNames(deps.db, codes);
        return send(request, renderItemPage({ name, currency: query.currency, rates, quotes: itemQuotes, marketNames, range, history, extent, now }));
      } catch (err) {
        return failed(request, err);
      }
    },
  };
}
