/**
 * `npm run bench:export`: the export at full market scale on the PostgreSQL server.
 *
 * 1. Loads the synthetic full-scale catalogue once (bench/scale-data.ts: ~36k real names x 40
 *    markets x ask and bid) into BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/qg_scale).
 * 2. Builds in child processes (`quotegate export build`, compiled), each with its wall time, size and peak RSS:
 *    the first build (no stored item piece: every item written; all four sides in one pass); then, after
 *    BENCH_CHANGED_ITEMS (default 1,800, 5 % of the items) items' quotes changed, the `side=all` snapshot
 *    (the figure compared with COPY); then, after as many changes again, the whole job (all four sides).
 *    Compared in the same run with `COPY (SELECT the same rows) TO STDOUT | gzip -6` (psql), timed and measured
 *    with /usr/bin/time.
 * 3. 304 answers per second: `GET /prices/export` with the current ETag in If-None-Match through the
 *    full pipeline (auth, rate limit, not billed), against a bare node:http server answering the same 304,
 *    in two cases (304s count towards the 2/60 s limit, so each case has its own accounts, enough that none
 *    is refused):
 *    - cold: every request is its key's first (BENCH_ACCOUNTS, default 20,000), so each pays a key lookup in
 *      the database: what a client polling at the recommended 300 s meets, its cached lookup long expired;
 *    - warm: BENCH_WARM_ACCOUNTS (default 90,000: the caller cache holds 100,000) keys whose lookups the replica holds (warmed by one
 *      GET /me each; AUTH_CACHE_SECONDS=300), each used at most twice in BENCH_WARM_SECONDS (default 5).
 * 4. Requests while the export builds (bench/export-probe.ts): GET /me every 75 ms during the builds of the service's
 *    export job on the bundled data, on embedded PGlite and on PostgreSQL: p50, p99 and max per build.
 * EXPORT_BENCH_ONLY=probe runs part 4 alone.
 * Options: BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50), EXPORT_BENCH_BUILD=0 (skip part 2,
 * the build timing, when a snapshot exists), BENCH_PROFILE=1 (the service of part 3 writes a CPU profile of its
 * whole run, warm-up included, to bench/results/profiles/; bench/profile-summary.ts reads it). Writes bench/results/export-*.json.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { serviceNodeFlags } from '../scripts/build.mjs';
import { openDatabase } from '../src/db/client.js';
import { generateKey, hashSecret } from '../src/accounts/accounts.js';
import { projectRoot } from '../src/lib/paths.js';
import { loadEnv } from '../src/env.js';
import { exportChildArgs } from '../src/jobs/export-snapshots.js';
import { ensurePostgresDatabase, ensureScaleCatalogue } from './scale-data.js';
import { probeDuringBuilds, probeTargets, type ProbeRun } from './export-probe.js';
import { startServerProcess } from '../test/helpers/server.js';

const run = promisify(execFile);
const url = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/qg_scale';
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const accountsNeeded = Number(process.env.BENCH_ACCOUNTS ?? 20000);
const warmAccounts = Number(process.env.BENCH_WARM_ACCOUNTS ?? 90000);
const warmSeconds = Number(process.env.BENCH_WARM_SECONDS ?? 5);
const timeBuild = process.env.EXPORT_BENCH_BUILD !== '0';
const changedItems = Number(process.env.BENCH_CHANGED_ITEMS ?? 1800);

// 4 alone (EXPORT_BENCH_ONLY=probe): requests while the export builds, on PGlite and on PostgreSQL.
if (process.env.EXPORT_BENCH_ONLY === 'probe') {
  const probe = [];
  for (const target of probeTargets()) probe.push(await probeDuringBuilds(target));
  printProbe(probe);
  process.exit(0);
}

// 1. The database and the full-scale data.
await ensurePostgresDatabase(url);
const db = await openDatabase({ url });
const scale = await ensureScaleCatalogue(db);
console.log(`catalogue: ${scale!.items} items, ${scale!.quotes} quotes on ${scale!.markets} markets, ${scale!.delisted} delisted`);

// 2. Snapshot build vs COPY | gzip (EXPORT_BENCH_BUILD=0: skipped, the current snapshot is used).
type BuildOut = { ms: number; peak_rss_mib: number; builds: { side: string; bytes: number; items: number; quotes: number; build_ms: number; published: boolean }[] };
/**
 * Runs `quotegate export build` (compiled) for `side` (all four when undefined), with the node arguments the
 * service's export job gives its build child on PostgreSQL (`exportChildArgs`: `npm start`'s heap flags dropped,
 * the old generation capped at EXPORT_JOB_HEAP_MB); wall time and its JSON line.
 */
