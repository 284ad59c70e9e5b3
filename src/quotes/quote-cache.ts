/**
 * Published quotes held in process memory, so a quote lookup does not pay a database round trip
 * (issue: serving quotes at the machine's limit, step "quote reads from a bounded in-process cache").
 *
 * Freshness rules (README, Choices: caches):
 * - Every writer of what `loadQuotes` reads (quote ingestion, scan completion, valuation publish and
 *   prune) signals `qg_quotes` with `signalQuotes`: inside its own transaction through `pg_notify`, so
 *   every other replica hears it exactly when the change commits (PostgreSQL delivers a notification
 *   on commit and never for a rolled-back transaction), and in this process at once (`quotesChanged`).
 * - Precise invalidation (issue 45): a writer whose every change of what `loadQuotes` reads has a row in the change
 *   sequence (quotes/changes.ts: quote ingestion without confirmations, scan completion that only delists, and the
 *   chunks of a collector run: quotes/ingestion.ts IngestOptions.confirmations) signals `CHANGES_PAYLOAD`. The cache then
 *   reads the (app, name) of the changes after the last seq it saw (one indexed statement; signals arriving while it
 *   runs are coalesced into one more) and drops only those names. Sequence numbers become visible in commit order,
 *   so reading `seq > last` misses no committed change. Any other payload (`*`, an app id: valuation publish and
 *   prune, a LISTEN connection (re)established), a cache that does not know its last seq yet, or more than
 *   PRECISE_MAX changes behind drops the whole cache of the replica.
 * - observed_at and fresh_at moves without a change (confirmations, scan completions) have no change rows: their
 *   writers signal `*`, but for a collector run's chunks, whose run signals `*` after its last write, so a cached
 *   answer may show them late by at most that run; prices, quantities and listing state are never served late.
 * - A load that started before a signal, or before an invalidation finished, is not stored (a generation counter),
 *   so a read racing a commit cannot put the old rows back. While the invalidation of a signal from this process's own
 *   writer is pending, lookups go to the database, so the writer's process answers the new quotes as soon as its
 *   write returns. A signal heard from another process (a collector, another replica: PostgreSQL NOTIFY) is a commit
 *   that already happened elsewhere; for up to REMOTE_SIGNAL_GRACE_MS while its invalidation runs, held entries are
 *   still served (then lookups go to the database, as for a local one). Sending every lookup to the database
 *   for the invalidation's round trip had made a collection's chunks, a few a second, the slowest 1 % of a
 *   replica's GETs, 7-10x its idle p99 (`npm run bench:collect`); a quote is then at most that much older than its
 *   commit, well within the 1 s below. The live hub, which learns of changes from the sequence itself, reads with
 *   `loadAsOf`: held entries only once every change it delivers has been applied, so an event never carries the
 *   item's previous quote.
 * - Entries are served for at most `maxAgeMs` (default 60 s) while the replica hears signals
 *   (`Database.listening`), and at most `unlistenedMaxAgeMs` (default 1 s) while its LISTEN
 *   connection is down; when it comes back every entry is dropped. So no replica serves a quote
 *   more than 1 s after a committed change, whatever fails.
 * - Two stores, each bounded by its bytes (LRU beyond them), so the full-scale catalogue does not grow memory without
 *   bound (issue 45): each item's quotes as objects (`maxBytes`, default 16 MiB; GraphQL, filtered answers, the item
 *   pages), and each item's quotes as the JSON text of GET /prices' `markets` (`maxTextBytes`, default 80 MiB), which
 *   the unfiltered REST answers (GET /prices, POST /prices/batch) are made of. A text is about a sixth of the objects'
 *   bytes, a full-scale item's held outside V8's heap (a Buffer: freed when evicted, never copied or marked by the
 *   garbage collector; BUFFERED_TEXT),
 *   and PostgreSQL writes it, or reads the copy it stored at an earlier miss of any replica (`loadStoredQuoteTexts`,
 *   valid until the item changes), so a miss makes no quote object at all: with traffic spread over the full-scale
 *   catalogue, caching objects had held a few hundred items and a quarter of the CPU went to collecting the evicted
 *   ones; texts in the heap had peaked the process at 585 MiB, as Buffers at 488 (docs/benchmarks.md). A long text is
 *   held from its second miss (SECOND_MISS).
 *   Both stores follow every freshness rule here; a change drops the name from both.
 * - Loads of many names (a batch missing the cache: at full scale 1,000 names are about 80,000 quotes, held as
 *   objects until the answer is written) run at most `largeLoads` (default 2) at a time per replica;
 *   the others wait their turn. Without it, ten concurrent batches held ten such sets at once (`npm run bench`
 *   on the full-scale catalogue; docs/benchmarks.md), with no gain in throughput, which the CPU bounds.
 * - Loads of fewer names (a GET's one item) that miss in the same turn of the event loop are gathered from every
 *   request of the replica and read by one statement (`small`): with traffic spread over the catalogue most
 *   lookups miss, and 50 concurrent requests' misses then cost one round trip, not 50.
 * Unknown names are cached too (as "no quotes"), so repeated misses stay cheap; ingestion of a new
 * item signals like any other change.
 */
