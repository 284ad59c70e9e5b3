/**
 * The per-request context shared by both faces: database, caller, request id and DataLoaders.
 * Loaders are created lazily per request, so one request batches its reads and never sees another's.
 */
import { DEFAULT_ALERT_SETTINGS, type AlertSettings } from '../alerts/alerts.js';
import type { HeaderReader } from '../lib/headers.js';
import DataLoader from 'dataloader';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import {
  authenticateKey,
  authenticateToken,
  credentialFromHeaders,
  isWellFormedKey,
  isWellFormedToken,
  type Caller,
  type MachineCaller,
  type UserCaller,
} from '../accounts/accounts.js';
import { forbidden, unauthorized } from '../lib/errors.js';
import * as catalogue from '../catalogue/catalogue.js';
import { loadMarketQuotePages, loadQuotes, loadQuoteTexts, type MarketQuote, type MarketQuotePageRequest } from '../quotes/quotes.js';
import { defaultStatusSettings, type StatusSettings } from '../status/status.js';
import { loadFeeBook, type FeeBook } from '../valuation/daily.js';
import type { Charge } from '../accounts/billing.js';
import type { CallerCache } from '../accounts/caller-cache.js';
import type { QuoteCache, StoredText } from '../quotes/quote-cache.js';
import type { SnapshotCache } from '../exports/exports.js';
import type { CreditLeases } from '../accounts/credit-leases.js';
import type { LiveHub, LiveSubscription } from '../live/live.js';
import type { LiveMeter, LiveReservation } from '../live/live-billing.js';

/** The replica's live hub and the meter of its subscriptions (live/live.ts, live-billing.ts). */
export interface LiveOptions {
  hub: LiveHub;
  /** Slots, charges per minute and entitlement re-checks of the subscriptions (per-account cap: `meter.maxConcurrent`). */
  meter: LiveMeter;
}

