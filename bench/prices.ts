/**
 * `npm run bench`: GET /prices (one item) and POST /prices/batch (1,000 names) on the bundled data,
 * each against a bare node:http server returning the same bytes, in the same run (autocannon, loopback only).
 * Quotegate requests run the full pipeline (auth, rate limit, credit check, charge), spread over many
 * accounts (see bench/servers.ts); a second GET case uses subscription accounts (no charge write).
 * Options (env): BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50; batch uses a fifth),
 * BENCH_ROUNDS (default 1: each case that many times, interleaved, a case's rounds at least a minute apart so its accounts' rate-limit windows are clear; the median ratio), BENCH_ACCOUNTS (default 3,000: 120 requests a minute each, room for 27,000 requests a second in a 10 s run and its 3 s warm-up (2,000 until the subscription GET passed 24,000 a second with rate-limit leases and its accounts ran into their limit); more accounts made the billed case slower: at 9,000 it ran at 6,000 req/s against 15,000 with 3,000, while each account's lease reservation was a statement of its own, queued behind the others; they go in batches since d704334, not measured at 9,000 since), DATABASE_URL (bench a PostgreSQL server instead of embedded PGlite),
 * REDIS_URL (rate limits in Redis), BENCH_SCALE=full (issue 45: the full-scale catalogue of `npm run bench:export`, loaded
 * when missing, PGlite in var/bench-pglite-full or DATABASE_URL, e.g. postgresql://postgres@127.0.0.1:5432/qg_scale; adds
 * the cases `get-zipf` (names by Zipf s = 1), `get-uniform` and `batch-random` (1,000 names drawn per request); every
 * Quotegate row reports its quote cache hit rate), BENCH_CASES (comma-separated: only the cases whose id is one of them,
 * `get-billed`, `get-subscription`, `batch-billed`, or whose name contains one, e.g. `subscription`), BENCH_PROFILE=1 (only Quotegate is loaded, no bare runs and so no ratios,
 * and the servers write a CPU profile of the run: its path and top self-time functions are printed, see
 * bench/profile-summary.ts), BENCH_PROFILE=heap (the same, with a sampling allocation profile: bytes allocated per function),
 * BENCH_NODE_FLAGS (extra node/V8 flags for the servers' process, space-separated, e.g. `--single-threaded-gc`),
 * BENCH_WARMUP_SECONDS (default 3; 0 = none): before every measured run, the same load unmeasured, so each run sees
 * the process as a service under steady load has it: optimized code, V8's young generation grown to its size under
 * load, the accounts' cached keys, credit leases and rate-limit grants current (a round starts a minute after the
 * last one, when all of those have lapsed at once for all 6,000 accounts, which steady traffic never does). Without
 * it the first case measured paid the process's warm-up, and later rounds the lapse: 10-25 us more CPU a request.
 * BENCH_SLICE_SECONDS (default 2; 0 = one stretch each, bare first): each server's BENCH_SECONDS are loaded in
 * slices of about this length, alternated bare, quotegate, quotegate, bare, ..., so the machine's speed, which drifts
 * by a third within minutes here (the load generator's own CPU per request moves with it), weighs on both alike;
 * each row sums its server's slices. A case whose requests take long gets fewer, longer slices (each at least 20
 * mean latencies of its warm-up), or one stretch each when a warm-up answered fewer than two requests a connection.
 * Prints a table (with the servers' CPU time per answered request, this process's (the load generator's) and, on Linux, the
 * PostgreSQL and Redis processes' (work that competes with the servers' on a 2-vCPU machine), steadier than the ratio when the machine's speed
 * drifts between runs) and writes bench/results/prices-<timestamp>.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { serversArgs, serversCpuMicros, storeCpuMicros, storeCpuSince } from './servers-process.js';
import { serviceEnv } from '../scripts/build.mjs';
import { projectRoot } from '../src/lib/paths.js';
import { summarizeAllocations, summarizeSelfTime } from './profile-summary.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const sliceSeconds = Number(process.env.BENCH_SLICE_SECONDS ?? 2);
/** A slice lasts at least this many of the slower server's mean request latencies (see `measure`). */
const SLICE_LATENCIES = 20;