async function timedBuild(side?: string): Promise<{ wallMs: number; out: BuildOut }> {
  const started = Date.now();
  const cli = exportChildArgs(serviceNodeFlags(), path.join(projectRoot, 'dist/src/cli/main.js'), loadEnv().EXPORT_JOB_HEAP_MB);
  const { stdout } = await run(
    process.execPath,
    [...cli, 'export', 'build', '--app-id', '730', ...(side ? ['--side', side] : []), '--json'],
    { cwd: projectRoot, env: { ...process.env, DATABASE_URL: url, NODE_ENV: 'production' }, maxBuffer: 16 * 1024 * 1024 },
  );
  return { wallMs: Date.now() - started, out: JSON.parse(stdout.trim().split('\n').pop()!) as BuildOut };
}
/**
 * Changes the quotes of `n` items picked at random (their quantity, by SQL: bench only), as ingestion would
 * between two builds: those items' stored pieces no longer match their rows and are written again.
 */
async function touchItems(n: number): Promise<void> {
  await db.query(
    `UPDATE source_quote SET quantity = COALESCE(quantity, 0) + 1
      WHERE item_id IN (SELECT id FROM item WHERE app_id = '730' ORDER BY random() LIMIT $1)`,
    [n],
  );
}
async function timeBuilds() {
  // Compiled, as `npm start` runs it (tsx alone adds about 90 MiB of resident memory); the compile is not timed.
  await run('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: projectRoot });
  // The first build: no stored piece, every item written and compressed (all four sides in one pass).
  await db.query(`DELETE FROM export_fragment`);
  await db.query(`DELETE FROM export_current WHERE app_id = '730'`);
  const firstJob = await timedBuild();
  // A later build: CHANGED_ITEMS items changed since the last one; only the side=all file (the one COPY matches).
  await touchItems(changedItems);
  await db.query(`DELETE FROM export_current WHERE app_id = '730' AND side = 'all'`);
  const later = await timedBuild('all');
  // The job as the service runs it every 5 minutes: every side of the app id in one pass, after as many changes.
  await touchItems(changedItems);
  const job = await timedBuild();

  const sameRows = `SELECT DISTINCT ON (i.market_hash_name, q.market_code, q.side) i.market_hash_name, q.market_code, q.provider_code, q.side, q.currency_code,
    q.price, q.quantity, q.is_quantity_minimum, q.is_all_items_same_price, q.changed_at, q.observed_at, q.delisted_at, q.fresh_at
    FROM item i JOIN source_quote q ON q.item_id = i.id WHERE i.app_id = '730'
    ORDER BY i.market_hash_name, q.market_code, q.side, (q.delisted_at IS NULL) DESC, (q.provider_code = q.market_code) DESC, q.fresh_at DESC, q.provider_code`;
  const copy = await run('/usr/bin/time', ['-f', '%e %M', 'bash', '-c', `psql "${url}" -Atqc "COPY (${sameRows.replace(/\n/g, ' ')}) TO STDOUT" | gzip -6 | wc -c`], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const [copyBytes] = copy.stdout.trim().split('\n');
  const [copySeconds, copyKb] = copy.stderr.trim().split('\n').pop()!.split(' ');
  return { buildWallMs: later.wallMs, build: later.out, firstJob, job: job.out, jobWallMs: job.wallMs, copyBytes, copySeconds, copyKb };
}
const built = timeBuild ? await timeBuilds() : null;

// 3. 304 answers per second, full pipeline vs bare node:http.
/** `n` accounts with 1,000,000 credits and one key each (bulk SQL); returns the keys. */
async function benchKeys(n: number, label: string): Promise<string[]> {
  const keys: string[] = [];
  const ids: string[] = [];
  const hashes: string[] = [];
  const prefixes: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = generateKey();
    keys.push(k);
    ids.push(`bench-304-${label}-${crypto.randomUUID()}`);
    hashes.push(hashSecret(k));
    prefixes.push(k.slice(0, 8));
  }
  for (let i = 0; i < n; i += 20000) {
    const part = ids.slice(i, i + 20000);
    await db.query(`INSERT INTO account (id, credits_total, profile_synced_at) SELECT unnest($1::text[]), 1000000, now()`, [part]);
    await db.query(`INSERT INTO credit_ledger (account_id, kind, amount) SELECT unnest($1::text[]), 'grant', 1000000`, [part]);
    await db.query(
      `INSERT INTO api_key (id, account_id, prefix, hash, allowed_operations) SELECT gen_random_uuid(), unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), '{}'`,
      [part, prefixes.slice(i, i + 20000), hashes.slice(i, i + 20000)],
    );
  }
  return keys;
}
const keys = await benchKeys(accountsNeeded, 'cold');
const warmKeys = await benchKeys(warmAccounts, 'warm');
const [{ etag, generated_at }] = (await db.query<{ etag: string; generated_at: Date }>(
  `SELECT b.etag, b.generated_at FROM export_current c JOIN export_build b ON b.id = c.build_id WHERE c.app_id = '730' AND c.side = 'all' AND c.format = 'json'`,
)) as [{ etag: string; generated_at: Date }];
await db.close();

// The service as `npm start` runs it: compiled (npm run bench:export builds dist first), with its heap flags.
const server = await startServerProcess(
  { DATABASE_URL: url, EXPORT_INTERVAL_SECONDS: '0', VALUATION_JOB: 'off', LOG_LEVEL: 'warn', NODE_ENV: 'production', AUTH_CACHE_SECONDS: '300' },
  [...serviceNodeFlags(), ...(process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', '--cpu-prof-dir=' + path.join(projectRoot, 'bench', 'results', 'profiles')] : [])],
  { compiled: true },
);
const bare = http.createServer((_req, res) => {
  res.writeHead(304, { ETag: etag, 'Last-Modified': generated_at.toUTCString(), 'X-Request-ID': 'bench', 'X-Billable': 'false' });
  res.end();
});
await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
const barePort = (bare.address() as { port: number }).port;

async function load(base: string, list: string[], duration: number) {
  let next = 0;
  const r = await autocannon({
    url: base,
    connections,
    duration,
    requests: [
      {
        method: 'GET',
        path: '/prices/export?side=all',
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'If-None-Match': etag, 'X-API-Key': list[next++ % list.length]! } }),
      },
    ],
  });
  return { requests_per_s: r.requests.average, p50_ms: r.latency.p50, p99_ms: r.latency.p99, status_304: r['3xx'], other: r.non2xx - r['3xx'], errors: r.errors };
}
// Warm: one GET /me per key puts its lookup in the replica's caller cache (not the export's rate limit).
{
  let next = 0;
  await autocannon({
    url: server.url,
    connections,
    amount: warmKeys.length,
    requests: [{ method: 'GET', path: '/me', setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'X-API-Key': warmKeys[next++]! } }) }],
  });
}
// Warm first: the cold case's lookups would push warm entries out of the caller cache (100,000 entries at most).
const bareWarm = await load(`http://127.0.0.1:${barePort}`, warmKeys, warmSeconds);
const appWarm = await load(server.url, warmKeys, warmSeconds);
const bareRow = await load(`http://127.0.0.1:${barePort}`, keys, seconds);
const appRow = await load(server.url, keys, seconds);
await server.stop();
bare.close();

