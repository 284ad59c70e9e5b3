/**
 * Requests while the export builds (issue 41, point 6), part of `npm run bench:export` (bench/export.ts); run alone
 * with `EXPORT_BENCH_ONLY=probe npm run bench:export`.
 *
 * For each database (embedded PGlite in BENCH_PROBE_PGLITE_DIR, default var/bench-export-pglite; PostgreSQL at
 * BENCH_PROBE_DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/qg_bench_export): the bundled data with
 * its CSCP valuation (loaded once), the stored item texts deleted, then the service started as `npm start` runs it
 * (compiled, its node flags) with EXPORT_INTERVAL_SECONDS=BENCH_PROBE_INTERVAL (default 20): its export job builds at
 * start (every item written: no stored text) and again after the interval (nothing changed: the build a fresh
 * install makes every 5 minutes), on PostgreSQL in a child process as in production, on PGlite in the service.
 * A probe sends GET /me with an API key every BENCH_PROBE_EVERY_MS (default 75) without waiting for the previous
 * answer (open loop: a stall shows in every request it holds up). A probe counts as "during a build" when it was
 * in flight at any moment between a build's start and end (the job's `export snapshots built` log line: its end
 * time and duration). Prints, per database and build, the probes' count, p50, p99 and max, and the same for the
 * probes outside the builds. BENCH_PROBE_DATABASES=pglite (or postgres) runs one of the two. The service writes its
 * log to a file (bench/results/export-probe-service-<pid>.log, removed at the end), not to a pipe this process reads.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { serviceNodeFlags } from '../scripts/build.mjs';
import { openDatabase, type Database, type DatabaseTarget } from '../src/db/client.js';
import { createAccount } from '../src/accounts/accounts.js';
import { importPath, isEmpty } from '../src/collectors/importers.js';
import { catchUpDate } from '../src/valuation/daily.js';
import { runValuationJob } from '../src/jobs/valuation.js';
import { projectRoot } from '../src/lib/paths.js';
import { spawn } from 'node:child_process';

/** Latency figures of a set of probes, in milliseconds. */
export interface ProbeFigures {
  count: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  /** Probes that failed (no answer within 60 s, or not 200). */
  failed: number;
}

/** What one database's run measured. */
export interface ProbeRun {
  database: 'pglite' | 'postgres';
  catalogue: { items: number; quotes: number };
  builds: { ms: number; items_written: 'every item' | 'none changed'; probes: ProbeFigures }[];
  outside_builds: ProbeFigures;
}

const everyMs = Number(process.env.BENCH_PROBE_EVERY_MS ?? 75);
const interval = Number(process.env.BENCH_PROBE_INTERVAL ?? 20);

function figures(samples: { ms: number; ok: boolean }[]): ProbeFigures {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const at = (q: number) => (ms.length === 0 ? null : Math.round(ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]!));
  return { count: ms.length, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: ms.length ? Math.round(ms[ms.length - 1]!) : null, failed: samples.filter((s) => !s.ok).length };
}

/** Loads the bundled data and its valuation into an empty database (once; minutes on PGlite). */
async function prepare(db: Database): Promise<void> {
  if (!(await isEmpty(db))) return;
  console.error('probe bench: loading the bundled data (once)');
  await importPath(db, path.join(projectRoot, 'data'));
  const date = await catchUpDate(db, new Date());
  if (date) await runValuationJob(db, date);
}