import { EventEmitter } from 'node:events';
import DataLoader from 'dataloader';
import { LRUCache } from 'lru-cache';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Database, Sql } from '../db/client.js';
import { JsonPieces } from '../lib/raw-json.js';
import { bumpAnswerEpoch, loadQuotes, loadQuoteTexts, loadStoredQuoteTexts, type MarketQuote } from './quotes.js';

/**
 * The `qg_quotes` payload of a writer whose every change of published quotes has a row in the change sequence
 * (quotes/changes.ts), recorded in the same transaction: caches drop only the names of the changes after the last
 * seq they saw (see the module doc). Any other payload drops everything.
 */
export const CHANGES_PAYLOAD = '+changes';

/**
 * Milliseconds a replica keeps serving held entries after hearing another process's change signal, while its
 * invalidation runs (see the module doc); past it, lookups go to the database until the invalidation is applied.
 */
export const REMOTE_SIGNAL_GRACE_MS = 250;

/** Changes one invalidation reads at most; more behind drops the whole cache (see the module doc). */
export const PRECISE_MAX = 10_000;

/** In-process signals of quote changes (payload: app id, `*` or CHANGES_PAYLOAD), for writers that hold only a transaction. */
const local = new EventEmitter();
local.setMaxListeners(0);

/** Calls `listener` whenever a writer in this process signals a quote change; returns the unsubscribe. */
export function onQuotesChanged(listener: (appId: string) => void): () => void {
  local.on('change', listener);
  return () => local.off('change', listener);
}

/**
 * Tells this process's quote caches that quotes of `appId` (or every app: `*`) changed; CHANGES_PAYLOAD: the changes
 * are in the change sequence (committed before this call, or by the transaction that also calls `signalQuotes`).
 */
export function quotesChanged(appId = '*'): void {
  local.emit('change', appId);
}

/** What `signalQuotes` needs: the database or a transaction on it (`Database.transaction`, `prismaSql`). */
export type RawHandle = Pick<Sql, 'query'>;

/**
 * Signals that quotes of `appId` (or `*`; CHANGES_PAYLOAD: see there) changed: `pg_notify('qg_quotes', appId)` on `handle` (inside a
 * transaction it is delivered to the other replicas when, and only if, it commits) and `quotesChanged`
 * in this process. Any payload but CHANGES_PAYLOAD also makes the stored quote answers stale (`bumpAnswerEpoch`),
 * except with `valuationsOnly` (a writer of valuations alone: the stored answers hold no CSCP quote). Call it after
 * the writes, in the same transaction (after the change sequence's lock, which orders the epoch row's writers);
 * owners of the transaction call `quotesChanged` again after the commit (a read between the two would otherwise
 * cache the old rows). Throws when the database fails.
 */
