/**
 * `npm run bench`: GET /prices (one item) and POST /prices/batch (1,000 names) on the bundled data,
 * each against a bare node:http server returning the same bytes, in the same run (autocannon, loopback only).
 * Quotegate requests run the full pipeline (auth, rate limit, credit check, charge), spread over many
 * accounts (see bench/servers.ts); a second GET case uses subscription accounts (no charge write).
 * Options (env): BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50; batch uses a fifth),
 * BENCH_ROUNDS (default 1: each case that many times, interleaved, a case's rounds at least a minute apart so its accounts' rate-limit windows are clear; the median ratio), BENCH_ACCOUNTS (default 3,000: 120 requests a minute each, room for 27,000 requests a second in a 10 s run and its 3 s warm-up (2,000 until the subscription GET passed 24,000 a second with rate-limit leases and its accounts ran into their limit); more accounts made the billed case slower: at 9,000 it ran at 6,000 req/s against 15,000 with 3,000, while each account's lease reservation was a statement of its own, queued behind the others; they go in batches since d704334, not measured at 9,000 since), DATABASE_URL (bench a PostgreSQL server instead of embedded PGlite),
 * REDIS_URL (rate limits in Redis), BENCH_CASES (comma-separated: only the cases whose id is one of them,
 * `get-billed`, `get-subscription`, `batch-billed`, or whose name contains one, e.g. `subscription`), BENCH_PROFILE=1 (only Quotegate is loaded, no bare runs and so no ratios,
 * and the servers write a CPU profile of the run: its path and top self-time functions are printed, see
 * bench/profile-summary.ts), BENCH_PROFILE=heap (the same, with a sampling allocation profile: bytes allocated per function),
 * BENCH_NODE_FLAGS (extra node/V8 flags for the servers' process, space-separated, e.g. `--single-threaded-gc`),
 * BENCH_WARMUP_SECONDS (default 3; 0 = none): before every measured run, the same load unmeasured, so each run sees
 * the process as a service under steady load has it: optimized code, V8's young generation grown to its size under
 * load, the accounts' cached keys, credit leases and rate-limit grants current (a round starts a minute after the
 * last one, when all of those have lapsed at once for all 6,000 accounts, which steady traffic never does). Without
 * it the first case measured paid the process's warm-up, and later rounds the lapse: 10-25 us more CPU a request.
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
import { projectRoot } from '../src/lib/paths.js';
import { summarizeAllocations, summarizeSelfTime } from './profile-summary.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);

// The servers run with the heap flags `npm start` gives the service (package.json, README: Operations).
const child = spawn(process.execPath, serversArgs(projectRoot, (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)), {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, NODE_ENV: 'production' },
});
const lines = readline.createInterface({ input: child.stdout! });
const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
// Lines after the first: the profile path when BENCH_PROFILE=1.
const later: string[] = [];
const info: { app: number; bare: number; cpu: number; keys: string[]; subscriptionKeys: string[]; limiter: string; single: string; batchBody: string; database: string; singleBytes: number; batchBytes: number } =
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
}

async function load(name: string, server: 'quotegate' | 'bare', opts: { path: string; method: 'GET' | 'POST'; body?: string; connections: number; keys: string[] }): Promise<Row> {
  const port = server === 'quotegate' ? info.app : info.bare;
  let next = 0;
  const run = (duration: number) =>
    autocannon({
      url: `http://127.0.0.1:${port}`,
      connections: opts.connections,
      duration,
      requests: [
        {
          method: opts.method,
          path: opts.path,
          body: opts.body,
          // Each request carries the next account's key, round robin.
          setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'Content-Type': 'application/json', 'X-API-Key': opts.keys[next++ % opts.keys.length]! } }),
        },
      ],
    });
  if (warmupSeconds > 0) await run(warmupSeconds);
  const cpuNow = () => serversCpuMicros(info.cpu);
  const cpuBefore = await cpuNow();
  const clientBefore = process.cpuUsage();
  const storesBefore = storeCpuMicros();
  const r = await run(seconds);
  const client = process.cpuUsage(clientBefore);
  const stores = storeCpuSince(storesBefore);
  const cpuMicros = (await cpuNow()) - cpuBefore;
  const perRequest = (micros: number) => Math.round(micros / Math.max(1, r.requests.total));
  return {
    case: name,
    server,
    requests_per_s: r.requests.average,
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    cpu_us_per_req: perRequest(cpuMicros),
    client_cpu_us_per_req: perRequest(client.user + client.system),
    pg_cpu_us_per_req: perRequest(stores['postgres'] ?? 0),
    redis_cpu_us_per_req: perRequest(stores['redis-server'] ?? 0),
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

const rows: Row[] = [];
const only = (process.env.BENCH_CASES ?? '').split(',').map((w) => w.trim()).filter((w) => w !== '');
const allCases = [
  { id: 'get-billed', name: 'GET /prices (1 item), billed', path: info.single, method: 'GET' as const, connections, keys: info.keys },
  { id: 'get-subscription', name: 'GET /prices (1 item), subscription', path: info.single, method: 'GET' as const, connections, keys: info.subscriptionKeys },
  { id: 'batch-billed', name: 'POST /prices/batch (1000 names), billed', path: '/prices/batch', method: 'POST' as const, body: info.batchBody, connections: Math.max(1, Math.round(connections / 5)), keys: info.keys },
];
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
    for (const server of servers) rows.push({ ...(await load(c.name, server, c)), ...(rounds > 1 ? { round } : {}) });
  }
}
child.kill('SIGTERM');
const code = await exited;
if (code !== 0) console.error(`bench servers exited with ${code}`);

console.log(`database: ${info.database}; rate limits: ${info.limiter}; accounts: ${info.keys.length} billed + ${info.subscriptionKeys.length} subscription; ${seconds}s per run; response sizes: single ${info.singleBytes} B, batch ${info.batchBytes} B`);
console.table(rows);
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
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
  JSON.stringify({ database: info.database, limiter: info.limiter, accounts: info.keys.length, seconds, connections, peakRssMiB, afterGc: memory?.afterGc ?? null, rows }, null, 2),
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
