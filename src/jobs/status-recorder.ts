/**
 * The status recorder (spec: GET /status reads only what this job stored). Every `intervalSeconds`
 * (default 60) it probes the public components (area `service`); at the first tick of each 5-minute
 * bucket it runs the infrastructure checks, recomputes the hourly summary and prunes old rows, under
 * a database lock so replicas do not repeat that work at the same moment.
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import {
  INFRASTRUCTURE_BUCKET_SECONDS,
  bucketStart,
  pruneStatus,
  recordInfrastructure,
  recordServiceProbes,
  recordSummary,
  type InfrastructureCheck,
  type ProbeTarget,
} from '../status/status.js';
import { startRepeatingJob, type Job } from './repeat.js';

/** What the recorder runs. */
export interface StatusRecorderOptions {
  checks: InfrastructureCheck[];
  targets: ProbeTarget[];
  /** Seconds between ticks (STATUS_PROBE_INTERVAL_SECONDS). */
  intervalSeconds: number;
  logger?: Logger;
  clock?: () => Date;
  /**
   * False while the service's start-up work runs (the first data load, the valuation catch-up, the first export
   * build: src/server.ts): a tick then records nothing, neither probes nor checks, so its buckets stay without data
   * ("no data" on the status page), never down. Such a probe measures the start-up, not an outage (issue 41,
   * point 12: a fresh install showed "Degraded: API" from its own /health probe timing out during the first
   * load). Absent: always ready.
   */
  ready?: () => boolean;
}

/**
 * Runs one tick: probes, and the 5-minute work when `lastBucket` (ms) is older than now's bucket; nothing before
 * the service is ready (`opts.ready`). Returns the bucket it covered. Throws when the results cannot be written (the job logs it).
 */
export async function statusTick(db: Database, opts: StatusRecorderOptions, lastBucket: number | null): Promise<number | null> {
  if (opts.ready && !opts.ready()) {
    opts.logger?.debug('status recorder: the service is starting; nothing recorded this tick');
    return lastBucket;
  }
  const now = (opts.clock ?? (() => new Date()))();
  if (opts.targets.length > 0) await recordServiceProbes(db, opts.targets, now);
  const bucket = bucketStart(now, INFRASTRUCTURE_BUCKET_SECONDS).getTime();
  if (lastBucket === bucket) return lastBucket;
  const done = await db.withLock('status-recorder', async () => {
    const outcomes = await recordInfrastructure(db, opts.checks, now);
    await recordSummary(db, now);
    const pruned = await pruneStatus(db, now);
    opts.logger?.debug({ outcomes, pruned }, 'status recorded');
  });
  return done.acquired ? bucket : lastBucket;
}

/** Starts the recorder (first tick at once). `stop()` waits for a tick in progress. */
export function startStatusRecorder(db: Database, opts: StatusRecorderOptions): Job {
  let lastBucket: number | null = null;
  return startRepeatingJob(opts.intervalSeconds, async () => {
    try {
      lastBucket = await statusTick(db, opts, lastBucket);
    } catch (err) {
      opts.logger?.warn({ err }, 'status recorder: this tick was not recorded');
    }
  });
}