export async function signalQuotes(handle: RawHandle, appId = '*', opts: { valuationsOnly?: boolean } = {}): Promise<void> {
  // Source quotes changed without change rows: the stored answers are stale (quotes.ts STORED_ANSWERS_SQL).
  if (appId !== CHANGES_PAYLOAD && !opts.valuationsOnly) await bumpAnswerEpoch(handle);
  await handle.query(`SELECT count(*)::int AS n FROM pg_notify('qg_quotes', $1)`, [appId]);
  quotesChanged(appId);
}

/** Options of the quote cache (see the module doc). */
export interface QuoteCacheOptions {
  /** Longest an entry is served while this replica hears change signals, in ms (default 60,000). */
  maxAgeMs?: number;
  /** Longest an entry is served while the LISTEN connection is down, in ms (default 1,000). */
  unlistenedMaxAgeMs?: number;
  /** Bound on the estimated bytes of the quote objects held (default 16 MiB). */
  maxBytes?: number;
  /**
   * Bound on the bytes of the answer texts held (default 80 MiB; see the module doc). 96 MiB held the full-scale Zipf
   * GETs' hit rate at 0.72-0.74 against 0.70-0.73, but with the service's heap growth of 50 % the bench's process
   * peaked at 525 MiB against 478 (docs/benchmarks.md; issue 45's bound is 512).
   */
  maxTextBytes?: number;
  /** Loads of at least LARGE_LOAD missing names running at once (default 2; see the module doc). */
  largeLoads?: number;
  /**
   * Whether misses of the text store read the database's stored answers (`loadStoredQuoteTexts`) or make every text
   * (`loadQuoteTexts`). Default: true, on PostgreSQL and on embedded PGlite. On PGlite the stored answers outlive this
   * process's entries (their 60 s, the LRU's bound, a restart), and once written a miss reads one instead of choosing
   * and writing 80 quotes: full-scale Zipf GETs cost 247 us a request against 468 (`npm run bench`, BENCH_SCALE=full,
   * 2026-11-29; while the table was being filled, 603 against 517).
   */
  storedAnswers?: boolean;
}

/**
 * Names from which a load counts as large (see the module doc); a REST batch of that many names is also a heavy
 * answer (src/rest/routes.ts, RouteSpec.heavy): at full scale about 8,000 quotes, some 11 MB of objects.
 */
export const LARGE_LOAD = 100;

/**
 * Bytes of one cached quote object, for the size bound: the MarketQuote object with its Decimal amounts, Dates and
 * strings, and its JSON text once written. Measured: 1,449 bytes of heap per quote (300 full-scale items, 24,000
 * quotes, after a full collection; 824 without the text).
 */
const QUOTE_BYTES = 1450;

/** Bytes of an entry besides its value: the LRU's node, the key's string, the entry object (an estimate). */
const ENTRY_BYTES = 200;

/**
 * One of the cache's two stores (see the module doc), keyed `appId NUL name`: values of type V as `read` returns them
 * for the names that have quotes, `none` for a name without. The cache that owns it decides freshness and whether a
 * load may be stored (`QuoteCache.fresh`, `QuoteCache.generation`).
 */
class Store<V> {
  private readonly lru: LRUCache<string, { value: V; at: number }>;

  constructor(
    private readonly owner: QuoteCache,
    private readonly read: (appId: string, names: readonly string[]) => Promise<Map<string, V>>,
    private readonly none: V,
    maxBytes: number,
    bytesOf: (value: V) => number,
    /** The value as held when stored, or undefined: not stored (see SECOND_MISS); default: stored as read. */
    private readonly admit: (key: string, value: V) => V | undefined = (_k, v) => v,
  ) {
    this.lru = new LRUCache({ maxSize: maxBytes, sizeCalculation: (e, key) => ENTRY_BYTES + key.length * 2 + bytesOf(e.value) });
  }

