/**
 * The REST route table: each documented path is a row naming its catalogue operation, the GraphQL
 * document it runs, how request parameters become variables (validated with the shared zod rules;
 * every invalid parameter is reported), and how the result becomes the documented payload.
 * Each route's method and path template come from its catalogue row (data/endpoints.json) only.
 */
import type { HeaderReader } from '../lib/headers.js';
import type { z } from 'zod';
import * as v from '../validation/params.js';
import { validationError, type ValidationDetail } from '../lib/errors.js';
import { DOCUMENTS } from './documents.js';
import { endpoint } from '../catalogue/endpoints.js';
import { CS2_APP_ID } from '../services/importers.js';
import type { Database } from '../db/client.js';
import type { RequestState } from '../graphql/context.js';
import { EXPORT_CONTENT_TYPES, snapshotStream, type ExportFormat } from '../services/exports.js';
import { DEFAULT_CHANGES_PAGE, MAX_CHANGES_PAGE } from '../services/changes.js';
import { DEFAULT_SEARCH_PAGE, MAX_SEARCH_PAGE } from '../search/query.js';
import { refundCredits } from '../services/billing.js';
import { LARGE_LOAD } from '../services/quote-cache.js';
import { deliveryStream } from '../lib/delivery.js';
import { parseFeeProfile, type CallerFee } from '../fees/profile.js';
import { alertInput, DEFAULT_DELIVERIES_PAGE, MAX_DELIVERIES_PAGE } from '../services/alerts.js';
import type { Logger } from 'pino';
import type { Reply } from '../http/replies.js';

/** What a route sees of a request: path parameters, query parameters (all values) and the parsed JSON body. */
export interface RouteInput {
  path: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  headers: HeaderReader;
}

/** What a route's own responder gets besides the payload. */
export interface RespondContext {
  db: Database;
  state: RequestState;
  /** Aborts when the client leaves before the answer was sent whole (either transport). */
  signal: AbortSignal;
  logger?: Logger;
}

/** One row of the route table: how a catalogue operation's request becomes its document's variables and back. */
export interface RouteSpec {
  operationId: keyof typeof DOCUMENTS;
  /** Builds the document's variables; throws `validation_failed` (422) listing every bad parameter. */
  variables(input: RouteInput): Record<string, unknown>;
  /** Picks the payload out of the GraphQL result data. */
  payload(data: Record<string, unknown>): unknown;
  /** False for the bare `/health` object (spec, general conventions 2). */
  envelope: boolean;
  /** Extra response headers of a success. */
  headers?: Record<string, string>;
  /** True when the request has a JSON body. */
  body?: boolean;
  /** Builds the whole answer instead of the JSON envelope (the export file: headers, a 304, or the file as a stream). */
  respond?(payload: unknown, ctx: RespondContext): Reply;
  /**
   * True when the answer to these variables holds many quotes at once (a batch of LARGE_LOAD names or
   * more, services/quote-cache.ts): the facade runs at most HEAVY_AT_ONCE such requests per replica from execution to the encoded answer.
   */
  heavy?(variables: Record<string, unknown>): boolean;
  /**
   * A subscription document: the answer is an event stream (text/event-stream) of the live subscription it starts,
   * one `change` event per change (`id` = its seq, `data` = its ChangeOut) and a terminal `error` event with the envelope.
   */
  stream?: true;
}

/** One REST route: its table row with the method and path template of its catalogue row (data/endpoints.json). */
export interface Route extends RouteSpec {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path template as in the spec, e.g. `/websites/{code}`. */
  path: string;
}

class Collector {
  details: ValidationDetail[] = [];
  add(location: ValidationDetail['location'], field: string, message: string): void {
    this.details.push({ location, field, message });
  }
  /** The single value of a query parameter, or undefined; repeats are reported. */
  one(query: URLSearchParams, name: string): string | undefined {
    const all = query.getAll(name);
    if (all.length > 1) this.add('query', name, 'must be given at most once');
    return all[0];
  }
  check<T>(location: ValidationDetail['location'], field: string, schema: z.ZodType<T>, value: unknown): T | undefined {
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    for (const issue of r.error.issues) {
      const at = [field, ...issue.path.map(String)].filter((x) => x !== '');
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys) this.add(location, [...at, key].join('.'), 'is not a known field');
      } else {
        this.add(location, at.join('.'), issue.message);
      }
    }
    return undefined;
  }
  done(): void {
    if (this.details.length > 0) throw validationError(this.details);
  }
}

