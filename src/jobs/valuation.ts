/**
 * The CSCP valuation job runner: once a day at RUN_AFTER_MIDNIGHT_MS past 00:00 UTC it values date
 * "today" from the closes of the seven days before; at start it catches up (catchUpDate: the latest date
 * that can have closes, when it has no run yet: with the bundled data, the day after its last close).
 * Before each run, and after it (and at start, even without one), it scores the valuation days that have passed
 * and are not yet scored (valuation/accuracy.ts, under its own lock): the published accuracy series and
 * the learning a run calibrates its uncertainties and weighs its markets with (valuation/learning.ts), so a run
 * learns from every day before it.
 * Each run holds the `quotegate:valuation` database lock, so one replica runs it and the others skip;
 * a scheduled or catch-up run also skips a date that already has a run (another replica did it).
 * Outcomes are written to `job_run` (job `valuation`: last_started_at, last_ok_at, last_error_at,
 * last_error), which the status recorder reads.
 */
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { formatDate } from '../lib/time.js';
import { recordJobRun } from '../status/status.js';
import { ValuationCancelled, catchUpDate, runValuation, utcDay, type ValuationRunResult } from '../valuation/daily.js';
import { runValuationAccuracy } from '../valuation/accuracy.js';

/** How long after 00:00 UTC the daily run starts (closes of the day just ended are complete by then). */
export const RUN_AFTER_MIDNIGHT_MS = 5 * 60_000;
/** The job's name in job_run and its lock. */
export const VALUATION_JOB = 'valuation';
const LOCK = 'quotegate:valuation';

/** What one attempt did. */
export type ValuationOutcome =
  | { status: 'done'; result: ValuationRunResult }
  | { status: 'locked' }
  | { status: 'already_done'; date: string }
  /** The service stopped during the run (ValuationCancelled): nothing was written, the next start runs the date. */
  | { status: 'cancelled'; date: string };

/**
 * One run for `date` under the lock. `force` recomputes a date that already has a run (the CLI's
 * `jobs run valuation`); otherwise such a date is skipped. `stopped` is asked while it runs: when it answers true the
 * run ends without writing (`cancelled`, not recorded as a failure). Records the outcome in job_run; rethrows a failure.
 */
export async function runValuationJob(db: Database, date: Date, opts: { force?: boolean; now?: () => Date; stopped?: () => boolean } = {}): Promise<ValuationOutcome> {
  const now = opts.now ?? (() => new Date());
  const r = await db.withLock(LOCK, async (): Promise<ValuationOutcome> => {
    if (!opts.force && (await db.query(`SELECT 1 FROM valuation_run WHERE valuation_date = $1::date`, [formatDate(date)])).length > 0) {
      return { status: 'already_done', date: formatDate(date) };
    }
    await recordJobRun(db.prisma, VALUATION_JOB, 'started', now());
    try {
      await runValuationAccuracy(db, date, { now, stopped: opts.stopped }); // the days before `date` not yet scored: its learning
      if (opts.stopped?.()) return { status: 'cancelled', date: formatDate(date) };
      const result = await runValuation(db, date, { now, stopped: opts.stopped });
      await recordJobRun(db.prisma, VALUATION_JOB, 'ok', now());
      return { status: 'done', result };
    } catch (err) {
      if (err instanceof ValuationCancelled) return { status: 'cancelled', date: formatDate(date) };
      await recordJobRun(db.prisma, VALUATION_JOB, err instanceof Error ? err : new Error(String(err)), now()).catch(() => undefined);
      throw err;
    }
  });
  return r.acquired ? r.result : { status: 'locked' };
}

/** A running job; `stop()` cancels the schedule and waits for a run in progress. */
export interface ValuationJob {
  stop(): Promise<void>;
  /** The catch-up run started at start (resolves when it is over; never rejects). */
  readonly startup: Promise<ValuationOutcome | null>;
}

/** Milliseconds from `now` to the next daily run (00:00 UTC + RUN_AFTER_MIDNIGHT_MS). */
export function msUntilNextRun(now: Date): number {
  const today = utcDay(now).getTime() + RUN_AFTER_MIDNIGHT_MS;
  const next = now.getTime() < today ? today : today + 86_400_000;
  return next - now.getTime();
}

/** Starts the job: a catch-up run now (unless `catchUp` is false), then one run a day. */
export function startValuationJob(db: Database, opts: { logger?: Logger; clock?: () => Date; catchUp?: boolean } = {}): ValuationJob {
  const clock = opts.clock ?? (() => new Date());
  const log = opts.logger;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> = Promise.resolve();
  // After each run (and at start) the days that have passed are scored (valuation/accuracy.ts): the
  // published accuracy series, filled from the bundled history on first start.
  const score = async (why: string): Promise<void> => {
    if (stopped) return;
    try {
      const days = await runValuationAccuracy(db, clock(), { now: clock, stopped: () => stopped });
      if (days.length > 0) log?.info({ days: days.map((d) => `${d.date} (${d.source})`), why }, 'valuation accuracy published');
    } catch (err) {
      log?.error({ err, why }, 'valuation accuracy run failed; it is tried again after the next valuation run');
    }
  };
  // The valuation's outcome resolves first (the export's first build waits for it, not for the scoring);
  // `running` covers both, so stop() waits for the scoring too.
  const attempt = (date: Date | null, why: string): Promise<ValuationOutcome | null> => {
    const p: Promise<ValuationOutcome | null> =
      !date || stopped
        ? Promise.resolve(null)
        : runValuationJob(db, date, { now: clock, stopped: () => stopped }).then(
            (outcome) => {
              if (outcome.status === 'done') log?.info({ ...outcome.result, why }, 'valuation published');
              else if (outcome.status === 'cancelled') log?.info({ date: outcome.date, why }, 'valuation run cancelled: the service is stopping (the next start runs it)');
              else log?.debug({ outcome, why }, 'valuation skipped');
              return outcome;
            },
            (err) => {
              log?.error({ err, date: formatDate(date), why }, 'valuation run failed; the previous valuations stay published');
              return null;
            },
          );
    running = p.then(() => score(why));
    return p;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void attempt(utcDay(clock()), 'daily').finally(schedule);
    }, msUntilNextRun(clock()));
    timer.unref();
  };
  const startup = (opts.catchUp === false ? Promise.resolve(null) : catchUpDate(db, clock()))
    .then((date) => attempt(date, 'catch-up'))
    .catch((err) => {
      log?.error({ err }, 'valuation catch-up failed');
      return null;
    })
    .finally(schedule);
  return {
    startup,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await startup;
      await running;
    },
  };
}
