/**
 * The export snapshot job: builds every app id and side at start and then every `intervalSeconds`
 * (runs never overlap; across replicas the database lock lets one build at a time, the others skip).
 * The builder also prunes the change sequence to its kept window (services/changes.ts `pruneChanges`).
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { pruneChanges } from '../services/changes.js';
import { runExportSnapshots } from '../services/exports.js';
import { recordJobRun } from '../services/status.js';
import { startRepeatingJob, type Job } from './repeat.js';

/** Starts the job. A failed run is logged (and written to job_run) and retried at the next interval. */
export function startExportJob(db: Database, intervalSeconds: number, logger?: Logger): Job {
  return startRepeatingJob(intervalSeconds, async () => {
    const started = Date.now();
    try {
      const results = await runExportSnapshots(db);
      if (results === null) {
        logger?.debug('export snapshots: another replica is building');
        return;
      }
      await recordJobRun(db.prisma, 'export', 'ok');
      const pruned = await pruneChanges(db);
      if (pruned > 0) logger?.debug({ pruned }, 'change sequence pruned');
      logger?.info(
        { ms: Date.now() - started, builds: results.map((r) => ({ app_id: r.snapshot.appId, side: r.snapshot.side, published: r.published, bytes: r.snapshot.byteSize, items: r.snapshot.itemCount })) },
        'export snapshots built',
      );
    } catch (err) {
      logger?.error({ err }, 'export snapshot build failed; the previous snapshots stay served');
      await recordJobRun(db.prisma, 'export', err instanceof Error ? err : new Error(String(err))).catch(() => undefined);
    }
  });
}