/** Loaders of one request. Keys of `quotes`: `appId + '\u0000' + marketHashName`. */
export class Loaders {
  /** `quoteCache`: the replica's cache of published quotes (quotes/quote-cache.ts); absent = always the database. */
  constructor(
    private readonly db: Database,
    private readonly quoteCache?: QuoteCache,
  ) {}
  private cache = new Map<string, DataLoader<never, never>>();
  private make<K, V>(name: string, batch: (keys: readonly K[]) => Promise<V[]>, options?: DataLoader.Options<K, V, string>): DataLoader<K, V> {
    let l = this.cache.get(name) as DataLoader<K, V> | undefined;
    if (!l) {
      l = new DataLoader<K, V, string>(batch, options) as unknown as DataLoader<K, V>;
      this.cache.set(name, l as unknown as DataLoader<never, never>);
    }
    return l;
  }
  get website() {
    return this.make('website', (codes: readonly string[]) => catalogue.websitesByCode(this.db.prisma, codes));
  }
  /** Fee schedule slots in force on a day; keys `websiteCode + '\u0000' + YYYY-MM-DD`. */
  get slots() {
    return this.make('slots', (keys: readonly string[]) => catalogue.slotsByWebsiteAndDay(this.db.prisma, keys));
  }
  get chain() {
    return this.make('chain', (ids: readonly number[]) => catalogue.chainsById(this.db.prisma, ids));
  }
  get steps() {
    return this.make('steps', (ids: readonly number[]) => catalogue.stepsByChain(this.db.prisma, ids));
  }
  get feeOperator() {
    return this.make('feeOperator', (ids: readonly number[]) => catalogue.feeOperatorsById(this.db.prisma, ids));
  }
  get convertOperator() {
    return this.make('convertOperator', (ids: readonly number[]) => catalogue.convertOperatorsById(this.db.prisma, ids));
  }
  get group() {
    return this.make('group', (ids: readonly number[]) => catalogue.groupsById(this.db.prisma, ids));
  }
  get currency() {
    return this.make('currency', (ids: readonly number[]) => catalogue.currenciesById(this.db.prisma, ids));
  }
  private book: Promise<FeeBook> | null = null;
  /**
   * Fee schedules in force at `now` (with exact rules) and official rates with their dates, loaded once per
   * request (`afterFees`, `converted`, routes).
   */
  feeBook(now: Date): Promise<FeeBook> {
    return (this.book ??= loadFeeBook(this.db, now));
  }
  /**
   * The quotes of one item (null: none): at once from the replica's quote cache when it holds the item,
   * else through the `quotes` loader.
   */
  quotesOf(appId: string, name: string): MarketQuote[] | null | Promise<MarketQuote[] | null> {
    const cached = this.quoteCache?.peek(appId, name);
    if (cached !== undefined) return cached.length > 0 ? cached : null;
    return this.quotes.load(`${appId}\u0000${name}`);
  }
  /**
   * The quotes of `names` (app `appId`) now, without this request's loader keeping them: from the replica's
   * quote cache, else one SQL statement. For answers made block by block (a streamed batch), whose blocks must not
   * all stay in memory until the request ends. Throws when the database fails.
   */
  quotesNow(appId: string, names: readonly string[]): Promise<Map<string, MarketQuote[]>> {
    return this.quoteCache ? this.quoteCache.load(appId, names) : loadQuotes(this.db, appId, names);
  }
  /**
   * The quotes of one item as the JSON array text of GET /prices' `markets` (null: no quotes), as `quotesText` writes
   * `quotesOf`'s list: at once from the replica's quote cache when it holds the text, else through the `quoteTexts`
   * loader. For unfiltered REST answers, which need no quote object. A long text comes as its UTF-8 bytes (the quote
   * cache's StoredText), which answers copy as they are.
   */
  quoteTextOf(appId: string, name: string): StoredText | null | Promise<StoredText | null> {
    const cached = this.quoteCache?.peekText(appId, name);
    if (cached !== undefined) return cached === '' ? null : cached;
    return this.quoteTexts.load(`${appId}\u0000${name}`);
  }
  /** `quotesNow` as texts (see quoteTextOf); names without quotes are absent. Throws when the database fails. */
  quoteTextsNow(appId: string, names: readonly string[]): Promise<Map<string, StoredText>> {
    return this.quoteCache ? this.quoteCache.loadTexts(appId, names) : loadQuoteTexts(this.db, appId, names);
  }
  /** Quote texts per item (see quoteTextOf), keys `appId NUL name`: every name asked in one tick in one statement per app id. */
  get quoteTexts() {
    return this.make('quoteTexts', (keys: readonly string[]) => this.byApp(keys, (app, names) => this.quoteTextsNow(app, names)));
  }
  /**
   * Pages of markets' quote lists (GraphQL `Website.quotes`): every page asked in one tick, whatever its market,
   * cursor or size, is read by one SQL statement (quotes/quotes.ts loadMarketQuotePages). Not from the quote cache,
   * which holds items, not markets' lists.
   */
  get marketQuotePages() {
    return this.make('marketQuotePages', (requests: readonly MarketQuotePageRequest[]) => loadMarketQuotePages(this.db, requests), { cacheKeyFn: (r) => JSON.stringify(r) });
  }
  /** Quotes per item: from the replica's quote cache, else one SQL statement per app id for all names requested in one tick. */
  get quotes() {
    return this.make('quotes', (keys: readonly string[]) => this.byApp(keys, (app, names) => this.quotesNow(app, names)));
  }
  /** Answers keys `appId NUL name` with `read`'s values (null when absent), one `read` per app id. */
  private async byApp<V>(keys: readonly string[], read: (appId: string, names: string[]) => Promise<Map<string, V>>): Promise<(V | null)[]> {
    const byApp = new Map<string, string[]>();
    for (const k of keys) {
      const [app, name] = k.split('\u0000') as [string, string];
      let names = byApp.get(app);
      if (!names) byApp.set(app, (names = []));
      names.push(name);
    }
    const found = new Map<string, V>();
    for (const [app, names] of byApp) {
      for (const [name, value] of await read(app, names)) found.set(`${app}\u0000${name}`, value);
    }
    return keys.map((k) => found.get(k) ?? null);
  }
}

