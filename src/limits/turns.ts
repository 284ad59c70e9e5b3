/**
 * The decisions a replica asks for in one turn of its event loop, made together (`TurnBatcher`): one Redis script
 * call, or the memory logs in turn, after the turn's I/O callbacks.
 */
import type { Decision } from './rule.js';
import type { MemoryLog } from './memory-store.js';

/** Most logs decided by one script call (a larger turn is split). */
const MAX_BATCH = 512;

/** One decision asked for: `points` of the log `key` (a Redis key, or the account id in `log`'s memory). */
export interface Ask {
  key: string;
  limit: number;
  windowMs: number;
  points: number;
  /** The memory store of the ask's policy (memory limiter only). */
  log?: MemoryLog;
  /** Redis only: points wanted ahead (a lease), and unused points of an earlier lease to give back with the time they carry. */
  extras?: number;
  giveBack?: number;
  giveBackStamp?: number;
}

/**
 * Gathers the decisions asked for in one turn of the event loop and makes them together when the turn's I/O
 * callbacks are done (`setImmediate`), or at MAX_BATCH, in arrival order: `decideAll` gets the asks and returns
 * their decisions in the same order (Redis: one script call; memory: each log in turn), or fails them all alike.
 * The memory limiter batches too, though it could decide at once: an answer decided inside the socket's read
 * callback is written there, one write waking the client per answer, and `npm run bench` on PGlite measured that
 * at about twice the CPU per request of answers written together after the turn (docs/benchmarks.md).
 *
 * `maxInFlight` (Redis: 1): while that many calls are unanswered, new asks wait and go together in the next call
 * once one is answered (MAX_BATCH asks go at once regardless). An idle replica still sends an ask in the turn it
 * arrived; under load a call carries every ask of its round trip, not only of one turn. Each call is a socket
 * write to Redis and a read of its answer, and on the 2-vCPU bench machine that write alone was a visible cost
 * (`BENCH_PROFILE=1 npm run bench`; docs/benchmarks.md).
 */
export class TurnBatcher<A = Ask, D = Decision> {
  private waiting: { ask: A; resolve: (d: D) => void; reject: (e: unknown) => void }[] = [];
  /** Waiting asks that a request waits for (the others are background asks: renewals and give-backs of leases). */
  private urgentWaiting = 0;
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  /** Calls of `decideAll` not yet settled. */
  private inFlight = 0;

  /**
   * `backgroundMs`: how long background asks may wait for others (see `decide`). A rate-limit lease is renewed with a
   * quarter of its period left, so a short wait costs nothing; it gathers the renewals of many accounts in one script
   * call where they went in one call each round trip (on the bench, each such call a socket write and a read
   * costing the service and Redis CPU; docs/benchmarks.md).
   */
  constructor(
    private readonly decideAll: (asks: A[]) => Promise<D[]> | D[],
    private readonly maxInFlight = Infinity,
    private readonly backgroundMs = 0,
  ) {}

  /**
   * The decision of `ask`: sent after this turn's I/O callbacks (`urgent`, a request waits for it), or within
   * `backgroundMs` with whatever else is asked meanwhile (a background ask), whichever comes first for the batch.
   */
  decide(ask: A, urgent = true): Promise<D> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ask, resolve, reject });
      if (urgent) this.urgentWaiting++;
      if (this.waiting.length >= MAX_BATCH) this.send();
      else if (urgent || this.backgroundMs <= 0) this.schedule();
      else this.scheduleLater();
    });
  }

  /** A request now waits for a background ask already asked for: the waiting asks go after this turn's callbacks. */
  hurry(): void {
    if (this.waiting.length > 0) {
      this.urgentWaiting++;
      this.schedule();
    }
  }

  /** Sends the waiting (background) asks within `backgroundMs`, unless a call in flight will send them when it settles. */
  private scheduleLater(): void {
    if (this.scheduled || this.timer || this.inFlight >= this.maxInFlight) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.inFlight < this.maxInFlight) this.send();
    }, this.backgroundMs);
  }

  /** Sends the waiting asks after this turn's I/O callbacks, unless a call in flight will send them when it settles. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight < this.maxInFlight) this.send();
    });
  }

  private send(): void {
    const batch = this.waiting;
    if (batch.length === 0) return;
    this.waiting = [];
    this.urgentWaiting = 0;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    let decided: Promise<D[]> | D[];
    try {
      decided = this.decideAll(batch.map((w) => w.ask));
    } catch (e) {
      decided = Promise.reject(e);
    }
    if (Array.isArray(decided)) {
      for (let i = 0; i < batch.length; i++) batch[i]!.resolve(decided[i]!);
      return;
    }
    this.inFlight++;
    decided.then(
      (ds) => {
        this.settled();
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(ds[i]!);
      },
      (e: unknown) => {
        this.settled();
        for (const w of batch) w.reject(e);
      },
    );
  }

  /** A call settled: the asks that waited for it go in the next one (after the current turn's callbacks, or within `backgroundMs` when none is urgent). */
  private settled(): void {
    this.inFlight--;
    if (this.urgentWaiting > 0 || (this.waiting.length > 0 && this.backgroundMs <= 0)) this.schedule();
    else if (this.waiting.length > 0) this.scheduleLater();
  }
}
