/**
 * Rate limits per account and catalogue operation (spec: Limits; EndpointInfoOut.rate_limit): a
 * sliding log, so `maxRequests` per `windowSeconds` holds over EVERY interval of `windowSeconds`, not
 * per fixed window (a fixed window let 2 x 120 `/prices` requests through in two seconds around its
 * edge). Each consumed point is logged with its time; a point counts while `now < time + window`.
 * In process memory by default, in Redis when `REDIS_URL` is set so every replica draws from one log.
 *
 * Rules:
 * - `consume(points)` is all or nothing: one GraphQL operation with several aliased fields of one row
 *   takes all its points or none.
 * - A refused request consumes nothing, so a client retrying on 429 gets through once the window frees.
 * - `remaining` and `resetSeconds` (the `RateLimit` header and `Retry-After`) come from the same log
 *   in the same step as the decision.
 * - Memory stays bounded: a log holds at most `maxRequests` entries, expired ones are pruned on every
 *   use, idle keys are dropped (memory: a sweep at most once per window; Redis: the key expires one
 *   window after its newest entry).
 *
 * Redis: one Lua script (ioredis `defineCommand`, EVALSHA) prunes, decides and appends atomically,
 * on Redis server time (`TIME`), so replicas with skewed clocks still share one consistent log. The
 * decisions a replica needs in one turn of its event loop (every request read from the sockets in that
 * turn) go to Redis as one script call over all their logs, decided in arrival order: under load that is
 * one command for many requests instead of one each (`npm run bench`: the per-command work of the Redis
 * client was a tenth of the server's CPU). Every log is still decided atomically; Redis Cluster is not
 * supported (the keys of one call may lie in different slots).
 * Tests may pass a clock (`now`); it then replaces `TIME` in the script for that limiter.
 *
 * Redis unreachable: a request never waits on it. The Redis client does not queue commands while
 * disconnected and times out a command after `commandTimeoutMs`; the limiter then falls back to an
 * in-memory limiter of the same policy, so each replica enforces the limit on its own until Redis is
 * back (a client may then get up to one limit per replica). The fall-back is logged (at most every 10 s).
 *
 * Why no library: none of the maintained ones fits all of the above. rate-limiter-flexible (used
 * before) counts fixed windows only (BurstyRateLimiter adds a burst allowance on top; no sliding
 * window); GCRA (redis-gcra) with a burst of N lets about 2 x N through in one window.
 * rolling-rate-limiter is a sliding log but logs refused actions too (a retrying client never gets
 * through), has no weighted consumption, and its Redis path is a MULTI stamped with the client's
 * `process.hrtime`, which is not comparable across processes. sliding-window-rate-limiter reserves
 * one token per call (no all-or-nothing weights). @upstash/ratelimit's sliding window approximates
 * with two fixed windows and needs Upstash's REST client. So this is a small sliding log of our own.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ENDPOINTS, type EndpointInfo } from '../catalogue/endpoints.js';

/** The outcome of consuming `points` of an account's allowance for one operation. */
export interface RateLimitOutcome {
  allowed: boolean;
  /** Policy name: the catalogue operation id. */
  policy: string;
  /** Points (requests) allowed in any interval of `windowSeconds`. */
  limit: number;
  windowSeconds: number;
  /** Points still available now (after this consumption when allowed; nothing was consumed when refused). */
  remaining: number;
  /**
   * Whole seconds (>= 1, rounded up) until the next point frees up; when refused, until all the
   * requested points fit (the `Retry-After`). Points beyond `limit` never fit: then `windowSeconds`.
   */
  resetSeconds: number;
}

/** The limiter the request pipeline uses. */
export interface RateLimiter {
  /** `memory`, `redis`, or `off` (no limits; load tests only). */
  readonly kind: 'memory' | 'redis' | 'off';
  /**
   * Consumes `points` (a positive integer) requests of `row`'s limit for `accountId`, all or nothing.
   * Null when the row declares no limit (or the limiter is off). Never throws for a store failure
   * (see module doc); throws RangeError for `points` that is not a positive integer.
   */
  consume(accountId: string, row: EndpointInfo, points: number): Promise<RateLimitOutcome | null>;
  /** PINGs the shared Redis (status check `redis`); absent unless the limiter uses Redis. Throws when Redis does not answer. */
  ping?(): Promise<unknown>;
  close(): Promise<void>;
}

/** Options: `redisUrl` selects Redis; `enabled: false` turns limits off (benchmarks of billing alone). */
export interface RateLimiterOptions {
  redisUrl?: string;
  enabled?: boolean;
  logger?: Logger;
  /** Redis command timeout in milliseconds (default 250). */
  commandTimeoutMs?: number;
  /** Key prefix in Redis (default `qg:rl`); tests use their own to stay apart. */
  keyPrefix?: string;
  /**
   * Tests only: the clock in Unix milliseconds (default `Date.now` in memory, Redis `TIME` in Redis).
   * With Redis it is passed to the script instead of `TIME`, so limiters sharing one Redis must then
   * share this clock too.
   */
  now?: () => number;
}

