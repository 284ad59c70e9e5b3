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
 * client was a large share of the server's CPU; docs/benchmarks.md). Every log is still decided atomically; Redis
 * Cluster is not supported (the keys of one call may lie in different slots).
 * Tests may pass a clock (`now`); it then replaces `TIME` in the script for that limiter.
 *
 * Rate-limit leases (Redis only; `leaseMs`, default 1,000 ms, `RATE_LIMIT_LEASE_MS`; 0 = off): a replica that served
 * an account's operation more than once in its last busy lease period takes, with the next decision in Redis, up to
 * as many points again ahead (a grant: at most 1/8 of the limit and a quarter of the points still free), logged in
 * Redis at once, and hands them to that account's next requests from memory, without a round trip, for `leaseMs`
 * after it asked. A grant is renewed in the background before it runs out (three quarters of its period gone, or
 * three quarters of the points wanted), so a steadily busy account's requests do not wait on Redis. What a replica
 * did not use it gives back (the entries are removed) with the account's next decision in Redis, or within one more
 * period (a sweep), and on `close()`. Renewals and give-backs are background asks: they wait up to 25 ms
 * (BACKGROUND_MS, at most 1/8 of `leaseMs`) for other asks to share their script call, unless a request waits for them.
 * Why: on the 2-vCPU bench machine the round trip to Redis was the largest single cost of a GET (`npm run bench`
 * with the Redis limiter against the in-memory one; docs/benchmarks.md).
 * What stays exact: the limit is never exceeded, on any number of replicas, over any interval of `windowSeconds`:
 * a point is logged before it is handed out, and a leased point's entry carries the grant's end as its time (no
 * earlier than any request it can serve), so every request counts in every window that holds it; the log stays in
 * time order, since no entry is logged earlier than the newest one. What a lease costs: a leased point counts up
 * to `leaseMs` longer than its request's own time, and points a replica holds unused (two grants at most: 1/4 of
 * the limit, for at most `leaseMs` each) are refused to the account's requests on other replicas meanwhile, so a
 * client near its limit may be refused that much early; since a grant takes at most a quarter of what is free, an
 * account with fewer than 4 points free is decided exactly. An account seen once per period never takes a lease,
 * so its requests are decided exactly as without leases. A replica killed with a grant loses its unused points
 * until their entries expire (one window after the grant's end).
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
  /**
   * Consumes `points` (default 1) of a limit that is not a catalogue row, for `key`: the pages' limit per client
   * address (src/pages/page-limit.ts). The same sliding log and store as the rows' (memory, or Redis when the limiter
   * uses it, so replicas share it; Redis key `<prefix>:sl:<policy.name>:<key>`, decided in Redis every time: no
   * lease), falling back to memory alike. Null when the limiter is off. `key` must hold no control character.
   */
  consumeNamed(policy: NamedLimit, key: string, points?: number): Promise<RateLimitOutcome | null>;
  /** PINGs the shared Redis (status check `redis`); absent unless the limiter uses Redis. Throws when Redis does not answer. */
  ping?(): Promise<unknown>;
  close(): Promise<void>;
}

/** A limit outside the catalogue (RateLimiter.consumeNamed): `maxRequests` per any interval of `windowSeconds`. */
export interface NamedLimit {
  /** The policy's name (RateLimit header policy; part of the Redis key): letters, digits, `-` and `_`. */
  name: string;
  maxRequests: number;
  windowSeconds: number;
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
  /**
   * Redis only: milliseconds a replica may hand out points it took ahead for a busy account (a rate-limit lease, see
   * the module doc); 0 = every request is decided in Redis. Default 1,000. Measured with the test clock when `now` is given.
   */
  leaseMs?: number;
}

/** A decision on one log: `waitMs` is the time until the next point frees (refused: until `points` fit). */
interface Decision {
  allowed: boolean;
  remaining: number;
  waitMs: number;
  /** Redis only: points taken ahead beyond `points` (a lease; not counted in `remaining`) and the time (Redis ms) logged for them. */
  extras?: number;
  stamp?: number;
}

