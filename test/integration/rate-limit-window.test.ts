/**
 * "120 per 60 s" holds over every 60 s interval, not per fixed window (issue: limits hold over every
 * 60 s). The same cases run on the in-memory limiter, on the Redis limiter (real Redis, with
 * TEST_REDIS_URL; skipped without it) and on the per-replica fall-back used while Redis is
 * unreachable. Time is controlled through the limiter's test clock (passed to the Redis script in
 * place of `TIME`), so no assertion depends on how fast the machine is. Also checked: weighted
 * consumption is all or nothing, refused requests consume nothing, `remaining` / `resetSeconds` (the
 * `RateLimit` header and `Retry-After`) at the edge, two limiters on one Redis share one count (on
 * Redis server time), and the same edge through the HTTP pipeline.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRateLimiter, type RateLimiter, type RateLimitOutcome } from '../../src/limits/rate-limiter.js';
import { endpoint } from '../../src/catalogue/endpoints.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';

const redisUrl = process.env.TEST_REDIS_URL;
const PRICES = endpoint('getPrices'); // 120 per 60 s (data/endpoints.json)
const EXPORT = endpoint('exportPrices'); // 2 per 60 s
/** A minute boundary, so a fixed window aligned to minutes would reset between T0 + 59 s and T0 + 61 s. */
const T0 = Date.UTC(2026, 6, 16, 12, 0, 0);
const s = (seconds: number) => T0 + Math.round(seconds * 1000);

/** A limiter whose clock the test sets, with the warnings it logged (a fall-back from Redis to memory). */
interface Clocked {
  limiter: RateLimiter;
  at(ms: number): void;
  warnings: string[];
}

const backends: { name: string; skip: boolean; make: () => Clocked; unreachable?: true }[] = [
  { name: 'memory', skip: false, make: () => clocked({}) },
  // The exact sliding log: every request decided in Redis (rate-limit leases have their own cases below).
  { name: 'Redis', skip: !redisUrl, make: () => clocked({ redisUrl, keyPrefix: `qg:test:${randomUUID()}`, leaseMs: 0 }) },
  // Nothing listens on port 1: every call falls back to this replica's memory at once.
  { name: 'fall-back while Redis is unreachable', skip: false, make: () => clocked({ redisUrl: 'redis://127.0.0.1:1' }), unreachable: true },
];

function clocked(opts: Parameters<typeof createRateLimiter>[0]): Clocked {
  let now = T0;
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => (warnings.push(String(chunk)), done()) }));
  return { limiter: createRateLimiter({ ...opts, logger, now: () => now }), at: (ms) => (now = ms), warnings };
}

/** `n` one-point requests, one after another (the order of the outcomes is the order of the requests). */
async function requests(limiter: RateLimiter, account: string, n: number, row = PRICES): Promise<RateLimitOutcome[]> {
  const out: RateLimitOutcome[] = [];
  for (let i = 0; i < n; i++) out.push((await limiter.consume(account, row, 1))!);
  return out;
}

const allowed = (xs: RateLimitOutcome[]) => xs.filter((x) => x.allowed).length;

/**
 * Waits (generously: the test machine is shared) until `limiter`'s Redis connection answers; a limiter pointed at the
 * unreachable address of the fall-back suite is not waited for (it never answers: that suite tests the memory fall-back).
 */
async function readyRedis(limiter: RateLimiter, reachable = true) {
  if (limiter.kind === 'redis' && redisUrl && reachable) await vi.waitFor(() => limiter.ping!(), { timeout: 30_000, interval: 100 });
}

