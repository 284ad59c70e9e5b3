/**
 * `npm run bench:collect:embedded`: GET latency on the README's default (embedded PGlite, collectors inside the
 * service, `npm start`) while the collectors ingest a full csgotrader set (30,000 items x 5 of csgotrader's files that the
 * `csgotrader_*` sources read: 180,000 rows), against the same service with COLLECTORS=off. On PGlite every statement runs on
 * the service's own thread, so what a collection costs the requests is measured here, not in `bench:collect`
 * (PostgreSQL server).
 *
 * 1. A PGlite directory with the catalogue and one account is made once and copied for each run (one process owns a
 *    directory).
 * 2. The synthetic csgotrader files of `bench:collect` (bench/collect-sources.ts `benchBodies`) are served locally; every
 *    source's and the exchange rates' base URL points there (the other sources' paths answer 404 at once: failed runs).
 * 3. Each run starts `quotegate serve` (compiled, as `npm start` runs it) and, from its start (or after WARM_UP_SECONDS
 *    of the same load), sends `GET /prices` of one item (quoted in both runs) at
 *    BENCH_EMBEDDED_RATE requests a second (default 300; open loop, bench/latency-at-rate.mjs) for BENCH_EMBEDDED_SECONDS
 *    (default 40) plus `GET /health` at 50 a second (no database, no billing: the event loop alone); then reads the
 *    service's event-loop delay and, in the collecting run, its collector runs from the log.
 * Prints p50, p99 and max of both, per run, and the per-second worst `GET /prices` latency of the collecting run.
 * Writes bench/results/collect-embedded-<time>.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { createAccount } from '../src/accounts/accounts.js';
import { ingestBatch } from '../src/quotes/ingestion.js';
import { obs } from '../test/helpers/app.js';
import { SOURCES } from '../src/collectors/registry.js';
import { projectRoot } from '../src/lib/paths.js';
import { startUpstream } from '../test/collectors/upstream.js';
import { startServerProcess } from '../test/helpers/server.js';
import { NAMES_FILE } from './scale-data.js';
import { benchBodies } from './collect-sources.js';

const RATE = Number(process.env.BENCH_EMBEDDED_RATE ?? 300);
const SECONDS = Number(process.env.BENCH_EMBEDDED_SECONDS ?? 40);

interface Latency {
  p50: number;
  p99: number;
  max: number;
  rps: number;
  non2xx: number;
  slow: [number, number][];
}

/** `GET url` at `rate` a second for `seconds` (bench/latency-at-rate.mjs in its own process). */
function latencyAtRate(url: string, key: string, rate: number, seconds: number): Promise<Latency> {
  const child = spawn(process.execPath, [path.join(projectRoot, 'bench', 'latency-at-rate.mjs'), url, key, String(rate), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Latency) : reject(new Error(`latency-at-rate exited with ${code}`)))),
  );
}

const names = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
const up = await startUpstream(benchBodies(names.slice(0, 30_000), names.slice(0, 40_000)).map((b) => ({ path: b.path, body: b.body })));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-bench-embedded-'));
const template = path.join(work, 'template');
const seed = await openDatabase({ pgliteDir: template });
await importCatalogue(seed.prisma, path.join(projectRoot, 'data'));
const { key } = await createAccount(seed, { credits: 100_000_000n });
const item = names[123]!;
// The item asked for has quotes before any collection (a Steam ask of the bundled data's kind), so both runs answer 200.
await ingestBatch(seed, [obs(item, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '12.34', observedAt: new Date() })]);
await seed.close();
/**
 * Seconds of GETs after the service's start before the measured ones (BENCH_EMBEDDED_WARM_UP_SECONDS, default 0: the
 * collection begins with the service, so a warm-up would hide its first seconds; the idle run pays the same start).
 */
const WARM_UP_SECONDS = Number(process.env.BENCH_EMBEDDED_WARM_UP_SECONDS ?? 0);