/** The median of `xs` (not empty). */
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

// The servers run with the heap flags `npm start` gives the service (package.json, README: Operations).
const child = spawn(process.execPath, serversArgs(projectRoot, (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)), {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, ...serviceEnv(), NODE_ENV: 'production' },
});
const lines = readline.createInterface({ input: child.stdout! });
const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
// Lines after the first: the profile path when BENCH_PROFILE=1.
const later: string[] = [];
const info: { app: number; bare: number; cpu: number; keys: string[]; subscriptionKeys: string[]; limiter: string; single: string; batchBody: string; database: string; singleBytes: number; batchBytes: number; scale: string; pool: string[] | null } =
  await new Promise((resolve, reject) => {
    let first = true;
    lines.on('line', (line) => {
      // V8's own lines (BENCH_NODE_FLAGS=--trace-gc and the like) are passed on to stderr.
      if (!line.startsWith('{')) return void console.error(line);
      if (first) resolve(JSON.parse(line));
      else later.push(line);
      first = false;
    });
    void exited.then((code) => reject(new Error(`bench servers exited with ${code}`)));
  });

interface Row {
  case: string;
  server: string;
  /** The round (BENCH_ROUNDS > 1 only). */
  round?: number;
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  /** CPU time of the servers' process per answered request, microseconds (user + system). */
  cpu_us_per_req: number;
  /** CPU time of this process (the load generator, autocannon) per answered request, microseconds: the client's share of the machine. */
  client_cpu_us_per_req: number;
  /** CPU time of the machine's PostgreSQL and Redis processes per answered request, microseconds (Linux; 0 elsewhere): work that competes with the servers' for the 2 vCPUs. */
  pg_cpu_us_per_req: number;
  redis_cpu_us_per_req: number;
  non2xx: number;
  errors: number;
  /** Share of the quote cache's name lookups answered from memory during the run (Quotegate rows; null for bare). */
  cache_hit_rate: number | null;
}

/** One server's load of a case for `duration` seconds: autocannon's result, and the CPU each party spent meanwhile. */
async function slice(server: 'quotegate' | 'bare', opts: Case, duration: number) {
  const port = server === 'quotegate' ? info.app : info.bare;
  const cpuBefore = await serversCpuMicros(info.cpu);
  const statsBefore = server === 'quotegate' ? await cacheStats() : null;
  const clientBefore = process.cpuUsage();
  const storesBefore = storeCpuMicros();
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: opts.connections,
    duration,
    requests: [
      {
        method: opts.method,
        path: opts.path,
        body: opts.body,
        // Each request carries the next account's key, round robin; a case that draws its items (`pick`) sets its path or body.
        setupRequest: (req) => ({ ...req, ...(opts.pick?.() ?? {}), headers: { ...req.headers, 'Content-Type': 'application/json', 'X-API-Key': opts.keys[nextKey.get(opts.id)!.next++ % opts.keys.length]! } }),
      },
    ],
  });
  const client = process.cpuUsage(clientBefore);
  const stores = storeCpuSince(storesBefore);
  const cpu = (await serversCpuMicros(info.cpu)) - cpuBefore;
  const statsAfter = statsBefore ? await cacheStats() : null;
  const cache = statsBefore && statsAfter ? { hits: statsAfter.hits - statsBefore.hits, misses: statsAfter.misses - statsBefore.misses, bytes: statsAfter.bytes } : null;
  return { r, cpu, client: client.user + client.system, pg: stores['postgres'] ?? 0, redis: stores['redis-server'] ?? 0, cache };
}

