/**
 * Current quotes of items (spec: GET /prices, POST /prices/batch, MarketQuoteOut).
 *
 * Precedence when several sources report one market and side (spec, GET /prices behaviour 3):
 * a listed quote over a delisted one; then direct marketplace data (provider = market) over
 * aggregators; then the latest `fresh_at`; ties by provider code, so the choice is deterministic.
 * The CSCP valuation quote (side `mid`, CNY) comes from the latest stored valuation of the item.
 * Quotes are sorted by market code then side, by code point.
 */
import { preparedStatement, type Database, type Sql } from '../db/client.js';
import { formatDecimal, Money, toMoney } from '../lib/money.js';
import { formatDate, formatTimestamp } from '../lib/time.js';
import type { MarketQuoteJson } from '../shapes/quote.js';
import { byCodePoint } from '../lib/order.js';
import { JsonPieces } from '../lib/raw-json.js';

/** Market code of the consensus valuation quote. */
export const VALUATION_MARKET = 'CSCP';
/** Currency of the consensus valuation. */
export const VALUATION_CURRENCY = 'CNY';

/** Valuation details of the CSCP quote (spec: ValuationOut); amounts in CNY. */
export interface Valuation {
  valuationDate: Date;
  uncertainty: number;
  credibility: number;
  isTwoSided: boolean;
  askAmount: Money;
  bidAmount: Money | null;
  askQuoteCount: number;
  bidQuoteCount: number;
  /**
   * Each side's own published uncertainty (log scale; docs/valuation.md section 11): about 68 % of the side's
   * next-day quotes lie inside amount x e^(+-u). Null on valuations published before they existed, bid on
   * one-sided items. GraphQL only (the REST ValuationOut is the spec's shape).
   */
  askUncertainty: number | null;
  bidUncertainty: number | null;
  /** The consensus mid in CNY, as published (6 decimals; the CSCP quote's price). GraphQL `Valuation.mid`. */
  mid: Money;
  /** When the valuation was computed (the CSCP quote's changed_at and fresh_at). GraphQL `Valuation.asOf`. */
  computedAt: Date;
}

/**
 * The band of a published valuation (docs/valuation.md sections 2 and 5): mid x e^(-u) and mid x e^(+u), 4 decimals,
 * half-even, where u is the valuation's uncertainty (log scale); about 68 % of the next day's quotes are meant to lie
 * inside. The same figures as GET /prices/history's `band_low` / `band_high` for the valuation's day.
 */
export function valuationBand(mid: Money, uncertainty: number): { low: Money; high: Money } {
  const factor = Money.exp(new Money(String(uncertainty)));
  return { low: new Money(mid).div(factor).toDecimalPlaces(4), high: new Money(mid).times(factor).toDecimalPlaces(4) };
}

/**
 * One published quote (spec: MarketQuoteOut). `price` is in `currencyCode`, never converted. `appId` and
 * `marketHashName` name its item (not in the REST shape, which lists quotes under their item; GraphQL's
 * `MarketQuote.item` edge follows them).
 */
export interface MarketQuote {
  appId: string;
  marketHashName: string;
  marketCode: string;
  providerCode: string;
  side: 'ask' | 'bid' | 'mid';
  currencyCode: string;
  price: Money | null;
  quantity: number | null;
  isQuantityMinimum: boolean | null;
  isAllItemsSamePrice: boolean | null;
  changedAt: Date;
  observedAt: Date | null;
  delistedAt: Date | null;
  freshAt: Date;
  valuation: Valuation | null;
}

/** Side filter of the price endpoints: one side, or `all`. */
export type SideFilter = 'ask' | 'bid' | 'mid' | 'all';

/** Filters applied to every item identically (spec: `markets`, `side`). `markets` null = every market. */
export interface QuoteFilter {
  markets: string[] | null;
  side: SideFilter;
}

interface QuoteRow {
  kind: 'q' | 'v';
  market_hash_name: string;
  market_code: string;
  provider_code: string;
  side: 'ask' | 'bid';
  currency_code: string;
  price: string | null;
  quantity: number | null;
  is_quantity_minimum: boolean | null;
  is_all_items_same_price: boolean | null;
  /** Timestamps in epoch milliseconds (`epochMs`). */
  changed_at: number;
  observed_at: number | null;
  delisted_at: number | null;
  fresh_at: number;
  valuation_date: Date | null;
  ask_amount: string | null;
  bid_amount: string | null;
  uncertainty: number | null;
  is_two_sided: boolean | null;
  ask_quote_count: number | null;
  bid_quote_count: number | null;
  ask_uncertainty: number | null;
  bid_uncertainty: number | null;
}

/**
 * A timestamptz column as milliseconds since the epoch (float8, exact below 2^53; truncated to the
 * millisecond as a JS Date holds it): `new Date(ms)` costs a fraction of parsing the timestamp's text,
 * which showed in the bench:export profile (docs/benchmarks.md).
 */
