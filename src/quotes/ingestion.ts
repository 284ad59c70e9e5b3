/**
 * The ingestion service: applies source-quote observations to the stored quote state with the
 * state rules of the spec (States and transitions; MarketQuoteOut):
 * - `changed_at` moves only when price or quantity changes;
 * - `observed_at` is the time the quote was last seen individually;
 * - delisting keeps the last price, sets quantity 0 and `delisted_at` (kept from the first delisting);
 *   a later listed observation clears `delisted_at`;
 * - `fresh_at` is the latest of `changed_at`, `observed_at` and the market's last full-scan completion.
 * An observation not newer than the stored `observed_at` (or than a delisting by a full scan, which
 * moves `changed_at`) is stale and changes nothing, so replaying a file is idempotent and out-of-order
 * arrivals cannot roll a quote back.
 * Daily closes (valuation input): every applied observation also writes the quote's resulting state as
 * the close of its UTC day (`daily_close`, same statement); a full-scan completion (completeMarketScan)
 * confirms the market's quotes for its day. The close row is also the day's candle (open, high, low, number of
 * observations: issue price history), copied into `candle_month` by the history compaction (src/history/candles.ts).
 * Change sequence: every applied change of price, quantity or listed state (and every new quote) is recorded
 * in `quote_change` in the same transaction (quotes/changes.ts), one row per quote key and call. A change is
 * read off the updated row, without a second look-up: `changed_at` moved to this observation (price or quantity
 * changed; a delisting sets quantity 0, a relisting its quantity), or `delisted_at` is this observation (delisted
 * now with quantity already 0).
 * Bulk writes are SQL over `unnest` arrays (one statement per chunk), not row-by-row Prisma calls.
 */
import { recordChanges, type ChangeKey } from './changes.js';
import { CHANGES_PAYLOAD, quotesChanged, signalQuotes } from './quote-cache.js';
import type { Database, Sql } from '../db/client.js';
import { ingestedObservations } from '../lib/metrics.js';
import { searchKey } from '../search/query.js';
import type { QuoteObservation } from '../validation/ingest.js';

/** What one ingestion call did: rows created, rows updated, observations skipped as stale. */
export interface IngestResult {
  inserted: number;
  updated: number;
  skipped: number;
  /** Of `updated`: rows whose price, quantity and listing state did not change (only observed_at and fresh_at moved). */
  confirmed: number;
}

/** Options of `ingestQuotes` and `ingestBatch`. */
export interface IngestOptions {
  /** Dates the ingestion counters (default: the clock). */
  now?: Date;
  /**
   * `now` (default): confirmations (a quote seen again unchanged: its observed_at and fresh_at move, with no change
   * row) make every replica's quote cache drop everything, so they are served at once. `later`: the caller signals a
   * full drop itself when its run is over (the collector runner, after its last chunk), so the chunks of a run drop
   * only the names that changed (quotes/quote-cache.ts, precise invalidation) and the cache keeps serving the rest
   * meanwhile; a confirmation's observed_at and fresh_at are then served late by at most the run.
   */
  confirmations?: 'now' | 'later';
  /**
   * True when other transactions may insert some of the same new items at once (the collector runner's overlapping
   * chunks): new items are then inserted in key order, so two such transactions wait for each other in one order
   * and never deadlock. False (default): in the order observed, which decides new items' ids (the bundled data's
   * ids, on which docs/valuation.md's hand-reproduced figures were made).
   */
  concurrent?: boolean;
  /** Background work (the collector runner's chunks): `TransactionOptions.background` (requests' statements first on PGlite). */
  background?: boolean;
}

/** The `qg_quotes` payload of an ingestion that did `result` (see IngestOptions.confirmations). */
function ingestSignal(result: IngestResult, opts: IngestOptions): string {
  return result.confirmed > 0 && opts.confirmations !== 'later' ? '*' : CHANGES_PAYLOAD;
}

/** Observations per SQL statement: keeps parameter arrays and PGlite transactions short. */
const CHUNK = 5000;

/** Where the statements go: the database (each statement on its own) or one transaction (`Database.transaction`). */
type Tx = Sql;

/**
 * Ensures the items exist and returns their ids keyed by `appId + '\u0000' + marketHashName`.
 * One INSERT ... ON CONFLICT DO NOTHING and one SELECT per chunk. A new item gets its search key
 * (src/search/query.ts `searchKey`, computed here for every name: about a microsecond, where the SQL rule costs
 * PGlite some 70; docs/search.md); an existing one is left as it is. New items are inserted in the order given, or
 * in key order with `inKeyOrder` (see IngestOptions.concurrent).
 */
