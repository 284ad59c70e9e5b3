/**
 * `npm run bench:collect`: the collector runner at full size on the PostgreSQL server, in one run:
 *
 * 1. serves locally a synthetic full csgotrader-like set (30,000 items x 7 markets, Buff163 ask and bid: 240,000 rows)
 *    and a 40,000-item market list (WAXPEER) through the bench's bulk sources (bench/collect-sources.ts);
 * 2. baseline: the same rows, validated and converted by the runner's own buffer beforehand (not timed), written by
 *    the bulk ingestion alone (`ingestBatch`, the runner's chunks) into a fresh database: rows per second; also, in the
 *    run itself, the share of its time spent in that same ingestion (drift of the machine's speed between the
 *    baseline and the run does not touch this one);
 * 3. runner: `quotegate collect --once` (compiled, as `npx quotegate` runs it) in a process of its own into another fresh database: fetch, stream parsing,
 *    validation, conversion, ingestion and scan completion; rows per second from its runs' own durations (not the
 *    process start), and the process's peak RSS (VmHWM, polled);
 * 4. `GET /prices` (one item) against a `quotegate serve` on that database, idle and while a second `collect --once`
 *    runs: p99 at a fixed offered rate (open loop, BENCH_P99_RATE, default a quarter of the idle saturated rate), and
 *    p99 at saturation (autocannon, 10 connections).
 * Targets (issue 42): runner >= 0.8x of the bulk rate, collector peak RSS <= 256 MiB, p99 during <= 1.2x idle.
 * BENCH_DATABASE_URL: the server (default postgresql://postgres@127.0.0.1:5432/postgres); databases
 * qg_bench_collect_* are created and dropped. Writes bench/results/collect-<time>.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import ts from 'typescript';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { ingestBatch, marketCatalogue } from '../src/quotes/ingestion.js';
import { createAccount } from '../src/accounts/accounts.js';
import { QuoteBuffer } from '../src/collectors/rows.js';
import { INGEST_CHUNK } from '../src/collectors/runner.js';
import { toMoney } from '../src/lib/money.js';
import { projectRoot } from '../src/lib/paths.js';
import { startUpstream } from '../test/collectors/upstream.js';
import { startServerProcess } from '../test/helpers/server.js';
import { NAMES_FILE } from './scale-data.js';
import { inspectorUrlOf, openInspector } from './inspector.js';
import { summarizeSelfTime, type CpuProfile } from './profile-summary.js';
import { benchBodies, sources } from './collect-sources.js';

const server = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ITEMS = 30_000;
/**
 * Node flags of the collector process (BENCH_COLLECT_NODE_FLAGS, space-separated; docs/collectors.md, Memory): by
 * default those of `npm run collect`: V8's heap growth held to a quarter past the live set (as `npm start` holds the
 * service's) and 4 MiB semi-spaces. `BENCH_COLLECT_NODE_FLAGS=none` runs it with V8's defaults.
 */
const flagsSetting = process.env.BENCH_COLLECT_NODE_FLAGS ?? '--heap-growing-percent=25 --max-semi-space-size=4';
const collectorFlags = flagsSetting === 'none' ? [] : flagsSetting.split(' ').filter(Boolean);
const LIST = 40_000;
/**
 * BENCH_COLLECT_CPUS: CPUs the collector process is pinned to (`taskset -c`, e.g. `0`), to emulate a collector on a
 * host of its own when the bench itself runs pinned elsewhere (`taskset -c 1 npm run bench:collect`; PostgreSQL pinned by
 * the operator). Unset: the scheduler places everything.
 */
const COLLECT_CPUS = process.env.BENCH_COLLECT_CPUS;
/** BENCH_PROFILE=1: CPU profiles of the service over the idle and the during loads at a fixed rate (diagnosis). */
const PROFILE = process.env.BENCH_PROFILE === '1';
/** Milliseconds from the collector's spawn to the loads measured during its collection. */
const START_MS = 1500;