const epochMs = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8`;

// One round trip: the chosen quote per (item, market, side) by the precedence rule, plus each item's
// latest valuation (rows with kind 'v'; quote columns null there and vice versa). The export's fragment digest
// (DIGEST_SQL, exports/exports.ts) hashes every row of the tables read here: a new input table must join it.
/** The statement of `loadQuotes` (the export's writer fingerprint hashes it, so a new precedence rewrites every stored item text). */
export const QUOTES_SQL = preparedStatement(
  'qg_quotes',
  `
WITH items AS (
  SELECT id, market_hash_name FROM item WHERE app_id = $1 AND market_hash_name = ANY($2::text[])
)
SELECT * FROM (
  SELECT DISTINCT ON (i.market_hash_name, q.market_code, q.side)
    'q' AS kind, i.market_hash_name, q.market_code, q.provider_code, q.side::text AS side, q.currency_code,
    q.price::text AS price, q.quantity, q.is_quantity_minimum, q.is_all_items_same_price, ${epochMs('q.changed_at')} AS changed_at,
    ${epochMs('q.observed_at')} AS observed_at, ${epochMs('q.delisted_at')} AS delisted_at, ${epochMs('q.fresh_at')} AS fresh_at,
    NULL::date AS valuation_date, NULL::text AS ask_amount, NULL::text AS bid_amount, NULL::float8 AS uncertainty,
    NULL::bool AS is_two_sided, NULL::int AS ask_quote_count, NULL::int AS bid_quote_count,
    NULL::float8 AS ask_uncertainty, NULL::float8 AS bid_uncertainty
  FROM items i JOIN source_quote q ON q.item_id = i.id
  ORDER BY i.market_hash_name, q.market_code, q.side,
    (q.delisted_at IS NULL) DESC, (q.provider_code = q.market_code) DESC, q.fresh_at DESC, q.provider_code
) quotes
UNION ALL
SELECT * FROM (
  SELECT DISTINCT ON (i.market_hash_name)
    'v', i.market_hash_name, NULL::varchar, NULL::varchar, NULL::text, NULL::varchar, v.mid_amount::text, NULL::int, NULL::bool,
    NULL::bool, ${epochMs('v.computed_at')}, NULL::float8, NULL::float8,
    ${epochMs('v.computed_at')}, v.valuation_date, v.ask_amount::text, v.bid_amount::text, v.uncertainty, v.is_two_sided,
    v.ask_quote_count, v.bid_quote_count, v.ask_uncertainty, v.bid_uncertainty
  FROM items i JOIN valuation v ON v.item_id = i.id
  ORDER BY i.market_hash_name, v.valuation_date DESC
) valuations`,
);

/** Sorts quotes by market code then side (code-point order), in place. */
export function sortQuotes(quotes: MarketQuote[]): MarketQuote[] {
  return quotes.sort((a, b) => byCodePoint(a.marketCode, b.marketCode) || byCodePoint(a.side, b.side));
}

/**
 * A market quote row of QUOTES_SQL or MARKET_PAGES_SQL (kind `q`) as a MarketQuote of item (`appId`, its name).
 * Exported for the export's writer fingerprint (exports/exports.ts), which must change when this does.
 */
export function quoteOfRow(appId: string, r: QuoteRow): MarketQuote {
  return {
    appId,
    marketHashName: r.market_hash_name,
    marketCode: r.market_code,
    providerCode: r.provider_code,
    side: r.side,
    currencyCode: r.currency_code,
    price: r.price === null ? null : toMoney(r.price),
    quantity: r.quantity,
    isQuantityMinimum: r.is_quantity_minimum,
    isAllItemsSamePrice: r.is_all_items_same_price,
    changedAt: new Date(r.changed_at),
    observedAt: r.observed_at === null ? null : new Date(r.observed_at),
    delistedAt: r.delisted_at === null ? null : new Date(r.delisted_at),
    freshAt: new Date(r.fresh_at),
    valuation: null,
  };
}

/**
 * Loads the published quotes (one per market and side, plus CSCP) of the given names of one app.
 * One SQL query whatever the number of names. Returns a map with an entry for every name that has
 * at least one quote; names without quotes are absent.
 */
export async function loadQuotes(db: Pick<Database, 'query'>, appId: string, names: readonly string[]): Promise<Map<string, MarketQuote[]>> {
  const unique = [...new Set(names)];
  const out = new Map<string, MarketQuote[]>();
  if (unique.length === 0) return out;
  const rows = await db.query<QuoteRow>(QUOTES_SQL, [appId, unique]);
  for (const r of rows) {
    if (r.kind === 'v') continue;
    let list = out.get(r.market_hash_name);
    if (!list) out.set(r.market_hash_name, (list = []));
    list.push(quoteOfRow(appId, r));
  }
  for (const v of rows) {
    if (v.kind !== 'v') continue;
    let list = out.get(v.market_hash_name);
    if (!list) out.set(v.market_hash_name, (list = []));
    list.push(valuationQuote(appId, v.market_hash_name, v as ValuationColumns));
  }
  for (const list of out.values()) sortQuotes(list);
  return out;
}

/** A timestamptz column as the text `formatTimestamp` writes (toISOString: UTC, milliseconds truncated as `epochMs` truncates). */
const isoText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** A nullable SQL text expression as a JSON string, or `null`. */
const jsonStringOrNull = (expr: string) => `COALESCE('"' || ${expr} || '"', 'null')`;

/**
 * A chosen quote row `c` (source_quote) as the JSON text `quoteText` writes for it, made by PostgreSQL: the keys of
 * `quoteJson` in its order; `trim_scale` gives the digits `formatDecimal` gives (no trailing zeros, never an exponent);
 * codes through `to_json` (JSON's escapes); booleans and integers as their text.
 */
const QUOTE_TEXT = `'{"market_code":' || to_json(c.market_code)::text || ',"provider_code":' || to_json(c.provider_code)::text
    || ',"side":' || to_json(c.side::text)::text || ',"market_currency_code":' || to_json(c.currency_code)::text
    || ',"market_price_amount":' || ${jsonStringOrNull('trim_scale(c.price)::text')}
    || ',"quantity":' || COALESCE(c.quantity::text, 'null')
    || ',"is_quantity_minimum":' || COALESCE(c.is_quantity_minimum::text, 'null')
    || ',"is_all_items_same_price":' || COALESCE(c.is_all_items_same_price::text, 'null')
    || ',"changed_at":"' || ${isoText('c.changed_at')} || '","observed_at":' || ${jsonStringOrNull(isoText('c.observed_at'))}
    || ',"delisted_at":' || ${jsonStringOrNull(isoText('c.delisted_at'))} || ',"fresh_at":"' || ${isoText('c.fresh_at')} || '","valuation":null}'`;
/** The order of `sortQuotes` in SQL: code points are UTF-8 byte order, the "C" collation's. */
const QUOTE_ORDER = `c.market_code COLLATE "C", c.side::text COLLATE "C"`;

/**
 * Per item `i`, its market quotes (chosen by the precedence rule of QUOTES_SQL) as JSON texts joined in `sortQuotes`
 * order, split around where the CSCP quote goes (`head`: market codes up to 'CSCP', `tail`: after it): a LATERAL
 * subquery of one item's rows (a sort of a whole batch's spilled to disk).
 */
const MARKET_TEXTS = `(
  SELECT string_agg(${QUOTE_TEXT}, ',' ORDER BY ${QUOTE_ORDER}) FILTER (WHERE c.market_code COLLATE "C" <= '${VALUATION_MARKET}') AS head,
    string_agg(${QUOTE_TEXT}, ',' ORDER BY ${QUOTE_ORDER}) FILTER (WHERE c.market_code COLLATE "C" > '${VALUATION_MARKET}') AS tail
  FROM (
    SELECT DISTINCT ON (q.market_code, q.side) q.* FROM source_quote q WHERE q.item_id = i.id
    ORDER BY q.market_code, q.side, (q.delisted_at IS NULL) DESC, (q.provider_code = q.market_code) DESC, q.fresh_at DESC, q.provider_code
  ) c
)`;

/** The columns of item `i`'s latest valuation (ValuationColumns), a LATERAL subquery (null columns: none). */
const LATEST_VALUATION = `(
  SELECT v.mid_amount::text AS price, ${epochMs('v.computed_at')} AS changed_at, ${epochMs('v.computed_at')} AS fresh_at, v.valuation_date,
    v.ask_amount::text AS ask_amount, v.bid_amount::text AS bid_amount, v.uncertainty, v.is_two_sided, v.ask_quote_count,
    v.bid_quote_count, v.ask_uncertainty, v.bid_uncertainty
  FROM valuation v WHERE v.item_id = i.id ORDER BY v.valuation_date DESC LIMIT 1
)`;

/** The valuation columns of LATEST_VALUATION `v` in a statement's result, after the item's name, head and tail. */
const VALUATION_OUT = `v.price, v.changed_at, v.fresh_at, v.valuation_date, v.ask_amount, v.bid_amount, v.uncertainty, v.is_two_sided,
  v.ask_quote_count, v.bid_quote_count, v.ask_uncertainty, v.bid_uncertainty`;

/**
 * The statement of `loadQuoteTexts`: per requested item of app $1 among names $2, its market quotes (MARKET_TEXTS) and
 * the columns of its latest valuation. Items with neither are left out.
 */
export const QUOTE_TEXTS_SQL = preparedStatement(
  'qg_quote_texts',
  `
