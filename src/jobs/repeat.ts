/**
 * The runner the interval jobs share (export snapshots, status recorder): one tick at once, then one
 * every `intervalSeconds`; a tick never overlaps the previous one (a tick still running when the next is
 * due is skipped), and the timer does not keep the process alive.
 */

/** A running job; `stop()` cancels the schedule and waits for a tick in progress to end. */
export interface Job {
  stop(): Promise<void>;
}

/** A job started by `startRepeatingJob`: also `firstRun`, settled (never rejected) when its first tick is over. */
export interface RepeatingJob extends Job {
  readonly firstRun: Promise<void>;
}

/**
 * Starts `tick` now and every `intervalSeconds` (seconds > 0). `tick` must handle its own errors (log
 * them); a rejection is swallowed so the schedule goes on.
 */
export function startRepeatingJob(intervalSeconds: number, tick: () => Promise<void>): RepeatingJob {
  let running: Promise<void> | null = null;
  let stopped = false;
  const run = () => {
    if (running || stopped) return;
    running = tick()
      .catch(() => undefined)
      .finally(() => {
        running = null;
      });
  };
  run();
  const firstRun = running ?? Promise.resolve();
  const timer = setInterval(run, intervalSeconds * 1000);
  timer.unref();
  return {
    firstRun,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