/** A decision on one log: `waitMs` is the time until the next point frees (refused: until `points` fit). */
interface Decision {
  allowed: boolean;
  remaining: number;
  waitMs: number;
}

/**
 * The sliding-log decision, shared by the memory store and mirrored line by line in `SCRIPT`.
 * `log` holds the times (ms, oldest first) of the points consumed and not yet expired at `now`;
 * appends `points` entries at `now` when they fit.
 */
function decide(log: number[], now: number, limit: number, windowMs: number, points: number): Decision {
  const used = log.length;
  if (used + points <= limit) {
    for (let i = 0; i < points; i++) log.push(now);
    return { allowed: true, remaining: limit - used - points, waitMs: log[0]! + windowMs - now };
  }
  const need = used + points - limit; // entries that must expire first
  return { allowed: false, remaining: limit - used, waitMs: points > limit ? windowMs : log[need - 1]! + windowMs - now };
}

/**
 * Prune, decide and append for several logs in one script, in KEYS order. KEYS[k]: a log, a list of entry
 * times in Unix ms, oldest first, one element per point. ARGV[1]: now in ms ('' = Redis TIME); then per key
 * limit, window ms, points. Returns {allowed 0|1, remaining, waitMs} per key, flattened.
 */
const SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local out = {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local limit = tonumber(ARGV[3 * k - 1])
  local window = tonumber(ARGV[3 * k])
  local points = tonumber(ARGV[3 * k + 1])
  -- Drop expired entries from the head (oldest first): amortized O(1) per request, never a read of the whole log.
  local used = redis.call('LLEN', key)
  while used > 0 and tonumber(redis.call('LINDEX', key, 0)) <= now - window do
    redis.call('LPOP', key)
    used = used - 1
  end
  local n = #out
  if used + points <= limit then
    local entries = {}
    for i = 1, points do entries[i] = string.format('%d', now) end
    redis.call('RPUSH', key, unpack(entries))
    redis.call('PEXPIRE', key, window)
    local oldest = now
    if used > 0 then oldest = tonumber(redis.call('LINDEX', key, 0)) end
    out[n + 1] = 1; out[n + 2] = limit - used - points; out[n + 3] = oldest + window - now
  elseif points > limit then
    out[n + 1] = 0; out[n + 2] = limit - used; out[n + 3] = window
  else
    out[n + 1] = 0; out[n + 2] = limit - used; out[n + 3] = tonumber(redis.call('LINDEX', key, used + points - limit - 1)) + window - now
  end
end
return out
`;

/** Most logs decided by one script call (a larger turn is split). */
const MAX_BATCH = 512;

/** One policy's sliding logs in process memory, per key. */
class MemoryLog {
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

/** `qgSlidingLogs(numKeys, ...keys, now, ...[limit, windowMs, points] per key)`: see SCRIPT. */
type SlidingLogsCommand = (...args: (string | number)[]) => Promise<number[]>;

/** One decision asked for: `points` of the log `key` (a Redis key, or the account id in `log`'s memory). */
interface Ask {
  key: string;
  limit: number;
  windowMs: number;
  points: number;
  /** The memory store of the ask's policy (memory limiter only). */
  log?: MemoryLog;
}

/**
 * Gathers the decisions asked for in one turn of the event loop and makes them together when the turn's I/O
 * callbacks are done (`setImmediate`), or at MAX_BATCH, in arrival order: `decideAll` gets the asks and returns
 * their decisions in the same order (Redis: one script call; memory: each log in turn), or fails them all alike.
 * The memory limiter batches too, though it could decide at once: an answer decided inside the socket's read
 * callback is written there, one write waking the client per answer, and `npm run bench` on PGlite measured that
 * at about twice the CPU per request of answers written together after the turn (185 -> 102 us billed).
 *
 * `maxInFlight` (Redis: 1): while that many calls are unanswered, new asks wait and go together in the next call
 * once one is answered (MAX_BATCH asks go at once regardless). An idle replica still sends an ask in the turn it
 * arrived; under load a call carries every ask of its round trip, not only of one turn. Each call is a socket
 * write to Redis and a read of its answer, and on the 2-vCPU bench machine that write alone measured about 60 us
 * of CPU (`BENCH_PROFILE=1 npm run bench`, 14 asks a call on average with one call per turn).
 */
class TurnBatcher {
  private waiting: { ask: Ask; resolve: (d: Decision) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  /** Calls of `decideAll` not yet settled. */
  private inFlight = 0;

  constructor(
    private readonly decideAll: (asks: Ask[]) => Promise<Decision[]> | Decision[],
    private readonly maxInFlight = Infinity,
  ) {}

  decide(ask: Ask): Promise<Decision> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ask, resolve, reject });
      if (this.waiting.length >= MAX_BATCH) this.send();
      else this.schedule();
    });
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
    let decided: Promise<Decision[]> | Decision[];
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

  /** A call settled: the asks that waited for it go in the next one (still after the current turn's callbacks). */
  private settled(): void {
    this.inFlight--;
    if (this.waiting.length > 0) this.schedule();
  }
}

/** The Redis decisions of `asks` in one script call (see SCRIPT); `now` is '' for Redis TIME. */
async function decideInRedis(command: SlidingLogsCommand, asks: Ask[], now: string): Promise<Decision[]> {
  const args: (string | number)[] = [asks.length];
  for (const a of asks) args.push(a.key);
  args.push(now);
  for (const a of asks) args.push(a.limit, a.windowMs, a.points);
  const flat = await command(...args);
  return asks.map((_, i) => ({ allowed: flat[3 * i] === 1, remaining: flat[3 * i + 1]!, waitMs: flat[3 * i + 2]! }));
}

function outcome(row: EndpointInfo, d: Decision): RateLimitOutcome {
  const spec = row.rateLimit!;
  return {
    allowed: d.allowed,
    policy: row.operationId,
    limit: spec.maxRequests,
    windowSeconds: spec.windowSeconds,
    remaining: Math.max(0, d.remaining),
    resetSeconds: Math.max(1, Math.ceil(d.waitMs / 1000)),
  };
}

/** Builds the limiter for every catalogue row that declares a rate limit. */
export function createRateLimiter(opts: RateLimiterOptions = {}): RateLimiter {
  if (opts.enabled === false) {
    return { kind: 'off', consume: async () => null, close: async () => {} };
  }
  const prefix = opts.keyPrefix ?? 'qg:rl';
  const clock = opts.now ?? Date.now;
  let lastLogged = 0;
  const warn = (err: string) => {
    if (Date.now() - lastLogged > 10_000) {
      lastLogged = Date.now();
      opts.logger?.warn({ err }, 'Redis unreachable: rate limits fall back to this replica\'s memory');
    }
  };
  let redis: Redis | null = null;
  let batcher: TurnBatcher | null = null;
  if (opts.redisUrl) {
    redis = new Redis(opts.redisUrl, {
      enableOfflineQueue: false,
      // No auto-pipelining: the decisions of one event-loop turn are already one command (TurnBatcher).
      enableAutoPipelining: false,
      maxRetriesPerRequest: 1,
      commandTimeout: opts.commandTimeoutMs ?? 250,
      connectTimeout: 1000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    });
    redis.on('error', (err: Error) => warn(err.message));
    // No numberOfKeys: each call passes its own count first.
    redis.defineCommand('qgSlidingLogs', { lua: SCRIPT });
    const r = redis as unknown as { qgSlidingLogs: SlidingLogsCommand };
    const command: SlidingLogsCommand = (...args) => r.qgSlidingLogs(...args);
    batcher = new TurnBatcher((asks) => decideInRedis(command, asks, opts.now ? String(Math.floor(opts.now())) : ''), 1);
  }
  const memory = new Map<string, MemoryLog>();
  for (const row of ENDPOINTS) {
    if (row.rateLimit) memory.set(row.operationId, new MemoryLog(row.rateLimit.maxRequests, row.rateLimit.windowSeconds * 1000));
  }
  // Without Redis: decided in this process's memory, a turn's asks together (see TurnBatcher).
  const inMemory = redis
    ? null
    : new TurnBatcher((asks) => {
        const now = clock();
        return asks.map((a) => a.log!.consume(a.key, now, a.points));
      });
  return {
    kind: redis ? 'redis' : 'memory',
    ...(redis ? { ping: () => redis!.ping() } : {}),
    async consume(accountId, row, points) {
      const local = memory.get(row.operationId);
      if (!local || !row.rateLimit) return null;
      if (!Number.isInteger(points) || points < 1) throw new RangeError(`points must be a positive integer, got ${points}`);
      const { maxRequests, windowSeconds } = row.rateLimit;
      if (redis && batcher && redis.status === 'ready') {
        try {
          return outcome(row, await batcher.decide({ key: `${prefix}:sl:${row.operationId}:${accountId}`, limit: maxRequests, windowMs: windowSeconds * 1000, points }));
        } catch (e) {
          warn(e instanceof Error ? e.message : String(e));
        }
      } else if (redis) {
        warn(`Redis connection ${redis.status}`);
      }
      if (inMemory) return outcome(row, await inMemory.decide({ key: accountId, limit: maxRequests, windowMs: windowSeconds * 1000, points, log: local }));
      return outcome(row, local.consume(accountId, clock(), points)); // Redis unreachable: this replica's memory at once
    },
    async close() {
      if (redis) redis.disconnect();
    },
  };
}
