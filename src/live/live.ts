/**
 * Live changes (issue: live, point 3; README, Extensions: live changes): one hub per replica follows the change
 * sequence (quotes/changes.ts) and hands each change to the replica's open subscriptions whose filter it
 * matches (GraphQL `quoteChanged` / `valuationPublished` over SSE or WebSocket, REST GET /prices/changes/stream).
 *
 * - Waking: the hub reads the sequence again when a quote writer's commit is signalled on `qg_quotes` (PostgreSQL
 *   NOTIFY, delivered to every replica exactly at commit, from any process: replicas, the CLI, the jobs; in
 *   process on PGlite) and, while any subscription is open, every `pollMs` (1 s) whatever was heard, so a lost
 *   signal delays a change by at most that much.
 * - Order, gaps, duplicates: sequence numbers become visible in commit order, so reading `seq > position` pages
 *   by page misses nothing. A subscription carries its own cursor: it receives each change with seq above it
 *   once, in order. It is returned at once (its transport sends its headers), then catches up on its own
 *   (`catchUp`) until its cursor reaches the hub's position, and joins the hub in the same turn of the event loop;
 *   changes the hub has already passed are read by it, later ones come from the hub, and a change at or below its
 *   cursor is never handed over twice.
 * - Replays are bounded (issue 41, points 3, 5 and 14): a subscription behind the hub reads the sequence in chunks
 *   of SCAN_CHUNK rows (quotes/changes.ts scanChanges: one statement each, its filter applied there, names
 *   included), at most REPLAY_PAGE (250) changes and half its queue bound at a time, and reads on only when its
 *   client has taken enough for the next ones to fit (backpressure). So however far behind it starts (down to the pruned horizon,
 *   24 h), it gets every change in order as its client reads, its memory is its queue bound at most, other
 *   requests are served between its statements, and it stops reading when its client leaves.
 * - Each change carries the quote as served now (the replica's quote cache, else one query per page for all
 *   subscriptions), so applying changes in order keeps a copy equal to what GET /prices serves. A quote that
 *   changed several times within one read is handed over once, at its last change (as a feed page does).
 * - Slow consumers: a subscription whose undelivered live changes exceed `maxQueue` is ended with a terminal
 *   `slow_consumer` error (its client reads it after the changes before it) and its queue is dropped, so memory
 *   stays bounded whatever a client does. (A replay never overfills a queue: it waits for room.) The transports
 *   take events as the socket drains.
 * - The hub reads nothing while no subscription is open.
 */
import type { Database } from '../db/client.js';
import { dependencyUnavailable, ServiceError } from '../lib/errors.js';
import { checkCursor, lastOfEachKey, nextTurn, scanChanges, scanChunk, type Change, type ScanFilter } from '../quotes/changes.js';
import { loadQuotes, type MarketQuote } from '../quotes/quotes.js';
import type { QuoteCache } from '../quotes/quote-cache.js';
import { refreshSlots, SLOT_REFRESH_SECONDS } from './live-slots.js';
import { onQuotesChanged } from '../quotes/quote-cache.js';
import { liveReplayRows, liveReplays, liveWakes } from '../lib/metrics.js';
import { Redis } from 'ioredis';

/** Rows the hub reads per page of the sequence. */
const HUB_PAGE = 2000;
/**
 * Most changes a replay statement returns (and queues) at a time (at most half the queue bound too). The statement
 * (on embedded PGlite), the load of those changes' quotes and the making of their events run on the event loop's
 * thread: at 1,000 at a time, a large backlog delivered at full speed held it far too long at a time
 * (`npm run bench:replay`; figures in docs/benchmarks.md).
 */
const REPLAY_PAGE = 250;
/** Default bound of one subscription's undelivered changes (a 10,000-row ingestion fits whole). */
export const DEFAULT_MAX_QUEUE = 10_000;

/** A row of the change sequence as the hub reads it. */
interface HubRow {
  seq: string;
  app_id: string;
  market_hash_name: string;
  market_code: string;
  side: 'ask' | 'bid' | 'mid';
}

/** A page of the sequence with the quotes of its followed names (key `appId \u0000 name`; null = none). */
interface HubPage {
  rows: HubRow[];
  quotes: Map<string, MarketQuote[] | null>;
}