  /** A fresh entry's value (`none`: no quotes), or undefined when the database must be asked. */
  peek(appId: string, name: string): V | undefined {
    if (this.owner.pendingSignal) return undefined;
    const e = this.lru.get(`${appId}\u0000${name}`);
    if (!e || !this.owner.fresh(e.at)) return undefined;
    this.owner.stats.hits += 1;
    return e.value;
  }

  /** The values of `names` that have quotes (see `QuoteCache.load`). */
  async load(appId: string, names: readonly string[]): Promise<Map<string, V>> {
    const out = new Map<string, V>();
    const missing: string[] = [];
    for (const name of names) {
      const value = this.peek(appId, name);
      if (value === undefined) missing.push(name);
      else if (value !== this.none) out.set(name, value);
    }
    if (missing.length === 0) return out;
    this.owner.stats.misses += missing.length;
    if (missing.length < LARGE_LOAD) {
      // Small loads of every request in this turn share one statement (see `small`).
      const values = await Promise.all(missing.map((name) => this.small.load(`${appId}\u0000${name}`)));
      missing.forEach((name, i) => {
        if (values[i] !== this.none) out.set(name, values[i]!);
      });
      return out;
    }
    const generation = this.owner.generation;
    const now = performance.now();
    const loaded = await this.owner.largeLoads(() => this.readAndStore(appId, missing, generation, now));
    for (const name of missing) {
      const value = loaded.get(name);
      if (value !== undefined) out.set(name, value);
    }
    return out;
  }

  /**
   * Loads of fewer than LARGE_LOAD names (keys `appId NUL name`), gathered over one turn of the event loop from every
   * request of the replica and read by one statement per app id; what the statement read is stored unless a change
   * was signalled meanwhile. Each key answers its value (`none`: no quotes). Under traffic spread over the catalogue
   * most lookups miss, and concurrent requests' misses then cost one round trip instead of one each.
   */
  private readonly small = new DataLoader<string, V>(
    async (keys) => {
      const generation = this.owner.generation;
      const now = performance.now();
      const byApp = new Map<string, string[]>();
      for (const key of keys) {
        const cut = key.indexOf('\u0000');
        const app = key.slice(0, cut);
        let names = byApp.get(app);
        if (!names) byApp.set(app, (names = []));
        names.push(key.slice(cut + 1));
      }
      const found = new Map<string, V>();
      for (const [app, names] of byApp) {
        for (const [name, value] of await this.readAndStore(app, names, generation, now)) found.set(`${app}\u0000${name}`, value);
      }
      return keys.map((key) => found.get(key) ?? this.none);
    },
    { cache: false, batchScheduleFn: (send) => setImmediate(send), maxBatchSize: 500 },
  );

  /**
   * Reads `names` of app `appId` with one statement and stores an entry for every name (its value, or `none`) aged
   * from `at` (performance.now() ms) - unless a change was signalled after the caller read `generation` before its
   * load began: then nothing is stored, so a read racing a commit cannot put the old rows back. Returns what `read`
   * returned. Throws what `read` throws, storing nothing.
   */
  private async readAndStore(appId: string, names: readonly string[], generation: number, at: number): Promise<Map<string, V>> {
    const loaded = await this.read(appId, names);
    if (generation !== this.owner.generation) return loaded;
    this.owner.apps.add(appId);
    for (const name of names) {
      const key = `${appId}\u0000${name}`;
      const value = loaded.get(name);
      if (value === undefined) {
        this.lru.set(key, { value: this.none, at });
        continue;
      }
      const held = this.admit(key, value);
      if (held === undefined) continue;
      this.lru.set(key, { value: held, at });
      if (held !== value) loaded.set(name, held);
    }
    return loaded;
  }

  delete(key: string): void {
    this.lru.delete(key);
  }
  clear(): void {
    this.lru.clear();
  }
  get bytes(): number {
    return this.lru.calculatedSize;
  }
  get size(): number {
    return this.lru.size;
  }
}

