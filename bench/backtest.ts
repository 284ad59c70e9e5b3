/**
 * `npm run bench:backtest`: the CSCP valuation backtest (docs/valuation.md, section 8) on the bundled real
 * data. Loads data/ into a fresh in-memory PGlite (or BENCH_DATABASE_URL, loaded when it has no quotes),
 * then runs `runBacktest` over every day with history and prints the figures. Writes bench/results/backtest-*.json.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../src/db/client.js';
import { importPath, isEmpty } from '../src/collectors/importers.js';
import { runBacktest } from '../src/valuation/backtest.js';
import { projectRoot } from '../src/lib/paths.js';

const url = process.env.BENCH_DATABASE_URL;
const db = await openDatabase(url ? { url } : { pgliteDir: 'memory://' });
if (await isEmpty(db)) {
  const t0 = Date.now();
  await importPath(db, path.join(projectRoot, 'data'));
  console.log(`bundled data loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
const r = await runBacktest(db, undefined, (d) =>
  console.log(`${d.date}: ${d.valued_items} items, ${d.targets} next-day quotes; consensus ${d.consensus_mdae}, plain median ${d.plain_median_mdae}, inside e^(+-u) ${d.calibration}`),
);
await db.close();
console.log(`\nmedian |ln error| over ${r.targets} next-day quotes: consensus ${r.consensus_mdae}, plain cross-market median ${r.plain_median.mdae}`);
console.table(Object.fromEntries(Object.entries(r.markets).map(([k, v]) => [k, { targets: v.n, 'previous close': v.mdae, consensus: v.consensus_mdae }])));
console.log(
  `calibration: ${(r.calibration.share * 100).toFixed(1)} % inside price x e^(+-u) (two-sided ${(r.calibration.two_sided * 100).toFixed(1)} %, one-sided ${(r.calibration.one_sided * 100).toFixed(1)} %)`,
);
const out = path.join(projectRoot, 'bench', 'results', `backtest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(r, null, 2));
console.log(`wrote ${path.relative(projectRoot, out)}`);
