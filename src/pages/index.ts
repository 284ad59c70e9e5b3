/**
 * The human-facing pages of the service: `/` (landing), `/docs` (API reference), `/status/page`
 * (status history), `/items` and `/items/{market_hash_name}` (item search and item pages: item-page.ts),
 * `/valuation` (the valuation's published accuracy: valuation-page.ts)
 * and the files they load under `/assets/`. They are not API operations: not in
 * the OpenAPI document, not in the endpoint catalogue, never metered. GraphiQL's page is rendered
 * for Yoga by `renderGraphiQL` below.
 */
import type { GraphiQLOptions } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import type { StatusData } from '../status/status.js';
import { createAssets } from './assets.js';
import { renderDocs } from './docs.js';
import { renderGraphiQLPage } from './graphiql.js';
import { createItemPages, type ItemPagesDeps } from './item-page.js';
import { renderLanding } from './landing.js';
import { APP_CSP, htmlResponse } from './layout.js';
import { renderStatusPage } from './status-page.js';
import { createFreshnessReader, type MarketFreshness } from '../collectors/freshness.js';
import { valuationPageHandler } from './valuation-page.js';

/** What the pages need from the app. */
export interface PagesDeps {
  /** Reads the status history as of `now` (the data of `GET /status`); throws when it cannot. */
  loadStatus(now: Date): Promise<StatusData>;
  /** The clock of the status page (default: the system clock). */
  clock?: () => Date;
  /** The database of the item pages (`/items`, `/items/{name}`) and `/valuation`; without it those paths are not pages. */
  db?: Pick<Database, 'query'>;
  /** The app's quote cache, read by the item pages (default: `loadQuotes` each time). */
  quoteCache?: ItemPagesDeps['quotes'];
  logger?: () => Logger | undefined;
  /**
   * The service's public address for the landing page's examples (PUBLIC_BASE_URL, else the address it listens on;
   * default `http://localhost:4000`, the README's). Never taken from the request: its Host header is the client's.
   */
  publicBaseUrl?: () => string;
}

/** A page handler for one request. */
export type PageHandler = (request: Request) => Promise<Response>;

/** The pages, looked up by path. */
export interface Pages {
  /** The handler of `pathname`, or null when it is not a page or asset path (then the API routes decide). */
  match(pathname: string): PageHandler | null;
  /** Whether `pathname` is an item page (`/items`, `/items/{name}`): limited per client address (src/pages/page-limit.ts). */
  isLimited(pathname: string): boolean;
  /** GraphiQL's page for Yoga's `renderGraphiQL` option (editor served from this origin). */
  renderGraphiQL(options: GraphiQLOptions): string;
}

/** The landing page's address when none is configured: the README's (`npm start` on the default port). */
const DEFAULT_PUBLIC_BASE_URL = 'http://localhost:4000';

/** Seconds a client should wait before reloading the status page after a 503. */
const STATUS_RETRY_AFTER_SECONDS = 30;

/** Builds the page handlers (reads the vendor bundles' versions from node_modules). */
export function createPages(deps: PagesDeps): Pages {
  const assets = createAssets();
  const clock = deps.clock ?? (() => new Date());
  const baseUrl = deps.publicBaseUrl ?? (() => DEFAULT_PUBLIC_BASE_URL);
  const items = deps.db ? createItemPages({ db: deps.db, quotes: deps.quoteCache, clock, logger: deps.logger }) : null;
  const freshness = deps.db ? createFreshnessReader(deps.db) : null;
  const pages: Record<string, PageHandler> = {
    '/': async (request) => htmlResponse(renderLanding(baseUrl()), { request }),
    '/docs': async (request) => htmlResponse(renderDocs({ scalarScript: assets.urls.scalarScript }), { request, csp: APP_CSP }),
    '/status/page': async (request) => {
      const now = clock();
      let status: StatusData | null = null;
      try {
        status = await deps.loadStatus(now);
      } catch (err) {
        deps.logger?.()?.warn({ err }, 'status page: the status history could not be read');
      }
      // Each market's newest quote (collectors/freshness.ts): its own read, so a failure leaves the rest of the page.
      let markets: MarketFreshness[] | null | undefined;
      if (freshness && status) {
        try {
          markets = await freshness(now);
        } catch (err) {
          markets = null;
          deps.logger?.()?.warn({ err }, 'status page: the quotes\' freshness could not be read');
        }
      }
      return htmlResponse(renderStatusPage(status, now, markets), {
        request,
        status: status ? 200 : 503,
        headers: status ? {} : { 'Retry-After': String(STATUS_RETRY_AFTER_SECONDS) },
      });
    },
  };

  if (deps.db) pages['/valuation'] = valuationPageHandler({ db: deps.db, clock });

  return {
    match(pathname) {
      const page = pages[pathname] ?? (pathname.length > 1 && pathname.endsWith('/') ? pages[pathname.slice(0, -1)] : undefined);
      if (page) return page;
      if (items && (pathname === '/items' || pathname === '/items/')) return items.search;
      if (items && pathname.startsWith('/items/')) return items.item;
      if (!pathname.startsWith('/assets/')) return null;
      return async (request) => (await assets.respond(request, pathname)) ?? htmlResponse('<!doctype html><title>Not found</title><p>No such file.</p>', { status: 404, request });
    },
    isLimited: (pathname) => items !== null && (pathname === '/items' || pathname.startsWith('/items/')),
    renderGraphiQL: (options) => renderGraphiQLPage(options, { base: assets.urls.graphiqlBase }),
  };
}