/** No quotes, in the object store and in the text store (compared by identity). */
const NO_QUOTES: MarketQuote[] = [];
const NO_TEXT = '';

/**
 * Texts from which the text store holds UTF-8 bytes outside V8's heap (a Buffer) instead of the string: a full-scale
 * item (80 quotes, 28 KB) is then freed at once when evicted, not when the old generation is next collected (whose
 * heap V8 grows by a share of what it holds), and never copied or marked by the collector; a hit decodes it. A
 * smaller text (the bundled data's items, a few KB) stays a string, served as it is.
 */
const BUFFERED_TEXT = 8 * 1024;

/**
 * Keys of long texts (BUFFERED_TEXT) missed once and not held: the text store holds a long text from its second miss
 * within the last SECOND_MISS such keys. A text held is UTF-8 bytes outside V8's heap, and V8 counts such bytes as
 * external memory, whose growth starts a full collection: with traffic spread over the full-scale catalogue, holding
 * every miss's 28 KB made one every 100-150 ms and a fifth of the CPU (issue 45; docs/benchmarks.md). A text asked once
 * is answered as the string it was read as, which the young generation collects at no cost.
 */
const SECOND_MISS = 65_536;

/**
 * A text as the text store gives it (see BUFFERED_TEXT): the JSON text, or its UTF-8 bytes (a long text held), which
 * answers copy as they are (lib/raw-json.ts RawJson), or its pieces as read (a long text missed: JsonPieces, never
 * joined, which answers write one after the other; never held); its `length` is its bytes (the texts are ASCII).
 */
export type StoredText = string | Buffer | JsonPieces;

/** The per-replica quote cache (see the module doc). */
export class QuoteCache {
  /** Bumped by every change signal and finished invalidation: a load that began before it is not stored. */
  generation = 0;
  private readonly maxAgeMs: number;
  private readonly unlistenedMaxAgeMs: number;
  private readonly stops: (() => void)[];
  /** Runs the loads of LARGE_LOAD names or more, `largeLoads` at a time. */
  readonly largeLoads: LimitFunction;
  /** Lookups answered from memory and from the database, both stores (for metrics and tests). */
  readonly stats = { hits: 0, misses: 0 };
  /** Each item's quotes as objects (GraphQL, filtered answers, pages). */
  private readonly objects: Store<MarketQuote[]>;
  /** Each item's quotes as the JSON text of GET /prices' `markets` (unfiltered REST answers); '' = no quotes. */
  private readonly texts: Store<StoredText>;

  constructor(
    private readonly db: Database,
    opts: QuoteCacheOptions = {},
  ) {
    this.maxAgeMs = opts.maxAgeMs ?? 60_000;
    this.unlistenedMaxAgeMs = opts.unlistenedMaxAgeMs ?? 1000;
    this.largeLoads = pLimit(opts.largeLoads ?? 2);
    this.objects = new Store(this, (app, names) => loadQuotes(db, app, names), NO_QUOTES, opts.maxBytes ?? 16 * 1024 * 1024, (q) => q.length * QUOTE_BYTES);
    const secondMiss = new LRUCache<string, true>({ max: SECOND_MISS });
    const storedAnswers = opts.storedAnswers ?? true;
    const readTexts = storedAnswers ? loadStoredQuoteTexts : loadQuoteTexts;
    this.texts = new Store<StoredText>(this, (app, names) => readTexts(db, app, names, BUFFERED_TEXT), NO_TEXT, opts.maxTextBytes ?? 80 * 1024 * 1024, (t) => t.length, (key, text) => {
      if (text.length < BUFFERED_TEXT) return text;
      // A long text is held (as bytes) from its second miss: one asked once is answered as the pieces it was read as.
      if (!secondMiss.delete(key)) {
        secondMiss.set(key, true);
        return undefined;
      }
      return typeof text === 'string' ? Buffer.from(text, 'utf8') : text instanceof JsonPieces ? text.toBuffer() : text;
    });
    this.stops = [db.onNotify('qg_quotes', (payload) => this.signal(payload, false)), onQuotesChanged((payload) => this.signal(payload, true))];
    // Learn the current seq, so the first precise signal drops only its names. The cache is empty: unless a signal
    // arrives meanwhile, nothing is dropped and loads in flight are stored.
    this.invalidating = this.invalidate(true).finally(() => {
      this.invalidating = null;
    });
  }

