/**
 * The rate limit's Redis store (module doc of src/limits/rate-limiter.ts): the script that gives back, prunes,
 * decides and appends for several logs at once on Redis time, and the rate-limit leases of one replica.
 */
import type { Decision } from './rule.js';
import { TurnBatcher, type Ask } from './turns.js';

/** Longest a background Redis ask (a lease's renewal or give-back) waits for others to go with (see TurnBatcher). */
export const BACKGROUND_MS = 25;

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
export const SCRIPT = `
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

/** `qgSlidingLogs(now, leaseMs, asks)`: the asks packed one a line, the answers likewise (see SCRIPT). */
export type SlidingLogsCommand = (now: string, leaseMs: number, asks: string) => Promise<string>;

/** The Redis decisions of `asks` in one script call (see SCRIPT); `now` is '' for Redis TIME; `leaseMs` the lease length. */
export async function decideInRedis(command: SlidingLogsCommand, asks: Ask[], now: string, leaseMs: number): Promise<Decision[]> {
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
export class RedisLeases {
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