async function freshDatabase(suffix: string): Promise<{ db: Database; url: string; drop: () => Promise<void> }> {
  const name = `qg_bench_collect_${suffix}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = await openDatabase({ url: url.toString() });
  await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * The bench's sources as plain JavaScript beside the compiled service (var/bench-collect-sources.mjs, importing
 * dist/), so the collector process runs as `npx quotegate collect` does: compiled, without tsx (whose loader alone
 * adds some 85 MiB to a process).
 */
function compiledSourcesModule(): string {
  const src = fs.readFileSync(path.join(projectRoot, 'bench', 'collect-sources.ts'), 'utf8');
  const js = ts
    .transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false } })
    .outputText.replace("'../src/collectors/source.js'", "'../dist/src/collectors/source.js'");
  const out = path.join(projectRoot, 'var', 'bench-collect-sources.mjs');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, js);
  return out;
}
const sourcesModule = compiledSourcesModule();

/** Peak resident set of a process (VmHWM, KiB), or 0 when it is gone. */
function peakRssKiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

interface CollectRun {
  source: string;
  outcome: string;
  rows: number;
  skipped: number;
  ms: number;
  phases_ms: { readMs: number; ingestMs: number; scanMs: number };
}

/** Runs `quotegate collect --once` on `url`; resolves with its runs and peak RSS when it exits. */
function collectOnce(url: string, upstream: string): { done: Promise<{ runs: CollectRun[]; peakMiB: number }>; started: Promise<void> } {
  const args = [...collectorFlags, path.join(projectRoot, 'dist/src/cli/collect.js'), 'collect', '--once', '--sources-module', sourcesModule, '--only', 'bench-csgotrader,bench-list'];
  const child = spawn(
    COLLECT_CPUS ? 'taskset' : process.execPath,
    COLLECT_CPUS ? ['-c', COLLECT_CPUS, process.execPath, ...args] : args,
    {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: url, COLLECTOR_BENCH_CSGOTRADER_URL: upstream, COLLECTOR_BENCH_LIST_URL: upstream, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let peak = 0;
  const poll = setInterval(() => (peak = Math.max(peak, peakRssKiB(child.pid!))), 100);
  let out = '';
  let onStart: () => void = () => {};
  const started = new Promise<void>((r) => (onStart = r));
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  // The process is working once its database is open and its first source is reading: compiled, that is well
  // within START_MS.
  setTimeout(() => onStart(), START_MS);
  const done = new Promise<{ runs: CollectRun[]; peakMiB: number }>((resolve, reject) => {
    child.once('exit', (code) => {
      clearInterval(poll);
      if (code !== 0) return reject(new Error(`collect exited with ${code}: ${out}`));
      const runs = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as CollectRun);
      resolve({ runs, peakMiB: peak / 1024 });
    });
  });
  return { done, started };
}

async function p99(url: string, key: string, itemName: string, seconds: number): Promise<{ p99: number; p50: number; rps: number; non2xx: number }> {
  const r = await autocannon({
    url: `${url}/prices?market_hash_name=${encodeURIComponent(itemName)}`,
    connections: 10,
    duration: seconds,
    headers: { authorization: `Bearer ${key}` },
  });
  return { p99: r.latency.p99, p50: r.latency.p50, rps: r.requests.average, non2xx: r.non2xx };
}

/** `GET /prices` of `itemName` at `rate` requests a second for `seconds`, open loop (bench/latency-at-rate.mjs, its own process). */
async function latencyAtRate(url: string, key: string, itemName: string, rate: number, seconds: number): Promise<{ p50: number; p99: number; max: number; rps: number; non2xx: number; slow: [number, number][] }> {
  const target = `${url}/prices?market_hash_name=${encodeURIComponent(itemName)}`;
  const child = spawn(process.execPath, [path.join(projectRoot, 'bench', 'latency-at-rate.mjs'), target, key, String(rate), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise<void>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`latency-at-rate exited with ${code}`)))));
  const r = JSON.parse(out) as { p50: number; p99: number; max: number; rps: number; non2xx: number; slow: [number, number][] };
  if (process.env.BENCH_P99_TRACE) console.log(`slow (>3 ms) requests, sent at ms:latency ms: ${r.slow.map(([t, l]) => `${t}:${l}`).join(' ')}`);
  return r;
}

const names = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
const itemNames = names.slice(0, ITEMS);
const listNames = [...names.slice(0, LIST), ...Array.from({ length: Math.max(0, LIST - names.length) }, (_, i) => `Bench Item ${i} (Field-Tested)`)].slice(0, LIST);
const bodies = benchBodies(itemNames, listNames);
const up = await startUpstream(bodies.map((b) => ({ path: b.path, body: b.body })));
console.log(`upstream: ${bodies.length} files, ${(bodies.reduce((a, b) => a + b.body.length, 0) / 1e6).toFixed(1)} MB, ${ITEMS} items x 7 markets + ${LIST} list items`);

/** 2. Baseline: the bulk ingestion alone on the same rows (made by the runner's buffer from the same sources' parsing). */
async function baseline(): Promise<{ rows: number; rate: number; seconds: number }> {
  const base = await freshDatabase('bulk');
  const [markets, rateRows] = await Promise.all([marketCatalogue(base.db), base.db.query<{ code: string; usd_rate: string }>(`SELECT code, usd_rate::text AS usd_rate FROM currency WHERE NOT is_deleted`)]);
  const rates = new Map(rateRows.map((r) => [r.code, toMoney(r.usd_rate)]));
  let rows = 0;
  let ms = 0;
  for (const source of sources) {
    const buffer = new QuoteBuffer({ markets, sourceMarkets: source.markets, usdRates: rates });
    const ctx = { baseUrl: up.url, credential: null, watchlist: [], signal: new AbortController().signal, now: new Date(), fetch: (p: string) => fetch(up.url + p) };
    for await (const row of source.collect(ctx)) buffer.add(row);
    const t0 = performance.now();
    for (const chunk of buffer.observations(source.providerCode, new Date(), INGEST_CHUNK)) await ingestBatch(base.db, chunk);
    ms += performance.now() - t0;
    rows += buffer.size;
  }
  await base.drop();
  return { rows, rate: rows / (ms / 1000), seconds: ms / 1000 };
}

// 2 and 3, alternated BENCH_ROUNDS times (default 2): this machine's speed drifts between minutes, so each round
// compares a baseline and a runner measured next to each other, and the median of the rounds is reported.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const rounds: { bulkRate: number; runnerRate: number; ratio: number; inRun: number; peakMiB: number; runs: CollectRun[] }[] = [];
let target = await freshDatabase('runner');
for (let round = 1; round <= ROUNDS; round++) {
  const b = await baseline();
  console.log(`round ${round}: bulk ingestion (ingestBatch, ${INGEST_CHUNK}-row chunks): ${b.rows} rows in ${b.seconds.toFixed(1)} s = ${Math.round(b.rate)} rows/s`);
  if (round > 1) {
    await target.drop();
    target = await freshDatabase('runner');
  }
  // 3. The runner in its own process.
  const r = await collectOnce(target.url, up.url).done;
  const rows = r.runs.reduce((a, x) => a + x.rows, 0);
  const ms = r.runs.reduce((a, x) => a + x.ms, 0);
  const rate = rows / (ms / 1000);
  for (const x of r.runs) {
    const p = x.phases_ms;
    console.log(`  ${x.source}: ${x.outcome}, ${x.rows} rows, ${x.skipped} skipped, ${(x.ms / 1000).toFixed(1)} s (read ${(p.readMs / 1000).toFixed(1)}, ingest ${(p.ingestMs / 1000).toFixed(1)}, scans ${(p.scanMs / 1000).toFixed(1)})`);
  }
  // The same comparison inside the run: its ingestion phase is ingestBatch on the same rows at the same moment.
  const ingestMs = r.runs.reduce((a, x) => a + x.phases_ms.ingestMs, 0);
  console.log(
    `round ${round}: runner (fetch + parse + validate + ingest + scans): ${rows} rows in ${(ms / 1000).toFixed(1)} s = ${Math.round(rate)} rows/s = ` +
      `${(rate / b.rate).toFixed(2)}x of the bulk rate measured before it, ${(ingestMs / ms).toFixed(2)}x of its own ingestion phase's rate; collector peak RSS ${r.peakMiB.toFixed(0)} MiB`,
  );
  rounds.push({ bulkRate: b.rate, runnerRate: rate, ratio: rate / b.rate, inRun: ingestMs / ms, peakMiB: r.peakMiB, runs: r.runs });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const ratio = median(rounds.map((r) => r.ratio));
