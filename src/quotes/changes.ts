/**
 * The change sequence and the change feed (issue: live, points 1 and 2; README, Extensions: GET /prices/changes).
 *
 * Writing: every applied change of a quote (price, quantity, listed/delisted; quotes/ingestion.ts) and every
 * item whose CSCP valuation is published (valuation/daily.ts: market `CSCP`, side `mid`) gets a row in
 * `quote_change` in the same transaction as the change. Its `seq` is handed out under a transaction-scoped
 * advisory lock (`quotegate:changes`) taken in the same statement and held until commit, so sequence numbers
 * become visible in increasing order: a reader that sees seq n has seen every committed change below n, and
 * no later commit can add one below it. One row per (item, market, side) per write, however many observations
 * of it the write applied.
 *
 * Reading: a page of the changes after a cursor (the last seq the client has), in order, filtered by market and
 * side, at most MAX_CHANGES_PAGE; each change carries the quote as served now (the same loader and precedence
 * as GET /prices), so applying a page in order makes a copy equal to the served state; a (item, market, side)
 * that changed several times within a page appears once, at its last seq. The export snapshot records the
 * sequence its build started at (exports/exports.ts): following from it misses nothing.
 *
 * Bounded reads (issue 41, point 5): every statement reads at most SCAN_CHUNK rows of the sequence after a cursor
 * (`scanChanges`), whatever the filter matches, and returns at most the changes asked for. A statement on embedded
 * PGlite runs on the event loop's own thread, so an unbounded scan of a filter that matches nothing (300,000
 * changes behind) held every other request for its whole length; and its memory is what it returns, so it stays
 * independent of the backlog. A feed page reads chunk after chunk, yielding to other requests between them, until
 * it holds `limit` changes, reaches the end of the sequence, or has read MAX_SCAN_PER_PAGE rows (then `has_more`
 * with fewer changes, possibly none, and `next_cursor` where it stopped). The live replays (live/live.ts) read
 * the same chunks as their client reads what they sent.
 *
 * Retention: rows older than CHANGE_WINDOW_HOURS are pruned (`pruneChanges`); a cursor below the last pruned
 * seq answers 410 `cursor_expired` (re-sync from the export).
 */
import type { Database, Sql } from '../db/client.js';
import { ServiceError, validationError } from '../lib/errors.js';
import { loadQuotes, quoteText, type MarketQuote } from './quotes.js';
import type { z } from 'zod';
import type { ChangeOut } from '../shapes/changes.js';
import { RawJson, stringifyWithRaw } from '../lib/raw-json.js';

/** Hours of changes kept for the feed (issue: live, "say 24 h"). */
export const CHANGE_WINDOW_HOURS = 24;
/** Most changes one page returns (issue: live, point 2). */
export const MAX_CHANGES_PAGE = 1000;
/** Default page size. */
export const DEFAULT_CHANGES_PAGE = 1000;
/**
 * Rows of the sequence one statement reads at most (issue 41, point 5), by database: on embedded PGlite a statement
 * runs on the event loop's own thread, so its chunks are small (a few milliseconds each on an idle 2-vCPU machine;
 * docs/benchmarks.md); a PostgreSQL server's run elsewhere, so fewer, larger ones save round trips.
 */
export const SCAN_CHUNK = { pglite: 2000, postgres: 10_000 } as const;

/** The chunk of `db`'s kind (SCAN_CHUNK). */
export function scanChunk(db: Pick<Database, 'kind'>): number {
  return SCAN_CHUNK[db.kind];
}
/** Rows of the sequence one feed page reads at most before it answers (`has_more`, fewer than `limit` changes). */
export const MAX_SCAN_PER_PAGE = 100_000;

/** One changed (item, market, side), as written. `side` is `mid` for the CSCP valuation. */
export interface ChangeKey {
  itemId: number;
  marketCode: string;
  side: 'ask' | 'bid' | 'mid';
}

/** Where the statement goes: the caller's transaction (`Database.transaction`, or `prismaSql` of a Prisma one). */
type Tx = Pick<Sql, 'execute'>;

const RECORD_SQL = `
WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtext('quotegate:changes')))
INSERT INTO quote_change (item_id, market_code, side)
SELECT t.item_id, t.market_code, t.side
  FROM lock CROSS JOIN unnest($1::int[], $2::text[], $3::text[]) WITH ORDINALITY AS t(item_id, market_code, side, n)
 ORDER BY t.n`;

/**
 * Records changes in the caller's transaction (or as one statement of its own): one sequence number per distinct
 * key, in the order given. Takes the change lock until commit, so call it last in a transaction (it serializes
 * the commits of concurrent writers from here on). Nothing to record: no statement, no lock.
 */