SELECT i.market_hash_name, t.head, t.tail, ${VALUATION_OUT}
FROM item i
CROSS JOIN LATERAL ${MARKET_TEXTS} t
LEFT JOIN LATERAL ${LATEST_VALUATION} v ON true
WHERE i.app_id = $1 AND i.market_hash_name = ANY($2::text[]) AND (t.head IS NOT NULL OR t.tail IS NOT NULL OR v.price IS NOT NULL)`,
);

/**
 * The first statement of `loadStoredQuoteTexts` (issue 45): per requested item of app $1 among names $2 that has a valid
 * stored answer (`quote_answer`), its market quote texts from there and the columns of its latest valuation (null
 * everywhere: an item without quotes). A stored answer is valid while:
 * - its `epoch` is `quote_answer_epoch`'s (writes of source quotes without change rows bump it: `bumpAnswerEpoch`);
 * - its `seq` is at least the change horizon (changes up to the horizon are pruned, so a later change could be gone);
 * - no change of the item but CSCP (valuations are read at every call) has a larger seq.
 * A plain key lookup: about 160 us of PostgreSQL for one name at full scale, where the statement that also makes and
 * stores the missing ones cost 1.1 ms (its plan) however few it made.
 */
export const STORED_ANSWERS_SQL = preparedStatement(
  'qg_stored_answers',
  `
