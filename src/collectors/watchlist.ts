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
import type { PrismaClient } from '../generated/prisma/client.js';
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
 * point order. One statement over `source_quote`; empty when nothing is quoted.
 */
export async function mostQuotedItems(prisma: Pick<PrismaClient, '$queryRawUnsafe'>, appId: string, size: number): Promise<string[]> {
  if (size <= 0) return [];
  const rows = await prisma.$queryRawUnsafe<{ market_hash_name: string; markets: number }[]>(
    `SELECT i.market_hash_name, count(DISTINCT q.market_code)::int AS markets
       FROM source_quote q JOIN item i ON i.id = q.item_id
      WHERE i.app_id = $1 AND q.side = 'ask' AND q.delisted_at IS NULL
      GROUP BY i.market_hash_name
      ORDER BY markets DESC, i.market_hash_name COLLATE "C"
      LIMIT $2`,
    appId,
    size,
  );
  return rows.map((r) => r.market_hash_name).sort((a, b) => byCodePoint(a, b));
}