export async function ensureItems(db: Tx, items: { appId: string; marketHashName: string }[], inKeyOrder = false): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  const unique = new Map<string, { appId: string; marketHashName: string }>();
  for (const it of items) unique.set(`${it.appId}\u0000${it.marketHashName}`, it);
  // `inKeyOrder`: two transactions inserting some of the same new names (the collector runner's overlapping chunks)
  // then wait for each other in one order and never deadlock (IngestOptions.concurrent).
  const all = inKeyOrder ? [...unique.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]) : [...unique.values()];
  for (let i = 0; i < all.length; i += CHUNK) {
    const part = all.slice(i, i + CHUNK);
    const apps = part.map((p) => p.appId);
    const names = part.map((p) => p.marketHashName);
    await db.execute(
      `INSERT INTO item (app_id, market_hash_name, search_key)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT (app_id, market_hash_name) DO NOTHING`,
      [apps, names, names.map(searchKey)],
    );
    const rows = await db.query<{ id: number; app_id: string; market_hash_name: string }>(
      `SELECT i.id, i.app_id, i.market_hash_name FROM item i
       JOIN unnest($1::text[], $2::text[]) AS t(app_id, market_hash_name)
         ON i.app_id = t.app_id AND i.market_hash_name = t.market_hash_name`,
      [apps, names],
    );
    for (const r of rows) ids.set(`${r.app_id}\u0000${r.market_hash_name}`, r.id);
  }
  return ids;
}

