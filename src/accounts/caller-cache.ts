/**
 * API-key lookups cached in process memory, so a request does not pay a database round trip to
 * learn who is calling (issue: serving quotes at the machine's limit, step "caller").
 *
 * Freshness rules (README, Choices: credentials):
 * - An entry lives at most `maxAgeMs` (default 30 s) while the replica hears change signals
 *   (`Database.listening`), and at most `unlistenedMaxAgeMs` (1 s) while its LISTEN connection is down;
 *   when that connection comes back every entry is dropped. A change whose signal cannot be sent is
 *   reported to its caller (Database.notify throws), so a revoked key or disabled account is refused
 *   within 1 s on every replica unless the operator was told it was not.
 * - Every change of an account's keys, state, subscriptions or credit total signals `qg_auth` with the
 *   account id (Database.notify: at once in this process, PostgreSQL NOTIFY to the others), and each
 *   replica drops that account's entries when the signal arrives.
 * - The balance in a cached caller only decides the up-front 402 check; the charge itself is the
 *   conditional SQL statement, so a stale balance never spends what is not there. A charge updates the
 *   entry; a refused charge drops it.
 * - Only successful lookups are cached (a key created a moment ago works at once); the cache holds at
 *   most `maxEntries` keys (oldest dropped first).
 * Keys are held by their SHA-256 hash, never the secret.
 * The misses of one turn of the event loop are looked up together, in one statement (`authenticateKeyHashes`).
 */
import DataLoader from 'dataloader';
import type { Database } from '../db/client.js';
import { authenticateKeyHashes, hashSecret, isWellFormedKey, type UserCaller } from './accounts.js';

/** Options of the cache: the bounds on an entry's age (ms) and on the number of entries. */
export interface CallerCacheOptions {
  /** Longest an entry is reused while this replica hears change signals (Database.listening; default 30,000 ms). */
  maxAgeMs?: number;
  /** Longest an entry is reused while it does not (its LISTEN connection is down; default 1,000 ms). */
  unlistenedMaxAgeMs?: number;
  maxEntries?: number;
}

interface Entry {
  caller: UserCaller;
  /** When the lookup was made (performance.now() ms). */
  at: number;
}

/** The per-replica cache of API-key lookups (see module doc). */
export class CallerCache {
  private readonly byHash = new Map<string, Entry>();
  /** Hashes of the cached keys of each account. */
  private readonly byAccount = new Map<string, Set<string>>();
  private readonly maxAgeMs: number;
  private readonly unlistenedMaxAgeMs: number;
  private readonly maxEntries: number;
  private readonly unsubscribe: () => void;
  /** Lookups of the keys missed in one turn of the event loop, sent together once its I/O callbacks are done. */
  private readonly misses: DataLoader<{ hash: string; now: Date }, UserCaller | null>;

  constructor(
    private readonly db: Database,
    opts: CallerCacheOptions = {},
  ) {
    this.maxAgeMs = opts.maxAgeMs ?? 30_000;
    this.unlistenedMaxAgeMs = Math.min(opts.unlistenedMaxAgeMs ?? 1000, this.maxAgeMs);
    this.maxEntries = opts.maxEntries ?? 100_000;
    this.unsubscribe = db.onNotify('qg_auth', (accountId) => (accountId === '*' ? this.clear() : this.forgetAccount(accountId)));
    this.misses = new DataLoader((asks) => authenticateKeyHashes(db, asks), { cache: false, batchScheduleFn: (send) => setImmediate(send), maxBatchSize: 500 });
  }

  /**
   * The `user` caller behind API key `key` at `now` (the request's clock, for the active subscription),
   * from the cache when it is fresh, else from the database. Null for an unknown or revoked key.
   */
  async lookup(key: string, now: Date): Promise<UserCaller | null> {
    const hash = hashSecret(key);
    const fresh = this.fresh(hash, now);
    if (fresh) return fresh;
    if (!isWellFormedKey(key)) return null;
    const at = performance.now();
    const caller = await this.misses.load({ hash, now });
    this.remove(hash); // re-inserted below: newest last, so the oldest is dropped first
    if (!caller) return null;
    this.byHash.set(hash, { caller, at });
    let hashes = this.byAccount.get(caller.accountId);
    if (!hashes) this.byAccount.set(caller.accountId, (hashes = new Set()));
    hashes.add(hash);
    if (this.byHash.size > this.maxEntries) this.remove(this.byHash.keys().next().value!);
    return caller;
  }

  /**
   * The cached `user` caller behind API key `key` when its entry is fresh at `now` (same rules as `lookup`), else
   * undefined (unknown here, stale, or its subscription ended): answered without a promise, for the request path
   * (a request's context asks this first, `Context.userNow`).
   */
  peek(key: string, now: Date): UserCaller | undefined {
    return this.fresh(hashSecret(key), now);
  }

  /** The caller of the entry of key hash `hash` when it is fresh at `now`, else undefined. */
  private fresh(hash: string, now: Date): UserCaller | undefined {
    const entry = this.byHash.get(hash);
    if (!entry) return undefined;
    const maxAge = this.db.listening() ? this.maxAgeMs : this.unlistenedMaxAgeMs;
    return performance.now() - entry.at < maxAge && !subscriptionEnded(entry.caller, now) ? entry.caller : undefined;
  }

  private remove(hash: string): void {
    const e = this.byHash.get(hash);
    if (!e) return;
    this.byHash.delete(hash);
    const hashes = this.byAccount.get(e.caller.accountId);
    hashes?.delete(hash);
    if (hashes?.size === 0) this.byAccount.delete(e.caller.accountId);
  }

  /** Records a charge: the account's cached callers now show `used` whole credits used. */
  charged(accountId: string, used: bigint): void {
    for (const hash of this.byAccount.get(accountId) ?? []) {
      const e = this.byHash.get(hash);
      if (e) e.caller.creditsUsed = used; // only the up-front 402 check reads it; requests in flight have done theirs
    }
  }

  /** Drops every cached key of the account (a change signal, or a charge the balance no longer covered). */
  forgetAccount(accountId: string): void {
    for (const hash of [...(this.byAccount.get(accountId) ?? [])]) this.remove(hash);
  }

  /** Drops every entry (the LISTEN connection came back: signals may have been missed). */
  clear(): void {
    this.byHash.clear();
    this.byAccount.clear();
  }

  /** Number of cached keys (for tests and metrics). */
  get size(): number {
    return this.byHash.size;
  }

  /** Stops listening for change signals. */
  close(): void {
    this.unsubscribe();
  }
}

/** True when the cached caller's subscription has expired by `now` (then it must be looked up again). */
function subscriptionEnded(caller: UserCaller, now: Date): boolean {
  return caller.subscription !== null && caller.subscription.expiresAt.getTime() <= now.getTime();
}
