/**
 * The item catalogue search (issue 44, point 1; docs/search.md): GET /catalogue/items and GraphQL `items`, and the
 * nearest names a 404 of GET /prices suggests. The text rules (search key, query words, cursor) are
 * src/search/query.ts; this file holds the statements.
 *
 * Matching: every query word is a substring of the item's stored `search_key` (`LIKE '%word%'`, served by the pg_trgm
 * GIN index `item_search_key_trgm_idx`). Order: key length, then name by code point (`item_search_order_idx` walks
 * it). Ranking by trigram similarity instead was measured and dropped: it must score every match before the first
 * page can be sent, 160-270 ms for `sticker` (10,000 matches) on PostgreSQL and more on PGlite (docs/search.md).
 *
 * A page is read in at most two statements, each bounded:
 * 1. the next WINDOW keys in order after the cursor, filtered (an index walk): a query that matches many items fills
 *    its page there at once;
 * 2. otherwise every match after the cursor through the trigram index, sorted: a query that matches few items.
 * Both give the same rows in the same order (the first is the second read over a prefix of the order), so paging is
 * exact either way. Then the CSCP quotes of the page's items (one indexed statement).
 */
import type { Database } from '../db/client.js';
import { loadValuationQuotes, type MarketQuote } from './quotes.js';
import { itemType, type ItemType } from '../search/item-type.js';
import { encodeSearchCursor, searchKey, searchWords, type SearchPosition } from '../search/query.js';

/** Keys the first statement of a page reads in order before the search falls back on the trigram index. */
export const WINDOW = 1000;
/** Names a 404 of GET /prices suggests at most. */
const MAX_SUGGESTIONS = 5;
/**
 * Least trigram similarity of a suggested name's key to the requested name's key (pg_trgm `similarity`, 0-1) when
 * no item holds every word of the requested name; the candidates are those pg_trgm's word similarity operator (`%>`,
 * threshold 0.6, its default) lets through the index.
 */
const MIN_SUGGESTION_SIMILARITY = 0.3;

/** One hit: the item, its kind and its current CSCP quote (null before it was first valued). */
export interface ItemHit {
  marketHashName: string;
  type: ItemType;
  /** The CSCP `mid` quote as GET /prices serves it (CNY; the valuation's details in `valuation`). */
  cscp: MarketQuote | null;
}

/** One page of a search. */
export interface ItemSearchPage {
  appId: string;
  /** The words every hit's key contains (searchWords of the query: keyed, abbreviations spelled out). */
  words: string[];
  hits: ItemHit[];
  /** Pass as `cursor` (GraphQL `after`) for the next page; null on the last page. */
  nextCursor: string | null;
  hasMore: boolean;
}

/** What a search asks for: the query's words (non-empty: searchWords), page size, and where the previous page ended. */
export interface ItemSearchRequest {
  appId: string;
  words: readonly string[];
  limit: number;
  after: SearchPosition | null;
}

interface MatchRow {
  id: number;
  market_hash_name: string;
  key_length: number;
}

/**
 * The parameters of both statements of a page and their conditions: `$1` the app, then one `LIKE` pattern per word,
 * then the position after the cursor (when there is one).
 */
function conditions(req: ItemSearchRequest): { params: unknown[]; words: string; after: string } {
  const params: unknown[] = [req.appId];
  const words: string[] = [];
  for (const w of req.words) {
    // The words hold no LIKE wildcard (`%`, `_`) nor backslash: the key rule removes every ASCII non-alphanumeric.
    params.push(`%${w}%`);
    words.push(`search_key LIKE $${params.length}`);
  }
  let after = 'TRUE';
  if (req.after) {
    params.push(req.after.keyLength, req.after.name);
    after = `(length(search_key), market_hash_name COLLATE "C") > ($${params.length - 1}::int, $${params.length}::text COLLATE "C")`;
  }
  return { params, words: words.join(' AND '), after };
}

/**
 * The items whose keys hold every word, in the search's order after `req.after`, at most `req.limit` + 1 (the one
 * more tells whether more follow): the two bounded statements of the module doc.
 */
