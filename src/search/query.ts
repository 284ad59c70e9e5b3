/**
 * The item search's text rules (issue 44, point 1; docs/search.md), pure functions shared by the validation
 * (src/validation/params.ts), the search service (src/quotes/item-search.ts) and the migration that keyed the
 * items already stored (prisma/migrations/20261128000000_item_search: SQL function `qg_search_key`, the same rule).
 *
 * - **Search key** of a name or a query word (`searchKey`): ASCII letters lower-cased, `★` spelled `star`, every
 *   other ASCII character (spaces, `|`, `-`, `(`, `'`, ...) and the typographic marks of SEPARATORS removed; every
 *   other character (ö, 龍, ♥) kept as it is. `StatTrak™ AK-47 | Redline (Field-Tested)` ->
 *   `stattrakak47redlinefieldtested`. Stored per item in `item.search_key` (written by `ensureItems`).
 * - **Words** of a query (`searchWords`): split at white space, each word keyed, well-known abbreviations spelled
 *   out (ABBREVIATIONS), empty words dropped, repeats and words inside a longer word dropped. An item matches when
 *   every word is a substring of its key: case, punctuation, spacing inside a word and word order do not matter
 *   (`ak-47 redline ft` and `redline ak47 field tested` both find `AK-47 | Redline (Field-Tested)`).
 * - **Order** of the hits: the shortest key first (the name the words leave least of unexplained), then the name by
 *   code point; a total order, so a page's **cursor** (`encodeSearchCursor`) is the last hit's (key length, name),
 *   tied to the words and app id it was made for.
 */
import crypto from 'node:crypto';

/** Longest accepted query, in characters (a market hash name is at most 255). */
export const MAX_QUERY_CHARS = 255;
/** Most words in a query (after abbreviations, repeats and contained words are resolved). */
export const MAX_QUERY_WORDS = 32;
/** Hits per page when none is asked for. */
export const DEFAULT_SEARCH_PAGE = 20;
/** Most hits per page. */
export const MAX_SEARCH_PAGE = 50;
/** Longest accepted cursor, in characters (a cursor holds a name of at most 255 characters). */
export const MAX_CURSOR_CHARS = 1400;

/**
 * Non-ASCII marks a key drops besides every ASCII non-alphanumeric character: the trade mark of `StatTrak™`,
 * typographic quotes and dashes, the no-break space, the ellipsis and middle dot. (`★` is spelled `star`.)
 */
const SEPARATORS = '\u00a0\u00a9\u00ab\u00ae\u00b7\u00bb\u2013\u2014\u2018\u2019\u201c\u201d\u201e\u2026\u2122';

/**
 * Query words spelled out before matching (keys both sides): the exteriors (FN, MW, FT, WW, BS), StatTrak™ (ST, and
 * the common misspelling `stattrack`) and Souvenir (SV, souv). `★` and `star` both match the star of knives and
 * gloves through the key rule. A word that is one of these abbreviations always means the long form.
 */
const ABBREVIATIONS: Readonly<Record<string, string>> = {
  fn: 'factorynew',
  mw: 'minimalwear',
  ft: 'fieldtested',
  ww: 'wellworn',
  bs: 'battlescarred',
  st: 'stattrak',
  stattrack: 'stattrak',
  sv: 'souvenir',
  souv: 'souvenir',
};

const DROPPED = new Set([...SEPARATORS]);

/**
 * The search key of `text` (see the module doc): a pure function of the characters, the same rule as the SQL
 * function `qg_search_key` of the migration (test/integration/item-search.test.ts compares the two on every name of
 * data/items). Changing it needs a migration that keys every stored item again.
 */
export function searchKey(text: string): string {
  let out = '';
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    if (c < 0x80) {
      if ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)) out += ch;
      else if (c >= 0x41 && c <= 0x5a) out += String.fromCharCode(c + 0x20);
    } else if (ch === '\u2605') out += 'star';
    else if (!DROPPED.has(ch)) out += ch;
  }
  return out;
}

/**
 * The words of query `q` an item's key must all contain (see the module doc), longest first then by code point:
 * the same list for the same words in any order. Empty when `q` holds no letter, digit or other kept character.
 */
export function searchWords(q: string): string[] {
  const words = new Set<string>();
  for (const raw of q.split(/\s+/u)) {
    const key = searchKey(raw);
    if (key !== '') words.add(ABBREVIATIONS[key] ?? key);
  }
  const sorted = [...words].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
  // A word inside a longer one adds nothing (`ak` in `ak47`).
  return sorted.filter((w, i) => !sorted.slice(0, i).some((longer) => longer.includes(w)));
}

/** Where a page ended: the last hit's key length and name (the search's order). */
export interface SearchPosition {
  keyLength: number;
  name: string;
}

/** The fingerprint a cursor carries: the words and the app id it belongs to (12 hex digits of SHA-256). */
function fingerprint(appId: string, words: readonly string[]): string {
  return crypto.createHash('sha256').update(`${appId}\u0000${words.join(' ')}`).digest('hex').slice(0, 12);
}

/**
 * The opaque cursor of the page that ended at `at`: base64url of `[1, fingerprint, keyLength, name]`. Stable: the
 * same position of the same search gives the same cursor, and the next page starts right after that name whatever
 * was added to the catalogue meanwhile (no hit twice, none skipped that was there before).
 */
export function encodeSearchCursor(appId: string, words: readonly string[], at: SearchPosition): string {
  return Buffer.from(JSON.stringify([1, fingerprint(appId, words), at.keyLength, at.name]), 'utf8').toString('base64url');
}

/**
 * The position a cursor names for this search, or the reason it cannot be used (a 422 message): not a cursor of
 * this service, or made for other words or another app id.
 */
export function decodeSearchCursor(cursor: string, appId: string, words: readonly string[]): SearchPosition | string {
  const invalid = 'is not a cursor of this service: pass next_cursor (GraphQL nextCursor) of the previous page as it was given';
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) return invalid;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return invalid;
  }
  if (!Array.isArray(value) || value.length !== 4) return invalid;
  const [version, print, keyLength, name] = value as unknown[];
  if (version !== 1 || typeof print !== 'string' || !Number.isSafeInteger(keyLength) || (keyLength as number) < 0 || typeof name !== 'string' || name.length > 255 || name.includes('\u0000')) {
    return invalid;
  }
  if (print !== fingerprint(appId, words)) return 'belongs to another search (other words or app id): start again without a cursor';
  return { keyLength: keyLength as number, name };
}

/**
 * Why `q` cannot be searched (a 422 message), or null: 1-MAX_QUERY_CHARS characters without NUL, at least one
 * letter, digit or other kept character, at most MAX_QUERY_WORDS words once resolved.
 */
export function queryProblem(q: string): string | null {
  if (q.includes('\u0000')) return 'must not contain NUL characters';
  if (q.length === 0 || [...q].length > MAX_QUERY_CHARS) return `must be 1-${MAX_QUERY_CHARS} characters long`;
  const words = searchWords(q);
  if (words.length === 0) return 'must contain a letter or a digit';
  if (words.length > MAX_QUERY_WORDS) return `must have at most ${MAX_QUERY_WORDS} words`;
  return null;
}
