/**
 * An open live stream keeps being judged (issue 41, point 2): at every billed minute its caller is read again (a
 * subscription plan removed meanwhile makes the next minute billable; when the balance no longer covers it the
 * stream ends with `credit_insufficient`), and a revoked key or a disabled account ends its open streams (REST
 * stream, GraphQL over SSE, graphql-ws) on every replica, without waiting for a minute. Two apps on one database
 * stand for two replicas: on PostgreSQL each has its own connections and hears the other's changes through
 * LISTEN/NOTIFY; on PGlite they share the embedded database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createAccount, revokeApiKey, setAccountDisabled, setSubscriptions } from '../../src/accounts/accounts.js';
import { openDatabase, type Database } from '../../src/db/client.js';
import { createApp, type App } from '../../src/app.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { listen, openStream, wsClient, type EventStream } from '../helpers/live.js';

const MINUTE_MS = 1500;
/** Generous: the promise is 2 s on every replica; the machine is shared. */
const EVENTUALLY = { timeout: 20_000, interval: 100 };

let t: TestApp; // replica A: billed minutes of 1.5 s
let a: Awaited<ReturnType<typeof listen>>;
let otherDb: Database | null = null;
let replicaB: App; // replica B: minutes of 60 s (an entitlement change must not wait for one)
let b: Awaited<ReturnType<typeof listen>>;

const used = async (accountId: string) => BigInt((await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [accountId]))[0]!.used);
const plan = () => [{ category: 'api', planId: 'pro', expiresAt: new Date(Date.now() + 86_400_000) }];
const restStream = (url: string, key: string) => openStream(`${url}/prices/changes/stream`, { headers: { Authorization: `Bearer ${key}` } });
const sseStream = (url: string, key: string) =>
  openStream(`${url}/graphql`, { headers: { Authorization: `Bearer ${key}` }, body: { query: 'subscription { quoteChanged { seq } }' } });
/** The terminal error's code of a stream (REST: event `error` with the envelope; GraphQL SSE: a `next` with errors). */
function terminalCode(s: EventStream): string | undefined {
  for (const e of s.events) {
    if (e.event === 'error') return JSON.parse(e.data).error.code;
    if (e.event === 'next') {
      const errors = JSON.parse(e.data).errors as { extensions: { code: string } }[] | undefined;
      if (errors?.length) return errors[0]!.extensions.code;
    }
  }
  return undefined;
}
/** A graphql-ws subscription's outcome: the error code of its terminal result once it completed. */
function wsSubscribe(url: string, key: string): { done: Promise<string | undefined>; dispose(): Promise<void> } {
  const client = wsClient(url, key);
  let code: string | undefined;
  const done = new Promise<string | undefined>((resolve) =>
    client.subscribe(
      { query: 'subscription { quoteChanged { seq } }' },
      {
        next: (v) => void (code ??= (v.errors?.[0]?.extensions as { code?: string } | undefined)?.code),
        error: () => resolve(code ?? 'socket_error'),
        complete: () => resolve(code),
      },
    ),
  );
  return { done, dispose: () => client.dispose() as Promise<void> };
}
/** `p`, or a rejection after `ms` (a generous bound: the promise that it settles at all is what is tested). */
const within = <T>(p: Promise<T>, ms = EVENTUALLY.timeout) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms).unref())]);
const slots = async (accountId: string) => (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM live_slot WHERE account_id = $1`, [accountId]))[0]!.n;

beforeAll(async () => {
  const logger = pino({ level: 'error' });
  t = await testApp({ live: { minuteMs: MINUTE_MS, pollMs: 200 }, logger });
  a = await listen(t.app);
  otherDb = t.db.url ? await openDatabase({ url: t.db.url }) : null;
  replicaB = createApp({ db: otherDb ?? t.db, live: { pollMs: 200 }, logger });
  b = await listen(replicaB);
});
afterAll(async () => {
  await b?.close();
  await replicaB?.close();
  await otherDb?.close();
  await a?.close();
  await t?.close();
});

describe('billed minutes re-read the caller', () => {
  it('a subscription plan removed while a stream is open: the next minute is charged', async () => {
    const acct = await createAccount(t.db, { credits: 100n, subscription: plan()[0] });
    const s = await restStream(a.url, acct.key);
    expect(s.status).toBe(200);
    // Free while the plan is active: a few minutes pass without a charge.
    await new Promise((r) => setTimeout(r, 2.5 * MINUTE_MS));
    expect(await used(acct.accountId)).toBe(0n);
    await setSubscriptions(t.db, acct.accountId, []);
    await expect.poll(() => used(acct.accountId), EVENTUALLY).toBeGreaterThanOrEqual(1n);
    expect(terminalCode(s)).toBeUndefined(); // still open, now billed
    s.abort();
  });

  it('a plan removed and no credits left: the stream ends with credit_insufficient at the next minute and its slot is freed', async () => {
    const acct = await createAccount(t.db, { credits: 0n, subscription: plan()[0] });
    const s = await restStream(a.url, acct.key);
    expect(s.status).toBe(200);
    await setSubscriptions(t.db, acct.accountId, []);
    await expect.poll(() => terminalCode(s), EVENTUALLY).toBe('credit_insufficient');
    await s.ended;
    expect(await used(acct.accountId)).toBe(0n);
    await expect.poll(() => slots(acct.accountId), EVENTUALLY).toBe(0);
  });
});

describe('a revoked key or a disabled account ends the open streams on every replica', () => {
  it('revoking the key (on replica A) ends its REST stream, GraphQL SSE and graphql-ws subscriptions on replica B with unauthorized', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const other = await createAccount(t.db, { credits: 100n }); // not revoked: goes on
    const rest = await restStream(b.url, acct.key);
    const sse = await sseStream(b.url, acct.key);
    const ws = wsSubscribe(b.ws, acct.key);
    const untouched = await restStream(b.url, other.key);
    for (const s of [rest, sse, untouched]) expect(s.status).toBe(200);
    await expect.poll(() => slots(acct.accountId), EVENTUALLY).toBe(3);
    await revokeApiKey(t.db, acct.keyId);
    await expect.poll(() => terminalCode(rest), EVENTUALLY).toBe('unauthorized');
    await expect.poll(() => terminalCode(sse), EVENTUALLY).toBe('unauthorized');
    expect(await within(ws.done)).toBe('unauthorized');
    await Promise.all([rest.ended, sse.ended]);
    await expect.poll(() => slots(acct.accountId), EVENTUALLY).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(terminalCode(untouched)).toBeUndefined();
    untouched.abort();
    await ws.dispose();
  });

  it('disabling the account ends its streams on both replicas with forbidden', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const onA = await restStream(a.url, acct.key);
    const onB = await sseStream(b.url, acct.key);
    await setAccountDisabled(t.db, acct.accountId, true);
    await expect.poll(() => terminalCode(onA), EVENTUALLY).toBe('forbidden');
    await expect.poll(() => terminalCode(onB), EVENTUALLY).toBe('forbidden');
    await Promise.all([onA.ended, onB.ended]);
  });
});
