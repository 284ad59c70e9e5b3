/**
 * Composition of the collectors (docs/collectors.md): the sources (the registry, plus any a module adds), the
 * exchange rates, their settings from the environment and the credentials file, and either the shared worker (`quotegate collect`, or
 * `quotegate serve` with COLLECTORS=on) or one pass over every source (`quotegate collect --once`).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { backgroundDatabase, type Database } from '../db/client.js';
import { loadCollectorSourceEnv, readCredentialsFile, type CollectorCredentials, type CollectorSourceEnv, type Env } from '../env.js';
import { SOURCES } from './registry.js';
import { mostQuotedItems, readWatchlistFile, sharedWatchlist } from './watchlist.js';
import { CS2_APP_ID } from './importers.js';
import { RATES_TASK, runRates } from './rates.js';
import { CollectorRuntime, runSource, type RunResult } from './runner.js';
import type { CollectorSource } from './source.js';
import { startCollectorWorker, type CollectorTask, type CollectorWorker } from './worker.js';

/** The collector settings of `Env` this module reads. */
export type CollectorEnv = Pick<
  Env,
  'COLLECTOR_INTERVAL_SCALE' | 'COLLECTOR_CONCURRENCY' | 'COLLECTOR_PROXIES' | 'COLLECTOR_WATCHLIST_FILE' | 'COLLECTOR_WATCHLIST_SIZE' | 'COLLECTOR_CREDENTIALS_FILE'
>;

/** What to collect. */
export interface CollectorSelection {
  /** Sources besides the registry's (`--sources-module`). */
  extraSources?: readonly CollectorSource[];
  /** Only these task ids (source ids, `rates`); default all. */
  only?: readonly string[];
  /**
   * Each source's settings; default from the environment (COLLECTOR_<ID>_*, its credential variable) and the
   * credentials file (COLLECTOR_CREDENTIALS_FILE).
   */
  sourceEnv?: (s: Pick<CollectorSource, 'id' | 'credentialEnv'>) => CollectorSourceEnv;
}

/**
 * Loads the sources a module exports as `sources` (an array of CollectorSource). Throws when the module cannot be
 * imported or exports no such array.
 */
export async function loadSourcesModule(file: string): Promise<CollectorSource[]> {
  const mod = (await import(pathToFileURL(path.resolve(file)).href)) as { sources?: unknown };
  if (!Array.isArray(mod.sources) || mod.sources.some((s) => !s || typeof (s as CollectorSource).collect !== 'function')) {
    throw new Error(`${file} exports no \`sources\` array of collector sources`);
  }
  return mod.sources as CollectorSource[];
}

/**
 * The per-process collector state with settings from the environment and the credentials file (both checked now: a
 * bad variable, or a credentials file that is missing, unreadable, open to others or invalid, throws an error naming
 * it and no credential). `known` is every source this process knows (the credentials file may name any of their
 * credential variables); default `sources`.
 */
function collectorRuntime(
  db: Database,
  logger: Logger,
  env: CollectorEnv,
  sources: readonly CollectorSource[],
  settings?: CollectorSelection['sourceEnv'],
  known: readonly CollectorSource[] = sources,
): CollectorRuntime {
  let sourceEnv = settings;
  if (!sourceEnv) {
    const names = new Set(known.flatMap((s) => (s.credentialEnv ? [s.credentialEnv] : [])));
    const file: CollectorCredentials = env.COLLECTOR_CREDENTIALS_FILE ? readCredentialsFile(env.COLLECTOR_CREDENTIALS_FILE, names) : {};
    sourceEnv = (s: Pick<CollectorSource, 'id' | 'credentialEnv'>) => loadCollectorSourceEnv(s, env.COLLECTOR_PROXIES, process.env, file);
  }
  for (const s of sources) sourceEnv(s); // fail fast on a bad COLLECTOR_<ID>_* variable
  return new CollectorRuntime({ db, logger: logger.child({ component: 'collectors' }), sourceEnv, intervalScale: env.COLLECTOR_INTERVAL_SCALE, watchlist: watchlistOf(db, env) });
}

/**
 * The watch list of per-item sources: COLLECTOR_WATCHLIST_FILE (read now: a missing file throws), else, at each run,
 * the COLLECTOR_WATCHLIST_SIZE CS2 items listed on the most markets (src/collectors/watchlist.ts), computed once for
 * the per-item sources that start together and reused for WATCHLIST_REUSE_MS, by a statement that on PGlite waits
 * for the requests' statements first (issue 41, point 6: four sources each computing it at start stalled requests
 * for about a second while the first export build ran).
 */