export async function recordChanges(db: Tx, keys: readonly ChangeKey[]): Promise<number> {
  const seen = new Set<string>();
  const ids: number[] = [];
  const markets: string[] = [];
  const sides: string[] = [];
  for (const k of keys) {
    const key = `${k.itemId}\u0000${k.marketCode}\u0000${k.side}`;
    if (seen.has(key)) continue;
    seen.add(key);
    ids.push(k.itemId);
    markets.push(k.marketCode);
    sides.push(k.side);
  }
  if (ids.length === 0) return 0;
  await db.execute(RECORD_SQL, [ids, markets, sides]);
  return ids.length;
}

/** The pruned horizon and the newest committed sequence number (at least the horizon; 0 when nothing was ever recorded). */
async function sequenceBounds(db: Pick<Database, 'query'>): Promise<{ horizon: bigint; newest: bigint }> {
  const [row] = await db.query<{ seq: string; horizon: string }>(
    `SELECT COALESCE((SELECT max(seq) FROM quote_change), 0)::text AS seq, (SELECT pruned_through FROM quote_change_horizon WHERE id = 1)::text AS horizon`,
  );
  const horizon = BigInt(row?.horizon ?? '0');
  const max = BigInt(row?.seq ?? '0');
  return { horizon, newest: max > horizon ? max : horizon };
}

/** The newest committed sequence number (0 when nothing was ever recorded). */
export async function currentSequence(db: Pick<Database, 'query'>): Promise<bigint> {
  return (await sequenceBounds(db)).newest;
}

/**
 * Deletes the changes recorded more than CHANGE_WINDOW_HOURS before `now` and moves the horizon to the largest
 * deleted seq (one statement). Returns how many were deleted.
 */
export async function pruneChanges(db: Pick<Database, 'query'>, now: Date = new Date()): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `WITH gone AS (DELETE FROM quote_change WHERE recorded_at < $1::timestamptz - make_interval(hours => $2) RETURNING seq),
          moved AS (UPDATE quote_change_horizon SET pruned_through = GREATEST(pruned_through, (SELECT max(seq) FROM gone))
                     WHERE id = 1 AND EXISTS (SELECT 1 FROM gone) RETURNING 1)
     SELECT (SELECT count(*) FROM gone)::int AS n, (SELECT count(*) FROM moved)::int AS m`,
    [now.toISOString(), CHANGE_WINDOW_HOURS],
  );
  return row?.n ?? 0;
}

/** One entry of a change page: the key and its quote as served now (null: no quote is served for it any more). */
export interface Change {
  seq: bigint;
  marketHashName: string;
  marketCode: string;
  side: 'ask' | 'bid' | 'mid';
  quote: MarketQuote | null;
}

/** JSON texts of changes (ChangeOut), made once per change object and shared by every stream that sends it. */
const changeTexts = new WeakMap<Change, string>();

/** ChangeOut (src/shapes/changes.ts) as this module writes it: the quote already written as JSON text (quoteText). */
type ChangeJson = Omit<z.infer<typeof ChangeOut>, 'quote'> & { quote: RawJson | null };

/**
 * A change as ChangeOut JSON text, typed by its shape (src/shapes/changes.ts), the quote as GET /prices serves it
 * (quoteText); written once per change object. The live REST stream sends it; test/integration/live.test.ts checks
 * it equals the feed's entry for the same change.
 */
export function changeText(c: Change): string {
  let text = changeTexts.get(c);
  if (text === undefined) {
    const json: ChangeJson = {
      seq: c.seq.toString(),
      market_hash_name: c.marketHashName,
      market_code: c.marketCode,
      side: c.side,
      quote: c.quote === null ? null : new RawJson(quoteText(c.quote)),
    };
    text = stringifyWithRaw(json);
    changeTexts.set(c, text);
  }
  return text;
}

/** Server-sent events of changes (`id`, `event: change`, `data`) as UTF-8 bytes, made once per change object. */
const eventBytes = new WeakMap<Change, Buffer>();

/**
 * A change as one server-sent event (`id` its seq, event `change`, `data` its changeText) in UTF-8, encoded once
 * per change: every stream that sends it writes the same bytes.
 */
export function changeEvent(c: Change): Buffer {
  let bytes = eventBytes.get(c);
  if (bytes === undefined) {
    bytes = Buffer.from(`id: ${c.seq}\nevent: change\ndata: ${changeText(c)}\n\n`, 'utf8');
    eventBytes.set(c, bytes);
  }
  return bytes;
}

/** A page of the feed. */
export interface ChangePage {
  /** The cursor asked for (the current sequence when none was given). */
  since: bigint;
  changes: Change[];
  /** Pass as `since` for the next page: the last seq of this page, or the sequence read is complete up to. */
  nextCursor: bigint;
  /**
   * True when more changes after `nextCursor` match, or may (the page stopped after reading MAX_SCAN_PER_PAGE rows of
   * the sequence, with fewer than `limit` changes): ask again at once.
   */
  hasMore: boolean;
}