  /** Whether an entry loaded at `at` (performance.now() ms) may be served: 60 s while change signals are heard, 1 s while not. */
  fresh(at: number): boolean {
    return performance.now() - at < (this.db.listening() ? this.maxAgeMs : this.unlistenedMaxAgeMs);
  }

  /**
   * Whether lookups must go to the database now: a signal of this process's own writer is not yet applied, or one
   * from another process has not been for REMOTE_SIGNAL_GRACE_MS (see the module doc).
   */
  get pendingSignal(): boolean {
    return this.pendingLocal || (this.remoteSince !== null && performance.now() - this.remoteSince >= REMOTE_SIGNAL_GRACE_MS);
  }

  /** The last change seq whose names were dropped; null: unknown (the next precise signal drops everything). */
  private lastSeq: bigint | null = null;
  /** App ids of the entries stored (a change's names are dropped for each). */
  readonly apps = new Set<string>();
  /** The invalidation in flight, and whether a signal arrived since it began (run again). */
  private invalidating: Promise<void> | null = null;
  private again = false;
  /** A signal of this process's own writer not yet applied: lookups go to the database meanwhile. */
  private pendingLocal = false;
  /** When (performance.now() ms) the oldest signal from another process not yet applied was heard; null: none. */
  private remoteSince: number | null = null;
  /** Invalidations run (for tests): `precise` dropped names, `full` dropped everything. */
  readonly invalidations = { precise: 0, full: 0, namesDropped: 0 };

  /** Applies a `qg_quotes` signal, from this process's own writer (`local`) or heard from another (see the module doc). */
  private signal(payload: string, local: boolean): void {
    this.generation += 1;
    if (payload !== CHANGES_PAYLOAD) {
      this.clear();
      // A full drop covers every change up to now, but the seq it reached is unknown: the pass below reads it.
      this.lastSeq = null;
    }
    if (local) this.pendingLocal = true;
    else this.remoteSince ??= performance.now();
    if (this.invalidating) {
      this.again = true;
      return;
    }
    this.invalidating = this.invalidate().finally(() => {
      this.invalidating = null;
    });
  }

  /** Drops the names of the changes after `lastSeq`, until no signal arrived during a pass (see the module doc). */
  private async invalidate(initial = false): Promise<void> {
    do {
      this.again = false;
      try {
        await this.invalidateOnce();
      } catch {
        // The sequence could not be read: drop everything (the next signal reads the seq again).
        this.clear();
        this.lastSeq = null;
      }
      // Loads that began before this pass may have read rows it just dropped: they are not stored.
      if (!initial || this.again) this.generation += 1;
      initial = false;
    } while (this.again);
    this.pendingLocal = false;
    this.remoteSince = null;
  }

