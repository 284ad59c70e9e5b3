/**
 * `npm run bench:export`: the export at full market scale on the PostgreSQL server.
 *
 * 1. Loads the synthetic full-scale catalogue once (bench/scale-data.ts: ~36k real names x 40
 *    markets x ask and bid) into BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/qg_scale).
 * 2. Builds the `side=all` snapshot in a child process (`quotegate export build`) and reports its
 *    wall time, size and peak RSS (then the whole job: all four sides in one pass); compared in the same run with `COPY (SELECT the same rows) TO
 *    STDOUT | gzip -6` (psql), timed and measured with /usr/bin/time.
 * 3. 304 answers per second: `GET /prices/export` with the current ETag in If-None-Match through the
 *    full pipeline (auth, rate limit, not billed) spread over BENCH_ACCOUNTS accounts (304s count
 *    towards the 2/60 s limit), against a bare node:http server answering the same 304.
 * Options: BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50). Writes bench/results/export-*.json.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import cliProgress from 'cli-progress';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { importCatalogue } from '../src/services/catalogue-import.js';
import { generateKey, hashSecret } from '../src/services/accounts.js';
import { projectRoot } from '../src/lib/paths.js';
import { expectedScaleQuotes, loadScaleData } from './scale-data.js';
import { startServerProcess } from '../test/helpers/server.js';

const run = promisify(execFile);
const url = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/qg_scale';
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const accountsNeeded = Number(process.env.BENCH_ACCOUNTS ?? 20000);

// 1. The database and the full-scale data.
{
  const admin = new pg.Client({ connectionString: new URL('/postgres', url).toString() });
  await admin.connect();
  const name = new URL(url).pathname.slice(1);
  const exists = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name]);
  if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
}
const db = await openDatabase({ url });
const [{ n: quotesBefore }] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM source_quote`)) as [{ n: number }];
if (quotesBefore < expectedScaleQuotes()) {
  await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
  const bar = new cliProgress.SingleBar({ format: 'scale data [{bar}] {value}/{total} items | {eta}s left' }, cliProgress.Presets.shades_classic);
  const started = Date.now();
  let begun = false;
  const sent = await loadScaleData(db.prisma, (done, total) => {
    if (!begun) bar.start(total, 0);
    begun = true;
    bar.update(done);
  });
  bar.stop();
  console.log(`loaded ${sent} observations in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
const [scale] = await db.query<{ items: number; quotes: number; markets: number; delisted: number }>(
  `SELECT (SELECT count(*)::int FROM item) AS items, count(*)::int AS quotes, count(DISTINCT market_code)::int AS markets,
          count(*) FILTER (WHERE delisted_at IS NOT NULL)::int AS delisted FROM source_quote`,
);
console.log(`catalogue: ${scale!.items} items, ${scale!.quotes} quotes on ${scale!.markets} markets, ${scale!.delisted} delisted`);

// 2. Snapshot build vs COPY | gzip.
await db.query(`DELETE FROM export_current WHERE app_id = '730' AND side = 'all'`);
const buildStarted = Date.now();
// Compiled, as `npm start` runs it (tsx alone adds about 90 MiB of resident memory).
await run('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: projectRoot });
const { stdout } = await run(
  process.execPath,
  [path.join(projectRoot, 'dist/src/cli/main.js'), 'export', 'build', '--app-id', '730', '--side', 'all', '--json'],
  { cwd: projectRoot, env: { ...process.env, DATABASE_URL: url, NODE_ENV: 'production' }, maxBuffer: 16 * 1024 * 1024 },
);
const buildWallMs = Date.now() - buildStarted;
type BuildOut = { ms: number; peak_rss_mib: number; builds: { side: string; bytes: number; items: number; quotes: number; build_ms: number; published: boolean }[] };
const build = JSON.parse(stdout.trim().split('\n').pop()!) as BuildOut;
// The job as the service runs it: every side of the app id in one pass.
await db.query(`DELETE FROM export_current WHERE app_id = '730'`);
const job = JSON.parse(
  (
    await run(process.execPath, [path.join(projectRoot, 'dist/src/cli/main.js'), 'export', 'build', '--app-id', '730', '--json'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: url, NODE_ENV: 'production' },
      maxBuffer: 16 * 1024 * 1024,
    })
  ).stdout.trim().split('\n').pop()!,
) as BuildOut;

const sameRows = `SELECT DISTINCT ON (i.market_hash_name, q.market_code, q.side) i.market_hash_name, q.market_code, q.provider_code, q.side, q.currency_code,
  q.price, q.quantity, q.is_quantity_minimum, q.is_all_items_same_price, q.changed_at, q.observed_at, q.delisted_at, q.fresh_at
  FROM item i JOIN source_quote q ON q.item_id = i.id WHERE i.app_id = '730'
  ORDER BY i.market_hash_name, q.market_code, q.side, (q.delisted_at IS NULL) DESC, (q.provider_code = q.market_code) DESC, q.fresh_at DESC, q.provider_code`;
const copy = await run('/usr/bin/time', ['-f', '%e %M', 'bash', '-c', `psql "${url}" -Atqc "COPY (${sameRows.replace(/\n/g, ' ')}) TO STDOUT" | gzip -6 | wc -c`], {
  maxBuffer: 16 * 1024 * 1024,
});
const [copyBytes] = copy.stdout.trim().split('\n');
const [copySeconds, copyKb] = copy.stderr.trim().split('\n').pop()!.split(' ');

// 3. 304 answers per second, full pipeline vs bare node:http.
const keys: string[] = [];
const ids: string[] = [];
const hashes: string[] = [];
const prefixes: string[] = [];
for (let i = 0; i < accountsNeeded; i++) {
  const k = generateKey();
  keys.push(k);
  ids.push(`bench-304-${crypto.randomUUID()}`);
  hashes.push(hashSecret(k));
  prefixes.push(k.slice(0, 8));
}
await db.query(`INSERT INTO account (id, credits_total, profile_synced_at) SELECT unnest($1::text[]), 1000000, now()`, [ids]);
await db.query(`INSERT INTO credit_ledger (account_id, kind, amount) SELECT unnest($1::text[]), 'grant', 1000000`, [ids]);
await db.query(
  `INSERT INTO api_key (id, account_id, prefix, hash, allowed_operations) SELECT gen_random_uuid(), unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), '{}'`,
  [ids, prefixes, hashes],
);
const [{ etag, generated_at }] = (await db.query<{ etag: string; generated_at: Date }>(
  `SELECT b.etag, b.generated_at FROM export_current c JOIN export_build b ON b.id = c.build_id WHERE c.app_id = '730' AND c.side = 'all'`,
)) as [{ etag: string; generated_at: Date }];
await db.close();

const server = await startServerProcess({ DATABASE_URL: url, EXPORT_INTERVAL_SECONDS: '0', LOG_LEVEL: 'warn', NODE_ENV: 'production' });
const bare = http.createServer((req, res) => {
  res.writeHead(304, { ETag: etag, 'Last-Modified': generated_at.toUTCString(), 'X-Request-ID': 'bench', 'X-Billable': 'false' });
  res.end();
});
await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
const barePort = (bare.address() as { port: number }).port;

async function load(base: string) {
  let next = 0;
  const r = await autocannon({
    url: base,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'GET',
        path: '/prices/export?side=all',
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'If-None-Match': etag, 'X-API-Key': keys[next++ % keys.length]! } }),
      },
    ],
  });
  return { requests_per_s: r.requests.average, p50_ms: r.latency.p50, p99_ms: r.latency.p99, status_304: r['3xx'], other: r.non2xx - r['3xx'], errors: r.errors };
}
const bareRow = await load(`http://127.0.0.1:${barePort}`);
const appRow = await load(server.url);
await server.stop();
bare.close();

const b = build.builds[0]!;
const result = {
  catalogue: scale,
  snapshot_build: { side: 'all', wall_ms: buildWallMs, build_ms: build.ms, peak_rss_mib: build.peak_rss_mib, gzip_bytes: b.bytes, items: b.items, quotes: b.quotes },
  all_sides_job: { ms: job.ms, peak_rss_mib: job.peak_rss_mib, sides: job.builds.map((x) => ({ side: x.side, bytes: x.bytes, items: x.items })) },
  copy_gzip_baseline: { wall_ms: Math.round(Number(copySeconds) * 1000), peak_rss_mib: Math.round(Number(copyKb) / 1024), gzip_bytes: Number(copyBytes) },
  not_modified: { bare: bareRow, quotegate: appRow, ratio: +(appRow.requests_per_s / bareRow.requests_per_s).toFixed(3), accounts: keys.length, seconds, connections },
};
console.log(JSON.stringify(result, null, 2));
const out = path.join(projectRoot, 'bench', 'results');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, `export-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify(result, null, 2));