/** What a page asks for. `markets` null: every market; `side` 'all': every side. */
export interface ChangeQuery {
  appId: string;
  since: bigint | null;
  markets: readonly string[] | null;
  side: 'ask' | 'bid' | 'mid' | 'all';
  limit: number;
}

/**
 * 410 `cursor_expired` (with `details.oldest_cursor`): the changes after a cursor below `horizon` (the last pruned
 * seq) are no longer kept; the client re-syncs from the export and follows from its `change_seq`.
 */
export function cursorExpired(horizon: bigint): ServiceError {
  return new ServiceError(
    'cursor_expired',
    410,
    `Changes before sequence ${horizon + 1n} are no longer kept (${CHANGE_WINDOW_HOURS} h): download the export again (GET /prices/export) and follow from its change_seq.`,
    { oldest_cursor: horizon.toString() },
  );
}

/**
 * The sequence bounds, after checking a client's cursor against them (null: no cursor, nothing to check).
 * Throws 410 `cursor_expired` (with `details.oldest_cursor`) below the pruned horizon and 422 beyond the current sequence.
 */
export async function checkCursor(db: Pick<Database, 'query'>, since: bigint | null): Promise<{ horizon: bigint; newest: bigint }> {
  const bounds = await sequenceBounds(db);
  const { horizon, newest } = bounds;
  if (since === null) return bounds;
  if (since < horizon) throw cursorExpired(horizon);
  if (since > newest) throw validationError([{ location: 'query', field: 'since', message: `is beyond the current change sequence ${newest}` }]);
  return bounds;
}

/** Which changes a scan returns. `names` / `markets` null: all; `side` 'all': every side. */
export interface ScanFilter {
  appId: string;
  names: readonly string[] | null;
  markets: readonly string[] | null;
  side: 'ask' | 'bid' | 'mid' | 'all';
}

/** A matching row of the sequence (its key, not yet its quote). */
export interface ChangeRow {
  seq: bigint;
  marketHashName: string;
  marketCode: string;
  side: 'ask' | 'bid' | 'mid';
}

/** What one bounded scan read (see scanChanges). */
export interface ScanResult {
  /** The matching rows, in sequence order (at most the `limit` asked for). */
  rows: ChangeRow[];
  /** The cursor to go on from: the last returned row's seq when `limit` was reached, else the last row read (or `after`). */
  next: bigint;
  /** True when the scan read fewer rows than its chunk: nothing more was committed after `next` (up to `upto`). */
  end: boolean;
  /** Rows of the sequence the statement read (at most its chunk). */
  read: number;
}

/**
 * One bounded read (`scanChanges`): $1 after, $2 upto (null: none), $3 rows read at most, $4 app, $5 names (null:
 * all), $6 markets (null: all), $7 side, $8 matches at most. The rows are read in seq order by the primary key and
 * each that passes the market, side and names filters (names: their items' ids found once per statement by the
 * app-and-name index and hashed; an IN under an OR stays a hashed subplan, never a join to reorder) is matched to its
 * item by one primary-key lookup (a LATERAL subquery fenced by its LIMIT), in order, until $8 matched: no sort, no
 * lookup past the last match, and no plan can join the chunk to the whole item table, whatever the table statistics
 * say (with an unanalyzed `item`, joins took seconds a chunk). The last row tells what was read (its last seq and
 * count) and the pruned horizon, in the same snapshot.
 */
const SCAN_SQL = `(SELECT c.seq::text AS seq, i.market_hash_name, c.market_code, c.side, NULL::int AS scanned, NULL::text AS horizon
  FROM (SELECT seq, item_id, market_code, side FROM quote_change
         WHERE seq > $1::bigint AND ($2::bigint IS NULL OR seq <= $2::bigint) ORDER BY seq LIMIT $3) c
  CROSS JOIN LATERAL (SELECT app_id, market_hash_name FROM item WHERE id = c.item_id LIMIT 1) i
 WHERE i.app_id = $4 AND ($6::text[] IS NULL OR c.market_code = ANY($6::text[])) AND ($7::text = 'all' OR c.side = $7::text)
   AND ($5::text[] IS NULL OR c.item_id IN (SELECT id FROM item WHERE app_id = $4 AND market_hash_name = ANY($5::text[])))
 ORDER BY c.seq LIMIT $8)
UNION ALL
SELECT max(seq)::text, NULL, NULL, NULL, count(*)::int, (SELECT pruned_through FROM quote_change_horizon WHERE id = 1)::text
  FROM (SELECT seq FROM quote_change WHERE seq > $1::bigint AND ($2::bigint IS NULL OR seq <= $2::bigint) ORDER BY seq LIMIT $3) r`;