function parseBoolean(c: Collector, name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  c.add('query', name, 'must be true or false');
  return fallback;
}

function parseMarkets(c: Collector, location: ValidationDetail['location'], raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  if (raw.length === 0) {
    c.add(location, 'markets', 'must not be empty');
    return null;
  }
  return c.check(location, 'markets', v.marketList, raw.split(',').map((s) => s.trim())) ?? null;
}

/** A comma-separated list of market codes in query parameter `name` (null when absent). */
function parseMarketList(c: Collector, name: string, raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  if (raw.length === 0) {
    c.add('query', name, 'must not be empty');
    return null;
  }
  return c.check('query', name, v.marketList, raw.split(',').map((s) => s.trim())) ?? null;
}

/** The item a GET names: `market_hash_name` (required) and `app_id` (default 730). */
function itemParams(c: Collector, query: URLSearchParams): { marketHashName: string | undefined; appId: string | undefined } {
  const nameRaw = c.one(query, 'market_hash_name');
  if (nameRaw === undefined) c.add('query', 'market_hash_name', 'is required');
  const marketHashName = nameRaw === undefined ? undefined : c.check('query', 'market_hash_name', v.marketHashName, nameRaw);
  const appRaw = c.one(query, 'app_id');
  const appId = appRaw === undefined ? CS2_APP_ID : c.check('query', 'app_id', v.appId, appRaw);
  return { marketHashName, appId };
}

/** An optional UTC day query parameter (YYYY-MM-DD that exists): null when absent, a 422 detail when bad. */
function dayParam(c: Collector, query: URLSearchParams, name: string): string | null {
  const raw = c.one(query, name);
  return raw === undefined ? null : (c.check('query', name, v.day, raw) ?? null);
}

/** The `side` of a GET (ask, bid, mid, all; default all). */
function sideParam(c: Collector, query: URLSearchParams): string | undefined {
  const raw = c.one(query, 'side');
  return raw === undefined ? 'all' : c.check('query', 'side', v.side, raw);
}

/**
 * The route options both route paths share: `currency` (required), `buy_on`, `sell_on`, `fund`, `payout`,
 * `min_credibility`, `min_quantity`, `fee_profile` (docs/fees.md).
 */
function routeParams(c: Collector, query: URLSearchParams): Record<string, unknown> {
  const currencyRaw = c.one(query, 'currency');
  if (currencyRaw === undefined) c.add('query', 'currency', 'is required');
  const currency = currencyRaw === undefined ? undefined : c.check('query', 'currency', v.currencyCode, currencyRaw);
  const buyOn = parseMarketList(c, 'buy_on', c.one(query, 'buy_on'));
  const sellOn = parseMarketList(c, 'sell_on', c.one(query, 'sell_on'));
  const fundRaw = c.one(query, 'fund');
  const fund = fundRaw === undefined ? 'cash' : c.check('query', 'fund', v.funding, fundRaw);
  const payoutRaw = c.one(query, 'payout');
  const payout = payoutRaw === undefined ? 'cash' : c.check('query', 'payout', v.funding, payoutRaw);
  const credRaw = c.one(query, 'min_credibility');
  let minCredibility: number | undefined = 0;
  if (credRaw !== undefined) {
    minCredibility = /^(0(\.\d+)?|1(\.0+)?)$/.test(credRaw) ? Number(credRaw) : undefined;
    if (minCredibility === undefined) c.add('query', 'min_credibility', 'must be a number from 0 to 1');
  }
  const qtyRaw = c.one(query, 'min_quantity');
  let minQuantity: number | null | undefined = null;
  if (qtyRaw !== undefined) minQuantity = c.check('query', 'min_quantity', v.minQuantity, /^(\d{1,6}|1000000)$/.test(qtyRaw) ? Number(qtyRaw) : NaN);
  const profileRaw = c.one(query, 'fee_profile');
  let feeProfile: CallerFee[] | null | undefined = null;
  if (profileRaw !== undefined) {
    const parsed = parseFeeProfile(profileRaw);
    if ('problems' in parsed) {
      for (const p of parsed.problems) c.add('query', 'fee_profile', p);
      feeProfile = undefined;
    } else {
      feeProfile = c.check('query', 'fee_profile', v.feeProfile, parsed.entries) as CallerFee[] | undefined;
    }
  }
  return { currency, buyOn, sellOn, fund, payout, minCredibility, minQuantity, feeProfile };
}