// One statement per chunk: apply the observations to source_quote and write each applied one's resulting
// state as the daily close of its UTC day (daily_close; a later state the same day replaces it).
const UPSERT_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::numeric[], $7::int[],
                       $8::bool[], $9::bool[], $10::timestamptz[], $11::bool[])
    AS t(item_id, market_code, provider_code, side, currency_code, price, quantity,
         is_quantity_minimum, is_all_items_same_price, observed_at, delisted)
), applied AS (
INSERT INTO source_quote AS q (item_id, market_code, provider_code, side, currency_code, price, quantity,
  is_quantity_minimum, is_all_items_same_price, changed_at, observed_at, delisted_at, fresh_at)
SELECT i.item_id, i.market_code, i.provider_code, i.side::quote_side, i.currency_code, i.price,
       CASE WHEN i.delisted THEN 0 ELSE i.quantity END,
       i.is_quantity_minimum, i.is_all_items_same_price, i.observed_at, i.observed_at,
       CASE WHEN i.delisted THEN i.observed_at END,
       GREATEST(i.observed_at, s.completed_at)
FROM input i
LEFT JOIN market_scan s ON s.market_code = i.market_code AND s.provider_code = i.provider_code
ON CONFLICT (item_id, market_code, provider_code, side) DO UPDATE SET
  currency_code = EXCLUDED.currency_code,
  price = CASE WHEN EXCLUDED.delisted_at IS NOT NULL THEN q.price ELSE EXCLUDED.price END,
  quantity = EXCLUDED.quantity,
  is_quantity_minimum = EXCLUDED.is_quantity_minimum,
  is_all_items_same_price = EXCLUDED.is_all_items_same_price,
  changed_at = CASE
    WHEN (CASE WHEN EXCLUDED.delisted_at IS NOT NULL THEN q.price ELSE EXCLUDED.price END) IS DISTINCT FROM q.price
      OR EXCLUDED.quantity IS DISTINCT FROM q.quantity
    THEN EXCLUDED.observed_at ELSE q.changed_at END,
  observed_at = EXCLUDED.observed_at,
  delisted_at = CASE WHEN EXCLUDED.delisted_at IS NULL THEN NULL ELSE COALESCE(q.delisted_at, EXCLUDED.delisted_at) END,
  fresh_at = GREATEST(q.fresh_at, EXCLUDED.fresh_at)
WHERE EXCLUDED.observed_at > GREATEST(q.observed_at, q.changed_at)
RETURNING q.item_id, q.market_code, q.provider_code, q.side, q.currency_code, q.price, q.quantity, q.changed_at,
          q.observed_at, q.delisted_at, (xmax = 0) AS inserted
), closes AS (
INSERT INTO daily_close AS c (item_id, market_code, provider_code, side, day, currency_code, price, quantity, delisted,
  changed_at, confirmed_at, open_price, high_price, low_price, observations)
SELECT item_id, market_code, provider_code, side, (observed_at AT TIME ZONE 'UTC')::date, currency_code, price, quantity,
       delisted_at IS NOT NULL, changed_at, observed_at, price, price, price, 1
FROM applied
ON CONFLICT (item_id, market_code, provider_code, side, day) DO UPDATE SET
  currency_code = EXCLUDED.currency_code, price = EXCLUDED.price, quantity = EXCLUDED.quantity, delisted = EXCLUDED.delisted,
  changed_at = EXCLUDED.changed_at, confirmed_at = EXCLUDED.confirmed_at,
  open_price = COALESCE(c.open_price, EXCLUDED.price), high_price = GREATEST(c.high_price, EXCLUDED.price),
  low_price = LEAST(c.low_price, EXCLUDED.price), observations = c.observations + 1, compacted = false
WHERE EXCLUDED.confirmed_at >= c.confirmed_at
)
SELECT inserted, item_id, market_code, side::text AS side,
       (inserted OR changed_at = observed_at OR delisted_at = observed_at) AS changed
  FROM applied`;

/** How far back an observation still counts as collection activity (status `datasource`), in ms. */
const ACTIVITY_WINDOW_MS = 25 * 3600_000;

/**
 * The ingestion counters behind status area `datasource`: observations received per market and minute
 * of observation, added up in `ingest_activity` (one statement). Observations older than
 * ACTIVITY_WINDOW_MS before `now` (file imports of history) or in the future are not activity.
 */
async function countActivity(db: Tx, observations: QuoteObservation[], now: Date): Promise<void> {
  const counts = new Map<string, number>();
  const from = now.getTime() - ACTIVITY_WINDOW_MS;
  const to = now.getTime() + 60_000;
  for (const o of observations) {
    const t = o.observedAt.getTime();
    if (t < from || t > to) continue;
    const key = `${o.marketCode}\u0000${Math.floor(t / 60_000) * 60_000}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  if (counts.size === 0) return;
  const markets: string[] = [];
  const minutes: string[] = [];
  const values: number[] = [];
  // In key order, as ensureItems: concurrent ingestions update the same (market, minute) rows in one order.
  for (const [key, n] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    const [market, ms] = key.split('\u0000');
    markets.push(market!);
    minutes.push(new Date(Number(ms)).toISOString());
    values.push(n);
  }
  await db.execute(
    `INSERT INTO ingest_activity AS a (market_code, minute_start, count)
     SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[])
     ON CONFLICT (market_code, minute_start) DO UPDATE SET count = a.count + EXCLUDED.count`,
    [markets, minutes, values],
  );
}

/**
 * Applies observations in observed time order. Several observations of the same quote in one call are
 * applied one after another (earliest first), so intermediate changes still move `changed_at`.
 * Each chunk is one statement; wrap the call in a transaction for all-or-nothing batches. Also adds the
 * observations to the ingestion counters (`countActivity`; `opts.now`, default the clock, dates them).
 * Throws on a database error; validation of shapes is the caller's job.
 */