/**
 * The sliding-log decision, shared by the memory store and mirrored line by line in `SCRIPT` (which adds leases).
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
 * Give back, prune, decide and append for several logs in one script, in the order asked. ARGV[1]: now in ms
 * ('' = Redis TIME); ARGV[2]: the lease length in ms; ARGV[3]: the asks, one line each (`\n`-separated), each
 * seven tab-separated fields (neither character can occur in a key: account ids hold no control characters): the
 * log's key (a list of entry times in Unix ms in time order, one element per point), limit, window ms, points (0: a
 * lease or a give-back only), extras wanted ahead (a lease), points to give back and the time their entries carry
 * (empty when none). Returns one line per ask, `allowed(0|1),remaining,waitMs,
 * extras taken,their time`. The asks travel as one argument and the answers as one string: the Redis client's work
 * per argument and per reply element (ioredis) was most of a call's CPU in the service (docs/benchmarks.md).
 * The keys are not declared in KEYS, so the script needs a single Redis server (no Cluster; see the module doc).
 * The decision is `decide`'s (the memory store), with two additions: a lease's entries carry its end (now + lease),
 * and no entry is logged earlier than the newest one, so the log stays in time order and head pruning and the
 * positional wait stay right.
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
local lease = tonumber(ARGV[2])
local out = {}
for line in string.gmatch(ARGV[3], '[^\\n]+') do
  local key, limitText, windowText, pointsText, extrasText, giveBackText, giveBackStamp = string.match(line, '^([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)$')
  local limit = tonumber(limitText)
  local window = tonumber(windowText)
  local points = tonumber(pointsText)
  local extras = tonumber(extrasText)
  local giveBack = tonumber(giveBackText)
  -- Unused points of this replica's earlier lease leave first (entries of equal time are interchangeable).
  if giveBack > 0 then redis.call('LREM', key, giveBack, giveBackStamp) end
  -- Drop expired entries from the head (oldest first): amortized O(1) per request, never a read of the whole log.
  local used = redis.call('LLEN', key)
  while used > 0 and tonumber(redis.call('LINDEX', key, 0)) <= now - window do
    redis.call('LPOP', key)
    used = used - 1
  end
  local answer
  if points == 0 and extras == 0 then
    answer = '1,' .. (limit - used) .. ',0,0,0'
  elseif used + points <= limit and (points > 0 or used < limit) then
    -- A lease takes at most a quarter of what is free, so near its limit an account is decided exactly.
    local quarter = math.floor((limit - used - points) / 4)
    if extras > quarter then extras = quarter end
    local stamp = now
    if used > 0 then
      local newest = tonumber(redis.call('LINDEX', key, -1))
      if newest > stamp then stamp = newest end
    end
    if extras > 0 and now + lease > stamp then stamp = now + lease end
    local entries = {}
    local text = string.format('%d', stamp)
    for i = 1, points + extras do entries[i] = text end
    redis.call('RPUSH', key, unpack(entries))
    redis.call('PEXPIRE', key, stamp - now + window)
    local oldest = stamp
    if used > 0 then oldest = tonumber(redis.call('LINDEX', key, 0)) end
    answer = '1,' .. (limit - used - points - extras) .. ',' .. string.format('%d', oldest + window - now) .. ',' .. extras .. ',' .. text
  elseif points > limit or points == 0 then
    answer = '0,' .. (limit - used) .. ',' .. window .. ',0,0'
  else
    answer = '0,' .. (limit - used) .. ',' .. string.format('%d', tonumber(redis.call('LINDEX', key, used + points - limit - 1)) + window - now) .. ',0,0'
  end
  out[#out + 1] = answer
end
return table.concat(out, '\\n')
`;

/** Longest a background Redis ask (a lease's renewal or give-back) waits for others to go with (see TurnBatcher). */
const BACKGROUND_MS = 25;

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

