/**
 * What the item pages read from the database: the currency rates, the item's history extent, the search and the
 * market names. Each is one or two statements on the raw driver (`Database.query`, as the other pages read),
 * numerics cast to text in SQL and parsed as decimal.js. The item id, quotes and history come from the services
 * (`itemIdOf`, `loadQuotes` or the quote cache, `loadItemHistory`).
 */
import type { Database } from '../../db/client.js';
import { decodeMonth } from '../../history/candle-codec.js';
import type { Money } from '../../lib/money.js';
import { byCodePoint } from '../../lib/order.js';
import { readCurrencyRates } from '../../catalogue/catalogue.js';
import { CS2_APP_ID } from '../../collectors/importers.js';

/** Most search results shown on one page. */
export const SEARCH_LIMIT = 50;

/** The official currencies with their USD rates (the data of GET /currencies), plus the rates of any other. */
export interface RateTable {
  /** USD per unit, for every currency that has a rate (official or not). */
  rates: Map<string, Money>;
  /** The day each rate was published, when known. */
  rateDates: Map<string, string>;
  /** The codes a reader may choose: official, not deleted, sorted. */
  choices: string[];
}

/** The rates of every currency not deleted (one statement, `readCurrencyRates`). A rate of 0 or less counts as no rate. */
export async function loadRates(db: Pick<Database, 'query'>): Promise<RateTable> {
  const rows = await readCurrencyRates(db);
  const rates = new Map<string, Money>();
  const rateDates = new Map<string, string>();
  for (const r of rows) {
    if (r.usdRate.gt(0)) rates.set(r.code, r.usdRate);
    if (r.rateDate) rateDates.set(r.code, r.rateDate);
  }
  const choices = rows.filter((r) => r.isOfficial).map((r) => r.code).sort(byCodePoint);
  return { rates, rateDates, choices };
}

/**
 * The first and last day the item has any history (candles or valuations), or null when it has none. Two
 * statements: the hot rows' and valuations' bounds, and the item's first and last cold months (decoded for
 * their exact days; a handful of rows).
 */
export async function historyExtent(db: Pick<Database, 'query'>, itemId: number): Promise<{ first: string; last: string } | null> {
  const [bounds, months] = await Promise.all([
    db.query<{ hot_first: string | null; hot_last: string | null; val_first: string | null; val_last: string | null }>(
      `SELECT (SELECT min(day)::text FROM daily_close WHERE item_id = $1) AS hot_first,
              (SELECT max(day)::text FROM daily_close WHERE item_id = $1) AS hot_last,
              (SELECT min(valuation_date)::text FROM valuation WHERE item_id = $1) AS val_first,
              (SELECT max(valuation_date)::text FROM valuation WHERE item_id = $1) AS val_last`,
      [itemId],
    ),
    db.query<{ month: string; data: Uint8Array }>(
      `SELECT month::text AS month, data FROM candle_month
        WHERE item_id = $1 AND month IN ((SELECT min(month) FROM candle_month WHERE item_id = $1), (SELECT max(month) FROM candle_month WHERE item_id = $1))`,
      [itemId],
    ),
  ]);
  const days: string[] = [];
  const b = bounds[0];
  if (b) for (const d of [b.hot_first, b.hot_last, b.val_first, b.val_last]) if (d !== null) days.push(d);
  for (const m of months) {
    for (const c of decodeMonth(m.data)) days.push(`${m.month.slice(0, 8)}${String(c.day).padStart(2, '0')}`);
  }
  if (days.length === 0) return null;
  days.sort();
  return { first: days[0]!, last: days[days.length - 1]! };
}

/** Names containing `q` (case-insensitive), exact match first, then names starting with it, then by code point; at most `limit + 1`. */
export async function searchItems(db: Pick<Database, 'query'>, q: string, limit = SEARCH_LIMIT): Promise<string[]> {
  const rows = await db.query<{ market_hash_name: string }>(
    `SELECT market_hash_name FROM item
      WHERE app_id = $1 AND strpos(lower(market_hash_name), lower($2::text)) > 0
      ORDER BY (lower(market_hash_name) = lower($2::text)) DESC, (strpos(lower(market_hash_name), lower($2::text)) = 1) DESC, market_hash_name COLLATE "C"
      LIMIT $3`,
    [CS2_APP_ID, q, limit + 1],
  );
  return rows.map((r) => r.market_hash_name);
}

/** Display names of the markets `codes`, by code (unknown codes absent); no statement when `codes` is empty. */
export async function marketNames(db: Pick<Database, 'query'>, codes: readonly string[]): Promise<Map<string, string>> {
  return new Map(
    codes.length === 0 ? [] : (await db.query<{ code: string; name: string }>(`SELECT code, name FROM website WHERE code = ANY($1::text[])`, [codes])).map((r) => [r.code, r.name] as const),
  );
}