export async function ingestQuotes(db: Tx, observations: QuoteObservation[], opts: IngestOptions = {}): Promise<IngestResult> {
  const result: IngestResult = { inserted: 0, updated: 0, skipped: 0, confirmed: 0 };
  if (observations.length === 0) return result;
  const itemIds = await ensureItems(db, observations, opts.concurrent === true);
  const sorted = [...observations].sort((a, b) => a.observedAt.getTime() - b.observedAt.getTime());
  // Rounds: the n-th observation of each quote key goes into round n (ON CONFLICT may touch a row once).
  const rounds: QuoteObservation[][] = [];
  const changes: ChangeKey[] = [];
  const seen = new Map<string, number>();
  for (const o of sorted) {
    const key = `${o.appId}\u0000${o.marketHashName}\u0000${o.marketCode}\u0000${o.providerCode}\u0000${o.side}`;
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    (rounds[n] ??= []).push(o);
  }
  for (const round of rounds) {
    for (let i = 0; i < round.length; i += CHUNK) {
      const part = round.slice(i, i + CHUNK);
      const rows = await db.query<{ inserted: boolean; item_id: number; market_code: string; side: 'ask' | 'bid'; changed: boolean }>(UPSERT_SQL, [
        part.map((o) => itemIds.get(`${o.appId}\u0000${o.marketHashName}`)!),
        part.map((o) => o.marketCode),
        part.map((o) => o.providerCode),
        part.map((o) => o.side),
        part.map((o) => o.currencyCode),
        part.map((o) => (o.price === null ? null : o.price.toFixed())),
        part.map((o) => o.quantity),
        part.map((o) => o.isQuantityMinimum),
        part.map((o) => o.isAllItemsSamePrice),
        part.map((o) => o.observedAt.toISOString()),
        part.map((o) => o.delisted === true),
      ]);
      for (const r of rows) {
        if (r.inserted) result.inserted += 1;
        else result.updated += 1;
        if (r.changed) changes.push({ itemId: r.item_id, marketCode: r.market_code, side: r.side });
        else if (!r.inserted) result.confirmed += 1;
      }
      result.skipped += part.length - rows.length;
    }
  }
  // The counters after the quotes: their (market, minute) row is shared by every chunk of a run, so a concurrent
  // ingestion waits for this one's commit only from here (the runner overlaps its chunks, src/collectors/runner.ts).
  await countActivity(db, observations, opts.now ?? new Date());
  ingestedObservations.inc({ outcome: 'inserted' }, result.inserted);
  ingestedObservations.inc({ outcome: 'updated' }, result.updated);
  ingestedObservations.inc({ outcome: 'skipped' }, result.skipped);
  // The change sequence (quotes/changes.ts) holds its lock from here to the commit.
  await recordChanges(db, changes);
  // Quote caches of every replica drop the changed names (or everything: confirmations) when this commits
  // (quotes/quote-cache.ts): after the change rows, so a caller without a transaction signals once they are there.
  if (result.inserted + result.updated > 0) await signalQuotes(db, ingestSignal(result, opts));
  return result;
}

/** A full scan of one market by one provider, reported complete (collector API `completeMarketScan`). */
export interface ScanCompletion {
  marketCode: string;
  providerCode: string;
  /** When the scan began: quotes not observed since then were not seen by it. */
  startedAt: Date;
  completedAt: Date;
  /** Delist the market's listed quotes (of this provider) that the scan did not see. */
  delistUnseen: boolean;
}

/** What a scan completion changed. */
export interface ScanResult {
  /** Quotes whose `fresh_at` moved to the completion time. */
  freshened: number;
  /** Quotes delisted because the scan did not see them (only with `delistUnseen`). */
  delisted: number;
}

/**
 * Records a full-scan completion (spec: MarketQuoteOut.fresh_at "completion of the last full scan of the
 * market"): stores it in `market_scan` (kept at the latest completion), moves `fresh_at` of every quote of
 * that market and provider to it, and with `delistUnseen` delists the listed quotes whose last observation
 * is older than `startedAt` (quantity 0, `delisted_at` = completion, last price kept; `changed_at` moves
 * since the quantity changed; `observed_at` stays: they were not seen). Then writes the confirmed state
 * of the market's quotes as the daily close of the completion's UTC day. A completion older than the
 * stored one still freshens nothing newer and delists only what it did not see. Run it in a transaction
 * for all-or-nothing.
 */