const peakMiB = Math.max(...rounds.map((r) => r.peakMiB));
console.log(`runner / bulk ingestion: median ${ratio.toFixed(2)}x over ${ROUNDS} rounds (${rounds.map((r) => r.ratio.toFixed(2)).join(', ')}; target >= 0.8x)`);
console.log(`runner / its own ingestion phase: ${rounds.map((r) => r.inRun.toFixed(2)).join(', ')} (the share of a run spent ingesting)`);
console.log(`collector process peak RSS: ${peakMiB.toFixed(0)} MiB (target <= 256; node flags: ${collectorFlags.join(' ') || 'none'})`);

// 4. GET /prices p99, idle and during a collection.
const { key } = await createAccount(target.db, { credits: 100_000_000n });
const serve = await startServerProcess(
  { DATABASE_URL: target.url, QUOTEGATE_RATE_LIMITS: 'off', VALUATION_JOB: 'off', EXPORT_INTERVAL_SECONDS: '0', STATUS_PROBE_INTERVAL_SECONDS: '0', LOG_LEVEL: 'warn' },
  ['--import', path.join(projectRoot, 'bench', 'loop-delay-probe.mjs'), ...(PROFILE ? ['--inspect=127.0.0.1:0'] : [])],
);
const inspector = PROFILE ? await openInspector(inspectorUrlOf(serve.output())) : null;
/** BENCH_PROFILE=1: the service's CPU profile over `work` (the loads at a fixed rate), summarized and written to bench/results/. */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!inspector) return work();
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.setSamplingInterval', { interval: 100 });
  await inspector.post('Profiler.start');
  const r = await work();
  const { profile } = (await inspector.post('Profiler.stop')) as { profile: CpuProfile };
  const file = path.join(projectRoot, 'bench', 'results', `collect-serve-${name}-${Date.now()}.cpuprofile`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(profile));
  console.log(`service CPU profile, ${name}: ${file}`);
  for (const row of summarizeSelfTime(profile).slice(0, 15)) console.log(`  ${row.ms.toFixed(0).padStart(6)} ms ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.name}`);
  return r;
}
/** The service's event-loop delay since the previous call (bench/loop-delay-probe.mjs, read through SIGUSR2), in ms. */
async function loopDelay(): Promise<{ p50: number; p99: number; max: number }> {
  const lines = () => serve.output().split('\n').filter((l) => l.startsWith('loop-delay '));
  const before = lines().length;
  process.kill(serve.pid, 'SIGUSR2');
  while (lines().length === before) await new Promise((r) => setTimeout(r, 20));
  return JSON.parse(lines().at(-1)!.slice('loop-delay '.length)) as { p50: number; p99: number; max: number };
}
const item = itemNames[123]!;
// Two measurements of each: autocannon's closed loop at saturation (10 connections, as many requests as the service
// answers: its p99 is mostly queueing, and says how much CPU the collection takes from the service on this machine),
// and a fixed offered rate (BENCH_P99_RATE, default a quarter of the idle saturated rate: a replica with headroom, as one
// is run), the latency a client sees.
await p99(serve.url, key, item, 3); // warm-up
const idle = await p99(serve.url, key, item, SECONDS);
/** Seconds of each load during the collection (BENCH_DURING_SECONDS, default 3): both must end before it does. */
const DURING = Number(process.env.BENCH_DURING_SECONDS ?? 3);
const RATE = Number(process.env.BENCH_P99_RATE ?? Math.round(idle.rps / 4 / 100) * 100);
await loopDelay();
const idleAtRate = await profiled('idle', () => latencyAtRate(serve.url, key, item, RATE, DURING));
const idleLoop = await loopDelay();
const second = collectOnce(target.url, up.url);
await second.started;
await loopDelay();
const duringAtRate = await profiled('during', () => latencyAtRate(serve.url, key, item, RATE, DURING));
const duringLoop = await loopDelay();
const during = await p99(serve.url, key, item, DURING);
const r2 = await second.done;
const r2ms = r2.runs.reduce((a, r) => a + r.ms, 0);
console.log(`GET /prices idle, saturated (autocannon, 10 connections): p50 ${idle.p50} ms, p99 ${idle.p99} ms, ${Math.round(idle.rps)} req/s`);
console.log(`GET /prices idle, ${RATE} req/s offered (open loop): p50 ${idleAtRate.p50} ms, p99 ${idleAtRate.p99} ms, ${Math.round(idleAtRate.rps)} req/s, ${idleAtRate.non2xx} non-2xx`);
console.log(
  `GET /prices during a collection (${(r2ms / 1000).toFixed(1)} s of runs; the loads ran ${DURING} s each from ${START_MS / 1000} s after the collector's start): ` +
    `saturated p50 ${during.p50} ms, p99 ${during.p99} ms, ${Math.round(during.rps)} req/s = ${(during.p99 / Math.max(1, idle.p99)).toFixed(2)}x of idle p99; ` +
    `at ${RATE} req/s p50 ${duringAtRate.p50} ms, p99 ${duringAtRate.p99} ms, ${duringAtRate.non2xx} non-2xx = ${(duringAtRate.p99 / idleAtRate.p99).toFixed(2)}x of idle p99 (target <= 1.2x)`,
);
console.log(`service event-loop delay at ${RATE} req/s: idle p99 ${idleLoop.p99} ms (max ${idleLoop.max}), during p99 ${duringLoop.p99} ms (max ${duringLoop.max})`);
if (r2ms < START_MS + 2000 * DURING) console.log(`note: the collection ended ${((START_MS + 2000 * DURING - r2ms) / 1000).toFixed(1)} s before the loads did; lower BENCH_DURING_SECONDS`);
inspector?.close();
await serve.stop();
await up.close();
await target.drop();

const result = {
  at: new Date().toISOString(),
  collectorNodeFlags: collectorFlags,
  rounds: rounds.map((r) => ({ bulkRowsPerSecond: Math.round(r.bulkRate), runnerRowsPerSecond: Math.round(r.runnerRate), ratio: Number(r.ratio.toFixed(3)), inRunRatio: Number(r.inRun.toFixed(3)), peakRssMiB: Math.round(r.peakMiB), runs: r.runs })),
  ratio: Number(ratio.toFixed(3)),
  collectorPeakRssMiB: Math.round(peakMiB),
  pricesP99: {
    saturated: { idle: idle.p99, during: during.p99, ratio: Number((during.p99 / Math.max(1, idle.p99)).toFixed(3)) },
    atRate: { rate: RATE, idle: idleAtRate.p99, during: duringAtRate.p99, ratio: Number((duringAtRate.p99 / idleAtRate.p99).toFixed(3)) },
  },
};
fs.mkdirSync(path.join(projectRoot, 'bench', 'results'), { recursive: true });
fs.writeFileSync(path.join(projectRoot, 'bench', 'results', `collect-${Date.now()}.json`), JSON.stringify(result, null, 2));
process.exit(0);