/** Rate-limit state of one catalogue operation after this request's consumption (IETF RateLimit fields). */
export interface RateLimitState {
  /** Policy name: the catalogue operation id. */
  policy: string;
  limit: number;
  windowSeconds: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** What one request's metering decided; the REST facade and the GraphQL response both report it. */
export interface RequestState {
  requestId: string;
  /** One entry per rate-limited operation the request touched (empty when none). */
  rateLimits: RateLimitState[];
  /**
   * Set for requests that ran a metered operation: billed or free, and the figures when billed
   * (whole credits); `charge` is the ledger row written, so a delivery that fails can refund it.
   */
  billing: { billable: boolean; cost: bigint; remaining: bigint; charge?: Charge } | null;
  /**
   * Response keys of root fields whose answer is never billed although it succeeded (an export
   * 304). Each metered field is waived on its own: one waived field never waives another.
   */
  waived?: Set<string>;
  /** What of the answer leaves the service, as the face that took the request sends it (see Delivery). */
  delivery: Delivery;
  /** The catalogue operation the request runs (`graphql` for /graphql), for logs and metrics. */
  operationId?: string;
  /** The request's logger: every line carries `request_id`. */
  log?: Logger;
  /**
   * The live subscription this request's execution started (live/live.ts), an outcome like `billing`: a face that
   * writes events (the REST event stream, GraphQL over SSE) reads them from it directly, without a GraphQL
   * execution per event.
   */
  live?: LiveSubscription;
  /**
   * What the metering plugin reserved for the subscription this request starts (its slot, live/live-billing.ts
   * `reserve`), before its rate limit: the resolver starts the subscription with it.
   */
  liveReservation?: LiveReservation;
}

/**
 * What of a request's answer leaves the service: metering charges priced data only when it does (README, Billing: a
 * charge follows the data), and a resolver may hand over values made while the answer is written when it is written
 * that way. Set by the face that took the request; it names no transport, only what is sent.
 */
export interface Delivery {
  /**
   * The answer's body is sent. False for a HEAD (its status and headers only): a metered field is then rate limited
   * like its GET but never billed, and a subscription is admitted but not started (README, HEAD).
   */
  readonly body: boolean;
  /**
   * The body is written as it is made, block by block: a resolver may return DeferredJson (lib/raw-json.ts) loaded
   * while it is written, and the charge is taken as a named ledger row, never from a lease, so an answer not
   * delivered whole can be refunded (README, Billing: paid on delivery).
   */
  readonly deferred: boolean;
}

/** The whole answer is sent at once (every request but a HEAD and a streamed answer). */
export const ANSWER_SENT: Delivery = Object.freeze({ body: true, deferred: false });
/** Status and headers only: a HEAD request. */
export const HEADERS_ONLY: Delivery = Object.freeze({ body: false, deferred: false });
/** The answer is written as it is made (a heavy REST batch, RouteSpec.heavy). */
export const ANSWER_STREAMED: Delivery = Object.freeze({ body: true, deferred: true });

/** A fresh RequestState: the whole answer sent unless its face says otherwise (`delivery`). */
export function newRequestState(requestId: string, delivery: Delivery = ANSWER_SENT): RequestState {
  return { requestId, rateLimits: [], billing: null, delivery };
}

/** What every resolver receives. */
export interface Context {
  db: Database;
  /** Unique per request; equals the X-Request-ID header and meta.request_id. */
  requestId: string;
  state: RequestState;
  loaders: Loaders;
  /** The moment the request started (subscriptions are judged at this instant). */
  now: Date;
  /** What `/status` shows besides the recorded rows (components checked here, proxy footprint). */
  status: StatusSettings;
  /** The replica's cache of API-key lookups, when the app has one (metering keeps its balances current). */
  callers?: CallerCache;
  /** The replica's credit leases, when the app has them: metering charges through them. */
  leases?: CreditLeases;
  /** The replica's cache of current export snapshots, when the app has one (the export's 304s read it). */
  snapshots?: SnapshotCache;
  /** The replica's live hub, when the app serves subscriptions. */
  live?: LiveOptions;
  /** The alerts' settings (webhook schemes, alerts per account; docs/alerts.md). */
  alerts: AlertSettings;
  /**
   * The `user` caller behind the request's API key, allowed to run catalogue operation `operationId`;
   * the credential is looked up once per request. Throws 401 `unauthorized` (missing, malformed,
   * unknown or revoked key) or 403 `forbidden` (account disabled, a service token, or a key limited
   * to other operations).
   */
  requireUser(operationId: string): Promise<UserCaller>;
  /**
   * `requireUser` without a promise when the caller is known at once (looked up earlier in this request, or a
   * fresh entry of the replica's key cache); undefined when it must be looked up (then `requireUser`, which also
   * gives the 401 of a missing, unknown or revoked key). Throws the 403 refusals of `requireUser` for a known caller.
   */
  userNow(operationId: string): UserCaller | undefined;
  /** The `machine` caller behind the request's service token. Throws 401 or 403 (an API key) likewise. */
  requireMachine(): Promise<MachineCaller>;
}

/** Per-app context options: the clock (tests fix it), the status settings and the replica's cache of key lookups. */
export interface ContextOptions {
  clock?: () => Date;
  status?: StatusSettings;
  /** API-key lookups cached per replica (accounts/caller-cache.ts); absent = every request asks the database. */
  callers?: CallerCache;
  /** Published quotes cached per replica (quotes/quote-cache.ts); absent = every request asks the database. */
  quotes?: QuoteCache;
  /** The replica's credit leases (accounts/credit-leases.ts); absent = one charge statement per request. */
  leases?: CreditLeases;
  /** Current export snapshots cached per replica (exports/exports.ts, SnapshotCache); absent = the database. */
  snapshots?: SnapshotCache;
  /** The replica's live hub (subscriptions); absent = subscriptions answer 503. */
  live?: LiveOptions;
  /** The alerts' settings; absent = DEFAULT_ALERT_SETTINGS (https only, 50 per account). */
  alerts?: AlertSettings;
}

/** `c` when it is a `user` caller allowed to run `operationId`; throws 403 `forbidden` otherwise (see Context.requireUser). */
function allowedUser(c: Caller, operationId: string): UserCaller {
  if (c.role !== 'user') throw forbidden('This operation needs an API key; service tokens may only call the sync mutations.');
  if (c.disabled) throw forbidden('The account of this API key is disabled.');
  if (c.allowedOperations.length > 0 && !c.allowedOperations.includes(operationId)) {
    throw forbidden(`This API key is not allowed to call ${operationId}.`);
  }
  return c;
}

/** Builds a request context; the credential lookup happens only when a resolver or plugin asks for the caller. */
export function createContext(db: Database, state: RequestState, headers: HeaderReader, opts: ContextOptions = {}): Context {
  let pending: Promise<Caller> | null = null;
  /** The caller once known without waiting (a fresh entry of the key cache) or once its lookup resolved. */
  let known: Caller | undefined;
  const now = opts.clock ? opts.clock() : new Date();
  const caller = () => {
    pending ??= (async (): Promise<Caller> => {
      const secret = credentialFromHeaders(headers);
      if (secret === null) throw unauthorized('An API key is required: send Authorization: Bearer <key> or X-API-Key: <key>.');
      if (isWellFormedKey(secret)) {
        const user = opts.callers ? await opts.callers.lookup(secret, now) : await authenticateKey(db, secret, now);
        if (!user) throw unauthorized('The API key is unknown or revoked.');
        return (known = user);
      }
      if (isWellFormedToken(secret)) {
        const machine = await authenticateToken(db, secret);
        if (!machine) throw unauthorized('The service token is unknown or revoked.');
        return machine;
      }
      throw unauthorized('The API key is malformed.');
    })();
    return pending;
  };
  return {
    db,
    requestId: state.requestId,
    state,
    loaders: new Loaders(db, opts.quotes),
    now,
    status: opts.status ?? defaultStatusSettings(),
    ...(opts.callers ? { callers: opts.callers } : {}),
    ...(opts.leases ? { leases: opts.leases } : {}),
    ...(opts.snapshots ? { snapshots: opts.snapshots } : {}),
    ...(opts.live ? { live: opts.live } : {}),
    alerts: opts.alerts ?? DEFAULT_ALERT_SETTINGS,
    async requireUser(operationId) {
      return allowedUser(await caller(), operationId);
    },
    userNow(operationId) {
      if (known === undefined && pending === null && opts.callers) {
        const secret = credentialFromHeaders(headers);
        const hit = secret !== null && isWellFormedKey(secret) ? opts.callers.peek(secret, now) : undefined;
        if (hit) pending = Promise.resolve((known = hit));
      }
      return known === undefined ? undefined : allowedUser(known, operationId);
    },
    async requireMachine() {
      const c = await caller();
      if (c.role !== 'machine') throw forbidden('This operation needs a service token (role machine).');
      return c;
    },
  };
}