function watchlistOf(db: Database, env: CollectorEnv): readonly string[] | (() => Promise<readonly string[]>) {
  if (env.COLLECTOR_WATCHLIST_FILE) return readWatchlistFile(env.COLLECTOR_WATCHLIST_FILE);
  const background = backgroundDatabase(db);
  return sharedWatchlist(() => mostQuotedItems(background, CS2_APP_ID, env.COLLECTOR_WATCHLIST_SIZE));
}

/**
 * The sources selected (registry + extra, filtered by `only`), whether the rates run too, and every source known
 * (registry + extra). Throws on an unknown or repeated id.
 */
function selectSources(sel: CollectorSelection): { sources: CollectorSource[]; rates: boolean; all: CollectorSource[] } {
  const all = [...SOURCES, ...(sel.extraSources ?? [])];
  const ids = new Set<string>();
  for (const s of all) {
    if (ids.has(s.id) || s.id === RATES_TASK.id) throw new Error(`collector source id ${s.id} is used twice`);
    ids.add(s.id);
  }
  if (!sel.only || sel.only.length === 0) return { sources: all, rates: true, all };
  for (const id of sel.only) if (!ids.has(id) && id !== RATES_TASK.id) throw new Error(`unknown collector source ${id} (known: ${[...ids, RATES_TASK.id].join(', ')})`);
  return { sources: all.filter((s) => sel.only!.includes(s.id)), rates: sel.only.includes(RATES_TASK.id), all };
}

/**
 * The worker's tasks: the exchange rates (when selected) first, marked `first` so that at start the sources' first
 * runs convert with rates of this hour (src/collectors/worker.ts), then one per source.
 */
function collectorTasks(rt: CollectorRuntime, sources: readonly CollectorSource[], rates: boolean): CollectorTask[] {
  const tasks: CollectorTask[] = [];
  if (rates) tasks.push({ id: RATES_TASK.id, intervalSeconds: rt.intervalSeconds({ ...RATES_TASK, credentialEnv: undefined }), first: true, run: (signal) => runRates(rt, { signal }) });
  for (const s of sources) tasks.push({ id: s.id, intervalSeconds: rt.intervalSeconds(s), run: (signal) => runSource(rt, s, { signal }) });
  return tasks;
}

/** Running collectors. */
export interface RunningCollectors {
  runtime: CollectorRuntime;
  stop(): Promise<void>;
}

/** Starts the shared worker for the selection (see src/collectors/worker.ts). Throws on a bad setting or a database failure. */
export async function startCollectors(db: Database, logger: Logger, env: CollectorEnv, sel: CollectorSelection = {}): Promise<RunningCollectors> {
  const { sources, rates, all } = selectSources(sel);
  const runtime = collectorRuntime(db, logger, env, sources, sel.sourceEnv, all);
  let worker: CollectorWorker;
  try {
    worker = await startCollectorWorker({ db, logger: runtime.logger, tasks: collectorTasks(runtime, sources, rates), concurrency: env.COLLECTOR_CONCURRENCY });
  } catch (e) {
    await runtime.close();
    throw e;
  }
  return {
    runtime,
    async stop() {
      await worker.stop();
      await runtime.close();
    },
  };
}

/**
 * Runs the exchange rates (when selected) and then every selected source once, one after another, without the queue:
 * `quotegate collect --once`. The rates come first so that the sources' conversions use the rates just collected.
 * Each source runs under its database lock (a source another process is running right now is left out of the result).
 * Throws on a bad setting (see `collectorRuntime`) or when the database fails.
 */
export async function collectOnce(db: Database, logger: Logger, env: CollectorEnv, sel: CollectorSelection = {}, each?: (r: RunResult) => void): Promise<RunResult[]> {
  const { sources, rates, all } = selectSources(sel);
  const runtime = collectorRuntime(db, logger, env, sources, sel.sourceEnv, all);
  const out: RunResult[] = [];
  try {
    if (rates) {
      const r = await runRates(runtime);
      out.push(r);
      each?.(r);
    }
    for (const s of sources) {
      const r = await db.withLock(`collector:${s.id}`, () => runSource(runtime, s));
      if (r.acquired) {
        out.push(r.result);
        each?.(r.result);
      }
    }
  } finally {
    await runtime.close();
  }
  return out;
}
