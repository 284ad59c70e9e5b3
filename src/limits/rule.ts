/**
 * The rate limit's rule (module doc of src/limits/rate-limiter.ts): a sliding log per account and policy, its
 * decision (`decide`, which the memory store runs and the Redis store's script mirrors line by line), and the
 * limiter's public types.
 */
import type { Logger } from 'pino';
import type { EndpointInfo } from '../catalogue/endpoints.js';

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
export interface Decision {
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
export function decide(log: number[], now: number, limit: number, windowMs: number, points: number): Decision {
  const used = log.length;
  if (used + points <= limit) {
    for (let i = 0; i < points; i++) log.push(now);
    return { allowed: true, remaining: limit - used - points, waitMs: log[0]! + windowMs - now };
  }
  const need = used + points - limit; // entries that must expire first
  return { allowed: false, remaining: limit - used, waitMs: points > limit ? windowMs : log[need - 1]! + windowMs - now };
}

/** The outcome of a decision of catalogue row `row`'s limit. */
export function outcome(row: EndpointInfo, d: Decision): RateLimitOutcome {
  return namedOutcome(row.operationId, row.rateLimit!, d);
}

/** The outcome of a decision of the policy `name` (a catalogue row's operation id, or a named limit's name). */
export function namedOutcome(name: string, spec: { maxRequests: number; windowSeconds: number }, d: Decision): RateLimitOutcome {
  return {
    allowed: d.allowed,
    policy: name,
    limit: spec.maxRequests,
    windowSeconds: spec.windowSeconds,
    remaining: Math.max(0, d.remaining),
    resetSeconds: Math.max(1, Math.ceil(d.waitMs / 1000)),
  };
}
