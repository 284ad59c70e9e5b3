/**
 * The export snapshot job: builds every app id and side at start and then every `intervalSeconds`
 * (runs never overlap; across replicas the database lock lets one build at a time, the others skip).
 * The builder also prunes the change sequence to its kept window (quotes/changes.ts `pruneChanges`).
 *
 * On a PostgreSQL server each build runs in a child process (`quotegate export build`, see `ExportChild`), so the
 * build neither adds its garbage and collector pauses to the serving process nor pays the service's heap flags:
 * `npm start` runs the service with `--heap-growing-percent=50` to keep its RSS low under load, and under such a
 * flag (25 then) the full-scale `side=all` build spent much of its time collecting garbage (docs/benchmarks.md,
 * bench:export). The child publishes through the database like any replica: its `qg_exports`
 * signal reaches this process's snapshot cache. On embedded PGlite the database lives in this process, so the
 * build runs here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { pruneChanges } from '../quotes/changes.js';
import { runExportSnapshots } from '../exports/exports.js';
import { recordJobRun } from '../status/status.js';
import { startRepeatingJob, type RepeatingJob } from './repeat.js';

/** How to run `quotegate export build` in a child: node's path and the arguments before the command (flags, the CLI script). */
export interface ExportChild {
  execPath: string;
  /** Node flags and the CLI entry script, e.g. `['--import', 'tsx', 'src/cli/main.ts']`; see `exportChildArgs`. */
  args: string[];
}

/** The scheduling priority (nice, 0-19) of an export build child: below the service's, which serves requests meanwhile. */
const EXPORT_CHILD_NICE = 10;

/** Node flags the service's process has that an export build child does not take (see the module doc). */
const SERVICE_ONLY_FLAGS = ['--heap-growing-percent', '--max-semi-space-size', '--max-old-space-size', '--no-allocation-site-pretenuring'];

/**
 * The node arguments of an export build child, from the service's own (`process.execArgv`) and its CLI script: the
 * service's heap flags dropped, V8's old generation capped at `heapMb` MiB (0: no cap). bench/export.ts times the
 * build with the same arguments.
 */
export function exportChildArgs(execArgv: readonly string[], cliScript: string, heapMb: number): string[] {
  const flags = execArgv.filter((a) => !SERVICE_ONLY_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)));
  return [...flags, ...(heapMb > 0 ? [`--max-old-space-size=${heapMb}`] : []), cliScript];
}

/** What `quotegate export build --json` prints: a summary, or `skipped` when another process holds the builder lock. */
interface BuildSummary {
  skipped?: boolean;
  ms?: number;
  peak_rss_mib?: number;
  builds?: { app_id: string; side: string; format: string; published: boolean; bytes: number; items: number }[];
}

/** Runs one build in a child; resolves with its summary, rejects when it fails (its stderr in the message). */
function buildInChild(child: ExportChild, running: Set<ChildProcess>): Promise<BuildSummary> {
  return new Promise((resolve, reject) => {
    const proc = spawn(child.execPath, [...child.args, 'export', 'build', '--json', '--skip-if-busy'], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    running.add(proc);
    // Background work: the build gives the CPU to the requests this process serves (issue 41, point 6).
    if (proc.pid !== undefined) {
      try {
        os.setPriority(proc.pid, EXPORT_CHILD_NICE);
      } catch {
        // not permitted here: the build runs at the service's priority
      }
    }
    let out = '';
    let err = '';
    proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    proc.once('error', (e) => (running.delete(proc), reject(e)));
    proc.once('exit', (code, signal) => {
      running.delete(proc);
      if (code !== 0) return reject(new Error(`export build child exited with ${code ?? signal}: ${err.trim()}`));
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as BuildSummary);
      } catch {
        reject(new Error(`export build child printed no summary: ${line.slice(0, 200)}`));
      }
    });
  });
}

/**
 * Starts the job. A failed run is logged (and written to job_run) and retried at the next interval. With `child`
 * (a PostgreSQL server only), each build runs in a child process; stopping the job stops a child still building
 * (its transaction is rolled back: the previous snapshots stay served), and a build in this process at its next page.
 */
export function startExportJob(db: Database, intervalSeconds: number, logger?: Logger, child?: ExportChild): RepeatingJob {
  const inChild = child !== undefined && db.kind !== 'pglite';
  const children = new Set<ChildProcess>();
  let stopping = false;
  // Stops an in-process build (PGlite) between pages, so a stop never waits for a whole build (the smoke test's
  // SIGTERM during the first build of both formats waited more than 60 s).
  const abort = new AbortController();
  const job = startRepeatingJob(intervalSeconds, async () => {
    const started = Date.now();
    try {
      let builds: BuildSummary['builds'];
      if (inChild) {
        const summary = await buildInChild(child, children);
        if (summary.skipped) return void logger?.debug('export snapshots: another replica is building');
        builds = summary.builds;
        logger?.debug({ peak_rss_mib: summary.peak_rss_mib }, 'export build child done');
      } else {
        const results = await runExportSnapshots(db, { signal: abort.signal });
        if (results === null) return void logger?.debug('export snapshots: another replica is building');
        builds = results.map((r) => ({ app_id: r.snapshot.appId, side: r.snapshot.side, format: r.snapshot.format, published: r.published, bytes: r.snapshot.byteSize, items: r.snapshot.itemCount }));
      }
      await recordJobRun(db.prisma, 'export', 'ok');
      const pruned = await pruneChanges(db);
      if (pruned > 0) logger?.debug({ pruned }, 'change sequence pruned');
      logger?.info({ ms: Date.now() - started, process: inChild ? 'child' : 'service', builds }, 'export snapshots built');
    } catch (err) {
      if (stopping) return void logger?.info('export snapshot build stopped at shutdown; the previous snapshots stay served');
      logger?.error({ err }, 'export snapshot build failed; the previous snapshots stay served');
      await recordJobRun(db.prisma, 'export', err instanceof Error ? err : new Error(String(err))).catch(() => undefined);
    }
  });
  return {
    firstRun: job.firstRun,
    async stop() {
      stopping = true;
      abort.abort(new Error('the service is stopping'));
      for (const proc of children) proc.kill('SIGTERM');
      await job.stop();
    },
  };
}