/** The servers' quote cache lookups so far (hits, misses: names) and its bytes now, from their CPU port's `/stats`. */
async function cacheStats(): Promise<{ hits: number; misses: number; bytes: number } | null> {
  const res = await fetch(`http://127.0.0.1:${info.cpu}/stats`);
  return (await res.json()) as { hits: number; misses: number; bytes: number } | null;
}

/** Peak estimated bytes of the quote cache seen at the end of a Quotegate slice (printed with the hit rates). */
let cachePeakBytes = 0;

/** Each case's round-robin position in its keys (kept across runs, so a warm-up and its run share the accounts' load). */
const nextKey = new Map<string, { next: number }>();

/**
 * One run of case `c` on `servers`: each server's warm-up (BENCH_WARMUP_SECONDS), then BENCH_SECONDS of load each,
 * in BENCH_SLICE_SECONDS slices alternated bare, quotegate, quotegate, bare, ... (so a drift of the machine's speed
 * during the run falls on both alike); BENCH_SLICE_SECONDS=0 loads each server once for the whole time, one after
 * the other. Slices are fewer and longer for a slow case (see below). A row per server: requests per second over
 * its slices, p50 the median of its slices' p50s, p99 the highest of its slices' p99s, CPU per request over all
 * its slices.
 */
async function measure(c: Case, servers: readonly ('quotegate' | 'bare')[]): Promise<Row[]> {
  if (!nextKey.has(c.id)) nextKey.set(c.id, { next: 0 });
  // A request still in flight when a slice ends is not counted (its work is): each slice lasts at least
  // SLICE_LATENCIES times the slower server's mean latency in its warm-up, and a server whose warm-up answered
  // fewer than two requests a connection gets one stretch (the full-scale batch: seconds a request).
  let longest = 0;
  if (warmupSeconds > 0) {
    for (const server of servers) {
      const { r } = await slice(server, c, warmupSeconds);
      longest = Math.max(longest, r.requests.total < 2 * c.connections ? Infinity : r.latency.mean / 1000);
    }
  }
  const fit = Math.floor(seconds / (SLICE_LATENCIES * longest));
  const perServer = sliceSeconds > 0 ? Math.max(1, Math.min(Math.round(seconds / sliceSeconds), fit)) : 1;
  const length = seconds / perServer;
  const order: ('quotegate' | 'bare')[] = [];
  if (servers.length === 1) for (let i = 0; i < perServer; i++) order.push(servers[0]!);
  else for (let i = 0; i < perServer * 2; i++) order.push(servers[[0, 1, 1, 0][i % 4]!]!);
  const tally = new Map(servers.map((s) => [s, { requests: 0, seconds: 0, cpu: 0, client: 0, pg: 0, redis: 0, non2xx: 0, errors: 0, p50: [] as number[], p99: 0, hits: 0, misses: 0 }]));
  for (const server of order) {
    const { r, cpu, client, pg, redis, cache } = await slice(server, c, length);
    const t = tally.get(server)!;
    if (cache) {
      t.hits += cache.hits;
      t.misses += cache.misses;
      cachePeakBytes = Math.max(cachePeakBytes, cache.bytes);
    }
    t.requests += r.requests.total;
    t.seconds += r.duration;
    t.cpu += cpu;
    t.client += client;
    t.pg += pg;
    t.redis += redis;
    t.non2xx += r.non2xx;
    t.errors += r.errors;
    t.p50.push(r.latency.p50);
    t.p99 = Math.max(t.p99, r.latency.p99);
  }
  return servers.map((server) => {
    const t = tally.get(server)!;
    const perRequest = (micros: number) => Math.round(micros / Math.max(1, t.requests));
    return {
      case: c.name,
      server,
      requests_per_s: Math.round((t.requests / t.seconds) * 10) / 10,
      p50_ms: median(t.p50),
      p99_ms: t.p99,
      cpu_us_per_req: perRequest(t.cpu),
      client_cpu_us_per_req: perRequest(t.client),
      pg_cpu_us_per_req: perRequest(t.pg),
      redis_cpu_us_per_req: perRequest(t.redis),
      non2xx: t.non2xx,
      errors: t.errors,
      cache_hit_rate: server === 'quotegate' && t.hits + t.misses > 0 ? Math.round((t.hits / (t.hits + t.misses)) * 1000) / 1000 : null,
    };
  });
}