/** `qgSlidingLogs(now, leaseMs, asks)`: the asks packed one a line, the answers likewise (see SCRIPT). */
type SlidingLogsCommand = (now: string, leaseMs: number, asks: string) => Promise<string>;

/** One decision asked for: `points` of the log `key` (a Redis key, or the account id in `log`'s memory). */
interface Ask {
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
class TurnBatcher<A = Ask, D = Decision> {
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

/** The Redis decisions of `asks` in one script call (see SCRIPT); `now` is '' for Redis TIME; `leaseMs` the lease length. */
async function decideInRedis(command: SlidingLogsCommand, asks: Ask[], now: string, leaseMs: number): Promise<Decision[]> {
  let lines = '';
  for (let i = 0; i < asks.length; i++) {
    const a = asks[i]!;
    const giveBack = a.giveBack ?? 0;
    lines += `${i === 0 ? '' : '\n'}${a.key}\t${a.limit}\t${a.windowMs}\t${a.points}\t${a.extras ?? 0}\t${giveBack}\t${giveBack > 0 ? a.giveBackStamp : ''}`;
  }
  const answers = (await command(now, leaseMs, lines)).split('\n');
  if (answers.length !== asks.length) throw new Error(`the rate-limit script answered ${answers.length} decisions for ${asks.length} asks`);
  return answers.map((line) => {
    const f = line.split(',');
    return { allowed: f[0] === '1', remaining: Number(f[1]), waitMs: Number(f[2]), extras: Number(f[3]), stamp: Number(f[4]) };
  });
}

/** Lease periods for which a replica remembers a log's demand (a log idle that long is forgotten). */
const MEMORY_PERIODS = 10;

/** Points of one Redis log taken ahead by one decision (a rate-limit lease). */
interface Grant {
  /** Points not handed out yet. */
  left: number;
  /** The time (Redis ms) their entries carry (to give them back). */
  stamp: number;
  /** Lease clock ms: handed out only before this (the ask was sent at `until - leaseMs`). */
  until: number;
}

/** What a replica knows of one Redis log it leases from (see `RedisLeases`). */
interface LeaseState {
  /** The log's Redis key (made once: a request answered from a grant builds no string). */
  key: string;
  /** The log's policy: points per window, and the window in ms. */
  limit: number;
  windowMs: number;
  /** Its grants, oldest first. */
  grants: Grant[];
  /** Of the log's latest decision: points left to other requests (this replica's unused grants not counted), its `waitMs`, and the lease clock when it was asked for. */
  remaining: number;
  waitMs: number;
  decidedAt: number;
  /** Demand: points asked for in the current lease period (started at `periodStart`) and in the last busy one before it. */
  periodStart: number;
  periodPoints: number;
  lastPeriodPoints: number;
  /** A decision that takes a grant is on its way: requests its grants do not cover wait for it. */
  pending: Promise<void> | null;
}

/**
 * Rate-limit leases of one Redis limiter (module doc): requests of busy logs are decided from points taken ahead,
 * the rest by `decide` (the turn's script call). A grant is renewed ahead, in the background, once three quarters
 * of its period have passed or three quarters of the points wanted are gone, so a steadily busy account's requests never wait on Redis.
 * `clock` is the lease clock in ms (monotonic, or the test clock).
 */
class RedisLeases {
  /** Per policy (operation id), per account id (the caller's string, whose hash V8 keeps). */
  private readonly logs = new Map<string, Map<string, LeaseState>>();
  private readonly sweeper: NodeJS.Timeout;
  /** Decisions from grants, resolved together once this turn's I/O callbacks are done (as the memory limiter's). */
  private readonly afterTurn = new TurnBatcher<Decision, Decision>((decided) => decided);

  constructor(
    private readonly leaseMs: number,
    private readonly clock: () => number,
    /** Decides in Redis (`urgent`: a request waits for it; else a background ask, see TurnBatcher). */
    private readonly decide: (ask: Ask, urgent: boolean) => Promise<Decision>,
    /** A request waits for a background ask: send it now. */
    private readonly hurry: () => void,
  ) {
    this.sweeper = setInterval(() => void this.sweep().catch(() => undefined), leaseMs);
    this.sweeper.unref();
  }

