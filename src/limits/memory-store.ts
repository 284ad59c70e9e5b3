/** The rate limit's in-memory store: one policy's sliding logs in process memory (src/limits/rule.ts `decide`). */
import { decide, type Decision } from './rule.js';

/** One policy's sliding logs in process memory, per key. */
export class MemoryLog {
  private readonly logs = new Map<string, number[]>();
  private nextSweep = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  consume(key: string, now: number, points: number): Decision {
    if (now >= this.nextSweep) this.sweep(now);
    const log = this.logs.get(key) ?? [];
    // Expired entries leave from the head (oldest first); the log is changed in place.
    while (log.length > 0 && log[0]! <= now - this.windowMs) log.shift();
    const d = decide(log, now, this.limit, this.windowMs, points);
    if (log.length > 0) this.logs.set(key, log);
    else this.logs.delete(key);
    return d;
  }

  /** Drops the logs whose newest entry has expired (idle keys); runs at most once per window. */
  private sweep(now: number) {
    for (const [key, log] of this.logs) if (log.length === 0 || log[log.length - 1]! <= now - this.windowMs) this.logs.delete(key);
    this.nextSweep = now + this.windowMs;
  }
}