async function matches(db: Pick<Database, 'query'>, req: ItemSearchRequest): Promise<MatchRow[]> {
  const limit = req.limit;
  if (req.words.length === 0) throw new Error('a search needs at least one word');
  const { params, words, after } = conditions(req);
  const n = params.length;
  const windowed = await db.query<MatchRow>(
    `SELECT id, market_hash_name, key_length FROM (
       SELECT id, market_hash_name, search_key, length(search_key) AS key_length FROM item
       WHERE app_id = $1 AND ${after}
       ORDER BY length(search_key), market_hash_name COLLATE "C"
       LIMIT $${n + 1}
     ) w
     WHERE ${words}
     ORDER BY key_length, market_hash_name COLLATE "C"
     LIMIT $${n + 2}`,
    [...params, WINDOW, limit + 1],
  );
  if (windowed.length > limit) return windowed;
  // Fewer than a page in the window: every match through the trigram index, then sorted (MATERIALIZED keeps the
  // planner from walking the ordered index again with the words as a filter).
  return db.query<MatchRow>(
    `WITH m AS MATERIALIZED (
       SELECT id, market_hash_name, length(search_key) AS key_length FROM item WHERE app_id = $1 AND ${words} AND ${after}
     )
     SELECT id, market_hash_name, key_length FROM m ORDER BY key_length, market_hash_name COLLATE "C" LIMIT $${n + 1}`,
    [...params, limit + 1],
  );
}

/**
 * One page of the search `req` (see the module doc): at most `req.limit` hits, each with its kind and its CSCP quote,
 * and the cursor of the next page. Three statements at most. Throws what the database throws.
 */
export async function searchItems(db: Pick<Database, 'query'>, req: ItemSearchRequest): Promise<ItemSearchPage> {
  const rows = await matches(db, req);
  const page = rows.slice(0, req.limit);
  const mids = await loadValuationQuotes(db, page.map((r) => r.id));
  const last = page.at(-1);
  const hasMore = rows.length > req.limit;
  return {
    appId: req.appId,
    words: [...req.words],
    hits: page.map((r) => ({ marketHashName: r.market_hash_name, type: itemType(r.market_hash_name) as ItemType, cscp: mids.get(r.id) ?? null })),
    nextCursor: hasMore && last ? encodeSearchCursor(req.appId, req.words, { keyLength: Number(last.key_length), name: last.market_hash_name }) : null,
    hasMore,
  };
}

/**
 * The names nearest to `name` in app `appId`'s catalogue, for a 404 of GET /prices (`details.suggestions`), at most
 * MAX_SUGGESTIONS, never `name` itself:
 * 1. the items whose keys hold every word of `name` (the search: case, punctuation, word order and abbreviations
 *    forgiven), shortest first;
 * 2. when there are none, the keys most similar to the key of `name` (pg_trgm: a misspelt word), candidates taken
 *    through the trigram index with the word-similarity operator, at least MIN_SUGGESTION_SIMILARITY similar.
 * Two statements at most (three when the first falls back on the trigram index).
 */
export async function suggestNames(db: Pick<Database, 'query'>, appId: string, name: string): Promise<string[]> {
  const words = searchWords(name);
  if (words.length === 0) return [];
  const found = (await matches(db, { appId, words, limit: MAX_SUGGESTIONS, after: null }))
    .map((r) => r.market_hash_name)
    .filter((n) => n !== name);
  if (found.length > 0) return found.slice(0, MAX_SUGGESTIONS);
  const key = searchKey(name);
  const near = await db.query<{ market_hash_name: string }>(
    `SELECT market_hash_name FROM item
     WHERE app_id = $1 AND search_key %> $2 AND market_hash_name <> $3 AND similarity(search_key, $2) >= $4
     ORDER BY similarity(search_key, $2) DESC, length(search_key), market_hash_name COLLATE "C"
     LIMIT $5`,
    [appId, key, name, MIN_SUGGESTION_SIMILARITY, MAX_SUGGESTIONS],
  );
  return near.map((r) => r.market_hash_name);
}
