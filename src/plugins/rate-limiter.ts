/**
 * Rate limits per account and catalogue operation (spec: Limits; EndpointInfoOut.rate_limit), on
 * rate-limiter-flexible: in process memory by default, in Redis when `REDIS_URL` is set so every
 * replica draws from one count. Windows are fixed: `maxRequests` per `windowSeconds`, starting at
 * an account's first request of the operation.
 *
 * Redis unreachable: a request never waits on it. The Redis client does not queue commands while
 * disconnected and times out a command after `commandTimeoutMs`; the limiter then falls back to an
 * in-memory limiter of the same policy (rate-limiter-flexible's insurance limiter), so each replica
 * enforces the limit on its own until Redis is back (a client may then get up to one limit per
 * replica). The fall-back is logged.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Logger } from 'pino';
import { ENDPOINTS, type EndpointInfo } from '../catalogue/endpoints.js';

/** The outcome of consuming `points` of an account's allowance for one operation. */
export interface RateLimitOutcome {
  allowed: boolean;
  /** Policy name: the catalogue operation id. */
  policy: string;
  limit: number;
  windowSeconds: number;
  /** Requests left in the current window (0 when refused). */
  remaining: number;
  /** Whole seconds until the window resets (>= 1 while a window is open). */
  resetSeconds: number;
}

/** The limiter the request pipeline uses. */
export interface RateLimiter {
  /** `memory`, `redis`, or `off` (no limits; load tests only). */
  readonly kind: 'memory' | 'redis' | 'off';
  /**
   * Consumes `points` requests of `row`'s limit for `accountId`. Null when the row declares no limit
   * (or the limiter is off). Never throws for a store failure (see module doc).
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
}

function outcome(row: EndpointInfo, res: RateLimiterRes, allowed: boolean): RateLimitOutcome {
  const spec = row.rateLimit!;
  return {
    allowed,
    policy: row.operationId,
    limit: spec.maxRequests,
    windowSeconds: spec.windowSeconds,
    remaining: allowed ? Math.max(0, res.remainingPoints) : 0,
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  };
}

/** Builds the limiter for every catalogue row that declares a rate limit. */
export function createRateLimiter(opts: RateLimiterOptions = {}): RateLimiter {
  if (opts.enabled === false) {
    return { kind: 'off', consume: async () => null, close: async () => {} };
  }
  const prefix = opts.keyPrefix ?? 'qg:rl';
  let redis: Redis | null = null;
  if (opts.redisUrl) {
    redis = new Redis(opts.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: opts.commandTimeoutMs ?? 250,
      connectTimeout: 1000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    });
    let lastLogged = 0;
    redis.on('error', (err: Error) => {
      if (Date.now() - lastLogged > 10_000) {
        lastLogged = Date.now();
        opts.logger?.warn({ err: err.message }, 'Redis unreachable: rate limits fall back to this replica\'s memory');
      }
    });
  }
  const limiters = new Map<string, RateLimiterAbstract>();
  for (const row of ENDPOINTS) {
    if (!row.rateLimit) continue;
    const base = { points: row.rateLimit.maxRequests, duration: row.rateLimit.windowSeconds, keyPrefix: `${prefix}:${row.operationId}` };
    const memory = new RateLimiterMemory(base);
    limiters.set(
      row.operationId,
      redis ? new RateLimiterRedis({ ...base, storeClient: redis, rejectIfRedisNotReady: true, insuranceLimiter: memory }) : memory,
    );
  }
  return {
    kind: redis ? 'redis' : 'memory',
    ...(redis ? { ping: () => redis!.ping() } : {}),
    async consume(accountId, row, points) {
      const limiter = limiters.get(row.operationId);
      if (!limiter) return null;
      try {
        return outcome(row, await limiter.consume(accountId, points), true);
      } catch (e) {
        if (e instanceof RateLimiterRes) return outcome(row, e, false);
        throw e;
      }
    },
    async close() {
      if (redis) redis.disconnect();
    },
  };
}
