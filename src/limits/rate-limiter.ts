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
import { ENDPOINTS } from '../catalogue/endpoints.js';
import { namedOutcome, outcome, type NamedLimit, type RateLimiter, type RateLimiterOptions } from './rule.js';
import { MemoryLog } from './memory-store.js';
import { TurnBatcher } from './turns.js';
import { BACKGROUND_MS, decideInRedis, RedisLeases, SCRIPT, type SlidingLogsCommand } from './redis-store.js';

export type { NamedLimit, RateLimiter, RateLimiterOptions, RateLimitOutcome } from './rule.js';

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