/** Two limiters made by `make` on one Redis and an admin connection to it: made before the suite's tests, closed after. */
function twoLimiters(make: () => RateLimiter): { one: RateLimiter; two: RateLimiter; admin: Redis; make: () => RateLimiter } {
  const pair = { one: null as unknown as RateLimiter, two: null as unknown as RateLimiter, admin: null as unknown as Redis, make };
  beforeAll(async () => {
    pair.one = make();
    pair.two = make();
    pair.admin = new Redis(redisUrl!);
    await Promise.all([readyRedis(pair.one), readyRedis(pair.two)]);
  });
  afterAll(async () => {
    await pair.one?.close();
    await pair.two?.close();
    pair.admin?.disconnect();
  });
  return pair;
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`sliding window (${backend.name})`, () => {
    let c: Clocked;
    beforeAll(async () => {
      c = backend.make();
      await readyRedis(c.limiter, backend.unreachable !== true);
    });
    afterAll(async () => {
      await c?.limiter.close();
    });

    it('lets 120 requests at the end of one minute and 120 just after it NOT all pass: only what left the last 60 s frees up', async () => {
      const account = randomUUID();
      c.at(s(59));
      expect(allowed(await requests(c.limiter, account, 120))).toBe(120);
      c.at(s(61)); // a fixed window would have reset at T0 + 60 s
      const after = await requests(c.limiter, account, 120);
      expect(allowed(after)).toBe(0);
      expect(after[0]).toMatchObject({ allowed: false, policy: 'getPrices', limit: 120, windowSeconds: 60, remaining: 0, resetSeconds: 58 });
      c.at(s(118.999));
      expect(await c.limiter.consume(account, PRICES, 1)).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 1 });
      c.at(s(119)); // the 120 of T0 + 59 s leave the window together
      expect(allowed(await requests(c.limiter, account, 121))).toBe(120);
    });

    it('frees exactly the points whose 60 s have passed, and Retry-After says when the next one does', async () => {
      const account = randomUUID();
      c.at(s(0));
      expect(await c.limiter.consume(account, PRICES, 1)).toMatchObject({ allowed: true, remaining: 119, resetSeconds: 60 });
      c.at(s(59.9));
      const end = await requests(c.limiter, account, 119);
      expect(allowed(end)).toBe(119);
      // The RateLimit header: what is left, and when the oldest point (T0) frees: 0.1 s, rounded up.
      expect(end[118]).toMatchObject({ remaining: 0, resetSeconds: 1 });
      c.at(s(60.1));
      const after = await requests(c.limiter, account, 120);
      expect(after.map((o) => o.allowed)).toEqual([true, ...Array(119).fill(false)]);
      // Refused: nothing left; Retry-After until the points of T0 + 59.9 s free up (59.8 s, rounded up).
      for (const o of after.slice(1)) expect(o).toMatchObject({ remaining: 0, resetSeconds: 60 });
      // Any 60 s interval: T0 + 59.9 s to T0 + 119.899 s holds 119 + 1 = 120 allowed points.
      c.at(s(119.8));
      expect(await c.limiter.consume(account, PRICES, 1)).toMatchObject({ allowed: false, resetSeconds: 1 });
      c.at(s(119.9));
      const freed = await requests(c.limiter, account, 120);
      expect(allowed(freed)).toBe(119);
      expect(freed[118]).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 1 }); // the point of T0 + 60.1 s is next
    });

    it('consumes weighted requests all or nothing', async () => {
      const account = randomUUID();
      c.at(s(0));
      expect(await c.limiter.consume(account, PRICES, 100)).toMatchObject({ allowed: true, remaining: 20, resetSeconds: 60 });
      c.at(s(10));
      expect(await c.limiter.consume(account, PRICES, 18)).toMatchObject({ allowed: true, remaining: 2, resetSeconds: 50 });
      c.at(s(20));
      // 3 do not fit in the 2 left: none is taken, and they fit once the 100 of T0 leave (40 s).
      expect(await c.limiter.consume(account, PRICES, 3)).toMatchObject({ allowed: false, remaining: 2, resetSeconds: 40 });
      expect(await c.limiter.consume(account, PRICES, 2)).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 40 });
      c.at(s(60));
      expect(await c.limiter.consume(account, PRICES, 3)).toMatchObject({ allowed: true, remaining: 97, resetSeconds: 10 });
      // More points than the limit never fit.
      const tooMany = await c.limiter.consume(randomUUID(), EXPORT, 3);
      expect(tooMany).toMatchObject({ allowed: false, limit: 2, remaining: 2, resetSeconds: 60 });
      await expect(c.limiter.consume(account, PRICES, 0)).rejects.toThrow(RangeError);
    });

    it('does not count refused requests: a client retrying on 429 gets through once the window frees', async () => {
      const account = randomUUID();
      c.at(s(0));
      expect(allowed(await requests(c.limiter, account, 2, EXPORT))).toBe(2);
      for (let second = 1; second < 60; second++) {
        c.at(s(second));
        expect(await c.limiter.consume(account, EXPORT, 1)).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 60 - second });
      }
      c.at(s(60));
      expect(await c.limiter.consume(account, EXPORT, 1)).toMatchObject({ allowed: true, remaining: 1, resetSeconds: 60 });
      expect(await c.limiter.consume(account, EXPORT, 1)).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 60 });
    });

    it('keeps accounts and operations apart', async () => {
      const [a, b] = [randomUUID(), randomUUID()];
      c.at(s(0));
      expect(allowed(await requests(c.limiter, a, 121))).toBe(120);
      expect(await c.limiter.consume(b, PRICES, 1)).toMatchObject({ allowed: true, remaining: 119 });
      expect(await c.limiter.consume(a, EXPORT, 1)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await c.limiter.consume(a, endpoint('listWebsites'), 1)).toBeNull(); // no limit declared
    });

    it.runIf(backend.name.startsWith('fall-back'))('logs the fall-back to memory', () => {
      expect(c.warnings.join('\n')).toContain("rate limits fall back to this replica's memory");
    });

    it.runIf(backend.name === 'Redis')('decided every case above in Redis, never in the memory fall-back', () => {
      expect(c.warnings).toEqual([]);
    });
  });
}

