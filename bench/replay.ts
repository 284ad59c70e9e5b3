/**
 * `npm run bench:replay` (issue 41, point 5): what a client far behind costs the service. A real `quotegate serve`
 * (compiled, `npm start`'s node flags, production) over REPLAY_CHANGES (300,000) changes of 3,000 items with
 * quotes, on embedded PGlite (a fresh directory under var/) and on PostgreSQL (REPLAY_DATABASE_URL, default
 * database qg_replay on the local server, recreated); REPLAY_TARGETS=pglite or postgres runs one of them. Cases:
 *
 * - `nothing`: GET /prices/changes/stream from the first change with a filter that matches nothing (the stall of
 *   issue 41: no headers within 40 s, /health timing out, 2.9 GB RSS); ends when the replay gauge in /metrics
 *   falls back to 0;
 * - `everything`: the same without a filter, every change delivered (300,000 events read by this process);
 * - `feed`: GET /prices/changes from the first change with a filter that matches nothing, page after page to the end.
 *
 * Meanwhile /health is polled every 100 ms (2 s to answer) and the server's RSS read every 50 ms (/proc). The
 * server's event-loop delay is measured in the server itself by perf_hooks.monitorEventLoopDelay (1 ms resolution,
 * bench/loop-delay-probe.mjs, windows started and read through SIGUSR2). Prints per case: time to headers, duration,
 * event-loop delay p50/p99/max, RSS growth over the case's start, /health latency p50/p99/max and failures. Targets:
 * event-loop delay p99 <= 50 ms, RSS growth < 64 MiB, every /health answered. Writes bench/results/replay-*.json;
 * exit code 1 when a target is missed.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { createAccount } from '../src/accounts/accounts.js';
import { ingestBatch } from '../src/quotes/ingestion.js';
import type { QuoteObservation } from '../src/validation/ingest.js';
import { toMoney } from '../src/lib/money.js';
import { projectRoot } from '../src/lib/paths.js';
import { serviceNodeFlags } from '../scripts/build.mjs';
import { startServerProcess, type ServerProcess } from '../test/helpers/server.js';
import { seedChanges } from '../test/helpers/changes-seed.js';

const CHANGES = Number(process.env.REPLAY_CHANGES ?? 300_000);
const ITEMS = 3000;
const PREFIX = 'Replay bench item ';
const DB_URL = process.env.REPLAY_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/qg_replay';
const TARGETS = (process.env.REPLAY_TARGETS ?? 'pglite,postgres').split(',').map((s) => s.trim()) as ('pglite' | 'postgres')[];
const METRICS_TOKEN = 'replay-bench-metrics-token-0123456789';
const LOOP_P99_MS = 50;
const RSS_GROWTH_BYTES = 64 * 1024 * 1024;

const observation = (i: number): QuoteObservation => ({
  appId: '730',
  marketHashName: PREFIX + String(i).padStart(6, '0'),
  marketCode: 'BUFF163',
  providerCode: 'BUFF163',
  side: 'ask',
  currencyCode: 'CNY',
  price: toMoney('10.00'),
  quantity: 3,
  isQuantityMinimum: false,
  isAllItemsSamePrice: false,
  observedAt: new Date('2026-11-24T00:00:00Z'),
});

/** Percentile `p` (0-100) of `values` (nearest rank). */
function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/** A fresh database of `target` with the catalogue, 3,000 quoted items, CHANGES changes and an account; its server env. */
async function prepare(target: 'pglite' | 'postgres'): Promise<{ env: Record<string, string>; key: string; first: bigint }> {
  let db: Database;
  let env: Record<string, string>;
  if (target === 'postgres') {
    const admin = new URL(DB_URL);
    const name = admin.pathname.slice(1);
    admin.pathname = '/postgres';
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    db = await openDatabase({ url: DB_URL });
    env = { DATABASE_URL: DB_URL };
  } else {
    const dir = path.join(projectRoot, 'var', 'bench-replay-pglite');
    fs.rmSync(dir, { recursive: true, force: true });
    db = await openDatabase({ pgliteDir: dir });
    env = { PGLITE_DIR: dir };
  }
  await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
  await ingestBatch(db, Array.from({ length: ITEMS }, (_, i) => observation(i + 1)));
  const { key } = await createAccount(db, { credits: 1_000_000n });
  const started = performance.now();
  const { first } = await seedChanges(db, { prefix: PREFIX, items: ITEMS, changes: CHANGES });
  console.log(`${target}: ${CHANGES.toLocaleString('en')} changes seeded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await db.close();
  return { env, key, first };
}

interface CaseResult {
  case: string;
  headersMs: number | null;
  seconds: number;
  delivered?: number;
  loopDelayMs: { p50: number; p99: number; max: number; count: number };
  rssMiB: { start: number; peak: number; growth: number };
  healthMs: { count: number; p50: number; p99: number; max: number; failures: number };
}

/** Runs one case against `server`: the probes around `work`, which resolves with its time to headers and what it delivered. */
async function measure(server: ServerProcess, name: string, work: () => Promise<{ headersMs: number | null; delivered?: number }>): Promise<CaseResult> {
  await new Promise((r) => setTimeout(r, 500));
  const reportLine = () => server.output().split('\n').filter((l) => l.startsWith('loop-delay ')).length;
  const readLoop = async (): Promise<CaseResult['loopDelayMs']> => {
    const before = reportLine();
    process.kill(server.pid, 'SIGUSR2');
    for (let i = 0; i < 100 && reportLine() === before; i++) await new Promise((r) => setTimeout(r, 20));
    return JSON.parse(server.output().split('\n').filter((l) => l.startsWith('loop-delay ')).at(-1)!.slice('loop-delay '.length));
  };
  await readLoop(); // a new window starts here
  const start = rss(server.pid);
  let peak = start;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(server.pid))), 50);
  const health: number[] = [];
  let failures = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const t0 = performance.now();
      try {
        const res = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        if (res.status === 200) health.push(performance.now() - t0);
        else failures++;
      } catch {
        failures++;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - (performance.now() - t0))));
    }
  })();
  const t0 = performance.now();
  const done = await work();
  const seconds = (performance.now() - t0) / 1000;
  const loopDelayMs = await readLoop();
  polling = false;
  await poller;
  clearInterval(sampler);
  const result: CaseResult = {
    case: name,
    headersMs: done.headersMs === null ? null : Math.round(done.headersMs),
    seconds: Math.round(seconds * 10) / 10,
    ...(done.delivered !== undefined ? { delivered: done.delivered } : {}),
    loopDelayMs,
    rssMiB: { start: mib(start), peak: mib(peak), growth: mib(peak - start) },
    healthMs: { count: health.length, p50: Math.round(percentile(health, 50)), p99: Math.round(percentile(health, 99)), max: Math.round(Math.max(...health)), failures },
  };
  console.log(
    `  ${name.padEnd(10)} headers ${String(result.headersMs ?? '-').padStart(5)} ms, ${String(result.seconds).padStart(6)} s${done.delivered !== undefined ? `, ${done.delivered.toLocaleString('en')} events` : ''}; ` +
      `event-loop delay p50 ${loopDelayMs.p50} ms, p99 ${loopDelayMs.p99} ms, max ${loopDelayMs.max} ms; RSS +${result.rssMiB.growth} MiB (${result.rssMiB.start} -> ${result.rssMiB.peak}); ` +
      `/health p50 ${result.healthMs.p50} ms, p99 ${result.healthMs.p99} ms, max ${result.healthMs.max} ms, ${failures} failed of ${health.length + failures}`,
  );
  return result;
}

async function metric(server: ServerProcess, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

const results: Record<string, CaseResult[]> = {};
let ok = true;
for (const target of TARGETS) {
  const { env, key, first } = await prepare(target);
  const since = (first - 1n).toString();
  const auth = { Authorization: `Bearer ${key}` };
  const server = await startServerProcess(
    { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', METRICS_TOKEN, VALUATION_JOB: 'off', EXPORT_INTERVAL_SECONDS: '0', STATUS_PROBE_INTERVAL_SECONDS: '0' },
    [...serviceNodeFlags(), '--import', path.join(projectRoot, 'bench', 'loop-delay-probe.mjs')],
    { compiled: true },
  );
  const kill = () => void server.kill('SIGKILL');
  process.once('exit', kill);
  console.log(`${target}: serving at ${server.url}`);
  try {
    // Warm-up: a stream from now, opened and closed.
    const warm = new AbortController();
    await fetch(`${server.url}/prices/changes/stream`, { headers: auth, signal: warm.signal });
    warm.abort();
    const list: CaseResult[] = [];
    list.push(
      await measure(server, 'nothing', async () => {
        const ctl = new AbortController();
        const t0 = performance.now();
        const res = await fetch(`${server.url}/prices/changes/stream?since=${since}&market_hash_name=zz-no-such-item`, { headers: auth, signal: ctl.signal });
        const headersMs = performance.now() - t0;
        if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
        while ((await metric(server, 'quotegate_live_replays')) > 0) await new Promise((r) => setTimeout(r, 200));
        ctl.abort();
        return { headersMs };
      }),
    );
    list.push(
      await measure(server, 'everything', async () => {
        const ctl = new AbortController();
        const t0 = performance.now();
        const res = await fetch(`${server.url}/prices/changes/stream?since=${since}`, { headers: auth, signal: ctl.signal });
        const headersMs = performance.now() - t0;
        if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`);
        // Count events (`id:` lines) as they arrive; a line may be split between chunks.
        let delivered = 0;
        let tail = '';
        const decoder = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          const text = tail + decoder.decode(chunk, { stream: true });
          const lines = text.split('\n');
          tail = lines.pop()!;
          for (const l of lines) if (l.startsWith('id: ')) delivered++;
          if (delivered >= CHANGES) break;
        }
        ctl.abort();
        return { headersMs, delivered };
      }),
    );
    list.push(
      await measure(server, 'feed', async () => {
        let cursor = since;
        let pages = 0;
        for (;;) {
          const res = await fetch(`${server.url}/prices/changes?since=${cursor}&markets=SKINPORT`, { headers: auth });
          if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${await res.text()}`);
          const { data } = (await res.json()) as { data: { next_cursor: string; has_more: boolean } };
          pages++;
          cursor = data.next_cursor;
          if (!data.has_more) break;
        }
        console.log(`  feed: ${pages} pages to the end`);
        return { headersMs: null };
      }),
    );
    results[target] = list;
    for (const r of list) {
      const missed = r.loopDelayMs.p99 > LOOP_P99_MS || r.rssMiB.growth * 1048576 >= RSS_GROWTH_BYTES || r.healthMs.failures > 0;
      if (missed) {
        ok = false;
        console.log(`  ${r.case}: target missed (event-loop delay p99 <= ${LOOP_P99_MS} ms, RSS growth < 64 MiB, every /health answered)`);
      }
    }
  } finally {
    process.removeListener('exit', kill);
    await server.stop();
  }
}

const out = path.join(projectRoot, 'bench', 'results', `replay-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify({ changes: CHANGES, targets: results, ok }, null, 2));
console.log(`written ${path.relative(projectRoot, out)}`);
process.exit(ok ? 0 : 1);
