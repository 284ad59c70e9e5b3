/**
 * `npm run bench:top-routes`: the market-wide route scan (GET /prices/routes/top; docs/fees.md, The market-wide
 * scan) on a full-scale synthetic catalogue: TOP_ITEMS items (default 36,000) x TOP_MARKETS markets (default 40:
 * the 16 of data/websites.json and synthetic ones in USD, CNY and EUR) x ask and bid, one quote each (2.88 million
 * quote rows by default), prices 1-101, quantities 0-10, observed up to 3 days before the run.
 *
 * A fresh database `qg_bench_top_routes` on the PostgreSQL server of DATABASE_URL (default
 * postgresql://postgres@127.0.0.1:5432/postgres), migrated as the service does, the bundled catalogue imported (fees,
 * currencies), dropped afterwards; embedded PGlite with TOP_ENGINE=pglite (in memory). Then `topRoutes` as the
 * GraphQL field runs it (the SQL pre-selection and the exact pricing of the candidates, quotes read with
 * `loadQuotes`), each case on its own parameters (so no candidate list is reused), then one case again (reused):
 * wall time, and the heap before and after. Run it niced beside other work: the figures are then pessimistic.
 */
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { loadFeeBook } from '../src/valuation/daily.js';
import { loadQuotes } from '../src/quotes/quotes.js';
import { topRoutes } from '../src/quotes/top-routes.js';
import { parseFeeProfile, profileOf } from '../src/fees/profile.js';
import { projectRoot } from '../src/lib/paths.js';
import { dropPostgresDatabase, freshPostgresDatabase } from './scale-data.js';
import { Money } from '../src/lib/money.js';

const ITEMS = Number(process.env.TOP_ITEMS ?? 36_000);
const MARKETS = Number(process.env.TOP_MARKETS ?? 40);
const SERVER = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const DB_NAME = 'qg_bench_top_routes';
const pglite = process.env.TOP_ENGINE === 'pglite';

let db: Database;
if (pglite) {
  db = await openDatabase({ pgliteDir: 'memory://' });
} else {
  db = await openDatabase({ url: await freshPostgresDatabase(SERVER, DB_NAME) });
}
await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
const markets = (await db.query<{ code: string; currency_code: string }>('SELECT code, currency_code FROM website ORDER BY code')).filter((m) => m.code !== 'OPSKINS');
const currencies = ['USD', 'CNY', 'EUR'];
while (markets.length < MARKETS) markets.push({ code: `SYN${String(markets.length).padStart(2, '0')}`, currency_code: currencies[markets.length % 3]! });
markets.length = MARKETS;
console.log(`bench:top-routes on ${pglite ? 'pglite' : 'postgresql'}: ${ITEMS} items x ${MARKETS} markets x 2 sides; ${os.cpus().length} CPUs, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
let t0 = performance.now();
await db.query(`INSERT INTO item (app_id, market_hash_name) SELECT '730', 'Bench item ' || g FROM generate_series(1, $1::int) g`, [ITEMS]);
await db.query(
  `INSERT INTO source_quote (item_id, market_code, provider_code, side, currency_code, price, quantity, changed_at, observed_at, fresh_at)
   SELECT i.id, m.code, m.code, s::quote_side, m.cur, round((1 + random() * 100)::numeric, 2), (random() * 10)::int, now(), now() - random() * interval '3 days', now()
   FROM item i, unnest($1::text[], $2::text[]) AS m(code, cur), unnest(ARRAY['ask', 'bid']) s`,
  [markets.map((m) => m.code), markets.map((m) => m.currency_code)],
);
await db.query('ANALYZE');
console.log(`data: ${(await db.query<{ n: string }>('SELECT count(*)::text AS n FROM source_quote'))[0]!.n} quote rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const book = await loadFeeBook(db, new Date());
const codes = markets.map((m) => m.code);
const profile = (text: string) => {
  const p = parseFeeProfile(text);
  if ('problems' in p) throw new Error(p.problems.join('; '));
  const r = profileOf(p.entries);
  if ('problems' in r) throw new Error(r.problems.join('; '));
  return r.profile;
};
type Options = Parameters<typeof topRoutes>[4];
const base: Omit<Options, 'now'> = { currency: 'USD', buyOn: null, sellOn: null, fund: 'balance', payout: 'balance', minCredibility: 0, appId: '730', minMargin: null, limit: 20 };
const cases: [string, Partial<Options>][] = [
  ['defaults, limit 20', {}],
  ['limit 100 (500 candidates)', { limit: 100 }],
  ['credibility 0.5, quantity 2', { minCredibility: 0.5, minQuantity: 2 }],
  ['fee profile for the unknown markets', { feeProfile: profile(codes.filter((c) => c.startsWith('SYN') || c === 'C5GAME').map((c) => `${c}:sale=0.05,withdraw=0.01,deposit=0.01`).join(';')), minMargin: new Money('0.05') }],
  ['cash in and out', { fund: 'cash', payout: 'cash', feeProfile: profile(codes.map((c) => `${c}:deposit=0.02,sale=0.05,withdraw=0.01`).join(';')) }],
  ['defaults again (candidates reused)', {}],
];
for (const [label, over] of cases) {
  (globalThis as { gc?: () => void }).gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  t0 = performance.now();
  const r = await topRoutes(db, book, codes, (app, names) => loadQuotes(db, app, names), { ...base, ...over, now: new Date() });
  const ms = performance.now() - t0;
  const heap1 = process.memoryUsage().heapUsed;
  console.log(`${label.padEnd(38)} ${ms.toFixed(0).padStart(6)} ms  ${r.candidateItems} candidates, ${r.routes.length} routes, best margin ${r.routes[0]?.route.margin?.toString() ?? '-'}; heap ${(heap0 / 2 ** 20).toFixed(0)} -> ${(heap1 / 2 ** 20).toFixed(0)} MB`);
}
await db.close();
if (!pglite) {
  await dropPostgresDatabase(SERVER, DB_NAME);
}