/** A benchmarked request: its path, method, body, connections and the keys it goes round. */
interface Case {
  id: string;
  name: string;
  path: string;
  method: 'GET' | 'POST';
  body?: string;
  connections: number;
  keys: string[];
  /** Draws each request's path (GET) or body (POST) when the case spreads over the catalogue (BENCH_SCALE=full). */
  pick?: () => { path?: string; body?: string };
}

/**
 * A sampler of ranks 0..n-1 with P(k) proportional to 1/(k+1)^s (Zipf; s = 1 in the issue's realistic mix):
 * the cumulative weights once, then a binary search per draw.
 */
function zipf(n: number, s = 1): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) cdf[k] = sum += 1 / (k + 1) ** s;
  return () => {
    const u = Math.random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** The GET /prices path of one market hash name. */
const pricesPath = (name: string) => `/prices?market_hash_name=${encodeURIComponent(name)}`;

const rows: Row[] = [];
const only = (process.env.BENCH_CASES ?? '').split(',').map((w) => w.trim()).filter((w) => w !== '');
const allCases: Case[] = [
  { id: 'get-billed', name: 'GET /prices (1 item), billed', path: info.single, method: 'GET' as const, connections, keys: info.keys },
  { id: 'get-subscription', name: 'GET /prices (1 item), subscription', path: info.single, method: 'GET' as const, connections, keys: info.subscriptionKeys },
  { id: 'batch-billed', name: 'POST /prices/batch (1000 names), billed', path: '/prices/batch', method: 'POST' as const, body: info.batchBody, connections: Math.max(1, Math.round(connections / 5)), keys: info.keys },
];
// BENCH_SCALE=full: traffic spread over the whole catalogue (issue 45): names by Zipf (s = 1) in the servers' fixed
// md5 order, uniformly, and batches of 1,000 names drawn at random each request. The bare server answers every GET
// with the hot item's bytes and every POST with the fixed batch's (at full scale every item has its 40 markets' ask and
// bid, so answers are of one size class).
if (info.pool) {
  const pool = info.pool;
  const rank = zipf(pool.length);
  const uniform = () => Math.floor(Math.random() * pool.length);
  const randomBatch = () => {
    const picked = new Set<string>();
    while (picked.size < Math.min(1000, pool.length)) picked.add(pool[uniform()]!);
    return JSON.stringify({ market_hash_names: [...picked] });
  };
  allCases.push(
    { id: 'get-zipf', name: 'GET /prices (Zipf over all items), billed', path: info.single, method: 'GET', connections, keys: info.keys, pick: () => ({ path: pricesPath(pool[rank()]!) }) },
    { id: 'get-uniform', name: 'GET /prices (uniform over all items), billed', path: info.single, method: 'GET', connections, keys: info.keys, pick: () => ({ path: pricesPath(pool[uniform()]!) }) },
    { id: 'batch-random', name: 'POST /prices/batch (1000 random names), billed', path: '/prices/batch', method: 'POST', body: info.batchBody, connections: Math.max(1, Math.round(connections / 5)), keys: info.keys, pick: () => ({ body: randomBatch() }) },
  );
}
const cases = only.length === 0 ? allCases : allCases.filter((c) => only.some((w) => c.id === w || c.name.includes(w)));
// A profiling run loads Quotegate only, so the profile holds its requests alone (ratios need a run without it).
const profiling = process.env.BENCH_PROFILE === '1' || process.env.BENCH_PROFILE === 'heap';
const servers = profiling ? (['quotegate'] as const) : (['bare', 'quotegate'] as const);
// BENCH_ROUNDS=n: every case n times, interleaved (all cases, then all again), each ratio taken within its round;
// the summary gives the median (this machine's speed drifts by 10 % and more between runs a minute apart).
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
const lastRound = new Map<string, number>();
for (let round = 1; round <= rounds; round++) {
  for (const c of cases) {
    const wait = (lastRound.get(c.id) ?? -Infinity) + 61_000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    lastRound.set(c.id, Date.now());
    for (const row of await measure(c, servers)) rows.push({ ...row, ...(rounds > 1 ? { round } : {}) });
  }
}
child.kill('SIGTERM');
const code = await exited;
if (code !== 0) console.error(`bench servers exited with ${code}`);

console.log(`catalogue: ${info.scale}${info.pool ? ` (${info.pool.length} items)` : ''}; quote cache peak ${(cachePeakBytes / 1048576).toFixed(1)} MiB (estimated)`);
console.log(`database: ${info.database}; rate limits: ${info.limiter}; accounts: ${info.keys.length} billed + ${info.subscriptionKeys.length} subscription; ${seconds}s per server per run (${sliceSeconds > 0 ? `in ${sliceSeconds} s slices, alternated` : "one stretch each"}, after a ${warmupSeconds} s warm-up each); response sizes: single ${info.singleBytes} B, batch ${info.batchBytes} B`);
console.table(rows);
for (const c of cases) {
  const ratios: number[] = [];
  const cpu: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const inRound = (r: Row) => r.case === c.name && (rounds === 1 || r.round === round);
    const bare = rows.find((r) => inRound(r) && r.server === 'bare');
    const app = rows.find((r) => inRound(r) && r.server === 'quotegate')!;
    cpu.push(app.cpu_us_per_req);
    if (bare) ratios.push(app.requests_per_s / bare.requests_per_s);
  }
  if (ratios.length === 0) continue;
  if (rounds === 1) console.log(`${c.name}: quotegate/bare = ${ratios[0]!.toFixed(3)}`);
  else console.log(`${c.name}: quotegate/bare = ${median(ratios).toFixed(3)} (median of ${rounds} rounds: ${ratios.map((r) => r.toFixed(3)).join(', ')}; CPU ${median(cpu)} us a request)`);
}
const out = path.join(projectRoot, 'bench', 'results');
fs.mkdirSync(out, { recursive: true });
const memory = later.map((l) => JSON.parse(l) as { peakRssMiB?: number; afterGc?: { rssMiB: number; heapUsedMiB: number } }).find((x) => x.peakRssMiB !== undefined);
const peakRssMiB = memory?.peakRssMiB ?? null;
fs.writeFileSync(
  path.join(out, `prices-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
  JSON.stringify({ scale: info.scale, cachePeakBytes, database: info.database, limiter: info.limiter, accounts: info.keys.length, seconds, sliceSeconds, warmupSeconds, connections, peakRssMiB, afterGc: memory?.afterGc ?? null, rows }, null, 2),
);
if (memory?.afterGc) {
  console.log(
    `servers' process (Quotegate and the bare server): peak RSS during the runs ${peakRssMiB} MiB; after a full collection at the end: RSS ${memory.afterGc.rssMiB} MiB, heap used ${memory.afterGc.heapUsedMiB} MiB`,
  );
}
// The profiles the servers wrote (BENCH_PROFILE): each one's path and its top 15 functions.
for (const line of later) {
  const { profile, heapProfile } = JSON.parse(line) as { profile?: string; heapProfile?: string };
  const file = profile ?? heapProfile;
  if (!file) continue;
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  const [label, unit, top] = profile ? ['CPU', 'self_ms', summarizeSelfTime(parsed)] : ['Allocation', 'MiB', summarizeAllocations(parsed)];
  console.log(`${label} profile of the servers: ${path.relative(process.cwd(), file)} (node --import tsx bench/profile-summary.ts <file> for more)`);
  console.table(top.slice(0, 15).map((r) => ({ [unit]: Math.round(r.ms), share: `${(r.share * 100).toFixed(1)}%`, function: r.name })));
}