  /**
   * Decides `points` (> 0) of the log of `policy` and `accountId` (Redis key `key()`, policy `limit` per `windowMs`)
   * from its grants when they cover them, else in Redis (taking a grant when the log is busy). Throws what `decide` throws.
   */
  consume(policy: string, accountId: string, key: () => string, limit: number, windowMs: number, points: number): Promise<Decision> {
    const st = this.state(policy, accountId, key, limit, windowMs);
    const now = this.clock();
    if (now - st.periodStart >= this.leaseMs) {
      // A busy account that paused for less than MEMORY_PERIODS starts again with the grant of its last busy period.
      st.lastPeriodPoints = now - st.periodStart < MEMORY_PERIODS * this.leaseMs ? st.periodPoints : 0;
      st.periodStart = now;
      st.periodPoints = 0;
    }
    st.periodPoints += points;
    const wanted = Math.min(Math.floor(limit / 8), st.lastPeriodPoints);
    // Answered from a grant without an async function around it (one promise a request: the turn's answer).
    return this.fromGrant(st, points, wanted) ?? this.waitThenTake(st, points, wanted);
  }

  /**
   * The decision of `points` from the log's grants, when one covers them now (renewing ahead in the background when
   * they run low): resolved with the turn's other answers (see TurnBatcher). Undefined when none covers them.
   */
  private fromGrant(st: LeaseState, points: number, wanted: number): Promise<Decision> | undefined {
    const at = this.clock();
    let grant: Grant | undefined;
    for (let i = 0; i < st.grants.length; i++) {
      const g = st.grants[i]!;
      if (g.left >= points && at < g.until) {
        grant = g;
        break;
      }
    }
    if (!grant) return undefined;
    grant.left -= points;
    const left = this.left(st, at);
    if (!st.pending && wanted > 0 && (left * 4 <= wanted || at >= st.grants[st.grants.length - 1]!.until - this.leaseMs / 4)) {
      void this.take(st, { key: st.key, limit: st.limit, windowMs: st.windowMs, points: 0, extras: wanted }, false).catch(() => undefined); // renewed ahead; a failure waits for the next request
    }
    // Answered with the turn's other answers, not inside this socket's read callback (see TurnBatcher).
    return this.afterTurn.decide({ allowed: true, remaining: st.remaining + left, waitMs: Math.max(0, st.waitMs - (at - st.decidedAt)) });
  }

  /** `consume` when no grant covers the points: waits for a renewal on its way (its grant may), else decides in Redis. */
  private async waitThenTake(st: LeaseState, points: number, wanted: number): Promise<Decision> {
    while (st.pending) {
      this.hurry(); // a background renewal this request now waits for
      await st.pending;
      const granted = this.fromGrant(st, points, wanted);
      if (granted) return granted;
    }
    const d = await this.take(st, { key: st.key, limit: st.limit, windowMs: st.windowMs, points, extras: wanted }, true);
    return { allowed: d.allowed, remaining: d.allowed ? st.remaining + this.left(st, this.clock()) : d.remaining, waitMs: d.waitMs };
  }

  /** Unused points of the log's grants still valid at `at`. */
  private left(st: LeaseState, at: number): number {
    let left = 0;
    for (let i = 0; i < st.grants.length; i++) if (at < st.grants[i]!.until) left += st.grants[i]!.left;
    return left;
  }