const b = built?.build.builds[0];
const result = {
  catalogue: scale,
  first_build_all_sides: built
    ? { wall_ms: built.firstJob.wallMs, ms: built.firstJob.out.ms, peak_rss_mib: built.firstJob.out.peak_rss_mib, sides: built.firstJob.out.builds.map((x) => ({ side: x.side, bytes: x.bytes, items: x.items })) }
    : null,
  snapshot_build: built && b ? { side: 'all', changed_items: changedItems, wall_ms: built.buildWallMs, build_ms: built.build.ms, peak_rss_mib: built.build.peak_rss_mib, gzip_bytes: b.bytes, items: b.items, quotes: b.quotes } : null,
  all_sides_job: built ? { changed_items: changedItems, wall_ms: built.jobWallMs, ms: built.job.ms, peak_rss_mib: built.job.peak_rss_mib, sides: built.job.builds.map((x) => ({ side: x.side, bytes: x.bytes, items: x.items })) } : null,
  copy_gzip_baseline: built ? { wall_ms: Math.round(Number(built.copySeconds) * 1000), peak_rss_mib: Math.round(Number(built.copyKb) / 1024), gzip_bytes: Number(built.copyBytes) } : null,
  build_ratio_to_copy: built && b ? +(built.buildWallMs / (Number(built.copySeconds) * 1000)).toFixed(2) : null,
  not_modified: { bare: bareRow, quotegate: appRow, ratio: +(appRow.requests_per_s / bareRow.requests_per_s).toFixed(3), accounts: keys.length, seconds, connections },
  not_modified_warm: { bare: bareWarm, quotegate: appWarm, ratio: +(appWarm.requests_per_s / bareWarm.requests_per_s).toFixed(3), accounts: warmKeys.length, seconds: warmSeconds, connections },
};
console.log(JSON.stringify(result, null, 2));
// 4. Requests while the export builds, on PGlite and on PostgreSQL (the bundled data).
const probe = [];
for (const target of probeTargets()) probe.push(await probeDuringBuilds(target));
printProbe(probe);
const out = path.join(projectRoot, 'bench', 'results');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, `export-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify({ ...result, requests_during_builds: probe }, null, 2));

/** Prints part 4: one line per database and build (GET /me p50, p99 and max), then the JSON, and writes it to bench/results. */
function printProbe(runs: ProbeRun[]): void {
  for (const r of runs) {
    for (const b of r.builds) {
      console.log(`${r.database}: build of ${b.ms} ms (${b.items_written}): GET /me during it: ${b.probes.count} probes, p50 ${b.probes.p50_ms} ms, p99 ${b.probes.p99_ms} ms, max ${b.probes.max_ms} ms, ${b.probes.failed} failed`);
    }
    const o = r.outside_builds;
    console.log(`${r.database}: GET /me outside the builds: ${o.count} probes, p50 ${o.p50_ms} ms, p99 ${o.p99_ms} ms, max ${o.max_ms} ms`);
  }
  console.log(JSON.stringify({ requests_during_builds: runs }, null, 2));
  const dir = path.join(projectRoot, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `export-probe-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify(runs, null, 2));
}
