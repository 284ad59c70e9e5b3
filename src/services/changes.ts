/**
 * The change sequence and the change feed (issue: live, points 1 and 2; README, Extensions: GET /prices/changes).
 *
 * Writing: every applied change of a quote (price, quantity, listed/delisted; services/ingestion.ts) and every
 * item whose CSCP valuation is published (services/valuation.ts: market `CSCP`, side `mid`) gets a row in
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
 * sequence its build started at (services/exports.ts): following from it misses nothing.
 *
 * Retention: rows older than CHANGE_WINDOW_HOURS are pruned (`pruneChanges`); a cursor below the last pruned
 * seq answers 410 `cursor_expired` (re-sync from the export).
 */
import type { Database } from '../db/client.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { ServiceError, validationError } from '../lib/errors.js';
import { loadQuotes, quoteText, type MarketQuote } from './quotes.js';

/** Hours of changes kept for the feed (issue: live, "say 24 h"). */
export const CHANGE_WINDOW_HOURS = 24;
/** Most changes one page returns (issue: live, point 2). */
export const MAX_CHANGES_PAGE = 1000;
/** Default page size. */
export const DEFAULT_CHANGES_PAGE = 1000;

/** One changed (item, market, side), as written. `side` is `mid` for the CSCP valuation. */
export interface ChangeKey {
  itemId: number;
  marketCode: string;
  side: 'ask' | 'bid' | 'mid';
}

type Tx = Pick<PrismaClient, '$executeRawUnsafe'>;

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
  await db.$executeRawUnsafe(RECORD_SQL, ids, markets, sides);
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

/**
 * A change as ChangeOut JSON text (src/shapes/changes.ts: seq, market_hash_name, market_code, side, quote), the
 * quote as GET /prices serves it (quoteText); written once per change object. The live REST stream sends it;
 * test/integration/live.test.ts checks it equals the feed's entry for the same change.
 */
export function changeText(c: Change): string {
  let text = changeTexts.get(c);
  if (text === undefined) {
    text = `{"seq":"${c.seq}","market_hash_name":${JSON.stringify(c.marketHashName)},"market_code":${JSON.stringify(c.marketCode)},"side":"${c.side}","quote":${c.quote === null ? 'null' : quoteText(c.quote)}}`;
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
  /** True when more changes after `nextCursor` match (ask again at once). */
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
 * The sequence bounds, after checking a client's cursor against them (null: no cursor, nothing to check).
 * Throws 410 `cursor_expired` (with `details.oldest_cursor`) below the pruned horizon and 422 beyond the current sequence.
 */
export async function checkCursor(db: Pick<Database, 'query'>, since: bigint | null): Promise<{ horizon: bigint; newest: bigint }> {
  const bounds = await sequenceBounds(db);
  const { horizon, newest } = bounds;
  if (since === null) return bounds;
  if (since < horizon) {
    throw new ServiceError(
      'cursor_expired',
      410,
      `Changes before sequence ${horizon + 1n} are no longer kept (${CHANGE_WINDOW_HOURS} h): download the export again and follow from its change_seq.`,
      { oldest_cursor: horizon.toString() },
    );
  }
  if (since > newest) throw validationError([{ location: 'query', field: 'since', message: `is beyond the current change sequence ${newest}` }]);
  return bounds;
}

/**
 * The changes after `q.since` (see the module doc). `since` null: an empty page whose cursor is the current
 * sequence (where a client without an export starts). Throws 410 `cursor_expired` for a cursor below the pruned
 * horizon and 422 for one beyond the current sequence.
 */
export async function readChanges(db: Database, q: ChangeQuery): Promise<ChangePage> {
  const { newest } = await checkCursor(db, q.since);
  if (q.since === null) return { since: newest, changes: [], nextCursor: newest, hasMore: false };
  const rows = await db.query<{ seq: string; market_hash_name: string; market_code: string; side: 'ask' | 'bid' | 'mid' }>(
    `SELECT c.seq::text AS seq, i.market_hash_name, c.market_code, c.side
       FROM quote_change c JOIN item i ON i.id = c.item_id
      WHERE c.seq > $1::bigint AND c.seq <= $2::bigint AND i.app_id = $3
        AND ($4::text[] IS NULL OR c.market_code = ANY($4::text[])) AND ($5::text = 'all' OR c.side = $5::text)
      ORDER BY c.seq LIMIT $6`,
    [q.since.toString(), newest.toString(), q.appId, q.markets, q.side, q.limit + 1],
  );
  const hasMore = rows.length > q.limit;
  const page = hasMore ? rows.slice(0, q.limit) : rows;
  // Within the page, a key appears once, at its last change.
  const last = new Map<string, number>();
  page.forEach((r, i) => last.set(`${r.market_hash_name}\u0000${r.market_code}\u0000${r.side}`, i));
  const kept = page.filter((r, i) => last.get(`${r.market_hash_name}\u0000${r.market_code}\u0000${r.side}`) === i);
  const quotes = kept.length === 0 ? new Map<string, MarketQuote[]>() : await loadQuotes(db, q.appId, [...new Set(kept.map((r) => r.market_hash_name))]);
  const changes = kept.map(
    (r): Change => ({
      seq: BigInt(r.seq),
      marketHashName: r.market_hash_name,
      marketCode: r.market_code,
      side: r.side,
      quote: (quotes.get(r.market_hash_name) ?? []).find((x) => x.marketCode === r.market_code && x.side === r.side) ?? null,
    }),
  );
  const nextCursor = hasMore ? BigInt(page[page.length - 1]!.seq) : newest;
  return { since: q.since, changes, nextCursor, hasMore };
}
