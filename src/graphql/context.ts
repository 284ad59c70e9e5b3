/**
 * The per-request context shared by both faces: database, caller, request id and DataLoaders.
 * Loaders are created lazily per request, so one request batches its reads and never sees another's.
 */
import DataLoader from 'dataloader';
import type { Database } from '../db/client.js';
import { authenticate, isWellFormedKey, keyFromHeaders, type Caller } from '../services/accounts.js';
import { ServiceError, unauthorized } from '../lib/errors.js';
import * as catalogue from '../services/catalogue.js';
import { loadQuotes, type MarketQuote } from '../services/quotes.js';

/** Loaders of one request. Keys of `quotes`: `appId + '\u0000' + marketHashName`. */
export class Loaders {
  constructor(private readonly db: Database) {}
  private cache = new Map<string, DataLoader<never, never>>();
  private make<K, V>(name: string, batch: (keys: readonly K[]) => Promise<V[]>): DataLoader<K, V> {
    let l = this.cache.get(name) as DataLoader<K, V> | undefined;
    if (!l) {
      l = new DataLoader<K, V>(batch);
      this.cache.set(name, l as unknown as DataLoader<never, never>);
    }
    return l;
  }
  get website() {
    return this.make('website', (codes: readonly string[]) => catalogue.websitesByCode(this.db.prisma, codes));
  }
  get slots() {
    return this.make('slots', (codes: readonly string[]) => catalogue.slotsByWebsite(this.db.prisma, codes));
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
  /** Quotes per item; one pair of SQL queries per app id for all names requested in one tick. */
  get quotes() {
    return this.make('quotes', async (keys: readonly string[]): Promise<(MarketQuote[] | null)[]> => {
      const byApp = new Map<string, string[]>();
      for (const k of keys) {
        const [app, name] = k.split('\u0000') as [string, string];
        let names = byApp.get(app);
        if (!names) byApp.set(app, (names = []));
        names.push(name);
      }
      const found = new Map<string, MarketQuote[]>();
      for (const [app, names] of byApp) {
        const quotes = await loadQuotes(this.db, app, names);
        for (const [name, list] of quotes) found.set(`${app}\u0000${name}`, list);
      }
      return keys.map((k) => found.get(k) ?? null);
    });
  }
}

/** What every resolver receives. */
export interface Context {
  db: Database;
  /** Unique per request; equals the X-Request-ID header and meta.request_id. */
  requestId: string;
  loaders: Loaders;
  /**
   * The caller behind the request's API key, looked up once per request.
   * Throws 401 `unauthorized` (missing, malformed, unknown or revoked key) or 403 `forbidden` (account disabled).
   */
  requireUser(): Promise<Caller>;
}

/** Builds a request context; the key lookup happens only when a resolver asks for the caller. */
export function createContext(db: Database, requestId: string, headers: Headers): Context {
  let pending: Promise<Caller> | null = null;
  return {
    db,
    requestId,
    loaders: new Loaders(db),
    requireUser() {
      pending ??= (async () => {
        const key = keyFromHeaders(headers);
        if (key === null) throw unauthorized('An API key is required: send Authorization: Bearer <key> or X-API-Key: <key>.');
        if (key === '' || !isWellFormedKey(key)) throw unauthorized('The API key is malformed.');
        const caller = await authenticate(db, key);
        if (!caller) throw unauthorized('The API key is unknown or revoked.');
        if (caller.disabled) throw new ServiceError('forbidden', 403, 'The account of this API key is disabled.');
        return caller;
      })();
      return pending;
    },
  };
}
