/** A large change sequence written straight with SQL (generate_series), for replay tests and `npm run bench:replay`. */
import type { Database } from '../../src/db/client.js';

/**
 * Seeds `changes` rows of the change sequence (`quote_change`, market `market`, side ask) over the items named
 * `<prefix><n>` (n = 1..`items`, made when missing), round robin in item order, so consecutive changes name
 * different items; then ANALYZE. Returns the first and last seq written. One statement for the items, one for the
 * changes (300,000 changes: about 12 s on embedded PGlite, 2 s on PostgreSQL here).
 */
export async function seedChanges(db: Pick<Database, 'query'>, opts: { prefix: string; items: number; changes: number; market?: string }): Promise<{ first: bigint; last: bigint }> {
  await db.query(
    `INSERT INTO item (app_id, market_hash_name)
     SELECT '730', $1 || lpad(g::text, 6, '0') FROM generate_series(1, $2::int) g
      WHERE NOT EXISTS (SELECT 1 FROM item WHERE app_id = '730' AND market_hash_name = $1 || lpad(g::text, 6, '0'))`,
    [opts.prefix, opts.items],
  );
  const [row] = await db.query<{ first: string; last: string }>(
    `WITH ids AS (SELECT array_agg(id ORDER BY market_hash_name) AS a FROM item WHERE app_id = '730' AND market_hash_name LIKE $1 || '%'),
          made AS (INSERT INTO quote_change (item_id, market_code, side)
                   SELECT ids.a[1 + (g % array_length(ids.a, 1))], $3, 'ask' FROM ids, generate_series(0, $2::int - 1) g ORDER BY g
                   RETURNING seq)
     SELECT min(seq)::text AS first, max(seq)::text AS last FROM made`,
    [opts.prefix, opts.changes, opts.market ?? 'BUFF163'],
  );
  await db.query('ANALYZE quote_change');
  return { first: BigInt(row!.first), last: BigInt(row!.last) };
}