describe.skipIf(!redisUrl)('two limiters on one Redis (Redis server time)', () => {
  const keyPrefix = `qg:test:${randomUUID()}`;
  // Exactly 120: no leases (a lease held by one limiter may refuse the other's requests early, see below).
  const r = twoLimiters(() => createRateLimiter({ redisUrl, keyPrefix, leaseMs: 0 }));

  it('share one count: exactly 120 of 200 concurrent requests pass, weighted ones included', async () => {
    const account = randomUUID();
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? r.one : r.two).consume(account, PRICES, i % 4 === 0 ? 2 : 1)));
    // 25 requests of 2 points and 75 of 1 = 125 points offered.
    const points = outcomes.reduce((sum, o, i) => sum + (o!.allowed ? (i % 4 === 0 ? 2 : 1) : 0), 0);
    expect(points).toBeGreaterThanOrEqual(119); // a 2-point request may be refused with 1 left
    expect(points).toBeLessThanOrEqual(120);
    const more = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? r.one : r.two).consume(account, PRICES, 1)));
    expect(points + allowed(more as RateLimitOutcome[])).toBe(120);
    for (const o of more.filter((x) => !x!.allowed)) expect(o).toMatchObject({ remaining: 0, resetSeconds: expect.any(Number) });
    const seen = await r.two.consume(account, PRICES, 1);
    expect(seen).toMatchObject({ allowed: false, remaining: 0 });
    expect(seen!.resetSeconds).toBeGreaterThanOrEqual(1);
    expect(seen!.resetSeconds).toBeLessThanOrEqual(60);
  });

  it('keeps one bounded log per account and operation that expires one window after its newest entry', async () => {
    const account = randomUUID();
    await r.one.consume(account, PRICES, 5);
    const key = `${keyPrefix}:sl:getPrices:${account}`;
    expect(await r.admin.llen(key)).toBe(5);
    const ttl = await r.admin.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await Promise.all(Array.from({ length: 200 }, () => r.two.consume(account, PRICES, 1)));
    expect(await r.admin.llen(key)).toBe(120); // refused requests add nothing
  });

  it('keeps the logs of account ids with commas, semicolons, spaces and quotes apart (one script call decides them together)', async () => {
    // Account ids are 1-128 characters without control characters (the dashboard's sync): the asks of one turn
    // travel to the script as one text, so no such character may run one ask into the next.
    const base = randomUUID();
    const ids = [`${base}`, `${base},120,60000`, `${base}; ${base}`, `${base} "x",'y'`, `${base}é中`];
    const outcomes = await Promise.all(ids.map((id, i) => r.one.consume(id, PRICES, i + 1)));
    expect(outcomes.map((o) => o!.remaining)).toEqual(ids.map((_, i) => 120 - (i + 1)));
    for (const [i, id] of ids.entries()) expect(await r.admin.llen(`${keyPrefix}:sl:getPrices:${id}`)).toBe(i + 1);
    await expect(Promise.resolve().then(() => createRateLimiter({ redisUrl, keyPrefix: 'qg:\ttest' }))).rejects.toThrow(/control characters/);
  });
});