const pick = (key: string) => (data: Record<string, unknown>) => data[key];

/** The route table; method and path come from the catalogue only (ROUTES). */
const TABLE: readonly RouteSpec[] = [
  { operationId: 'getHealth', envelope: false, variables: () => ({}), payload: pick('health') },
  {
    operationId: 'getConfig', envelope: true, headers: { 'Cache-Control': 'no-store' },
    variables: () => ({}), payload: pick('config'),
  },
  { operationId: 'getStatus', envelope: true, headers: { 'Cache-Control': 'no-store' }, variables: () => ({}), payload: pick('status') },
  { operationId: 'getMe', envelope: true, variables: () => ({}), payload: pick('me') },
  { operationId: 'listEndpoints', envelope: true, variables: () => ({}), payload: pick('endpoints') },
  {
    // Webhook alerts (docs/alerts.md; issue 44, point 3): registration. The body is checked here for its shape; the
    // item, the markets and the account's bound by the resolver (src/services/alerts.ts).
    operationId: 'createAlert', envelope: true, body: true, payload: pick('createAlert'),
    variables: ({ body }) => {
      const c = new Collector();
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        c.add('body', '', 'must be a JSON object');
        c.done();
      }
      const parsed = c.check('body', '', alertInput, body);
      c.done();
      const input: Record<string, unknown> = {};
      for (const [k, value] of Object.entries(parsed!)) input[k.replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase())] = value;
      return { input };
    },
  },
  { operationId: 'listAlerts', envelope: true, variables: () => ({}), payload: pick('alerts') },
  {
    operationId: 'deleteAlert', envelope: true, payload: pick('deleteAlert'),
    variables: ({ path }) => ({ alertId: path.id }),
  },
  {
    operationId: 'listAlertDeliveries', envelope: true, payload: pick('alertDeliveries'),
    variables: ({ path, query }) => {
      const c = new Collector();
      const limitRaw = c.one(query, 'limit');
      let limit: number | undefined = DEFAULT_DELIVERIES_PAGE;
      if (limitRaw !== undefined) {
        limit = /^\d{1,3}$/.test(limitRaw) ? Number(limitRaw) : undefined;
        if (limit === undefined || limit < 1 || limit > MAX_DELIVERIES_PAGE) {
          limit = undefined;
          c.add('query', 'limit', `must be a whole number from 1 to ${MAX_DELIVERIES_PAGE}`);
        }
      }
      const cursor = c.one(query, 'cursor') ?? null;
      if (cursor !== null && !/^\d{1,19}$/.test(cursor)) c.add('query', 'cursor', 'must be a next_cursor this listing returned');
      c.done();
      return { alertId: path.id, limit, cursor };
    },
  },
  {
    operationId: 'listWebsites', envelope: true, payload: pick('websites'),
    variables: ({ query }) => {
      const c = new Collector();
      const includeDeprecated = parseBoolean(c, 'include_deprecated', c.one(query, 'include_deprecated'), false);
      c.done();
      return { includeDeprecated };
    },
  },
  {
    operationId: 'getWebsite', envelope: true, payload: pick('website'),
    variables: ({ path }) => {
      const c = new Collector();
      const code = c.check('path', 'code', v.websiteCode, path.code);
      c.done();
      return { code };
    },
  },
  {
    operationId: 'getFeeSchedule', envelope: true,
    payload: (data) => (data.website as { feeSchedule: unknown }).feeSchedule,
    variables: ({ path, query }) => {
      const c = new Collector();
      const code = c.check('path', 'code', v.websiteCode, path.code);
      // `as_of` (an addition to the spec's path, README: Extensions): the schedule in force that day; absent = today.
      const asOf = dayParam(c, query, 'as_of');
      c.done();
      return { code, asOf };
    },
  },
  {
    operationId: 'listCurrencies', envelope: true, payload: pick('currencies'),
    variables: ({ query }) => {
      const c = new Collector();
      const raw = c.one(query, 'search');
      const search = raw === undefined ? null : c.check('query', 'search', v.currencySearch, raw);
      c.done();
      return { search };
    },
  },
  {
    operationId: 'getCurrency', envelope: true, payload: pick('currency'),
    variables: ({ path }) => {
      const c = new Collector();
      const raw = path.currency_id ?? '';
      // An integer in decimal digits (leading zeros allowed); its range is the shared rule.
      const id = /^\d+$/.test(raw) ? c.check('path', 'currency_id', v.currencyId, Number(raw)) : undefined;
      if (!/^\d+$/.test(raw)) c.add('path', 'currency_id', 'must be a whole number from 0 to 2147483647');
      c.done();
      return { id };
    },
  },
  {
    operationId: 'getPrices', envelope: true, payload: pick('prices'),
    variables: ({ query }) => {
      const c = new Collector();
      const { marketHashName, appId } = itemParams(c, query);
      const markets = parseMarkets(c, 'query', c.one(query, 'markets'));
      const side = sideParam(c, query);
      c.done();
      return { marketHashName, appId, markets, side };
    },
  },
  {
    // A documented extension (README, Extensions): an item's cross-market routes after fees.
    operationId: 'getRoutes', envelope: true, payload: pick('routes'),
    variables: ({ query }) => {
      const c = new Collector();
      const { marketHashName, appId } = itemParams(c, query);
      const opts = routeParams(c, query);
      const includeUnpriced = parseBoolean(c, 'include_unpriced', c.one(query, 'include_unpriced'), false);
      c.done();
      return { marketHashName, appId, ...opts, includeUnpriced };
    },
  },
  {
    // A documented extension (docs/fees.md, The market-wide scan): the best routes across the catalogue.
    operationId: 'getTopRoutes', envelope: true, payload: pick('topRoutes'),
    variables: ({ query }) => {
      const c = new Collector();
      const appRaw = c.one(query, 'app_id');
      const appId = appRaw === undefined ? CS2_APP_ID : c.check('query', 'app_id', v.appId, appRaw);
      const opts = routeParams(c, query);
      const marginRaw = c.one(query, 'min_margin');
      const minMargin = marginRaw === undefined ? null : (c.check('query', 'min_margin', v.minMargin, marginRaw) ?? null);
      const limitRaw = c.one(query, 'limit');
      let limit: number | undefined = 20;
      if (limitRaw !== undefined) limit = c.check('query', 'limit', v.topLimit, /^\d{1,4}$/.test(limitRaw) ? Number(limitRaw) : NaN);
      c.done();
      return { appId, ...opts, minMargin, limit };
    },
  },
  {
    // A documented extension (README, Extensions; docs/history.md): an item's candles per market and its CSCP series.
    operationId: 'getPriceHistory', envelope: true, payload: pick('priceHistory'),
    variables: ({ query }) => {
      const c = new Collector();
      const { marketHashName, appId } = itemParams(c, query);
      const markets = parseMarkets(c, 'query', c.one(query, 'markets'));
      const side = sideParam(c, query);
      const from = dayParam(c, query, 'from');
      const to = dayParam(c, query, 'to');
      const intervalRaw = c.one(query, 'interval');
      const interval = intervalRaw === undefined ? 'day' : c.check('query', 'interval', v.historyInterval, intervalRaw);
      c.done();
      // The GraphQL enum HistoryInterval names its values DAY, WEEK, MONTH.
      return { marketHashName, appId, markets, side, from, to, interval: interval?.toUpperCase() };
    },
  },
  {
    // A documented extension (README, Extensions; issue: live): the quotes changed after a cursor.
    operationId: 'getPriceChanges', envelope: true, payload: pick('priceChanges'),
    variables: ({ query }) => {
      const c = new Collector();
      const appRaw = c.one(query, 'app_id');
      const appId = appRaw === undefined ? CS2_APP_ID : c.check('query', 'app_id', v.appId, appRaw);
      const sinceRaw = c.one(query, 'since');
      const since = sinceRaw === undefined ? null : c.check('query', 'since', v.changeCursor, sinceRaw);
      const markets = parseMarkets(c, 'query', c.one(query, 'markets'));
      const side = sideParam(c, query);
      const limitRaw = c.one(query, 'limit');
      let limit: number | undefined = DEFAULT_CHANGES_PAGE;
      if (limitRaw !== undefined) {
        limit = /^\d{1,4}$/.test(limitRaw) ? Number(limitRaw) : undefined;
        if (limit === undefined || limit < 1 || limit > MAX_CHANGES_PAGE) {
          limit = undefined;
          c.add('query', 'limit', `must be a whole number from 1 to ${MAX_CHANGES_PAGE}`);
        }
      }
      c.done();
      return { appId, since, markets, side, limit };
    },
  },
  {
    // A documented extension (README, Extensions: live changes; issue: live, point 3): the change feed as a
    // server-sent event stream, the subscription `quoteChanged` of GraphQL. `Last-Event-ID` resumes like `since`.
    operationId: 'subscribePriceChanges', envelope: false, payload: pick('quoteChanged'),
    stream: true,
    variables: ({ query, headers }) => {
      const c = new Collector();
      const appRaw = c.one(query, 'app_id');
      const appId = appRaw === undefined ? CS2_APP_ID : c.check('query', 'app_id', v.appId, appRaw);
      // Last-Event-ID (an EventSource reconnecting) resumes like `since`; the parameter wins when both are given.
      const lastEventRaw = headers.get('last-event-id');
      const lastEvent = lastEventRaw === null ? null : (c.check('header', 'last-event-id', v.changeCursor, lastEventRaw) ?? null);
      const sinceRaw = c.one(query, 'since');
      const since = sinceRaw === undefined ? lastEvent : (c.check('query', 'since', v.changeCursor, sinceRaw) ?? null);
      const namesRaw = query.getAll('market_hash_name');
      if (namesRaw.length > v.MAX_BATCH_NAMES) c.add('query', 'market_hash_name', `must be given at most ${v.MAX_BATCH_NAMES} times`);
      const names = namesRaw.length === 0 ? null : namesRaw.map((n) => c.check('query', 'market_hash_name', v.marketHashName, n)).filter((n) => n !== undefined);
      const markets = parseMarkets(c, 'query', c.one(query, 'markets'));
      const side = sideParam(c, query);
      c.done();
      return { appId, names, markets, side, since };
    },
  },
  {
    // A documented extension (docs/search.md; issue 44, point 1): the item catalogue search. Its own path: the HTML
    // pages own /items (src/pages/item-page.ts), and the spec's paths are /websites, /currencies, /prices, /me, ...
    operationId: 'searchItems', envelope: true, payload: pick('items'),
    variables: ({ query }) => {
      const c = new Collector();
      const qRaw = c.one(query, 'q');
      if (qRaw === undefined) c.add('query', 'q', 'is required');
      const search = qRaw === undefined ? undefined : c.check('query', 'q', v.searchText, qRaw);
      const appRaw = c.one(query, 'app_id');
      const appId = appRaw === undefined ? CS2_APP_ID : c.check('query', 'app_id', v.appId, appRaw);
      const limitRaw = c.one(query, 'limit');
      let first: number | undefined = DEFAULT_SEARCH_PAGE;
      if (limitRaw !== undefined) {
        first = /^\d{1,3}$/.test(limitRaw) ? c.check('query', 'limit', v.searchLimit, Number(limitRaw)) : undefined;
        if (!/^\d{1,3}$/.test(limitRaw)) c.add('query', 'limit', `must be a whole number from 1 to ${MAX_SEARCH_PAGE}`);
      }
      const after = c.one(query, 'cursor') ?? null;
      if (after !== null && search !== undefined && appId !== undefined) {
        const problem = v.searchCursorProblem(after, search, appId);
        if (problem !== null) c.add('query', 'cursor', problem);
      }
      c.done();
      return { search, first, after, appId };
    },
  },
  {
    operationId: 'getValuationAccuracy', envelope: true, payload: pick('valuationAccuracy'),
    variables: ({ query }) => {
      const c = new Collector();
      const from = dayParam(c, query, 'from');
      const to = dayParam(c, query, 'to');
      c.done();
      return { from, to };
    },
  },
  {
    operationId: 'exportPrices', envelope: false, payload: pick('priceExport'),
    variables: ({ query, headers }) => {
      const c = new Collector();
      const appRaw = c.one(query, 'app_id');
      const appId = appRaw === undefined ? CS2_APP_ID : c.check('query', 'app_id', v.appId, appRaw);
      const sideRaw = c.one(query, 'side');
      const side = sideRaw === undefined ? 'ask' : c.check('query', 'side', v.side, sideRaw);
      const formatRaw = c.one(query, 'format');
      const format = formatRaw === undefined ? 'json' : c.check('query', 'format', v.exportFormat, formatRaw);
      const tagsRaw = headers.get('if-none-match');
      const ifNoneMatch = tagsRaw === null ? null : c.check('header', 'If-None-Match', v.ifNoneMatch, tagsRaw);
      c.done();
      return { appId, side, format, ifNoneMatch };
    },
    respond: (payload, { db, state, signal, logger }) => {
      const s = payload as { snapshotId: string; format: ExportFormat; etag: string; generatedAt: string; changeSeq: string; byteSize: number; notModified: boolean };
      const billing = state.billing;
      const headers: Record<string, string> = {
        ETag: s.etag,
        'Last-Modified': new Date(s.generatedAt).toUTCString(),
        'X-Export-Generated-At': s.generatedAt,
        'X-Change-Sequence': s.changeSeq,
        'Cache-Control': 'private, no-cache',
        'X-Billable': String(Boolean(billing?.billable)),
      };
      if (s.notModified) return { status: 304, headers, body: null };
      if (billing?.billable) {
        headers['X-Credit-Cost'] = billing.cost.toString();
        headers['X-Credit-Remaining'] = billing.remaining.toString();
      }
      const fileHeaders = { ...headers, 'Content-Type': EXPORT_CONTENT_TYPES[s.format], 'Content-Encoding': 'gzip', 'Content-Length': String(s.byteSize) };
      if (state.head) return { status: 200, headers: fileHeaders, body: null };
      // Paid on delivery (README, Billing): a file that fails or is cut off before its last byte is refunded.
      const charge = billing?.charge;
      const file = snapshotStream(db, s.snapshotId);
      const body = charge
        ? deliveryStream(file, signal, async (reason) => {
            const refunded = await refundCredits(db, charge);
            logger?.warn({ reason, refunded, credits: charge.cost.toString() }, 'export not delivered: charge refunded');
          }, s.byteSize)
        : file;
      return { status: 200, headers: fileHeaders, body: null, stream: body };
    },
  },
  {
    operationId: 'batchPrices', envelope: true, body: true, payload: pick('batchPrices'),
    heavy: (variables) => Array.isArray(variables.marketHashNames) && variables.marketHashNames.length >= LARGE_LOAD,
    variables: ({ body }) => {
      const c = new Collector();
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        c.add('body', '', 'must be a JSON object');
        c.done();
      }
      const parsed = c.check('body', '', v.batchBody, body);
      c.done();
      return {
        marketHashNames: parsed!.market_hash_names,
        appId: parsed!.app_id ?? CS2_APP_ID,
        markets: parsed!.markets ?? null,
        side: parsed!.side ?? 'all',
      };
    },
  },
];

/** Every REST route of the service: the table's rows with the method and path of their catalogue rows. */
export const ROUTES: readonly Route[] = TABLE.map((spec) => {
  const row = endpoint(spec.operationId);
  return { ...spec, method: row.method, path: row.path };
});

