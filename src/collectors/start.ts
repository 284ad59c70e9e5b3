/**
 * Composition of the collectors (docs/collectors.md): the sources (the registry, plus any a module adds), the
 * exchange rates, their settings from the environment, and either the shared worker (`quotegate collect`, or
 * `quotegate serve` with COLLECTORS=on) or one pass over every source (`quotegate collect --once`).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { loadCollectorSourceEnv, type CollectorSourceEnv, type Env } from '../env.js';
import { SOURCES } from './registry.js';
import { mostQuotedItems, readWatchlistFile } from './watchlist.js';
import { CS2_APP_ID } from '../services/importers.js';
import { RATES_TASK, runRates } from './rates.js';
import { CollectorRuntime, runSource, type RunResult } from './runner.js';
import type { CollectorSource } from './source.js';
import { startCollectorWorker, type CollectorTask, type CollectorWorker } from './worker.js';

/** The collector settings of `Env` this module reads. */
export type CollectorEnv = Pick<Env, 'COLLECTOR_INTERVAL_SCALE' | 'COLLECTOR_CONCURRENCY' | 'COLLECTOR_PROXIES' | 'COLLECTOR_WATCHLIST_FILE' | 'COLLECTOR_WATCHLIST_SIZE'>;

/** What to collect. */
export interface CollectorSelection {
  /** Sources besides the registry's (`--sources-module`). */
  extraSources?: readonly CollectorSource[];
  /** Only these task ids (source ids, `rates`); default all. */
  only?: readonly string[];
  /** Each source's settings; default from the environment (COLLECTOR_<ID>_*, its credential variable). */
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

/** The per-process collector state with settings from the environment (checked now: a bad variable throws). */
export function collectorRuntime(db: Database, logger: Logger, env: CollectorEnv, sources: readonly CollectorSource[], settings?: CollectorSelection['sourceEnv']): CollectorRuntime {
  const sourceEnv = settings ?? ((s: Pick<CollectorSource, 'id' | 'credentialEnv'>) => loadCollectorSourceEnv(s, env.COLLECTOR_PROXIES));
  for (const s of sources) sourceEnv(s); // fail fast on a bad COLLECTOR_<ID>_* variable
  return new CollectorRuntime({ db, logger: logger.child({ component: 'collectors' }), sourceEnv, intervalScale: env.COLLECTOR_INTERVAL_SCALE, watchlist: watchlistOf(db, env) });
}

/**
 * The watch list of per-item sources: COLLECTOR_WATCHLIST_FILE (read now: a missing file throws), else, at each run,
 * the COLLECTOR_WATCHLIST_SIZE CS2 items listed on the most markets (src/collectors/watchlist.ts).
 */
function watchlistOf(db: Database, env: CollectorEnv): readonly string[] | (() => Promise<readonly string[]>) {
  if (env.COLLECTOR_WATCHLIST_FILE) return readWatchlistFile(env.COLLECTOR_WATCHLIST_FILE);
  return () => mostQuotedItems(db.prisma, CS2_APP_ID, env.COLLECTOR_WATCHLIST_SIZE);
}

/** The sources selected (registry + extra, filtered by `only`), and whether the rates run too. Throws on an unknown or repeated id. */
export function selectSources(sel: CollectorSelection): { sources: CollectorSource[]; rates: boolean } {
  const all = [...SOURCES, ...(sel.extraSources ?? [])];
  const ids = new Set<string>();
  for (const s of all) {
    if (ids.has(s.id) || s.id === RATES_TASK.id) throw new Error(`collector source id ${s.id} is used twice`);
    ids.add(s.id);
  }
  if (!sel.only || sel.only.length === 0) return { sources: all, rates: true };
  for (const id of sel.only) if (!ids.has(id) && id !== RATES_TASK.id) throw new Error(`unknown collector source ${id} (known: ${[...ids, RATES_TASK.id].join(', ')})`);
  return { sources: all.filter((s) => sel.only!.includes(s.id)), rates: sel.only.includes(RATES_TASK.id) };
}

/** The worker's tasks: one per source, and the exchange rates. */
export function collectorTasks(rt: CollectorRuntime, sources: readonly CollectorSource[], rates: boolean): CollectorTask[] {
  const tasks: CollectorTask[] = sources.map((s) => ({ id: s.id, intervalSeconds: rt.intervalSeconds(s), run: (signal) => runSource(rt, s, { signal }) }));
  if (rates) tasks.push({ id: RATES_TASK.id, intervalSeconds: rt.intervalSeconds({ ...RATES_TASK, credentialEnv: undefined }), run: (signal) => runRates(rt, { signal }) });
  return tasks;
}

/** Running collectors. */
export interface RunningCollectors {
  runtime: CollectorRuntime;
  stop(): Promise<void>;
}

/** Starts the shared worker for the selection (see src/collectors/worker.ts). Throws on a bad setting or a database failure. */
export async function startCollectors(db: Database, logger: Logger, env: CollectorEnv, sel: CollectorSelection = {}): Promise<RunningCollectors> {
  const { sources, rates } = selectSources(sel);
  const runtime = collectorRuntime(db, logger, env, sources, sel.sourceEnv);
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

/** Runs every selected source once, one after another (then the rates), without the queue: `quotegate collect --once`. */
export async function collectOnce(db: Database, logger: Logger, env: CollectorEnv, sel: CollectorSelection = {}, each?: (r: RunResult) => void): Promise<RunResult[]> {
  const { sources, rates } = selectSources(sel);
  const runtime = collectorRuntime(db, logger, env, sources, sel.sourceEnv);
  const out: RunResult[] = [];
  try {
    for (const s of sources) {
      const r = await db.withLock(`collector:${s.id}`, () => runSource(runtime, s));
      if (r.acquired) {
        out.push(r.result);
        each?.(r.result);
      }
    }
    if (rates) {
      const r = await runRates(runtime);
      out.push(r);
      each?.(r);
    }
  } finally {
    await runtime.close();
  }
  return out;
}