/**
 * One bounded read of the sequence (module doc): the rows after `after` (and at most `upto`; null: no bound), at most
 * `chunk` of them read, of which at most `limit` (> 0) matching `f` are returned. One statement; its memory is what it
 * returns. Throws 410 `cursor_expired` when `after` is below the pruned horizon (changes after it may be gone).
 */
export async function scanChanges(db: Pick<Database, 'query'>, f: ScanFilter, after: bigint, upto: bigint | null, chunk: number, limit: number): Promise<ScanResult> {
  const raw = await db.query<{ seq: string | null; market_hash_name: string | null; market_code: string | null; side: 'ask' | 'bid' | 'mid' | null; scanned: number | null; horizon: string | null }>(
    SCAN_SQL,
    [after.toString(), upto === null ? null : upto.toString(), chunk, f.appId, f.names, f.markets, f.side, limit],
  );
  const rows: ChangeRow[] = [];
  let scanned = 0;
  let last: bigint | null = null;
  let horizon = 0n;
  for (const r of raw) {
    if (r.scanned !== null) {
      scanned = r.scanned;
      last = r.seq === null ? null : BigInt(r.seq);
      horizon = BigInt(r.horizon ?? '0');
    } else rows.push({ seq: BigInt(r.seq!), marketHashName: r.market_hash_name!, marketCode: r.market_code!, side: r.side! });
  }
  if (after < horizon) throw cursorExpired(horizon);
  rows.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
  if (rows.length >= limit) return { rows, next: rows[rows.length - 1]!.seq, end: false, read: scanned };
  return { rows, next: last ?? after, end: scanned < chunk, read: scanned };
}

/** The rows of one page with each key (item, market, side) kept once, at its last change in the page. */
export function lastOfEachKey(rows: readonly ChangeRow[]): ChangeRow[] {
  const last = new Map<string, number>();
  rows.forEach((r, i) => last.set(`${r.marketHashName}\u0000${r.marketCode}\u0000${r.side}`, i));
  return last.size === rows.length ? [...rows] : rows.filter((r, i) => last.get(`${r.marketHashName}\u0000${r.marketCode}\u0000${r.side}`) === i);
}

/** Resolves after the I/O callbacks of this turn of the event loop: a long read lets other requests in between its statements. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The changes after `q.since` (see the module doc): bounded chunks (SCAN_CHUNK rows each, other requests served in
 * between) until the page holds `q.limit` changes, the sequence ends, or MAX_SCAN_PER_PAGE rows were read (then
 * `hasMore` with fewer changes and `nextCursor` the last row read). `since` null: an empty page whose cursor is the
 * current sequence (where a client without an export starts). Throws 410 `cursor_expired` for a cursor below the
 * pruned horizon and 422 for one beyond the current sequence.
 */
export async function readChanges(db: Database, q: ChangeQuery): Promise<ChangePage> {
  const { newest } = await checkCursor(db, q.since);
  if (q.since === null) return { since: newest, changes: [], nextCursor: newest, hasMore: false };
  const filter: ScanFilter = { appId: q.appId, names: null, markets: q.markets, side: q.side };
  const page: ChangeRow[] = [];
  let cursor = q.since;
  let read = 0;
  let hasMore: boolean;
  for (;;) {
    const chunk = Math.min(scanChunk(db), MAX_SCAN_PER_PAGE - read);
    // One more than the page holds: whether more changes match after it.
    const scan = await scanChanges(db, filter, cursor, newest, chunk, q.limit + 1 - page.length);
    for (const r of scan.rows) page.push(r);
    read += chunk;
    cursor = scan.next;
    if (page.length > q.limit) {
      page.length = q.limit;
      cursor = page[q.limit - 1]!.seq;
      hasMore = true;
      break;
    }
    if (scan.end) {
      cursor = newest;
      hasMore = false;
      break;
    }
    if (read >= MAX_SCAN_PER_PAGE) {
      hasMore = true;
      break;
    }
    await nextTurn();
  }
  // Within the page, a key appears once, at its last change.
  const kept = lastOfEachKey(page);
  const quotes = kept.length === 0 ? new Map<string, MarketQuote[]>() : await loadQuotes(db, q.appId, [...new Set(kept.map((r) => r.marketHashName))]);
  const changes = kept.map((r): Change => ({ ...r, quote: (quotes.get(r.marketHashName) ?? []).find((x) => x.marketCode === r.marketCode && x.side === r.side) ?? null }));
  return { since: q.since, changes, nextCursor: cursor, hasMore };
}
