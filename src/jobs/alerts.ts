/**
 * The alerts' background work on each replica (docs/alerts.md; src/alerts/alerts.ts): every second (and at once
 * when a writer signals `qg_quotes`), judge the alerts of the changed items (`evaluateAlerts`, one replica at a time,
 * until it has caught up) and send the due deliveries (`runDeliveries`, claimed through the database, so replicas
 * share the queue). Ticks never overlap (src/jobs/repeat.ts); errors are logged and the next tick tries again.
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { evaluateAlerts, runDeliveries, type DeliveryOptions } from '../alerts/alerts.js';
import { startRepeatingJob, type Job } from './repeat.js';

/** Evaluation rounds per tick at most (each judges up to EVALUATION_CHUNK changes), so a tick stays short. */
const MAX_ROUNDS_PER_TICK = 20;

/**
 * Starts the alert job; `stop()` ends it after the tick in progress. `delivery`: the delivery worker's guard settings
 * (`allowPrivateHosts`, env ALERT_ALLOW_PRIVATE_HOSTS, default false; `lookup`, tests), see DeliveryOptions.
 */
export function startAlertJob(db: Database, opts: { logger?: Logger; intervalSeconds?: number; delivery?: Pick<DeliveryOptions, 'allowPrivateHosts' | 'lookup'> } = {}): Job {
  const tick = async () => {
    try {
      for (let i = 0; i < MAX_ROUNDS_PER_TICK; i++) {
        const r = await evaluateAlerts(db);
        if (!r.ran || r.changes === 0) break;
        if (r.fired > 0) opts.logger?.info({ changes: r.changes, judged: r.judged, fired: r.fired }, 'alerts evaluated');
      }
      for (let i = 0; i < MAX_ROUNDS_PER_TICK; i++) {
        const d = await runDeliveries(db, { ...opts.delivery, logger: opts.logger });
        if (d.attempted + d.failed === 0) break;
      }
    } catch (err) {
      opts.logger?.error({ err }, 'alert job tick failed');
    }
  };
  const job = startRepeatingJob(opts.intervalSeconds ?? 1, tick);
  return job;
}
