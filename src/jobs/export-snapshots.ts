/**
 * The export snapshot job: builds every app id and side at start and then every `intervalSeconds`
 * (runs never overlap; across replicas the database lock lets one build at a time, the others skip).
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
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