  private async invalidateOnce(): Promise<void> {
    if (this.lastSeq === null) {
      const [row] = await this.db.query<{ seq: string }>(`SELECT COALESCE(max(seq), 0)::text AS seq FROM quote_change`);
      this.dropAll();
      this.invalidations.full += 1;
      this.lastSeq = BigInt(row?.seq ?? '0');
      return;
    }
    const rows = await this.db.query<{ seq: string; app_id: string; market_hash_name: string }>(
      `SELECT c.seq::text AS seq, i.app_id, i.market_hash_name
         FROM quote_change c JOIN item i ON i.id = c.item_id
        WHERE c.seq > $1::bigint ORDER BY c.seq LIMIT $2::int`,
      [this.lastSeq.toString(), PRECISE_MAX + 1],
    );
    if (rows.length > PRECISE_MAX) {
      this.clear();
      this.invalidations.full += 1;
      this.lastSeq = null; // read again by the next pass (a signal arrived, or the next one)
      this.again = true;
      return;
    }
    if (rows.length === 0) return;
    for (const r of rows) {
      // Names of every app id held: an item's name belongs to one app, the key to its app.
      if (!this.apps.has(r.app_id)) continue;
      const key = `${r.app_id}\u0000${r.market_hash_name}`;
      this.objects.delete(key);
      this.texts.delete(key);
    }
    this.invalidations.precise += 1;
    this.invalidations.namesDropped += rows.length;
    this.lastSeq = BigInt(rows[rows.length - 1]!.seq);
  }

  /** Resolves once the invalidations of the signals heard so far are applied (for tests and shutdown). */
  async settled(): Promise<void> {
    while (this.invalidating) await this.invalidating;
  }

  /**
   * The published quotes of `names` of app `appId`: a map with an entry for every name that has quotes
   * (names without are absent, as from `loadQuotes`). Fresh entries come from memory; the rest from one
   * `loadQuotes` statement, stored unless a change was signalled meanwhile. Throws when the database fails.
   */
  load(appId: string, names: readonly string[]): Promise<Map<string, MarketQuote[]>> {
    return this.objects.load(appId, names);
  }

  /**
   * `load` for a reader that learned of changes from the change sequence (the live hub) and must show each change's
   * own quote: held entries are used only when this cache has dropped the names of every change through `seq` and no
   * signal is pending; otherwise the quotes are read from the database (not stored). Without it, a change heard by
   * the hub before the cache applied it (a Redis wake ahead of NOTIFY, or within REMOTE_SIGNAL_GRACE_MS) would be
   * delivered with the item's previous quote. Throws when the database fails.
   */
  loadAsOf(appId: string, names: readonly string[], seq: bigint): Promise<Map<string, MarketQuote[]>> {
    if (this.pendingLocal || this.remoteSince !== null || this.lastSeq === null || this.lastSeq < seq) return loadQuotes(this.db, appId, names);
    return this.objects.load(appId, names);
  }

  /**
   * The published quotes of `names` of app `appId` as the JSON array text of GET /prices' `markets` (what
   * `quotesText` writes of `load`'s lists, byte for byte; as UTF-8 bytes when long, see StoredText): a map with an
   * entry for every name that has quotes. From
   * the text store, else one `loadQuoteTexts` statement, stored unless a change was signalled meanwhile. Throws when
   * the database fails.
   */
  loadTexts(appId: string, names: readonly string[]): Promise<Map<string, StoredText>> {
    return this.texts.load(appId, names);
  }

  /**
   * The cached quotes of one name without waiting: its list (empty = no quotes) when a fresh entry is held,
   * undefined when the database must be asked (`load`).
   */
  peek(appId: string, name: string): MarketQuote[] | undefined {
    return this.objects.peek(appId, name);
  }

  /** The cached answer text of one name without waiting ('' = no quotes), undefined when it must be loaded (`loadTexts`). */
  peekText(appId: string, name: string): StoredText | undefined {
    return this.texts.peek(appId, name);
  }

  /** The estimated bytes of the entries held now, both stores (the quantities `maxBytes` and `maxTextBytes` bound). */
  get bytes(): number {
    return this.objects.bytes + this.texts.bytes;
  }

  /** Drops every entry (a change signal); loads in flight are not stored. */
  clear(): void {
    this.generation += 1;
    this.dropAll();
  }

  private dropAll(): void {
    this.objects.clear();
    this.texts.clear();
  }

  /** Number of cached names, both stores (a name held as objects and as text counts twice). */
  get size(): number {
    return this.objects.size + this.texts.size;
  }

  /** Stops listening for change signals. */
  close(): void {
    for (const stop of this.stops) stop();
  }
}