/** Which changes a subscription receives. `names` / `markets` null: all; `side` 'all': every side. */
export interface LiveFilter {
  appId: string;
  names: ReadonlySet<string> | null;
  markets: ReadonlySet<string> | null;
  side: 'ask' | 'bid' | 'mid' | 'all';
}

/** A published valuation run, as `valuationPublished` delivers it. */
export interface ValuationPublished {
  /** The valuation date, YYYY-MM-DD. */
  valuationDate: string;
  computedAt: Date;
  itemCount: number;
  twoSidedCount: number;
  /** The change sequence once the run's CSCP changes were read (follow the feed from here for its quotes). */
  changeSeq: bigint;
}

/** 429 `slow_consumer`: the terminal error of a subscription that fell more than `max` changes behind. */
export function slowConsumer(max: number): ServiceError {
  return new ServiceError(
    'slow_consumer',
    429,
    `The subscription fell more than ${max} changes behind (the client did not read them fast enough) and was closed; subscribe again with since = the last seq you applied.`,
    { max_pending: max },
  );
}

/** What a subscription yields: a change, a published valuation, or the terminal error it ends with. */
export type LiveEvent = { kind: 'change'; change: Change } | { kind: 'valuation'; valuation: ValuationPublished } | { kind: 'error'; error: ServiceError };

type Waiter = (r: IteratorResult<LiveEvent>) => void;

/** One open subscription: a bounded queue read as an async iterator (see the module doc). */
export class LiveSubscription implements AsyncIterableIterator<LiveEvent> {
  private queue: LiveEvent[] = [];
  private head = 0;
  private waiter: Waiter | null = null;
  /** A reader waiting for events without taking one (`ready()`). */
  private readyWaiter: (() => void) | null = null;
  /** The replay waiting until at most `roomAt` events are undelivered (`waitForRoom()`). */
  private roomWaiter: (() => void) | null = null;
  private roomAt = 0;
  private ended = false;
  /** Cleanup hooks run once when the subscription ends (slot, timers, hub). */
  private readonly finals: (() => void)[] = [];
  /** The last seq handed to this subscription (or passed over as not matching). */
  cursor: bigint;

  constructor(
    readonly filter: LiveFilter | null,
    readonly wantsValuations: boolean,
    cursor: bigint,
    /** Most undelivered events before a live hand-over ends it as a slow consumer. */
    readonly maxQueue: number,
  ) {
    this.cursor = cursor;
  }

  /** True once it ended (error, client gone, shutdown); queued events may still be read. */
  get isEnded(): boolean {
    return this.ended;
  }

  /** Undelivered events. */
  get pending(): number {
    return this.queue.length - this.head;
  }

  /** True when a change of item `name` passes the filter. */
  matches(appId: string, name: string, market: string, side: string): boolean {
    return this.accepts(appId, market, side) && (!this.filter!.names || this.filter!.names.has(name));
  }

  /**
   * True when a change of `market`/`side` of app `appId` passes the filter apart from its names (the hub checks
   * the names through its index by item).
   */
  accepts(appId: string, market: string, side: string): boolean {
    const f = this.filter;
    if (!f || f.appId !== appId) return false;
    if (f.markets && !f.markets.has(market)) return false;
    return f.side === 'all' || f.side === side;
  }

  /**
   * Queues events (taking ownership of the list: an empty queue becomes it); beyond `maxQueue` undelivered the
   * subscription ends with `slow_consumer`.
   */
  push(events: LiveEvent[]): void {
    if (this.ended || events.length === 0) return;
    if (this.pending + events.length > this.maxQueue) {
      this.queue = [];
      this.head = 0;
      this.fail(slowConsumer(this.maxQueue));
      return;
    }
    if (this.pending === 0) {
      // Nothing queued: the hand-over's list becomes the queue (the hub and the replay make a new one per push).
      this.queue = events;
      this.head = 0;
    } else for (let i = 0; i < events.length; i++) this.queue.push(events[i]!);
    this.deliver();
  }

  /** Ends the subscription with a terminal error event (delivered after what is queued). */
  fail(error: ServiceError): void {
    if (this.ended) return;
    this.queue.push({ kind: 'error', error });
    this.ended = true;
    this.deliver();
    this.cleanup();
  }

  /** Registers a cleanup hook (run at once when already ended). */
  onEnd(f: () => void): void {
    if (this.ended) f();
    else this.finals.push(f);
  }