  /** One decision in Redis for `ask` (points 0: a grant only), keeping its grant; requests not covered meanwhile wait for it when it takes one. */
  private async take(st: LeaseState, ask: Ask, urgent: boolean): Promise<Decision> {
    const sentAt = this.clock();
    // Grants that ended go back first, in the same script call (asks are decided in order): a request refused for
    // want of points sees the ones this replica held and can no longer hand out.
    if (st.grants.some((g) => sentAt >= g.until)) {
      for (const g of st.grants) if (sentAt >= g.until && g.left > 0) void this.giveBack(st, g, urgent).catch(() => undefined);
      st.grants = st.grants.filter((g) => sentAt < g.until);
    }
    let settled!: () => void;
    const taking = (ask.extras ?? 0) > 0;
    if (taking) st.pending = new Promise<void>((r) => (settled = r));
    try {
      const d = await this.decide(ask, urgent);
      if (d.allowed) {
        st.remaining = d.remaining;
        st.waitMs = d.waitMs;
        st.decidedAt = sentAt;
        if ((d.extras ?? 0) > 0) st.grants.push({ left: d.extras!, stamp: d.stamp!, until: sentAt + this.leaseMs });
      }
      return d;
    } finally {
      if (taking) {
        st.pending = null;
        settled();
      }
    }
  }

  /** Removes the unused points of `g` from the log of `st` (with the log's own limit and window: the script prunes first). */
  private giveBack(st: LeaseState, g: Grant, urgent: boolean): Promise<Decision> {
    const left = g.left;
    g.left = 0;
    return this.decide({ key: st.key, limit: st.limit, windowMs: st.windowMs, points: 0, giveBack: left, giveBackStamp: g.stamp }, urgent);
  }

  private state(policy: string, accountId: string, key: () => string, limit: number, windowMs: number): LeaseState {
    let byAccount = this.logs.get(policy);
    if (!byAccount) this.logs.set(policy, (byAccount = new Map()));
    let st = byAccount.get(accountId);
    if (!st) {
      st = { key: key(), limit, windowMs, grants: [], remaining: 0, waitMs: 0, decidedAt: 0, periodStart: this.clock(), periodPoints: 0, lastPeriodPoints: 0, pending: null };
      byAccount.set(accountId, st);
    }
    return st;
  }

  /**
   * Gives back the unused points of expired grants (`all`: of every grant, on close) in one script call, and forgets
   * logs idle for MEMORY_PERIODS periods. Throws what `decide` throws.
   */
  async sweep(all = false): Promise<void> {
    const now = this.clock();
    const asks: Promise<Decision>[] = [];
    for (const byAccount of this.logs.values()) {
      for (const [accountId, st] of byAccount) {
        const keep: Grant[] = [];
        for (const g of st.grants) {
          if (!all && now < g.until) keep.push(g);
          else if (g.left > 0) asks.push(this.giveBack(st, g, all)); // on close at once, else with the next call
        }
        st.grants = keep;
        if (keep.length === 0 && !st.pending && now - st.periodStart >= MEMORY_PERIODS * this.leaseMs) byAccount.delete(accountId);
      }
    }
    await Promise.all(asks);
  }

