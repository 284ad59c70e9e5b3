/**
 * `npm run -s bench:compare -- <other checkout>`: this checkout's service against another checkout's (e.g. a
 * `git worktree` of the previous commit, built with `node scripts/build.mjs`), both running at once, the load
 * switched between them every few seconds so a drift of the machine's speed (2x between minutes on the 2-vCPU
 * bench machine) falls on both alike. Tells a change of 5 % apart, which `npm run bench` run twice cannot.
 * Each side is that checkout's own bench/servers.ts (its compiled dist, the bundled data, its own accounts) in
 * its own process with the service's node flags. Prints, per side, requests per second and the servers' CPU time
 * per request over all slices, and their quotient (this / other): below 1, this checkout is cheaper; then the median
 * of the slice pairs' quotients, which a few slow slices do not move.
 * Options (env): BENCH_CASES (one case: `get-subscription` (default), `get-billed`), BENCH_SLICES (default 8 per
 * side, after BENCH_WARMUP slices (default 3) not counted: the first seconds of a fresh process run unoptimized code
 * at 2-5x the CPU per request), BENCH_SLICE_SECONDS (default 2), BENCH_CONNECTIONS (default 50), DATABASE_URL, REDIS_URL (as bench/prices.ts),
 * BENCH_THIS_NODE_FLAGS (extra node/V8 flags for this side only, space-separated: with the other checkout the same
 * directory, it compares flags, e.g. `--max-semi-space-size=64`), BENCH_RATE (requests per second per slice, all
 * connections together: a fixed load below either side's limit, so the CPU per request is measured on a machine
 * that is not saturated, where two processes and the load generator do not fight over its 2 vCPUs; default: as fast
 * as each side answers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { serversArgs, serversCpuMicros } from './servers-process.js';
import { serviceEnv } from '../scripts/build.mjs';
import { projectRoot } from '../src/lib/paths.js';

const other = process.argv[2];
if (!other) {
  console.error('usage: npm run -s bench:compare -- <other checkout directory>');
  process.exit(2);
}
const caseId = process.env.BENCH_CASES ?? 'get-subscription';
if (caseId !== 'get-subscription' && caseId !== 'get-billed') throw new Error(`BENCH_CASES must be get-subscription or get-billed, not ${caseId}`);
const slices = Number(process.env.BENCH_SLICES ?? 8);
const warmup = Number(process.env.BENCH_WARMUP ?? 3);
const sliceSeconds = Number(process.env.BENCH_SLICE_SECONDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const rate = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;

interface Side {
  name: string;
  child: ChildProcess;
  info: { app: number; cpu: number; keys: string[]; subscriptionKeys: string[]; single: string };
  requests: number;
  cpuMicros: number;
  seconds: number;
}

/** Starts `root`'s bench servers and waits for their first JSON line. */
async function start(name: string, root: string, extraFlags: string[] = []): Promise<Side> {
  // BENCH_PIN=1: the servers on the machine's second CPU, this process (the load generator, run under `taskset -c 0`) on the first.
  const pinned = process.env.BENCH_PIN === '1';
  const child = spawn(pinned ? 'taskset' : process.execPath, [...(pinned ? ['-c', '1', process.execPath] : []), ...serversArgs(root, extraFlags)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...serviceEnv(), NODE_ENV: 'production' },
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const info = await new Promise<Side['info']>((resolve, reject) => {
    lines.once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`${name}: bench servers exited with ${code}`)));
  });
  return { name, child, info, requests: 0, cpuMicros: 0, seconds: 0 };
}

const cpuNow = (side: Side) => serversCpuMicros(side.info.cpu);

/** One slice of load on `side`; adds its requests, CPU time and duration unless `counted` is false (warm-up). */
async function slice(side: Side, keys: string[], counted = true): Promise<{ rps: number; cpuPerReq: number }> {
  const before = await cpuNow(side);
  let next = 0;
  const r = await autocannon({
    url: `http://127.0.0.1:${side.info.app}`,
    connections,
    duration: sliceSeconds,
    ...(rate ? { overallRate: rate } : {}),
    requests: [{ method: 'GET', path: side.info.single, setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'X-API-Key': keys[next++ % keys.length]! } }) }],
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${side.name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  const cpu = (await cpuNow(side)) - before;
  if (!counted) return { rps: 0, cpuPerReq: 0 };
  side.requests += r.requests.total;
  side.cpuMicros += cpu;
  side.seconds += sliceSeconds;
  return { rps: r.requests.total / sliceSeconds, cpuPerReq: cpu / r.requests.total };
}

// One after the other: each loads the bundled data and creates its accounts in the shared database.
const mine = await start('this', projectRoot, (process.env.BENCH_THIS_NODE_FLAGS ?? '').split(' ').filter(Boolean));
const theirs = await start('other', path.resolve(other));
const keysOf = (s: Side) => (caseId === 'get-billed' ? s.info.keys : s.info.subscriptionKeys);
const perSlice: { slice: number; side: string; rps: number; cpu_us_per_req: number }[] = [];
try {
  for (let i = 0; i < warmup; i++) for (const side of [mine, theirs]) await slice(side, keysOf(side), false);
  for (let i = 0; i < slices; i++) {
    // Alternate which side goes first, so neither always follows the other's garbage.
    for (const side of i % 2 === 0 ? [mine, theirs] : [theirs, mine]) {
      const s = await slice(side, keysOf(side));
      perSlice.push({ slice: i + 1, side: side.name, rps: Math.round(s.rps), cpu_us_per_req: Math.round(s.cpuPerReq) });
    }
  }
} finally {
  mine.child.kill('SIGTERM');
  theirs.child.kill('SIGTERM');
}
console.table(perSlice);
const summary = [mine, theirs].map((s) => ({ side: s.name, requests_per_s: Math.round(s.requests / s.seconds), cpu_us_per_req: Math.round((10 * s.cpuMicros) / s.requests) / 10 }));
console.table(summary);
const [a, b] = summary as [(typeof summary)[number], (typeof summary)[number]];
console.log(
  `${caseId}: this/other CPU per request = ${(a.cpu_us_per_req / b.cpu_us_per_req).toFixed(3)}, requests per second = ${(a.requests_per_s / b.requests_per_s).toFixed(3)} (${other})`,
);
// One slice that ran slow (a full collection on one side, a busy second of the machine) moves the totals above.
// Each slice's pair (the two sides run one after the other) shares its moment, so the median of the pairs'
// quotients sets such slices aside.
const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const pairs = Array.from({ length: slices }, (_, i) => {
  const of = (name: string) => perSlice.find((p) => p.slice === i + 1 && p.side === name)!;
  return { cpu: of('this').cpu_us_per_req / of('other').cpu_us_per_req, rps: of('this').rps / of('other').rps };
});
console.log(
  `${caseId}: median of the ${slices} slice pairs: this/other CPU per request = ${median(pairs.map((p) => p.cpu)).toFixed(3)}, requests per second = ${median(pairs.map((p) => p.rps)).toFixed(3)}`,
);
