/**
 * `npm run bench:valuation`: the CSCP valuation job at full scale on the PostgreSQL server.
 *
 * 1. The full-scale catalogue of the export benchmark (bench/scale-data.ts: ~36k real names x 40 markets x
 *    ask and bid, ~2.9M quotes, loaded through the ingestion bulk path) in BENCH_DATABASE_URL (default
 *    postgresql://postgres@127.0.0.1:5432/qg_scale), loaded once.
 * 2. Seven days of closes (2026-11-14 … 11-20), generated once: the ingested state is the close of 11-20;
 *    each earlier day d gets the same quotes with a deterministic price drift of up to +-2 % per day
 *    (synthetic data, SQL numeric; ~20M closes). Delisted quotes stay delisted.
 * 2b. Scores the earlier days once (recomputed: the scale data has no published valuations before), outside the
 *    measurement, so the measured run is the steady state: learning stored, nothing pending.
 * 2c. Compacts the days before 11-20 into the price history once, also outside the measurement.
 * 3. Runs the job for 2026-11-21 as production would (it compacts 11-20, the day that just closed) (`quotegate jobs run valuation --date 2026-11-21`, a
 *    child process of the built CLI): wall time and peak RSS (/usr/bin/time). Writes bench/results/valuation-*.json.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import cliProgress from 'cli-progress';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { parseDate } from '../src/valuation/daily.js';
import { runValuationAccuracy } from '../src/valuation/accuracy.js';
import { compactHistory } from '../src/history/candles.js';
import { projectRoot } from '../src/lib/paths.js';
import { expectedScaleQuotes, loadScaleData } from './scale-data.js';

const run = promisify(execFile);
const url = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/qg_scale';
const LAST_DAY = '2026-11-20';
const DATE = '2026-11-21';

// 1. The database and the full-scale quotes.
{
  const admin = new pg.Client({ connectionString: new URL('/postgres', url).toString() });
  await admin.connect();
  const name = new URL(url).pathname.slice(1);
  if ((await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name])).rowCount === 0) await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
}
const db = await openDatabase({ url });
const count = async (sql: string) => ((await db.query<{ n: number }>(sql)) as [{ n: number }])[0].n;
if ((await count(`SELECT count(*)::int AS n FROM source_quote`)) < expectedScaleQuotes()) {
  await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
  const bar = new cliProgress.SingleBar({ format: 'scale data [{bar}] {value}/{total} items | {eta}s left' }, cliProgress.Presets.shades_classic);
  let begun = false;
  const t0 = Date.now();
  const sent = await loadScaleData(db, (done, total) => {
    if (!begun) bar.start(total, 0);
    begun = true;
    bar.update(done);
  });
  bar.stop();
  console.log(`loaded ${sent} observations in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

// 2. Seven days of closes.
for (let d = 0; d < 7; d++) {
  const day = `(DATE '${LAST_DAY}' - ${d})`;
  if ((await count(`SELECT count(*)::int AS n FROM (SELECT 1 FROM daily_close WHERE day = ${day} LIMIT 1) s`)) > 0) continue;
  const t0 = Date.now();
  await db.query(
    `INSERT INTO daily_close (item_id, market_code, provider_code, side, day, currency_code, price, quantity, delisted, changed_at, confirmed_at)
     SELECT item_id, market_code, provider_code, side, ${day}, currency_code,
            CASE WHEN price IS NULL OR ${d} = 0 THEN price
                 ELSE round(price * (1 + ((abs(hashtext(item_id::text || market_code || side::text || '${d}')) % 4001) - 2000) / 100000.0), 2) END,
            quantity, delisted_at IS NOT NULL, LEAST(changed_at, ${day}::timestamptz + interval '12 hours'), ${day}::timestamptz + interval '12 hours'
       FROM source_quote
     ON CONFLICT DO NOTHING`,
  );
  console.log(`closes of ${LAST_DAY} - ${d} days written in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
await db.query(`ANALYZE daily_close`);
const closes = await count(`SELECT count(*)::int AS n FROM daily_close WHERE day BETWEEN DATE '${LAST_DAY}' - 6 AND DATE '${LAST_DAY}'`);
const [scale] = await db.query<{ items: number; quotes: number; markets: number }>(
  `SELECT count(DISTINCT item_id)::int AS items, count(*)::int AS quotes, count(DISTINCT market_code)::int AS markets FROM source_quote`,
);
// 2b. The days before DATE scored once (the published accuracy and what the run learns from, docs/valuation.md
// sections 10-11), outside the measured process: in production each day is scored once, the day after it.
{
  const t0 = Date.now();
  const scored = await runValuationAccuracy(db, parseDate(DATE));
  if (scored.length > 0) console.log(`scored ${scored.length} earlier days (${scored.map((d) => d.source).join(', ')}) in ${((Date.now() - t0) / 1000).toFixed(1)} s, once`);
}
// 2c. The days before LAST_DAY compacted into the price history once, outside the measured process: in production
// each run compacts the one day that just closed, which is what the measured run then does (LAST_DAY).
{
  const t0 = Date.now();
  const copied = await compactHistory(db, parseDate(LAST_DAY));
  if (copied > 0) console.log(`compacted ${copied} closes of the days before ${LAST_DAY} in ${((Date.now() - t0) / 1000).toFixed(1)} s, once`);
}
await db.close();
console.log(`${scale!.items} items, ${scale!.quotes} quotes on ${scale!.markets} markets; ${closes} closes in the 7-day window`);

// 3. The job, as production runs it (built CLI, child process).
await run('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: projectRoot });
const { stdout, stderr } = await run(
  '/usr/bin/time',
  ['-f', 'TIME %e %M', process.execPath, path.join(projectRoot, 'dist/src/cli/main.js'), 'jobs', 'run', 'valuation', '--date', DATE, '--json'],
  { cwd: projectRoot, env: { ...process.env, DATABASE_URL: url }, maxBuffer: 16 * 1024 * 1024 },
);
const job = JSON.parse(stdout.trim().split('\n').pop()!) as { items: number; two_sided: number; one_sided: number; ms: number };
const [, wall, rssKiB] = /TIME ([\d.]+) (\d+)/.exec(stderr)!;
const result = { date: DATE, scale, closes_in_window: closes, job, process_wall_seconds: Number(wall), peak_rss_mib: Math.round(Number(rssKiB) / 1024) };
console.log(
  `valuation ${DATE}: ${job.items} items (${job.two_sided} two-sided, ${job.one_sided} one-sided); job ${(job.ms / 1000).toFixed(1)} s ` +
    `(process ${wall} s incl. start), peak RSS ${result.peak_rss_mib} MiB`,
);
const out = path.join(projectRoot, 'bench', 'results', `valuation-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2));
console.log(`wrote ${path.relative(projectRoot, out)}`);
