/**
 * The watch list of per-item sources (Steam Community Market and other sources that answer one item a request):
 * which market hash names they ask for, within their request budget.
 *
 * Either a file (`COLLECTOR_WATCHLIST_FILE`: one market hash name a line, `#` comments and blank lines ignored), or by
 * default the most widely quoted items: those listed (ask side, not delisted) on the most markets, ties by name, at
 * most `size` of them. Breadth of listing is the liquidity signal every market has, so the watch list follows
 * what traders can actually buy across markets.
 */
import fs from 'node:fs';
import type { Database } from '../db/client.js';
import { byCodePoint } from '../lib/order.js';

/**
 * Reads a watch-list file: one market hash name a line; `#` starts a comment line; blank lines ignored; duplicates
 * kept once, in file order. Throws the fs error when the file cannot be read.
 */
export function readWatchlistFile(file: string): string[] {
  const seen = new Set<string>();
  for (const line of fs.readFileSync(file, 'utf8').split(/\r?\n/)) {
    const name = line.trim();
    if (name === '' || name.startsWith('#')) continue;
    seen.add(name);
  }
  return [...seen];
}

/**
 * The `size` items of app `appId` listed on the most markets (ask side, listed now), ties by market hash name in code
 * point order. One statement over `source_quote`, grouped by item id before any name is read (129-162 ms against
 * 189-359 ms grouped by name, bundled data on PGlite); empty when nothing is quoted. Pass the background face of the
 * database (`backgroundDatabase`) from long-lived workers: on PGlite the statement then waits for requests first.
 */
export async function mostQuotedItems(db: Pick<Database, 'query'>, appId: string, size: number): Promise<string[]> {
  if (size <= 0) return [];
  const rows = await db.query<{ market_hash_name: string; markets: number }>(
    `SELECT i.market_hash_name, t.markets
       FROM (SELECT item_id, count(DISTINCT market_code)::int AS markets
               FROM source_quote
              WHERE side = 'ask' AND delisted_at IS NULL
              GROUP BY item_id) t
       JOIN item i ON i.id = t.item_id
      WHERE i.app_id = $1
      ORDER BY t.markets DESC, i.market_hash_name COLLATE "C"
      LIMIT $2`,
    [appId, size],
  );
  return rows.map((r) => r.market_hash_name).sort((a, b) => byCodePoint(a, b));
}

/** How long a computed watch list is reused by every per-item source of a process (ms). */
export const WATCHLIST_REUSE_MS = 15 * 60_000;

/**
 * `load` shared: the per-item sources of one process that start together (at start-up, or in the same slot) read one
 * watch list, computed once and reused for WATCHLIST_REUSE_MS (`now` in ms, for tests). A failed computation is not
 * kept: the next caller tries again. Returns the function the runner calls at the start of a per-item run.
 */
export function sharedWatchlist(load: () => Promise<readonly string[]>, now: () => number = Date.now): () => Promise<readonly string[]> {
  let kept: { at: number; list: Promise<readonly string[]> } | null = null;
  return () => {
    if (kept && now() - kept.at < WATCHLIST_REUSE_MS) return kept.list;
    const entry = { at: now(), list: load() };
    kept = entry;
    entry.list.catch(() => {
      if (kept === entry) kept = null;
    });
    return entry.list;
  };
}