async function completeMarketScan(db: Tx, scan: ScanCompletion): Promise<ScanResult> {
  const { marketCode, providerCode } = scan;
  const completed = scan.completedAt.toISOString();
  await db.execute(
    `INSERT INTO market_scan AS s (market_code, provider_code, completed_at) VALUES ($1, $2, $3::timestamptz)
     ON CONFLICT (market_code, provider_code) DO UPDATE SET completed_at = GREATEST(s.completed_at, EXCLUDED.completed_at)`,
    [marketCode, providerCode, completed],
  );
  const freshened = await db.execute(
    `UPDATE source_quote SET fresh_at = $3::timestamptz
      WHERE market_code = $1 AND provider_code = $2 AND fresh_at < $3::timestamptz`,
    [marketCode, providerCode, completed],
  );
  let delisted = 0;
  const changes: ChangeKey[] = [];
  if (scan.delistUnseen) {
    const rows = await db.query<{ item_id: number; side: 'ask' | 'bid' }>(
      `UPDATE source_quote SET quantity = 0, delisted_at = $3::timestamptz,
              changed_at = CASE WHEN quantity IS DISTINCT FROM 0 THEN $3::timestamptz ELSE changed_at END,
              fresh_at = GREATEST(fresh_at, $3::timestamptz)
        WHERE market_code = $1 AND provider_code = $2 AND delisted_at IS NULL
          AND GREATEST(observed_at, changed_at) < $4::timestamptz
       RETURNING item_id, side::text AS side`,
      [marketCode, providerCode, completed, scan.startedAt.toISOString()],
    );
    delisted = rows.length;
    for (const r of rows) changes.push({ itemId: r.item_id, marketCode, side: r.side });
  }
  await db.execute(
    `INSERT INTO daily_close AS c (item_id, market_code, provider_code, side, day, currency_code, price, quantity, delisted,
       changed_at, confirmed_at, open_price, high_price, low_price, observations)
     SELECT item_id, market_code, provider_code, side, ($3::timestamptz AT TIME ZONE 'UTC')::date, currency_code, price, quantity,
            delisted_at IS NOT NULL, changed_at, $3::timestamptz, price, price, price, 0
       FROM source_quote
      WHERE market_code = $1 AND provider_code = $2 AND GREATEST(observed_at, changed_at) <= $3::timestamptz
        -- A quote observed at the completion itself already wrote this close (confirmed_at = observed_at) when it
        -- was applied: writing it again changes nothing (collector runs complete at their observation time).
        AND observed_at IS DISTINCT FROM $3::timestamptz
     ON CONFLICT (item_id, market_code, provider_code, side, day) DO UPDATE SET
       currency_code = EXCLUDED.currency_code, price = EXCLUDED.price, quantity = EXCLUDED.quantity, delisted = EXCLUDED.delisted,
       changed_at = EXCLUDED.changed_at, confirmed_at = EXCLUDED.confirmed_at,
       open_price = COALESCE(c.open_price, EXCLUDED.price), high_price = GREATEST(c.high_price, EXCLUDED.price),
       low_price = LEAST(c.low_price, EXCLUDED.price), compacted = false
     WHERE EXCLUDED.confirmed_at >= c.confirmed_at`,
    [marketCode, providerCode, completed],
  );
  await recordChanges(db, changes); // the change lock is held to the commit
  // fresh_at moves have no change rows: they drop everything; delistings alone are in the change sequence.
  if (freshened + delisted > 0) await signalQuotes(db, scanSignal(freshened));
  return { freshened, delisted };
}

/** The `qg_quotes` payload of a scan completion that freshened `freshened` quotes (fresh_at moves have no change rows). */
function scanSignal(freshened: number): string {
  return freshened > 0 ? '*' : CHANGES_PAYLOAD;
}

/**
 * Applies one batch all-or-nothing: every observation in one database transaction on the raw driver
 * (`Database.transaction`; a failure rolls back every row, the ingestion counters included). Validation is the
 * caller's job (src/validation/ingest.ts).
 */
export async function ingestBatch(db: Pick<Database, 'transaction'>, observations: QuoteObservation[], opts: IngestOptions = {}): Promise<IngestResult> {
  const result = await db.transaction((tx) => ingestQuotes(tx, observations, opts), { background: opts.background === true });
  if (result.inserted + result.updated > 0) quotesChanged(ingestSignal(result, opts)); // again after the commit: a read between the signal and the commit cached the old rows
  return result;
}

/** `completeMarketScan` in one transaction on the raw driver (`Database.transaction`). */
export async function completeMarketScanTx(db: Pick<Database, 'transaction'>, scan: ScanCompletion, opts: { background?: boolean } = {}): Promise<ScanResult> {
  const result = await db.transaction((tx) => completeMarketScan(tx, scan), { background: opts.background === true });
  if (result.freshened + result.delisted > 0) quotesChanged(scanSignal(result.freshened)); // after the commit, as in ingestBatch
  return result;
}

/** The catalogue facts collector rows are checked against: market code -> currency and deprecation (table `website`). */
export async function marketCatalogue(db: Pick<Database, 'query'>): Promise<Map<string, { currencyCode: string; isDeprecated: boolean }>> {
  const rows = await db.query<{ code: string; currency_code: string; is_deprecated: boolean }>(`SELECT code, currency_code, is_deprecated FROM website`);
  return new Map(rows.map((r) => [r.code, { currencyCode: r.currency_code, isDeprecated: r.is_deprecated }]));
}