describe.skipIf(!redisUrl)('rate-limit leases (two limiters on one Redis, one test clock)', () => {
  const keyPrefix = `qg:test:${randomUUID()}`;
  let now = T0;
  const clock = () => now;
  const r = twoLimiters(() => createRateLimiter({ redisUrl, keyPrefix, now: clock, leaseMs: 1000 }));
  const logOf = (account: string) => `${keyPrefix}:sl:getPrices:${account}`;

  it('a busy account takes points ahead, logged in Redis before they are handed out, with the same remaining as without', async () => {
    const account = randomUUID();
    now = s(0);
    const first = await requests(r.one, account, 10); // one period of demand: 10 points, no lease yet
    expect(first.map((o) => o.remaining)).toEqual([119, 118, 117, 116, 115, 114, 113, 112, 111, 110]);
    expect(await r.admin.llen(logOf(account))).toBe(10);
    now = s(1); // next period: its first request takes 10 more ahead (its last period's demand)
    expect(await r.one.consume(account, PRICES, 1)).toMatchObject({ allowed: true, remaining: 109 });
    expect(await r.admin.llen(logOf(account))).toBe(21);
    // The leased entries carry the lease's end (T0 + 2 s): no earlier than any request they serve.
    expect((await r.admin.lrange(logOf(account), -10, -1)).map(Number)).toEqual(Array(10).fill(s(2)));
    now = s(1.2);
    const leased = await requests(r.one, account, 5);
    expect(leased.map((o) => o.remaining)).toEqual([108, 107, 106, 105, 104]);
    expect(await r.admin.llen(logOf(account))).toBe(21); // handed out from memory: nothing new in Redis
  });

  it('never lets more than 120 through in any 60 s on two limiters under busy load', async () => {
    const account = randomUUID();
    const passedAt: number[] = [];
    let refused = 0;
    // 4 requests every 250 ms from each limiter for 70 s: 2,240 offered, 16 a second per limiter, so both keep leases.
    for (let ms = 0; ms < 70_000; ms += 250) {
      now = s(100) + ms;
      const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? r.one : r.two).consume(account, PRICES, 1)));
      for (const o of outcomes) {
        if (o!.allowed) passedAt.push(now);
        else refused++;
      }
    }
    // Every 60 s interval: at most 120 requests let through, whichever limiter let them.
    for (const t of passedAt) expect(passedAt.filter((u) => u > t - 60_000 && u <= t).length).toBeLessThanOrEqual(120);
    expect(passedAt.filter((t) => t < s(160)).length).toBe(120); // the first minute's 120 were all used
    expect(passedAt.length).toBeGreaterThan(120); // and points freed after it were handed out again
    expect(refused).toBeGreaterThan(0);
  });

  it('hands out a lease\'s points only before its end, and a closed limiter gives its unused points back', async () => {
    const account = randomUUID();
    now = s(300);
    await requests(r.one, account, 12); // demand: 12 a period
    now = s(301);
    await r.one.consume(account, PRICES, 1); // takes 12 ahead (the 1/8 cap is 15)
    expect(await r.admin.llen(logOf(account))).toBe(25);
    now = s(302.5); // the lease ended at T0 + 302 s: the next request is decided in Redis again
    expect(await r.one.consume(account, PRICES, 1)).toMatchObject({ allowed: true });
    await r.one.close();
    // 12 + 1 + 1 handed out; the 12 of the ended lease and whatever the last decision took ahead are back.
    expect(await r.admin.llen(logOf(account))).toBe(14);
    r.one = r.make();
    await readyRedis(r.one);
  });
});

describe('the window edge through the HTTP pipeline (memory limiter, test clock)', () => {
  const ITEM = 'AK-47 | Redline (Field-Tested)';
  const path = `/prices?market_hash_name=${encodeURIComponent(ITEM)}`;
  let now = T0;
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ rateLimiter: createRateLimiter({ now: () => now }) });
    await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' })]);
  });
  afterAll(async () => {
    await t?.close();
  });

  const get = () => t.get(path, t.auth());
  const gql = (fields: number) =>
    t.gql(`{ ${Array.from({ length: fields }, (_, i) => `f${i}: prices(marketHashName: "${ITEM}") { appId }`).join(' ')} }`, {}, t.auth());

  it('answers 429 with Retry-After and RateLimit from the sliding log just after a minute boundary', async () => {
    now = s(0);
    expect((await get()).headers.get('ratelimit')).toBe('"getPrices";r=119;t=60');
    now = s(59.9);
    for (let i = 0; i < 118; i++) expect((await get()).status).toBe(200);
    const last = await get();
    expect(last.status).toBe(200);
    expect(last.headers.get('ratelimit')).toBe('"getPrices";r=0;t=1');
    now = s(60.1);
    expect((await get()).status).toBe(200); // the point of T0 has left the window
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.headers.get('ratelimit')).toBe('"getPrices";r=0;t=60');

    // Weighted: three aliased prices fields when two points are free are refused whole and cost nothing.
    now = s(119.9); // the 119 points of T0 + 59.9 s leave; 119 free
    for (let i = 0; i < 117; i++) expect((await get()).status).toBe(200);
    const three = await gql(3);
    expect(three.status).toBe(429);
    expect(three.body.errors[0].extensions.code).toBe('rate_limited');
    expect(three.headers.get('retry-after')).toBe('1'); // the point of T0 + 60.1 s frees in 0.2 s
    const two = await gql(2);
    expect(two.status).toBe(200);
    expect(two.body.errors).toBeUndefined();
    expect(two.headers.get('ratelimit')).toBe('"getPrices";r=0;t=1');
  });
});