async function run(collectors: boolean): Promise<{ prices: Latency; health: Latency; loop: { p99: number; max: number }; runs: { source: string; rows: number; ms: number; end: number }[] }> {
  const dir = path.join(work, collectors ? 'collecting' : 'idle');
  fs.cpSync(template, dir, { recursive: true });
  const env: Record<string, string> = {
    PGLITE_DIR: dir,
    COLLECTORS: collectors ? 'on' : 'off',
    COLLECTOR_ECB_URL: up.url,
    COLLECTOR_CSGOTRADER_URL: up.url,
    QUOTEGATE_RATE_LIMITS: 'off',
    VALUATION_JOB: 'off',
    EXPORT_INTERVAL_SECONDS: '0',
    STATUS_PROBE_INTERVAL_SECONDS: '0',
    LOG_LEVEL: 'info',
  };
  for (const s of SOURCES) env[`COLLECTOR_${s.id.toUpperCase()}_URL`] = up.url;
  const serve = await startServerProcess(env, ['--import', path.join(projectRoot, 'bench', 'loop-delay-probe.mjs')], { compiled: true });
  try {
    if (WARM_UP_SECONDS > 0) await latencyAtRate(`${serve.url}/prices?market_hash_name=${encodeURIComponent(item)}`, key, RATE, WARM_UP_SECONDS);
    const [prices, health] = await Promise.all([
      latencyAtRate(`${serve.url}/prices?market_hash_name=${encodeURIComponent(item)}`, key, RATE, SECONDS),
      latencyAtRate(`${serve.url}/health`, key, 50, SECONDS),
    ]);
    const lines = () => serve.output().split('\n').filter((l) => l.startsWith('loop-delay '));
    const before = lines().length;
    process.kill(serve.pid, 'SIGUSR2');
    while (lines().length === before) await new Promise((r) => setTimeout(r, 20));
    const loop = JSON.parse(lines().at(-1)!.slice('loop-delay '.length)) as { p99: number; max: number };
    const runs: { source: string; rows: number; ms: number; end: number }[] = [];
    for (const l of serve.output().split('\n')) {
      if (!l.includes('"msg":"collector run ok"')) continue;
      const r = JSON.parse(l) as { source: string; rows: number; ms: number; time: number };
      if (r.rows > 0) runs.push({ source: r.source, rows: r.rows, ms: r.ms, end: r.time });
    }
    return { prices, health, loop, runs };
  } finally {
    await serve.stop();
  }
}

const idle = await run(false);
const during = await run(true);
await up.close();
fs.rmSync(work, { recursive: true, force: true });

const line = (l: Latency) => `p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms, ${Math.round(l.rps)} req/s, ${l.non2xx} non-2xx`;
console.log(`GET /prices at ${RATE} req/s for ${SECONDS} s, embedded PGlite, from ${WARM_UP_SECONDS} s after the service's start:`);
console.log(`  collectors off:             ${line(idle.prices)}`);
console.log(`  collecting (in the service): ${line(during.prices)}`);
console.log(`GET /health at 50 req/s: off ${line(idle.health)}; collecting ${line(during.health)}`);
console.log(`service event-loop delay: off p99 ${idle.loop.p99} ms (max ${idle.loop.max}); collecting p99 ${during.loop.p99} ms (max ${during.loop.max})`);
const rows = during.runs.reduce((a, r) => a + r.rows, 0);
// Runs overlap (COLLECTOR_CONCURRENCY sources at once): the collection's wall time is from the first run's start to the last one's end.
const ms = during.runs.length === 0 ? 0 : Math.max(...during.runs.map((r) => r.end)) - Math.min(...during.runs.map((r) => r.end - r.ms));
console.log(`collector runs while serving: ${during.runs.map((r) => `${r.source} ${r.rows} rows ${(r.ms / 1000).toFixed(1)} s`).join('; ')}; ${rows} rows in ${(ms / 1000).toFixed(1)} s of wall time = ${Math.round(rows / (ms / 1000))} rows/s`);
if (ms / 1000 < SECONDS / 2) console.log('note: the collection was over before half of the load; raise the set or lower BENCH_EMBEDDED_SECONDS');
const perSecond = new Map<number, number>();
for (const [t, l] of during.prices.slow) perSecond.set(Math.floor(t / 1000), Math.max(perSecond.get(Math.floor(t / 1000)) ?? 0, l));
console.log(`worst GET /prices latency per second of the collecting run (ms, only seconds with one over 3 ms): ${[...perSecond].map(([s, l]) => `${s}s:${Math.round(l)}`).join(' ')}`);
const strip = (l: Latency) => ({ p50: l.p50, p99: l.p99, max: l.max, rps: Math.round(l.rps), non2xx: l.non2xx });
fs.mkdirSync(path.join(projectRoot, 'bench', 'results'), { recursive: true });
fs.writeFileSync(
  path.join(projectRoot, 'bench', 'results', `collect-embedded-${Date.now()}.json`),
  JSON.stringify({ at: new Date().toISOString(), rate: RATE, seconds: SECONDS, idle: { prices: strip(idle.prices), health: strip(idle.health), loop: idle.loop }, collecting: { prices: strip(during.prices), health: strip(during.health), loop: during.loop, runs: during.runs } }, null, 2),
);