  private cleanup(): void {
    for (const f of this.finals.splice(0)) {
      try {
        f();
      } catch {
        // cleanup hooks never throw into the transport
      }
    }
  }

  private deliver(): void {
    if (this.ended) this.roomFreed();
    if (this.readyWaiter && (this.pending > 0 || this.ended)) {
      const r = this.readyWaiter;
      this.readyWaiter = null;
      r();
    }
    if (!this.waiter) return;
    if (this.pending > 0) {
      const w = this.waiter;
      this.waiter = null;
      w({ value: this.take(), done: false });
    } else if (this.ended) {
      const w = this.waiter;
      this.waiter = null;
      w({ value: undefined, done: true });
    }
  }

  private take(): LiveEvent {
    const e = this.queue[this.head]!;
    this.queue[this.head] = undefined as never;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.roomWaiter !== null && this.pending <= this.roomAt) this.roomFreed();
    return e;
  }

  private roomFreed(): void {
    const w = this.roomWaiter;
    this.roomWaiter = null;
    w?.();
  }

  /**
   * Resolves once at most `maxPending` events are undelivered (the client took the rest) or the subscription ended;
   * at once when either holds. One waiter at a time (the replay's backpressure, LiveHub.catchUp).
   */
  waitForRoom(maxPending: number): Promise<void> {
    if (this.pending <= maxPending || this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      this.roomAt = maxPending;
      this.roomWaiter = resolve;
    });
  }

  /** Takes up to `max` queued events at once (none waiting: an empty list). */
  drain(max: number): LiveEvent[] {
    const n = Math.min(max, this.pending);
    const out: LiveEvent[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.take();
    return out;
  }

  /**
   * Takes up to `max` queued changes from the head of the queue, stopping before the first event of another
   * kind (a terminal error, a published valuation), which stays queued for `next()`.
   */
  drainChanges(max: number): Extract<LiveEvent, { kind: 'change' }>[] {
    const out: Extract<LiveEvent, { kind: 'change' }>[] = [];
    while (out.length < max && this.pending > 0 && this.queue[this.head]!.kind === 'change') out.push(this.take() as Extract<LiveEvent, { kind: 'change' }>);
    return out;
  }

  /** Resolves once an event is queued or the subscription ended (at once when either holds); takes nothing. */
  ready(): Promise<void> {
    if (this.pending > 0 || this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      this.readyWaiter = resolve;
    });
  }

  next(): Promise<IteratorResult<LiveEvent>> {
    if (this.pending > 0) return Promise.resolve({ value: this.take(), done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  /** The client left (or the transport closed): ends without an error. */
  return(): Promise<IteratorResult<LiveEvent>> {
    this.queue = [];
    this.head = 0;
    this.ended = true;
    this.deliver();
    this.cleanup();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** Options of a hub. */
export interface LiveHubOptions {
  /** The replica's quote cache (the quotes a change carries); absent = the database. */
  quotes?: QuoteCache;
  /** Undelivered changes one subscription may have before it is closed as a slow consumer (default 10,000). */
  maxQueue?: number;
  /** Read the sequence at least this often while subscriptions are open, in ms (default 1,000). */
  pollMs?: number;
  /**
   * Redis shared by the replicas (REDIS_URL): a commit made in this process is announced on the `qg:live` channel
   * and every replica's hub wakes on it, besides PostgreSQL's NOTIFY. Absent: NOTIFY (and the poll) only.
   */
  redisUrl?: string;
}

/** 503 `dependency_unavailable`: this replica is shutting down (its subscriptions end with it). */
function shuttingDown(): ServiceError {
  return new ServiceError('dependency_unavailable', 503, 'This replica is shutting down; subscribe again with since = the last seq you applied.');
}

/** The Redis channel that carries "changes committed" between the replicas' hubs. */
export const LIVE_CHANNEL = 'qg:live';

/** Removes `item` from `list` by moving the last element into its place (order does not matter); true when it was there. */
function removeFrom<T>(list: T[], item: T): boolean {
  const i = list.indexOf(item);
  if (i < 0) return false;
  const last = list.pop()!;
  if (i < list.length) list[i] = last;
  return true;
}

/** The replica's live hub (see the module doc). */
export class LiveHub {
  private readonly subs = new Set<LiveSubscription>();
  /** Subscriptions still reading their backlog (not attached yet; `catchUp`). */
  private readonly catchingUp = new Set<LiveSubscription>();
  /** Attached subscriptions by followed item (`appId \u0000 name`), and those that follow every item. */
  // Arrays, not sets: the hand-over walks them for every row of a page (indexed loops allocate no iterators).
  private readonly byName = new Map<string, LiveSubscription[]>();
  private readonly everyItem: LiveSubscription[] = [];
  /** Every change up to here was handed to the attached subscriptions; null while none is open. */
  private position: bigint | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly unlisten: () => void = () => undefined;
  private closed = false;
  private lastValuation: string | null = null;
  readonly maxQueue: number;
  private readonly pollMs: number;
  /** Concurrent slots (live/live-slots.ts) of this replica's open subscriptions, refreshed while held. */
  private readonly slots = new Set<string>();
  private slotTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly opts: LiveHubOptions = {},
  ) {
    this.maxQueue = opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    this.pollMs = opts.pollMs ?? 1000;
    const unlistenNotify = db.onNotify('qg_quotes', () => this.wake('postgres'));
    if (!opts.redisUrl) {
      this.unlisten = unlistenNotify;
      return;
    }
    // Redis pub/sub between the replicas: a writer's commit in this process (its in-process signal, src/quotes/
    // quote-cache.ts) is published; every hub, this one included, wakes on the message. Failures only cost
    // latency: NOTIFY and the poll still wake the hubs.
    const options = { lazyConnect: false, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: (n: number) => Math.min(n * 200, 2000) };
    const publisher = new Redis(opts.redisUrl, options);
    const subscriber = new Redis(opts.redisUrl, { ...options, enableOfflineQueue: true });
    publisher.on('error', () => undefined);
    subscriber.on('error', () => undefined);
    void subscriber.subscribe(LIVE_CHANNEL).catch(() => undefined);
    subscriber.on('message', () => this.wake('redis'));
    let queued = false;
    const unlistenLocal = onQuotesChanged(() => {
      if (queued) return;
      queued = true;
      // One message per burst of signals (a transaction signals before and after its commit).
      setImmediate(() => {
        queued = false;
        void publisher.publish(LIVE_CHANNEL, '1').catch(() => undefined);
      });
    });
    this.unlisten = () => {
      unlistenNotify();
      unlistenLocal();
      publisher.disconnect();
      subscriber.disconnect();
    };
  }

  /** Open subscriptions on this replica (those still catching up on their backlog included). */
  get size(): number {
    return this.subs.size + this.catchingUp.size;
  }

  /**
   * Opens a subscription: changes matching `filter` (null: none) after `since` (null: from now), and valuation
   * publishes when `valuations`. Throws 410 `cursor_expired` / 422 for a `since` the feed refuses (as
   * GET /prices/changes does), before anything is delivered. Returns at once: the subscription then catches up on
   * its backlog as its client reads (see the module doc) and joins the hub; an error while catching up (the
   * database, changes pruned meanwhile) ends it with that error.
   */
  async open(filter: LiveFilter | null, opts: { since: bigint | null; valuations: boolean }): Promise<LiveSubscription> {
    if (this.closed) throw shuttingDown();
    const { newest } = await checkCursor(this.db, opts.since);
    if (this.closed) throw shuttingDown();
    const sub = new LiveSubscription(filter, opts.valuations, opts.since ?? newest, this.maxQueue);
    sub.onEnd(() => this.detach(sub));
    this.catchingUp.add(sub);
    liveReplays.inc();
    void this.catchUp(sub)
      .catch((e: unknown) => sub.fail(e instanceof ServiceError ? e : dependencyUnavailable('Reading the changes after since failed; subscribe again with since = the last seq you applied.')))
      .finally(() => {
        this.catchingUp.delete(sub);
        liveReplays.dec();
      });
    return sub;
  }

  /**
   * Brings `sub` up to the hub's position, then attaches it (module doc). Reads at most `page` changes a statement
   * (REPLAY_PAGE, at most half the queue bound), and reads on only once the client has left room for them; between
   * statements other requests are served. Returns when attached or when the subscription ended (client gone).
   */
  private async catchUp(sub: LiveSubscription): Promise<void> {
    const f = sub.filter;
    const scan: ScanFilter | null = f ? { appId: f.appId, names: f.names ? [...f.names] : null, markets: f.markets ? [...f.markets] : null, side: f.side } : null;
    const page = Math.max(1, Math.min(REPLAY_PAGE, Math.floor(sub.maxQueue / 2)));
    for (;;) {
      if (sub.isEnded || this.closed) return;
      if (this.position === null) {
        await this.start();
        continue;
      }
      if (sub.cursor >= this.position) {
        // No await between this check and the join: the hub hands over everything after the cursor.
        this.attach(sub);
        return;
      }
      if (!scan) {
        sub.cursor = this.position; // follows no changes (valuations only)
        continue;
      }
      if (sub.pending > sub.maxQueue - page) {
        await sub.waitForRoom(sub.maxQueue - page); // backpressure: the client reads first
        continue;
      }
      const read = await scanChanges(this.db, scan, sub.cursor, null, scanChunk(this.db), page);
      liveReplayRows.inc(read.read);
      if (sub.isEnded) return;
      if (read.rows.length > 0) {
        const kept = lastOfEachKey(read.rows);
        await nextTurn(); // the scan and the quotes' load are two waits for other requests, not one
        if (sub.isEnded) return;
        const quotes = new Map<string, MarketQuote[] | null>();
        await this.loadInto(quotes, new Map([[scan.appId, new Set(kept.map((r) => r.marketHashName))]]), read.rows[read.rows.length - 1]!.seq);
        if (sub.isEnded) return;
        sub.push(
          kept.map((r) => {
            const quote = (quotes.get(`${scan.appId}\u0000${r.marketHashName}`) ?? []).find((q) => q.marketCode === r.marketCode && q.side === r.side) ?? null;
            return { kind: 'change' as const, change: { ...r, quote } };
          }),
        );
      }
      if (read.next > sub.cursor) sub.cursor = read.next;
      else if (read.end && this.position !== null && sub.cursor < this.position) {
        // Nothing after the cursor, yet the hub is further: those changes were pruned meanwhile (410 cursor_expired).
        await checkCursor(this.db, sub.cursor);
        if (this.position !== null && sub.cursor < this.position) sub.cursor = this.position;
      }
      await nextTurn();
    }
  }

  /** Hands `sub` (caught up with the hub's position) over to the hub. */
  private attach(sub: LiveSubscription): void {
    const filter = sub.filter;
    this.subs.add(sub);
    if (filter?.names) {
      for (const name of filter.names) {
        const key = `${filter.appId}\u0000${name}`;
        const list = this.byName.get(key);
        if (!list) this.byName.set(key, [sub]);
        else list.push(sub); // a new subscription; its names are a set
      }
    } else if (filter) this.everyItem.push(sub);
    if (this.position !== null && sub.cursor > this.position) this.wake(); // it read past the hub: let the hub catch up
    if (!this.timer) {
      this.timer = setInterval(() => this.wake('poll'), this.pollMs);
      this.timer.unref();
    }
  }

  /** The hub's first look (no subscription was open): the current sequence and valuation run, in one snapshot. */
  private async start(): Promise<void> {
    const [row] = await this.db.query<{ seq: string; horizon: string; run: string | null }>(
      `SELECT COALESCE((SELECT max(seq) FROM quote_change), 0)::text AS seq,
              (SELECT pruned_through FROM quote_change_horizon WHERE id = 1)::text AS horizon,
              (SELECT valuation_date::text || '/' || computed_at::text FROM valuation_run ORDER BY computed_at DESC LIMIT 1) AS run`,
    );
    if (this.position !== null) return; // another subscription started it meanwhile
    const seq = BigInt(row?.seq ?? '0');
    const horizon = BigInt(row?.horizon ?? '0');
    this.position = seq > horizon ? seq : horizon;
    this.lastValuation = row?.run ?? '';
  }

  private detach(sub: LiveSubscription): void {
    if (!this.subs.delete(sub)) return;
    removeFrom(this.everyItem, sub);
    if (sub.filter?.names) {
      for (const name of sub.filter.names) {
        const key = `${sub.filter.appId}\u0000${name}`;
        const list = this.byName.get(key);
        if (list && removeFrom(list, sub) && list.length === 0) this.byName.delete(key);
      }
    }
    if (this.subs.size > 0) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.position = null; // nothing is read while no one listens; the next subscription starts afresh
  }

  /** Reads the sequence again (serialized: a wake during a read makes one more read after it); `source` is counted. */
  wake(source: 'postgres' | 'redis' | 'poll' | 'subscribe' = 'subscribe'): void {
    if (this.closed || this.subs.size === 0) return;
    liveWakes.inc({ source });
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pump()
      .catch(() => undefined) // a failed read is retried at the next signal or poll
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.wake('subscribe');
        }
      });
  }

  /** Waits for the read in progress (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /**
   * Reads one page of the sequence after `from` and the quotes of the names on it that an open subscription
   * follows (the replica's quote cache, else one query), so the next page can be read while this one is handed over.
   */
  private async readPage(from: bigint): Promise<HubPage> {
    const rows = await this.db.query<HubRow>(
      `SELECT c.seq::text AS seq, i.app_id, i.market_hash_name, c.market_code, c.side
         FROM quote_change c JOIN item i ON i.id = c.item_id
        WHERE c.seq > $1::bigint ORDER BY c.seq LIMIT $2`,
      [from.toString(), HUB_PAGE],
    );
    const everyItem = this.everyItem.length > 0;
    const names = new Map<string, Set<string>>();
    for (const r of rows) {
      if (!everyItem && !this.byName.has(`${r.app_id}\u0000${r.market_hash_name}`)) continue;
      let set = names.get(r.app_id);
      if (!set) names.set(r.app_id, (set = new Set()));
      set.add(r.market_hash_name);
    }
    const quotes = new Map<string, MarketQuote[] | null>();
    if (rows.length > 0) await this.loadInto(quotes, names, BigInt(rows[rows.length - 1]!.seq));
    return { rows, quotes };
  }

  /**
   * Loads the quotes of `names` (app -> names) into `quotes` (key `appId \u0000 name`; null = the name has none), as
   * of change `throughSeq` at least (the last change read: QuoteCache.loadAsOf).
   */
  private async loadInto(quotes: Map<string, MarketQuote[] | null>, names: Map<string, Set<string>>, throughSeq: bigint): Promise<void> {
    for (const [app, set] of names) {
      const list = [...set];
      const found = this.opts.quotes ? await this.opts.quotes.loadAsOf(app, list, throughSeq) : await loadQuotes(this.db, app, list);
      for (const name of list) quotes.set(`${app}\u0000${name}`, found.get(name) ?? null);
    }
  }

  private async pump(): Promise<void> {
    let sawValuation = false;
    if (this.position === null || this.subs.size === 0) return;
    let ahead: Promise<HubPage> | null = this.readPage(this.position);
    try {
      while (ahead) {
        const { rows, quotes } = await ahead;
        ahead = null;
        if (this.position === null || this.subs.size === 0 || rows.length === 0) break;
        const last = BigInt(rows[rows.length - 1]!.seq);
        // A full page: the next one is read while this one is handed over (the position moves only after it).
        if (rows.length === HUB_PAGE) ahead = this.readPage(last);
        // Per row: its seq and item key, computed once; per subscription, the indexes of the rows it receives.
        const n = rows.length;
        const seqs = new Array<bigint>(n);
        const itemKeys = new Array<string>(n);
        // A quote changed twice within the page is handed over once, at its last change: only then is a list thinned.
        const lastIndex = new Map<string, number>();
        let repeats = false;
        for (let i = 0; i < n; i++) {
          const r = rows[i]!;
          seqs[i] = BigInt(r.seq);
          itemKeys[i] = `${r.app_id}\u0000${r.market_hash_name}`;
          if (r.market_code === 'CSCP') sawValuation = true;
          const k = `${itemKeys[i]}\u0000${r.market_code}\u0000${r.side}`;
          if (lastIndex.has(k)) repeats = true;
          lastIndex.set(k, i);
        }
        // Who receives which rows, decided in the same turn as the hand-over below: a subscription that joins while
        // quotes are loaded (an await) is counted in the next round, never passed over with its cursor moved on.
        let wanted: Map<LiveSubscription, number[]>;
        for (;;) {
          wanted = new Map();
          const unloaded = new Map<string, Set<string>>();
          const take = (sub: LiveSubscription, i: number, r: HubRow): boolean => {
            if (seqs[i]! <= sub.cursor || !sub.accepts(r.app_id, r.market_code, r.side)) return false;
            const list = wanted.get(sub);
            if (list) list.push(i);
            else wanted.set(sub, [i]);
            return true;
          };
          for (let i = 0; i < n; i++) {
            const r = rows[i]!;
            let taken = false;
            const every = this.everyItem;
            for (let k = 0; k < every.length; k++) taken = take(every[k]!, i, r) || taken;
            const named = this.byName.get(itemKeys[i]!);
            if (named) for (let k = 0; k < named.length; k++) taken = take(named[k]!, i, r) || taken;
            if (taken && !quotes.has(itemKeys[i]!)) {
              // followed by a subscription that joined after the page was read
              let set = unloaded.get(r.app_id);
              if (!set) unloaded.set(r.app_id, (set = new Set()));
              set.add(r.market_hash_name);
            }
          }
          if (unloaded.size === 0) break;
          await this.loadInto(quotes, unloaded, last);
          if (this.position === null) return; // every subscription left meanwhile
        }
        // One change event per row, shared by every subscription that receives it.
        const events = new Array<LiveEvent | undefined>(n);
        const eventAt = (i: number): LiveEvent => {
          let e = events[i];
          if (!e) {
            const r = rows[i]!;
            const quote = (quotes.get(itemKeys[i]!) ?? []).find((q) => q.marketCode === r.market_code && q.side === r.side) ?? null;
            events[i] = e = { kind: 'change', change: { seq: seqs[i]!, marketHashName: r.market_hash_name, marketCode: r.market_code, side: r.side, quote } };
          }
          return e;
        };
        const isLast = (i: number) => {
          const r = rows[i]!;
          return lastIndex.get(`${itemKeys[i]}\u0000${r.market_code}\u0000${r.side}`) === i;
        };
        for (const sub of this.subs) {
          const list = wanted.get(sub);
          if (list) {
            // Within a page a quote is handed over once, at its last change (it carries the quote as served now anyway).
            const kept = repeats ? list.filter(isLast) : list;
            const out = new Array<LiveEvent>(kept.length);
            for (let k = 0; k < kept.length; k++) out[k] = eventAt(kept[k]!);
            sub.push(out);
          }
          if (last > sub.cursor) sub.cursor = last;
        }
        this.position = last;
      }
    } finally {
      // A read ahead that is no longer wanted (the pump stopped) must not reject unobserved.
      ahead?.catch(() => undefined);
    }
    if (sawValuation) await this.announceValuation();
  }

  /** Hands the newest valuation run to the subscriptions that want it, once per run. */
  private async announceValuation(): Promise<void> {
    const [run] = await this.db.query<{ valuation_date: string; computed_at: Date; item_count: number; two_sided_count: number; key: string }>(
      `SELECT valuation_date::text AS valuation_date, computed_at, item_count, two_sided_count, valuation_date::text || '/' || computed_at::text AS key
         FROM valuation_run ORDER BY computed_at DESC LIMIT 1`,
    );
    if (!run || run.key === this.lastValuation) return;
    this.lastValuation = run.key;
    const event: LiveEvent = {
      kind: 'valuation',
      valuation: { valuationDate: run.valuation_date, computedAt: new Date(run.computed_at), itemCount: run.item_count, twoSidedCount: run.two_sided_count, changeSeq: this.position ?? 0n },
    };
    for (const s of this.subs) if (s.wantsValuations) s.push([event]);
  }

  /** Keeps slot `id` alive (refreshed every SLOT_REFRESH_SECONDS) until `dropSlot`. */
  holdSlot(id: string): void {
    this.slots.add(id);
    if (!this.slotTimer) {
      this.slotTimer = setInterval(() => void refreshSlots(this.db, [...this.slots]).catch(() => undefined), SLOT_REFRESH_SECONDS * 1000);
      this.slotTimer.unref();
    }
  }

  /** Stops refreshing slot `id` (its subscription ended). */
  dropSlot(id: string): void {
    this.slots.delete(id);
    if (this.slots.size === 0 && this.slotTimer) {
      clearInterval(this.slotTimer);
      this.slotTimer = null;
    }
  }

  /** Ends every subscription (shutdown) and stops listening. */
  async close(): Promise<void> {
    if (this.closed) return this.idle();
    this.closed = true;
    this.unlisten();
    if (this.slotTimer) clearInterval(this.slotTimer);
    this.slotTimer = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const s of [...this.subs, ...this.catchingUp]) s.fail(shuttingDown());
    await this.idle();
  }
}
