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
 * - A task marked `first` (the exchange rates, whose run the sources' conversions read) is sent with a higher
 *   pg-boss priority, so a handler takes its job before the sources' jobs queued at the same time (slots are aligned
 *   to the epoch: each hour the rates' slot starts with the sources'). At start, the other tasks' first jobs wait
 *   until the first task has run in its current slot, in this or another process (its run recorded in
 *   `collector_run`), at most FIRST_TASK_WAIT_MS: so the sources' first runs after a start convert with rates of this
 *   hour, not with whatever rates the database held (days old after a pause, the bundled ones on a new install).
 */
import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';

/** The queue's name. */
const COLLECTOR_QUEUE = 'collector-run';

/**
 * Longest wait at start for a `first` task's run before the other tasks are sent anyway (ms): about one rates run
 * against upstreams that time out (two files, 30 s a request, retried). The sources then convert with the rates stored.
 */
const FIRST_TASK_WAIT_MS = 120_000;

/** pg-boss priority of a `first` task's jobs (others have 0; a higher priority is fetched first). */
const FIRST_PRIORITY = 10;

/** One scheduled task: a source run, or the exchange rates. */
export interface CollectorTask {
  id: string;
  /** Seconds between runs, already scaled (the slot length; rounded to whole seconds, at least 1). */
  intervalSeconds: number;
  /** Runs the task once; must record and log its own outcome (a `collector_run` row with `source_id` = id). `signal` aborts at shutdown. */
  run(signal: AbortSignal): Promise<unknown>;
  /**
   * True for a task the others depend on (the exchange rates): its jobs are fetched first, and at start the other
   * tasks are sent once it has run in its current slot (see the file comment).
   */
  first?: boolean;
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
  /** Longest wait at start for the `first` tasks' runs, in ms. Default FIRST_TASK_WAIT_MS. */
  firstWaitMs?: number;
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
  const makeBoss = (): PgBoss => {
    const b = new PgBoss({
      db: { executeSql },
      schema: 'pgboss',
      schedule: false,
      archiveCompletedAfterSeconds: 3600,
      deleteAfterDays: 1,
      maintenanceIntervalSeconds: 120,
    } as PgBoss.ConstructorOptions);
    b.on('error', (err) => logger.warn({ err }, 'collector queue error'));
    return b;
  };
  let boss = makeBoss();
  // Processes started together on a fresh database install pg-boss's schema at once; the one that loses the race
  // fails with a unique violation or "already exists" while the winner's install commits. A failed PgBoss cannot be
  // started again, so a new one is made and started after a short pause (at most five tries).
  for (let attempt = 1; ; attempt++) {
    try {
      await boss.start();
      break;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const raced = ['23505', '42P06', '42P07', '42710'].includes(e.code ?? '') || /duplicate key value|already exists/.test(e.message ?? '');
      if (!raced || attempt >= 5) throw err;
      logger.info({ attempt }, 'collector queue install raced another process; trying again');
      await boss.stop({ graceful: false, close: false } as PgBoss.StopOptions).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 200 * attempt + Math.floor(Math.random() * 300)));
      boss = makeBoss();
    }
  }
  // The queue likewise: two processes creating it at once can deadlock inside pg-boss's create_queue (PostgreSQL
  // aborts one; the other's creation may not have committed yet when the loser looks), so the loser looks again
  // after a short pause (at most five tries).
  for (let attempt = 1; !(await boss.getQueue(COLLECTOR_QUEUE)); attempt++) {
    try {
      await boss.createQueue(COLLECTOR_QUEUE, { name: COLLECTOR_QUEUE, policy: 'standard' } as PgBoss.Queue);
    } catch (e) {
      if (attempt >= 5) throw e;
      logger.info({ attempt, err: (e as Error).message }, 'collector queue creation raced another process; looking again');
      await new Promise((r) => setTimeout(r, 200 * attempt + Math.floor(Math.random() * 300)));
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
        { retryLimit: 0, expireInSeconds: Math.max(60, Math.ceil(Math.max(600, seconds * 2) + 60)), priority: task.first ? FIRST_PRIORITY : 0 },
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

  /**
   * Resolves once each of `firsts` has a run recorded in `collector_run` that started in the task's current slot (at
   * this call), or after `maxMs`, or when the worker stops. Never rejects: a database error ends the wait.
   */
  async function waitForFirstRuns(firsts: readonly CollectorTask[], maxMs: number): Promise<void> {
    const since = Date.now();
    const slotStarts = firsts.map((t) => new Date(Math.floor(since / 1000 / slotSeconds(t)) * slotSeconds(t) * 1000).toISOString());
    while (!stopped) {
      try {
        const [row] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM unnest($1::text[], $2::timestamptz[]) AS t(id, since)
            WHERE NOT EXISTS (SELECT 1 FROM collector_run r WHERE r.source_id = t.id AND r.started_at >= t.since)`,
          [firsts.map((t) => t.id), slotStarts],
        );
        if (row?.n === 0 || stopped) return;
      } catch (err) {
        if (!stopped) logger.warn({ err }, "collector start: the first tasks' runs could not be checked; the other tasks start now");
        return;
      }
      if (Date.now() - since >= maxMs) {
        logger.warn({ tasks: firsts.map((t) => t.id), waitedMs: Date.now() - since }, 'collector start: the first tasks have not run yet; the other tasks start now (with the rates stored)');
        return;
      }
      await pause(500);
    }
  }

  /** Waits `ms`, or less when the worker stops. */
  function pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        controller.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      controller.signal.addEventListener('abort', done, { once: true });
    });
  }

  const pollingIntervalSeconds = Math.min(2, Math.max(0.5, shortest / 4));
  for (let i = 0; i < Math.max(1, opts.concurrency); i++) {
    workIds.push(await boss.work<{ task: string }>(COLLECTOR_QUEUE, { pollingIntervalSeconds, batchSize: 1 }, handle));
  }
  const firsts = tasks.filter((t) => t.first);
  const others = tasks.filter((t) => !t.first);
  for (const task of firsts) void send(task);
  const waiting = firsts.length > 0 && others.length > 0 ? waitForFirstRuns(firsts, opts.firstWaitMs ?? FIRST_TASK_WAIT_MS) : Promise.resolve();
  void waiting.then(() => {
    for (const task of others) void send(task);
  });
  logger.info({ tasks: tasks.map((t) => ({ id: t.id, intervalSeconds: slotSeconds(t) })), concurrency: opts.concurrency, database: db.kind }, 'collectors started');

  return {
    async stop(timeoutMs = 10_000) {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      controller.abort();
      const deadline = Date.now() + timeoutMs;
      await waiting; // its check in flight settles (it ends at once when stopped)
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
