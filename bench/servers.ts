/**
 * Benchmark servers, in a child process of bench/prices.ts so the load generator does not share its CPU:
 * the Quotegate app on the bundled data (PGlite in var/bench-pglite, or DATABASE_URL; data and accounts made first
 * by bench/setup-data.ts in a process of its own, so this one's RSS is the service's under load), and a bare
 * node:http server that answers each benchmarked request with the exact bytes Quotegate returned.
 * Every Quotegate request runs the full pipeline: key lookup, rate limit (memory, or Redis with
 * REDIS_URL), credit check and charge. Each account sends one request before the measured runs (steady
 * state: its key lookup cached, its first credit lease taken). BENCH_ACCOUNTS accounts (default 3,000) with a billion credits
 * each spread the load so no account reaches its rate limit; as many again hold a subscription
 * (limited but never charged), to show what the charge itself costs.
 * Prints one JSON line {app, bare, keys, subscriptionKeys, ...} when ready.
 * BENCH_PROFILE=1: a V8 CPU profile of this process (both servers) from that line until SIGTERM, written to
 * bench/results/profiles/servers-<timestamp>.cpuprofile; its path is printed as a second JSON line {profile}.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import inspector from 'node:inspector/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../src/lib/paths.js';
import { benchDatabaseTarget, benchScale } from './servers-process.js';

// The service as `npm start` runs it: the compiled dist/src (npm run bench builds it first); BENCH_SOURCE=1 loads
// the TypeScript source through tsx instead (slower: tsx wraps every function it creates).
const from = (module: string) =>
  process.env.BENCH_SOURCE === '1' ? pathToFileURL(path.join(projectRoot, 'src', `${module}.ts`)).href : pathToFileURL(path.join(projectRoot, 'dist', 'src', `${module}.js`)).href;
const { loadEnv } = (await import(from('env'))) as typeof import('../src/env.js');
const { openDatabase } = (await import(from('db/client'))) as typeof import('../src/db/client.js');
const { createApp } = (await import(from('app'))) as typeof import('../src/app.js');
const { createRateLimiter } = (await import(from('limits/rate-limiter'))) as typeof import('../src/limits/rate-limiter.js');

// The data and the accounts are made by bench/setup-data.ts in a process of its own (see there), then opened here.
const setup = execFileSync(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'bench', 'setup-data.ts')], {
  cwd: projectRoot,
  env: process.env,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const { keys, subscriptionKeys } = JSON.parse(setup.trim().split('\n').pop()!) as { keys: string[]; subscriptionKeys: string[] };
const env = loadEnv();
const db = await openDatabase(benchDatabaseTarget(projectRoot, env.DATABASE_URL));
const key = keys[0]!;
// Every item name in a fixed pseudo-random order (md5): the batch case asks for the first 1,000; at BENCH_SCALE=full
// the whole list is the pool the Zipf, uniform and random-batch cases draw from (rank 1 = the first name).
const ordered = (await db.prisma.$queryRawUnsafe<{ market_hash_name: string }[]>(
  `SELECT market_hash_name FROM item WHERE app_id = '730' ORDER BY md5(market_hash_name)`,
)).map((r) => r.market_hash_name);
const names = ordered.slice(0, 1000);
const pool = benchScale() === 'full' ? ordered : null;

const rateLimiter = createRateLimiter({ redisUrl: env.REDIS_URL, leaseMs: env.RATE_LIMIT_LEASE_MS });
const app = createApp({ db, rateLimiter });
const appServer = http.createServer(app.listener);
await new Promise<void>((r) => appServer.listen(0, '127.0.0.1', r));
const appPort = (appServer.address() as { port: number }).port;

// Capture the exact response bytes of each benchmarked request once.
const single = `/prices?market_hash_name=${encodeURIComponent('AK-47 | Redline (Field-Tested)')}`;
const batchBody = JSON.stringify({ market_hash_names: names });
const get = await fetch(`http://127.0.0.1:${appPort}${single}`, { headers: { 'X-API-Key': key } });
const post = await fetch(`http://127.0.0.1:${appPort}/prices/batch`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: batchBody });
if (get.status !== 200 || post.status !== 200) throw new Error(`warm-up failed: ${get.status} ${post.status}`);
const singleBytes = Buffer.from(await get.arrayBuffer());
// Steady state: every account's first request (its key lookup, its first credit lease) happens before the
// measured runs, 50 at a time, as it would have long before in a service that has been up for a while.
const all = [...keys, ...subscriptionKeys];
for (let i = 0; i < all.length; i += 50) {
  await Promise.all(
    all.slice(i, i + 50).map(async (k) => {
      const r = await fetch(`http://127.0.0.1:${appPort}${single}`, { headers: { 'X-API-Key': k } });
      await r.arrayBuffer();
    }),
  );
}
const batchBytes = Buffer.from(await post.arrayBuffer());

const bare = http.createServer((req, res) => {
  const body = req.method === 'POST' ? batchBytes : singleBytes;
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length, 'X-Request-ID': 'bench' });
    res.end(body);
  });
});
await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
// The process's CPU time (user + system, microseconds), for bench/prices.ts to take each run's CPU per request
// (steadier than a throughput ratio when the machine's speed drifts between runs). Its own listener, not benchmarked.
// `/stats`: the quote cache's lookups so far and its bytes (App.quoteCacheStats), for the hit rate of each run.
const cpu = http.createServer((req, res) => {
  if (req.url === '/stats') return void res.end(JSON.stringify(app.quoteCacheStats()));
  const u = process.cpuUsage();
  res.end(JSON.stringify({ cpuMicros: u.user + u.system }));
});
await new Promise<void>((r) => cpu.listen(0, '127.0.0.1', r));
const cpuPort = (cpu.address() as { port: number }).port;
const barePort = (bare.address() as { port: number }).port;

// Profiling starts once set-up (data load, accounts, warm-up) is over: the profile shows the benchmarked requests only.
let profiler: inspector.Session | null = null;
if (process.env.BENCH_PROFILE === '1') {
  profiler = new inspector.Session();
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.start');
}
// BENCH_PROFILE=heap: where the requests allocate (a sampling heap profile, objects collected by either GC included).
let heapProfiler: inspector.Session | null = null;
if (process.env.BENCH_PROFILE === 'heap') {
  heapProfiler = new inspector.Session();
  heapProfiler.connect();
  await heapProfiler.post('HeapProfiler.enable');
  await heapProfiler.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.BENCH_HEAP_MINOR !== '0' });
}

console.log(JSON.stringify({ app: appPort, bare: barePort, cpu: cpuPort, keys, subscriptionKeys, limiter: rateLimiter.kind, single, batchBody, database: db.kind, singleBytes: singleBytes.length, batchBytes: batchBytes.length, scale: benchScale(), pool }));
// Peak resident memory of this process (both servers, the app's caches included) over the measured runs, in MiB.
let peakRss = process.memoryUsage().rss;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
// BENCH_MEMLOG=1: every second, this process's memory (MiB) and the size of each V8 heap space, on stderr.
if (process.env.BENCH_MEMLOG === '1') {
  const v8 = await import('node:v8');
  setInterval(() => {
    const m = process.memoryUsage();
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name.replace('_space', ''), s.space_size >> 20]));
    console.error(JSON.stringify({ rss: m.rss >> 20, heapTotal: m.heapTotal >> 20, heapUsed: m.heapUsed >> 20, external: m.external >> 20, ab: m.arrayBuffers >> 20, spaces }));
  }, 1000).unref();
}
process.once('SIGTERM', async () => {
  clearInterval(rssTimer);
  // What stays after a full collection (node --expose-gc, as bench/prices.ts starts this process): a leak shows here.
  (globalThis as { gc?: () => void }).gc?.();
  const after = process.memoryUsage();
  console.log(JSON.stringify({ peakRssMiB: Math.round(peakRss / 1048576), afterGc: { rssMiB: Math.round(after.rss / 1048576), heapUsedMiB: Math.round(after.heapUsed / 1048576) } }));
  // Each profile goes to bench/results/profiles/servers-<time>.<ext>; its path is printed as a JSON line under `key`.
  const save = (profile: unknown, ext: string, key: string) => {
    const dir = path.join(projectRoot, 'bench', 'results', 'profiles');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `servers-${new Date().toISOString().replace(/[:.]/g, '-')}.${ext}`);
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(JSON.stringify({ [key]: file }));
  };
  if (profiler) {
    save((await profiler.post('Profiler.stop')).profile, 'cpuprofile', 'profile');
    profiler.disconnect();
  }
  if (heapProfiler) {
    save((await heapProfiler.post('HeapProfiler.stopSampling')).profile, 'heapprofile', 'heapProfile');
    heapProfiler.disconnect();
  }
  appServer.closeAllConnections();
  appServer.close();
  bare.closeAllConnections();
  bare.close();
  cpu.close();
  await rateLimiter.close();
  await db.close();
  process.exit(0);
});