SELECT i.market_hash_name, a.head, a.tail, ${VALUATION_OUT}
FROM item i
JOIN quote_answer a ON a.item_id = i.id
LEFT JOIN LATERAL ${LATEST_VALUATION} v ON true
WHERE i.app_id = $1 AND i.market_hash_name = ANY($2::text[])
  AND a.epoch = COALESCE((SELECT e.epoch FROM quote_answer_epoch e WHERE e.id = 1), 0)
  AND a.seq >= COALESCE((SELECT h.pruned_through FROM quote_change_horizon h WHERE h.id = 1), 0)
  AND NOT EXISTS (SELECT 1 FROM quote_change c WHERE c.item_id = i.id AND c.seq > a.seq AND c.market_code <> '${VALUATION_MARKET}')`,
);

/**
 * The second statement of `loadStoredQuoteTexts`: QUOTE_TEXTS_SQL for the names $2 of app $1 that had no valid stored
 * answer, each item's market quote texts also stored (replacing a stale answer) with the epoch and the last change
 * seq (at least the horizon) of this statement's snapshot. The change sequence's numbers become visible in commit
 * order (quotes/changes.ts), so a change committed after that snapshot has a larger seq and makes the answer stale,
 * and a write that bumped the epoch after it too. Answers are written in item-id order, so two statements storing the
 * same items wait for each other instead of deadlocking.
 */
export const STORE_ANSWERS_SQL = preparedStatement(
  'qg_store_answers',
  `