  /** Stops the sweep; gives back every unused point (best effort: a Redis failure leaves them to expire). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.sweep(true).catch(() => undefined);
  }
}

function outcome(row: EndpointInfo, d: Decision): RateLimitOutcome {
  return namedOutcome(row.operationId, row.rateLimit!, d);
}

/** The outcome of a decision of the policy `name` (a catalogue row's operation id, or a named limit's name). */
function namedOutcome(name: string, spec: { maxRequests: number; windowSeconds: number }, d: Decision): RateLimitOutcome {
  return {
    allowed: d.allowed,
    policy: name,
    limit: spec.maxRequests,
    windowSeconds: spec.windowSeconds,
    remaining: Math.max(0, d.remaining),
    resetSeconds: Math.max(1, Math.ceil(d.waitMs / 1000)),
  };
}

/** Builds the limiter for every catalogue row that declares a rate limit. */
export function createRateLimiter(opts: RateLimiterOptions = {}): RateLimiter {
  if (opts.enabled === false) {
    return { kind: 'off', consume: async () => null, consumeNamed: async () => null, close: async () => {} };
  }
  const prefix = opts.keyPrefix ?? 'qg:rl';
  // The script's asks are tab-separated fields on lines (see SCRIPT): a key holds no control character (account
  // ids have none: isValidAccountId).
  if (/[\u0000-\u001f\u007f]/.test(prefix)) throw new RangeError(`keyPrefix must not contain control characters: ${JSON.stringify(prefix)}`);
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
  let leases: RedisLeases | null = null;
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
    // No KEYS: the keys travel in the packed asks (see SCRIPT).
    redis.defineCommand('qgSlidingLogs', { lua: SCRIPT, numberOfKeys: 0 });
    const r = redis as unknown as { qgSlidingLogs: SlidingLogsCommand };
    const command: SlidingLogsCommand = (...args) => r.qgSlidingLogs(...args);
    const leaseMs = opts.leaseMs ?? 1000;
    batcher = new TurnBatcher((asks) => decideInRedis(command, asks, opts.now ? String(Math.floor(opts.now())) : '', leaseMs), 1, Math.min(BACKGROUND_MS, leaseMs / 8));
    if (leaseMs > 0) {
      const turns = batcher;
      leases = new RedisLeases(
        leaseMs,
        opts.now ?? (() => performance.now()),
        (ask, urgent) => turns.decide(ask, urgent),
        () => turns.hurry(),
      );
    }
  }
  const memory = new Map<string, MemoryLog>();
  for (const row of ENDPOINTS) {
    if (row.rateLimit) memory.set(row.operationId, new MemoryLog(row.rateLimit.maxRequests, row.rateLimit.windowSeconds * 1000));
  }
  // The named limits' logs in memory, one per policy (created at its first use).
  const named = new Map<string, MemoryLog>();
  const namedLog = (policy: NamedLimit) => {
    const id = `${policy.name}/${policy.maxRequests}/${policy.windowSeconds}`;
    let log = named.get(id);
    if (!log) named.set(id, (log = new MemoryLog(policy.maxRequests, policy.windowSeconds * 1000)));
    return log;
  };
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
          const key = () => `${prefix}:sl:${row.operationId}:${accountId}`;
          const windowMs = windowSeconds * 1000;
          return outcome(
            row,
            await (leases ? leases.consume(row.operationId, accountId, key, maxRequests, windowMs, points) : batcher.decide({ key: key(), limit: maxRequests, windowMs, points })),
          );
        } catch (e) {
          warn(e instanceof Error ? e.message : String(e));
        }
      } else if (redis) {
        warn(`Redis connection ${redis.status}`);
      }
      if (inMemory) return outcome(row, await inMemory.decide({ key: accountId, limit: maxRequests, windowMs: windowSeconds * 1000, points, log: local }));
      return outcome(row, local.consume(accountId, clock(), points)); // Redis unreachable: this replica's memory at once
    },
    async consumeNamed(policy, key, points = 1) {
      if (!Number.isInteger(points) || points < 1) throw new RangeError(`points must be a positive integer, got ${points}`);
      if (!/^[A-Za-z0-9_-]+$/.test(policy.name)) throw new RangeError(`a named limit's name must be letters, digits, - or _: ${JSON.stringify(policy.name)}`);
      if (/[\u0000-\u001f\u007f]/.test(key)) throw new RangeError(`a named limit's key must not contain control characters: ${JSON.stringify(key)}`);
      const log = namedLog(policy);
      const windowMs = policy.windowSeconds * 1000;
      if (redis && batcher && redis.status === 'ready') {
        try {
          return namedOutcome(policy.name, policy, await batcher.decide({ key: `${prefix}:sl:${policy.name}:${key}`, limit: policy.maxRequests, windowMs, points }));
        } catch (e) {
          warn(e instanceof Error ? e.message : String(e));
        }
      } else if (redis) {
        warn(`Redis connection ${redis.status}`);
      }
      if (inMemory) return namedOutcome(policy.name, policy, await inMemory.decide({ key, limit: policy.maxRequests, windowMs, points, log }));
      return namedOutcome(policy.name, policy, log.consume(key, clock(), points));
    },
    async close() {
      if (leases) await leases.close();
      if (redis) redis.disconnect();
    },
  };
}
