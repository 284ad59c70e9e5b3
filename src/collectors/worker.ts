/**
 * The collector worker (docs/collectors.md, "Scheduling"): runs every source once per interval, shared by any
 * number of collector processes, through pg-boss (a maintained PostgreSQL job queue) on the service's own
 * database: on PostgreSQL through the service's pool, on embedded PGlite through the same database (`queueSql`;
 * one process owns PGlite, so there the queue has one worker).
 *
 * - One queue `collector-run`. For each source every process sends, at the start of each of the source's time
 *   slots (its interval, aligned to the Unix epoch), the slot's job with pg-boss `sendThrottled` keyed by the
 *   source: pg-boss keeps one job per key and slot (a unique index), whichever process sends first.
 * - Each process works the queue with COLLECTOR_CONCURRENCY handlers; a job is fetched by one of them only
 *   (`FOR UPDATE SKIP LOCKED`). The handler runs the source under a database lock named after it (a PostgreSQL
 *   session advisory lock): a run still going when the next slot's job is fetched makes that job skip, so a source
 *   never runs twice at once.
 * - A worker that dies leaves its active job to expire (no retry: the next slot's job runs the source, on any
 *   live process) and its lock is freed with its connection. So each source runs once per interval whatever the
 *   number of workers, a dead worker's sources are taken over at the next slot, and nothing is collected twice.
 */
import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';

/** The queue's name. */
export const COLLECTOR_QUEUE = 'collector-run';

/** One scheduled task: a source run, or the exchange rates. */
export interface CollectorTask {
  id: string;
  /** Seconds between runs, already scaled (the slot length; rounded to whole seconds, at least 1). */
  intervalSeconds: number;
  /** Runs the task once; must record and log its own outcome. `signal` aborts at shutdown. */
  run(signal: AbortSignal): Promise<unknown>;
}

/** A running worker. */
export interface CollectorWorker {
  /** Stops sending and fetching, cancels runs in progress and waits for them (up to `timeoutMs`, default 10 s). */
  stop(timeoutMs?: number): Promise<void>;
}

/** Options of `startCollectorWorker`. */
export interface CollectorWorkerOptions {
  db: Database;
  logger: Logger;
  tasks: readonly CollectorTask[];
  /** Tasks this process runs at once (COLLECTOR_CONCURRENCY). */
  concurrency: number;
}

/** The slot length of a task in whole seconds (pg-boss throttles by whole seconds). */
function slotSeconds(task: CollectorTask): number {
  return Math.max(1, Math.round(task.intervalSeconds));
}

/**
 * Starts the worker: pg-boss on the database (its tables in schema `pgboss`, made at first start), the queue,
 * a sender per task and the handlers. Throws when the database fails while starting.
 */
export async function startCollectorWorker(opts: CollectorWorkerOptions): Promise<CollectorWorker> {
  const { db, logger, tasks } = opts;
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const shortest = Math.min(...tasks.map(slotSeconds), 60);
  // pg-boss does not await a job's completion (`complete`/`fail`) nor always its polling statement, so the statements
  // it has in flight are tracked here; `stop` waits for them before the caller may close the database.
  const inflight = new Set<Promise<unknown>>();
  const executeSql = (text: string, values?: unknown[]): Promise<unknown> => {
    const p = db.queueSql(text, values);
    inflight.add(p);
    const done = () => void inflight.delete(p);
    p.then(done, done);
    return p;
  };
  const boss = new PgBoss({
    db: { executeSql },
    schema: 'pgboss',
    schedule: false,
    archiveCompletedAfterSeconds: 3600,
    deleteAfterDays: 1,
    maintenanceIntervalSeconds: 120,
  } as PgBoss.ConstructorOptions);
  boss.on('error', (err) => logger.warn({ err }, 'collector queue error'));
  await boss.start();
  if (!(await boss.getQueue(COLLECTOR_QUEUE))) {
    try {
      await boss.createQueue(COLLECTOR_QUEUE, { name: COLLECTOR_QUEUE, policy: 'standard' } as PgBoss.Queue);
    } catch (e) {
      if (!(await boss.getQueue(COLLECTOR_QUEUE))) throw e; // else another process made it meanwhile
    }
  }

  let stopped = false;
  const controller = new AbortController();
  const timers = new Set<NodeJS.Timeout>();
  const workIds: string[] = [];

  /** Sends the job of the task's current slot (a no-op when some process already did) and plans the next one. */
  const send = async (task: CollectorTask): Promise<void> => {
    if (stopped) return;
    const seconds = slotSeconds(task);
    try {
      const id = await boss.sendThrottled(
        COLLECTOR_QUEUE,
        { task: task.id },
        // The job outlives a run's deadline by a minute; an expired job (its worker died) is not retried.
        { retryLimit: 0, expireInSeconds: Math.max(60, Math.ceil(Math.max(600, seconds * 2) + 60)) },
        seconds,
        task.id,
      );
      if (id) for (const w of workIds) boss.notifyWorker(w);
    } catch (err) {
      logger.warn({ err, task: task.id }, 'collector job not sent (database); the next slot tries again');
    }
    if (stopped) return;
    const now = Date.now();
    const next = (Math.floor(now / 1000 / seconds) + 1) * seconds * 1000;
    // A little after the slot's start, so the process clocks' skew does not straddle a boundary.
    const timer = setTimeout(() => {
      timers.delete(timer);
      void send(task);
    }, next - now + 20 + Math.floor(Math.random() * 200));
    timer.unref();
    timers.add(timer);
  };

  const handle = async (jobs: PgBoss.Job<{ task: string }>[]): Promise<unknown> => {
    const out: unknown[] = [];
    for (const job of jobs) {
      const task = byId.get(job.data.task);
      if (!task || stopped) {
        out.push({ skipped: task ? 'stopping' : 'unknown task' });
        continue;
      }
      const r = await db.withLock(`collector:${task.id}`, () => task.run(controller.signal));
      if (!r.acquired) logger.debug({ task: task.id }, 'collector run skipped: the previous run is still going');
      out.push({ ran: r.acquired });
    }
    return out;
  };

  const pollingIntervalSeconds = Math.min(2, Math.max(0.5, shortest / 4));
  for (let i = 0; i < Math.max(1, opts.concurrency); i++) {
    workIds.push(await boss.work<{ task: string }>(COLLECTOR_QUEUE, { pollingIntervalSeconds, batchSize: 1 }, handle));
  }
  for (const task of tasks) void send(task);
  logger.info({ tasks: tasks.map((t) => ({ id: t.id, intervalSeconds: slotSeconds(t) })), concurrency: opts.concurrency, database: db.kind }, 'collectors started');

  return {
    async stop(timeoutMs = 10_000) {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      controller.abort();
      const deadline = Date.now() + timeoutMs;
      await boss.stop({ graceful: true, wait: true, timeout: timeoutMs } as PgBoss.StopOptions).catch((err: unknown) => logger.warn({ err }, 'collector queue stop failed'));
      // The statements pg-boss left running (a job's completion, a poll) settle before the database may close; a
      // statement started while waiting (a poll that returned a job: its `complete`) is waited for too.
      while (inflight.size > 0 && Date.now() < deadline) {
        await Promise.race([Promise.allSettled([...inflight]), new Promise((r) => setTimeout(r, Math.max(1, deadline - Date.now())).unref())]);
        await new Promise((r) => setImmediate(r));
      }
      if (inflight.size > 0) logger.warn({ statements: inflight.size }, 'collector queue statements still running at stop');
    },
  };
}