WITH m AS (
  SELECT COALESCE((SELECT e.epoch FROM quote_answer_epoch e WHERE e.id = 1), 0) AS epoch,
    GREATEST(COALESCE((SELECT max(c.seq) FROM quote_change c), 0), COALESCE((SELECT h.pruned_through FROM quote_change_horizon h WHERE h.id = 1), 0)) AS seq
), made AS (
  SELECT i.id, i.market_hash_name, t.head, t.tail FROM item i CROSS JOIN LATERAL ${MARKET_TEXTS} t
  WHERE i.app_id = $1 AND i.market_hash_name = ANY($2::text[])
), saved AS (
  INSERT INTO quote_answer AS a (item_id, epoch, seq, head, tail)
  SELECT x.id, m.epoch, m.seq, x.head, x.tail FROM made x CROSS JOIN m ORDER BY x.id
  ON CONFLICT (item_id) DO UPDATE SET epoch = EXCLUDED.epoch, seq = EXCLUDED.seq, head = EXCLUDED.head, tail = EXCLUDED.tail
)
SELECT i.market_hash_name, i.head, i.tail, ${VALUATION_OUT}
FROM made i
LEFT JOIN LATERAL ${LATEST_VALUATION} v ON true
WHERE i.head IS NOT NULL OR i.tail IS NOT NULL OR v.price IS NOT NULL`,
);

/** A row of QUOTE_TEXTS_SQL, STORED_ANSWERS_SQL and STORE_ANSWERS_SQL. */
type QuoteTextRow = { market_hash_name: string; head: string | null; tail: string | null } & { [K in keyof ValuationColumns]: ValuationColumns[K] | null };

/**
 * The published quotes of the given names of one app as the JSON array text `quotesText(loadQuotes(...).get(name))`
 * writes, byte for byte, without making a quote object per quote: PostgreSQL writes the market quotes' texts
 * (QUOTE_TEXTS_SQL), this process the CSCP quote's (its credibility is JavaScript's `Math.exp`). One statement
 * whatever the number of names. Names without quotes are absent. A text of `piecesFrom` characters or more comes as its
 * pieces (JsonPieces, never joined: the quote cache's misses, written to the socket as they are). Throws when the
 * database fails.
 */
export async function loadQuoteTexts(db: Pick<Database, 'query'>, appId: string, names: readonly string[]): Promise<Map<string, string>>;
export async function loadQuoteTexts(db: Pick<Database, 'query'>, appId: string, names: readonly string[], piecesFrom: number): Promise<Map<string, string | JsonPieces>>;
export async function loadQuoteTexts(db: Pick<Database, 'query'>, appId: string, names: readonly string[], piecesFrom = Infinity): Promise<Map<string, string | JsonPieces>> {
  const out = new Map<string, string | JsonPieces>();
  if (names.length === 0) return out;
  for (const r of await db.query<QuoteTextRow>(QUOTE_TEXTS_SQL, [appId, [...new Set(names)]])) out.set(r.market_hash_name, answerText(appId, r, piecesFrom));
  return out;
}

/**
 * SQLSTATEs after which `loadStoredQuoteTexts` makes the texts without storing them: a deadlock or serialization
 * failure between statements storing the same answers, a unique violation of a concurrent first insert, a read-only
 * transaction (a hot standby).
 */
const STORE_CONFLICTS = new Set(['40P01', '40001', '23505', '25006']);

/**
 * `loadQuoteTexts`, with each item's market quote texts read from its stored answer when valid (STORED_ANSWERS_SQL)
 * and otherwise made and stored (STORE_ANSWERS_SQL; issue 45): a miss of any replica's quote cache then costs
 * PostgreSQL a key lookup of a compressed row (160 us for one name at full scale, 80 quotes; about 60 us a name in
 * tens) instead of choosing and writing the item's quotes (800 us for one name). Byte for byte the texts of
 * `loadQuoteTexts`; a text of `piecesFrom` characters or more comes as its pieces (JsonPieces: no joined string is
 * made). The quote cache's answers of GET /prices and POST /prices/batch
 * (quotes/quote-cache.ts `loadTexts`). Throws when the database fails; a conflict between two statements storing the
 * same answers (STORE_CONFLICTS) is answered by QUOTE_TEXTS_SQL instead.
 */
export async function loadStoredQuoteTexts(
  db: Pick<Database, 'query'>,
  appId: string,
  names: readonly string[],
  piecesFrom = Infinity,
): Promise<Map<string, string | JsonPieces>> {
  const out = new Map<string, string | JsonPieces>();
  if (names.length === 0) return out;
  const unique = [...new Set(names)];
  const answered = new Set<string>();
  const put = (r: QuoteTextRow) => {
    answered.add(r.market_hash_name);
    // A stored answer of an item without quotes or valuation: absent, as from loadQuoteTexts.
    if (r.head !== null || r.tail !== null || r.price !== null) out.set(r.market_hash_name, answerText(appId, r, piecesFrom));
  };
  for (const r of await db.query<QuoteTextRow>(STORED_ANSWERS_SQL, [appId, unique])) put(r);
  const rest = answered.size === unique.length ? [] : unique.filter((n) => !answered.has(n));
  if (rest.length === 0) return out;
  let made: QuoteTextRow[];
  try {
    made = await db.query<QuoteTextRow>(STORE_ANSWERS_SQL, [appId, rest]);
  } catch (e) {
    if (!STORE_CONFLICTS.has((e as { code?: string }).code ?? '')) throw e;
    made = await db.query<QuoteTextRow>(QUOTE_TEXTS_SQL, [appId, rest]);
  }
  for (const r of made) put(r);
  return out;
}

/**
 * Makes every stored quote answer stale (STORED_ANSWERS_SQL): called, in the writer's transaction when it has one,
 * by every write of source quotes that records no change rows (confirmations moving observed_at, scans moving fresh_at).
 * Throws when the database fails.
 */
export async function bumpAnswerEpoch(handle: Pick<Sql, 'query'>): Promise<void> {
  await handle.query(`INSERT INTO quote_answer_epoch AS e (id, epoch) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET epoch = e.epoch + 1 RETURNING e.epoch`);
}

/**
 * One row's answer text: the market quotes' texts around the CSCP quote this process writes, as a JSON array; as its
 * pieces (JsonPieces: the row's strings and the brackets and commas between them, never joined) when it is
 * `piecesFrom` characters or more.
 */
function answerText(appId: string, r: QuoteTextRow, piecesFrom: number): string | JsonPieces {
  const pieces: string[] = [];
  if (r.head !== null) pieces.push(r.head);
  if (r.price !== null) pieces.push(quoteText(valuationQuote(appId, r.market_hash_name, r as ValuationColumns)));
  if (r.tail !== null) pieces.push(r.tail);
  let chars = pieces.length + 1; // the brackets and commas
  for (const p of pieces) chars += p.length;
  if (chars < piecesFrom) return `[${pieces.join(',')}]`;
  const out: string[] = ['['];
  pieces.forEach((p, i) => {
    if (i > 0) out.push(',');
    out.push(p);
  });
  out.push(']');
  return new JsonPieces(out);
}

/** A position in one market's quote list, which is ordered by item name then side (`ask` before `bid`). */
export interface QuotePosition {
  marketHashName: string;
  side: 'ask' | 'bid';
}

/**
 * One page of one market's published quotes (GraphQL `Website.quotes`): the quotes strictly between `after` and
 * `before` (either may be null), in item-name then side order, or the last ones before `before` when `inverted`,
 * at most `limit` of them.
 */
export interface MarketQuotePageRequest {
  appId: string;
  marketCode: string;
  side: SideFilter;
  after: QuotePosition | null;
  before: QuotePosition | null;
  /** True: the `limit` quotes nearest `before` (or the end), returned in descending order (Relay `last`). */
  inverted: boolean;
  limit: number;
}

/**
 * Quote rows from which a market is read item by item (MARKET_PAGES_SQL): a market with fewer is sorted whole, which
 * then costs at most this many rows, while walking the items of a market with so few quotes would pass over most of
 * the catalogue (measured on PostgreSQL, 20,000 items: 45 ms a page on a market quoted for 1 item in 200, 3 ms on a
 * market quoted for every item).
 */
export const DENSE_MARKET_ROWS = 2000;

/**
 * One branch of MARKET_PAGES_SQL: the pages of the requests whose `inverted` and `dense` are these, each row numbered in
 * its page (`rn`), in item-name then side order (both descending when inverted), between the page's cursors, at most
 * its limit. One quote per item and side by the precedence rule of QUOTES_SQL.
 * - `dense` (the market has DENSE_MARKET_ROWS quote rows or more): the items are walked in name order on the (app_id,
 *   market_hash_name) index from the cursor, each item's quotes on the market read on the source_quote (item_id,
 *   market_code, ...) index, until the page is full: a page costs about its size, not the market's.
 * - otherwise the market's rows (fewer than DENSE_MARKET_ROWS, on the (market_code, provider_code) index) are sorted.
 */
const marketPageSql = (inverted: boolean, dense: boolean) => {
  const dir = inverted ? ' DESC' : '';
  const columns = `'q' AS kind, i.market_hash_name, q.market_code, q.provider_code, q.side::text AS side, q.currency_code,
    q.price::text AS price, q.quantity, q.is_quantity_minimum, q.is_all_items_same_price, ${epochMs('q.changed_at')} AS changed_at,
    ${epochMs('q.observed_at')} AS observed_at, ${epochMs('q.delisted_at')} AS delisted_at, ${epochMs('q.fresh_at')} AS fresh_at`;
  const precedence = (q: string) => `(${q}.delisted_at IS NULL) DESC, (${q}.provider_code = ${q}.market_code) DESC, ${q}.fresh_at DESC, ${q}.provider_code`;
  const cursors = `(k.after_name IS NULL OR (i.market_hash_name, q.side) > (k.after_name, k.after_side::quote_side))
    AND (k.before_name IS NULL OR (i.market_hash_name, q.side) < (k.before_name, k.before_side::quote_side))`;
  const page = dense
    ? `SELECT ${columns}
  FROM item i CROSS JOIN LATERAL (
    SELECT DISTINCT ON (sq.side) sq.* FROM source_quote sq
    WHERE sq.item_id = i.id AND sq.market_code = k.market_code AND (k.side = 'all' OR sq.side::text = k.side)
    ORDER BY sq.side, ${precedence('sq')}
  ) q
  WHERE i.app_id = k.app_id
    -- The page's start as an index condition (a later page does not read the items before it): '' sorts first in every
    -- collation, and the app's last name is one index probe.
    AND i.market_hash_name ${inverted ? '<= COALESCE(k.before_name, (SELECT max(m.market_hash_name) FROM item m WHERE m.app_id = k.app_id))' : ">= COALESCE(k.after_name, '')"}
    AND ${inverted ? '(k.after_name IS NULL OR i.market_hash_name >= k.after_name)' : '(k.before_name IS NULL OR i.market_hash_name <= k.before_name)'}
    AND ${cursors}
  ORDER BY i.market_hash_name${dir}, q.side${dir}
  LIMIT k.lim`
    : // The market's rows first (OFFSET 0 keeps the planner from walking the items instead, as it did on PGlite).
      `SELECT DISTINCT ON (i.market_hash_name, q.side) ${columns}
  FROM (SELECT * FROM source_quote sq WHERE sq.market_code = k.market_code AND (k.side = 'all' OR sq.side::text = k.side) OFFSET 0) q
  JOIN item i ON i.id = q.item_id
  WHERE i.app_id = k.app_id AND ${cursors}
  ORDER BY i.market_hash_name${dir}, q.side${dir}, ${precedence('q')}
  LIMIT k.lim`;
  return `SELECT k.ord, row_number() OVER (PARTITION BY k.ord ORDER BY p.market_hash_name${dir}, p.side${dir}) AS rn, p.* FROM k CROSS JOIN LATERAL (
  ${page}
) p
WHERE ${inverted ? '' : 'NOT '}k.inverted AND ${dense ? '' : 'NOT '}k.dense`;
};

/**
 * SQL of `loadMarketQuotePages`: one row per published quote of each requested page, chosen by the precedence rule
 * of QUOTES_SQL (one quote per item, market and side), with the request's ordinal (`ord`). The requests are the rows
 * of the unnested arrays, each judged dense or not by counting at most $11 (DENSE_MARKET_ROWS) of its market's rows; each
 * page is a LATERAL subquery of the branch for its direction and density (see marketPageSql).
 */
export const MARKET_PAGES_SQL = `
WITH r AS (
  SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bool[], $10::int[])
    AS r(ord, app_id, market_code, side, after_name, after_side, before_name, before_side, inverted, lim)
), k AS (
  -- Counted on the (market_code, provider_code) index (the ORDER BY keeps the planner on it: a sequential scan stopping
  -- at the limit reads the whole table for a market with few rows).
  SELECT r.*, (SELECT count(*) FROM (SELECT 1 FROM source_quote c WHERE c.market_code = r.market_code ORDER BY c.market_code, c.provider_code LIMIT $11) rows) >= $11 AS dense FROM r
)
SELECT * FROM (
${marketPageSql(false, true)}
UNION ALL
${marketPageSql(false, false)}
UNION ALL
${marketPageSql(true, true)}
UNION ALL
${marketPageSql(true, false)}
) pages
ORDER BY ord, rn`;

/**
 * The pages of `requests` (see MarketQuotePageRequest), in one SQL statement whatever their number: for each
 * request, its quotes in the page's order (item name then side; reversed when inverted). Quotes are built as
 * `loadQuotes` builds them, so a quote here equals the same item's quote on the same market and side there.
 * `denseRows`: the DENSE_MARKET_ROWS of the plan choice (tests give 0 or a large number to take one plan for all;
 * both give the same pages). Throws when the database fails.
 */
export async function loadMarketQuotePages(
  db: Pick<Database, 'query'>,
  requests: readonly MarketQuotePageRequest[],
  denseRows: number = DENSE_MARKET_ROWS,
): Promise<MarketQuote[][]> {
  const out: MarketQuote[][] = requests.map(() => []);
  if (requests.length === 0) return out;
  const col = <T,>(f: (r: MarketQuotePageRequest, i: number) => T) => requests.map(f);
  const rows = await db.query<QuoteRow & { ord: number }>(MARKET_PAGES_SQL, [
    col((_r, i) => i),
    col((r) => r.appId),
    col((r) => r.marketCode),
    col((r) => r.side),
    col((r) => r.after?.marketHashName ?? null),
    col((r) => r.after?.side ?? null),
    col((r) => r.before?.marketHashName ?? null),
    col((r) => r.before?.side ?? null),
    col((r) => r.inverted),
    col((r) => r.limit),
    denseRows,
  ]);
  // In page order: by request, then the page's own order (the database's collation decides, as for the cursors).
  for (const r of rows) out[r.ord]!.push(quoteOfRow(requests[r.ord]!.appId, r));
  return out;
}

/** The columns of a stored valuation the CSCP quote is made of (amounts as text, times in epoch milliseconds). */
interface ValuationColumns {
  price: string;
  changed_at: number;
  fresh_at: number;
  valuation_date: Date;
  ask_amount: string;
  bid_amount: string | null;
  uncertainty: number;
  is_two_sided: boolean;
  ask_quote_count: number;
  bid_quote_count: number;
  ask_uncertainty: number | null;
  bid_uncertainty: number | null;
}

/**
 * The CSCP quote (side `mid`, CNY; spec: GET /prices behaviour 4) of one stored valuation of item (`appId`,
 * `marketHashName`): its mid, computed at `changed_at`. Exported for the export's writer fingerprint (exports/exports.ts).
 */
export function valuationQuote(appId: string, marketHashName: string, v: ValuationColumns): MarketQuote {
  const mid = toMoney(v.price);
  const computedAt = new Date(v.changed_at);
  return {
    appId,
    marketHashName,
    marketCode: VALUATION_MARKET,
    providerCode: VALUATION_MARKET,
    side: 'mid',
    currencyCode: VALUATION_CURRENCY,
    price: mid,
    quantity: null,
    isQuantityMinimum: null,
    isAllItemsSamePrice: null,
    changedAt: computedAt,
    observedAt: null,
    delistedAt: null,
    freshAt: new Date(v.fresh_at),
    valuation: {
      valuationDate: v.valuation_date,
      uncertainty: v.uncertainty,
      credibility: Math.exp(-v.uncertainty),
      isTwoSided: v.is_two_sided,
      askAmount: toMoney(v.ask_amount),
      bidAmount: v.bid_amount === null ? null : toMoney(v.bid_amount),
      askQuoteCount: v.ask_quote_count,
      bidQuoteCount: v.bid_quote_count,
      askUncertainty: v.ask_uncertainty,
      bidUncertainty: v.bid_uncertainty,
      mid,
      computedAt,
    },
  };
}

/**
 * The current CSCP quote of each of the items `itemIds` (the latest stored valuation, as `loadQuotes` publishes it in
 * GET /prices), by item id; items never valued are absent. One indexed statement (the valuation's primary key).
 */
export async function loadValuationQuotes(db: Pick<Database, 'query'>, itemIds: readonly number[]): Promise<Map<number, MarketQuote>> {
  const out = new Map<number, MarketQuote>();
  if (itemIds.length === 0) return out;
  const rows = await db.query<ValuationColumns & { item_id: number; app_id: string; market_hash_name: string }>(
    `SELECT DISTINCT ON (v.item_id) v.item_id, i.app_id, i.market_hash_name, v.mid_amount::text AS price, ${epochMs('v.computed_at')} AS changed_at,
       ${epochMs('v.computed_at')} AS fresh_at, v.valuation_date, v.ask_amount::text AS ask_amount, v.bid_amount::text AS bid_amount,
       v.uncertainty, v.is_two_sided, v.ask_quote_count, v.bid_quote_count, v.ask_uncertainty, v.bid_uncertainty
     FROM valuation v JOIN item i ON i.id = v.item_id WHERE v.item_id = ANY($1::int[])
     ORDER BY v.item_id, v.valuation_date DESC`,
    [[...new Set(itemIds)]],
  );
  for (const r of rows) out.set(r.item_id, valuationQuote(r.app_id, r.market_hash_name, r));
  return out;
}

/** Applies the `markets` and `side` filters (spec: filter every item identically). */
export function filterQuotes(quotes: readonly MarketQuote[], filter: QuoteFilter): readonly MarketQuote[] {
  if (filter.markets === null && filter.side === 'all') return quotes; // the same list: its JSON text is made once (quotesText)
  const markets = filter.markets ? new Set(filter.markets) : null;
  return quotes.filter((q) => (markets === null || markets.has(q.marketCode)) && (filter.side === 'all' || q.side === filter.side));
}

/**
 * A quote as the REST API writes it (spec: MarketQuoteOut, ValuationOut; typed by the schema in
 * shapes/quote.ts): snake_case names, amounts as decimal strings in the market's currency, RFC 3339
 * timestamps. The one JSON writer of a quote: GET
 * /prices, POST /prices/batch and the export file all use it (through `quoteText`).
 */
export function quoteJson(q: MarketQuote): MarketQuoteJson {
  const { changedAt, observedAt, delistedAt, freshAt } = q;
  const v = q.valuation;
  return {
    market_code: q.marketCode,
    provider_code: q.providerCode,
    side: q.side,
    market_currency_code: q.currencyCode,
    market_price_amount: q.price === null ? null : formatDecimal(q.price),
    quantity: q.quantity,
    is_quantity_minimum: q.isQuantityMinimum,
    is_all_items_same_price: q.isAllItemsSamePrice,
    changed_at: formatTimestamp(changedAt),
    observed_at: observedAt === null ? null : formatTimestamp(observedAt),
    delisted_at: delistedAt === null ? null : formatTimestamp(delistedAt),
    fresh_at: formatTimestamp(freshAt),
    valuation:
      v === null
        ? null
        : {
            valuation_date: formatDate(v.valuationDate),
            credibility: v.credibility,
            uncertainty: v.uncertainty,
            is_two_sided: v.isTwoSided,
            ask_amount: formatDecimal(v.askAmount),
            bid_amount: v.bidAmount === null ? null : formatDecimal(v.bidAmount),
            ask_quote_count: v.askQuoteCount,
            bid_quote_count: v.bidQuoteCount,
          },
  };
}


/**
 * The slot where a quote object, or a list of them, keeps its JSON text once written (cached quotes keep
 * theirs while they stay cached). A symbol-keyed property, not a WeakMap: JSON.stringify and Object.keys do
 * not see it, and a WeakMap of millions of quotes (a full-scale export build, batches missing the cache)
 * cost the garbage collector much of the batch's CPU (npm run bench on the full-scale catalogue; docs/benchmarks.md).
 */
const TEXT = Symbol('JSON text');

/** An object that may hold its JSON text (see TEXT). */
type WithText = { [TEXT]?: string };

/** Keeps `text` in `o`'s slot, not enumerable: a spread copy (whose fields may then change) does not take it. */
function keepText(o: object, text: string): string {
  Object.defineProperty(o, TEXT, { value: text });
  return text;
}

/** `quoteJson(q)` as JSON text, written once per quote object. */
export function quoteText(q: MarketQuote): string {
  return (q as MarketQuote & WithText)[TEXT] ?? keepText(q, JSON.stringify(quoteJson(q)));
}

/** A list of quotes as a JSON array text (see quoteText); written once per list object. */
export function quotesText(quotes: readonly MarketQuote[]): string {
  const slot = quotes as readonly MarketQuote[] & WithText;
  const kept = slot[TEXT];
  if (kept !== undefined) return kept;
  let out = '[';
  for (let i = 0; i < quotes.length; i++) out += (i === 0 ? '' : ',') + quoteText(quotes[i]!);
  return keepText(quotes, out + ']');
}