/** Runs the probe against one database; see the module doc. */
export async function probeDuringBuilds(target: DatabaseTarget): Promise<ProbeRun> {
  if ('url' in target) {
    const admin = new pg.Client({ connectionString: new URL('/postgres', target.url).toString() });
    await admin.connect();
    const name = new URL(target.url).pathname.slice(1);
    if ((await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name])).rowCount === 0) await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
  } else {
    fs.mkdirSync(target.pgliteDir, { recursive: true });
  }
  const db = await openDatabase(target);
  await prepare(db);
  const [catalogue] = await db.query<{ items: number; quotes: number }>(`SELECT (SELECT count(*)::int FROM item) AS items, (SELECT count(*)::int FROM source_quote) AS quotes`);
  const { key } = await createAccount(db, { credits: 1_000_000n });
  // The first build writes every item (no stored text), as the first build of an install does. The table is
  // emptied by a rewrite: deleted rows would stay behind on PGlite, which has no autovacuum, and every run adds one
  // full set of them.
  await db.query(`DELETE FROM export_fragment`);
  await db.query(`VACUUM FULL export_fragment`);
  const kind = db.kind;
  await db.close();

  const env: Record<string, string> = {
    EXPORT_INTERVAL_SECONDS: String(interval),
    VALUATION_JOB: 'off',
    STATUS_PROBE_INTERVAL_SECONDS: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    ...('url' in target ? { DATABASE_URL: target.url } : { PGLITE_DIR: target.pgliteDir }),
  };
  const server = await startService(env);
  const samples: { start: number; end: number; ms: number; ok: boolean }[] = [];
  // The builds logged so far, read from the service's output as it grows (only the new lines: rescanning all of it
  // every 75 ms cost this process enough CPU to delay the probes' answers it measures).
  const done: { end: number; ms: number }[] = [];
  let partial = '';
  const builds = (): { end: number; ms: number }[] => {
    const text = partial + server.newOutput();
    const end = text.lastIndexOf('\n') + 1;
    partial = text.slice(end);
    for (const line of text.slice(0, end).split('\n')) {
      if (!line.includes('"export snapshots built"')) continue;
      const l = JSON.parse(line) as { time: number; ms: number };
      done.push({ end: l.time, ms: l.ms });
    }
    return done;
  };
  const inFlight = new Set<Promise<void>>();
  const deadline = Date.now() + 15 * 60_000;
  try {
    while (builds().length < 2 && Date.now() < deadline) {
      const start = Date.now();
      const t0 = performance.now();
      const p = fetch(`${server.url}/me`, { headers: { 'X-API-Key': key }, signal: AbortSignal.timeout(60_000) })
        .then(async (r) => {
          await r.arrayBuffer();
          return r.status === 200;
        })
        .catch(() => false)
        .then((ok) => {
          samples.push({ start, end: Date.now(), ms: performance.now() - t0, ok });
        });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      await new Promise((r) => setTimeout(r, everyMs));
    }
    await Promise.all(inFlight);
  } finally {
    await server.stop();
  }
  builds();
  const tail = server.output().slice(-2000);
  if (!process.env.BENCH_KEEP_LOG) server.removeLog();
  if (done.length < 2) throw new Error(`probe bench (${kind}): fewer than 2 export builds within 15 minutes:\n${tail}`);
  const windows = done.slice(0, 2).map((b) => ({ from: b.end - b.ms, to: b.end, ms: b.ms }));
  const during = (w: { from: number; to: number }) => samples.filter((s) => s.start <= w.to && s.end >= w.from);
  return {
    database: kind,
    catalogue: catalogue!,
    builds: windows.map((w, i) => ({ ms: w.ms, items_written: i === 0 ? 'every item' : 'none changed', probes: figures(during(w)) })),
    outside_builds: figures(samples.filter((s) => windows.every((w) => !(s.start <= w.to && s.end >= w.from)))),
  };
}

/**
 * Starts `quotegate serve` (compiled, `npm start`'s node flags) with `env` added, its output going to a file: on
 * Linux a child writes to a pipe synchronously, so a pipe this process read late would stall the service it measures.
 * Resolves once it listens.
 */
async function startService(env: Record<string, string>): Promise<{ url: string; output(): string; newOutput(): string; stop(): Promise<void>; removeLog(): void }> {
  const dir = path.join(projectRoot, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, `export-probe-service-${process.pid}.log`);
  const fd = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, [...serviceNodeFlags(), path.join(projectRoot, 'dist/src/cli/main.js'), 'serve'], {
    cwd: projectRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', QUOTEGATE_AUTOLOAD: 'false', ...env },
    stdio: ['ignore', fd, fd],
  });
  fs.closeSync(fd);
  const output = () => fs.readFileSync(logFile, 'utf8');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let url: string | null = null;
  for (let i = 0; i < 1200 && url === null; i++) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}:\n${output().slice(-2000)}`);
    const m = /GraphiQL: (http:\/\/\S+)\/graphql/.exec(output());
    if (m) url = m[1]!.replace('localhost', '127.0.0.1');
    else await new Promise((r) => setTimeout(r, 250));
  }
  if (url === null) throw new Error(`the service did not listen within 5 minutes:\n${output().slice(-2000)}`);
  let offset = 0;
  return {
    url,
    output,
    /** The output written since the last call (read from where that one stopped). */
    newOutput() {
      const fdr = fs.openSync(logFile, 'r');
      try {
        const size = fs.fstatSync(fdr).size;
        const buf = Buffer.alloc(Math.max(0, size - offset));
        const n = fs.readSync(fdr, buf, 0, buf.length, offset);
        offset += n;
        return buf.subarray(0, n).toString('utf8');
      } finally {
        fs.closeSync(fdr);
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    removeLog: () => fs.rmSync(logFile, { force: true }),
  };
}

/** The targets of the probe bench (module doc): both, or those BENCH_PROBE_DATABASES names (`pglite`, `postgres`). */
export function probeTargets(): DatabaseTarget[] {
  const only = (process.env.BENCH_PROBE_DATABASES ?? 'pglite,postgres').split(',').map((s) => s.trim());
  return [
    ...(only.includes('pglite') ? [{ pgliteDir: process.env.BENCH_PROBE_PGLITE_DIR ?? path.join(projectRoot, 'var', 'bench-export-pglite') }] : []),
    ...(only.includes('postgres') ? [{ url: process.env.BENCH_PROBE_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/qg_bench_export' }] : []),
  ];
}
