/**
 * Webhook alerts as a user sees them (issue 44, point 3; docs/alerts.md): registration on both faces with its checks
 * (422, 409, 404 across accounts, the secret shown once), edge-triggered events on price and route-margin crossings,
 * signed deliveries to a local receiver (node:http on 127.0.0.1), retries after a 500, 410 disabling the alert, the
 * delivery log, one credit per event charged once, and no delivery without credits; the SSRF guard (non-public hosts
 * refused at registration, and at delivery on the addresses a name resolves to, through an injected resolver), the
 * charge following the data (an attempt that never connected is free), and the rows' rate limits on both faces. No
 * timing: the evaluator and the delivery worker are driven directly with a fixed clock (the rate limiter too).
 */
import http from 'node:http';
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { evaluateAlerts, runDeliveries, RETRY_DELAYS_SECONDS, MAX_ATTEMPTS, verifySignature } from '../../src/alerts/alerts.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { startAlertJob } from '../../src/jobs/alerts.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { AlertOut, AlertDeliveryOut } from '../../src/shapes/alerts.js';
import { createRateLimiter } from '../../src/limits/rate-limiter.js';

const ITEM = 'AK-47 | Alerting (Field-Tested)';
const OTHER = 'M4A1-S | Alerting (Minimal Wear)';
const T0 = new Date('2026-07-16T12:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  path: string;
}

/** A local webhook receiver: records each request and answers the next scripted status (200 when none is left). */
class Receiver {
  received: Received[] = [];
  script: number[] = [];
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' });
      const status = this.script.shift() ?? 200;
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      res.end(status === 200 ? 'ok' : `status ${status} ${'x'.repeat(1000)}`);
    });
  });
  url = '';
  async start(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', resolve);
    });
    const a = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${a.port}`;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The receiver's check of a delivery, as docs/alerts.md shows it. */
function verify(secret: string, header: string, body: string): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2)));
  const expected = crypto.createHmac('sha256', secret).update(`${parts.t}.${body}`).digest('hex');
  return typeof parts.v1 === 'string' && parts.v1.length === expected.length && crypto.timingSafeEqual(Buffer.from(parts.v1), Buffer.from(expected));
}

let t: TestApp;
let rx: Receiver;
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
/** Ingests quotes observed one minute after the previous ones (an older or equal observation changes nothing). */
let clock = Date.parse('2026-07-16T00:00:00Z');
const ingest = (list: Parameters<typeof ingestBatch>[1]) => {
  clock += 60_000;
  return ingestBatch(t.db, list.map((o) => ({ ...o, observedAt: new Date(clock) })));
};
const del = (path: string, headers: Record<string, string>) => t.app.fetch(new Request(`http://test${path}`, { method: 'DELETE', headers }));
const evaluate = async () => {
  let fired = 0;
  for (;;) {
    const r = await evaluateAlerts(t.db, T0);
    fired += r.fired;
    if (r.changes === 0) return fired;
  }
};
const priceAlert = (over: Record<string, unknown> = {}) => ({
  kind: 'price',
  market_hash_name: ITEM,
  market_code: 'BUFF163',
  side: 'ask',
  direction: 'below',
  level: '95',
  url: `${rx.url}/hook`,
  ...over,
});
const deliveries = async (id: string, key = t.key, query = '') => expectEnvelope(await t.get(`/alerts/${id}/deliveries${query}`, bearer(key)));
const charges = async (deliveryId: string) =>
  t.db.query<{ amount: string }>(`SELECT amount::text AS amount FROM credit_ledger WHERE request_id = $1 AND kind = 'charge'`, [deliveryId]);
const used = async (accountId: string) => BigInt((await t.db.query<{ u: string }>(`SELECT credits_used::text AS u FROM account WHERE id = $1`, [accountId]))[0]!.u);

beforeAll(async () => {
  rx = new Receiver();
  await rx.start();
  t = await testApp({ alerts: { allowHttp: true, allowPrivateHosts: true, maxPerAccount: 5 }, creditLeases: false });
  await ingest([obs(ITEM, { price: '100' }), obs(ITEM, { side: 'bid', price: '90' }), obs(OTHER, { price: '10' })]);
  await evaluate(); // the evaluator starts after the seed's changes
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('registration', () => {
  it('POST /alerts answers the alert and its secret once; GET /alerts lists it without the secret; GraphQL sees the same', async () => {
    const res = await t.post('/alerts', priceAlert(), bearer(t.key));
    const created = expectEnvelope(res);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Object.keys(created.alert).sort()).toEqual(Object.keys(AlertOut.shape).sort());
    expect(created.alert).toMatchObject({ kind: 'price', app_id: '730', market_hash_name: ITEM, market_code: 'BUFF163', side: 'ask', direction: 'below', level: '95', currency_code: 'CNY', holding: false, disabled: false });
    const list = expectEnvelope(await t.get('/alerts', bearer(t.key)));
    expect(list).toContainEqual(created.alert);
    expect(JSON.stringify(list)).not.toContain(created.secret);
    const gql = await t.gql(`{ alerts { id kind marketHashName level currencyCode holding } }`, {}, bearer(t.key));
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.alerts).toContainEqual({ id: created.alert.id, kind: 'price', marketHashName: ITEM, level: '95', currencyCode: 'CNY', holding: false });
    expect(JSON.stringify(gql.body)).not.toContain(created.secret);
    expectEnvelope(await del(`/alerts/${created.alert.id}`, bearer(t.key)).then(asJson));
  });

  it('422 for bad inputs, each named: bad URL, bad level, unknown market, unknown item, unknown field, bad kind', async () => {
    const problems = async (body: unknown) => {
      const e = expectError(await t.post('/alerts', body, bearer(t.key)), 422, 'validation_failed');
      return e.details.errors.map((d: { location: string; field: string }) => `${d.location}:${d.field}`);
    };
    expect(await problems(priceAlert({ url: 'ftp://example.com/hook' }))).toEqual(['body:url']);
    expect(await problems(priceAlert({ url: 'https://user:pw@example.com/hook' }))).toEqual(['body:url']);
    expect(await problems(priceAlert({ url: `https://example.com/${'a'.repeat(2100)}` }))).toEqual(['body:url']);
    expect(await problems(priceAlert({ url: 'not a url' }))).toEqual(['body:url']);
    expect(await problems(priceAlert({ level: 'abc' }))).toEqual(['body:level']);
    expect(await problems(priceAlert({ level: '-1' }))).toEqual(['body:level']);
    expect(await problems(priceAlert({ level: '0' }))).toEqual(['body:level']);
    expect(await problems(priceAlert({ level: 95 }))).toEqual(['body:level']);
    expect(await problems(priceAlert({ market_code: 'NOSUCHMARKET' }))).toEqual(['body:market_code']);
    expect(await problems(priceAlert({ market_hash_name: 'No Such Item' }))).toEqual(['body:market_hash_name']);
    expect(await problems(priceAlert({ extra: 1 }))).toEqual(['body:extra']);
    expect(await problems(priceAlert({ kind: 'volume' }))).toEqual(['body:kind']);
    expect(await problems(priceAlert({ side: 'mid', direction: 'sideways' }))).toEqual(['body:side', 'body:direction']);
    expect(await problems({ kind: 'route_margin', market_hash_name: ITEM, buy_market: 'BUFF163', sell_market: 'BUFF163', margin: '0.1', url: `${rx.url}/x` })).toEqual(['body:sell_market']);
    expect(await problems({ kind: 'route_margin', market_hash_name: ITEM, buy_market: 'BUFF163', sell_market: 'STEAM', margin: '5%', url: `${rx.url}/x` })).toEqual(['body:margin']);
    expect(await problems('[]')).toEqual(['body:']);
    // GraphQL: the same rules, named as the input's fields.
    const gql = await t.gql(
      `mutation($input: CreateAlertInput!) { createAlert(input: $input) { secret } }`,
      { input: { kind: 'price', marketHashName: 'No Such Item', marketCode: 'NOSUCHMARKET', side: 'ask', direction: 'below', level: '1', url: 'https://example.com/' } },
      bearer(t.key),
    );
    expect(gql.body.errors[0].extensions.code).toBe('validation_failed');
    expect(gql.body.errors[0].extensions.details.errors.map((d: { field: string }) => d.field).sort()).toEqual(['marketCode', 'marketHashName']);
  });

  it('https only unless the service allows http; a key is needed; a service token may not register', async () => {
    const strict = createApp({ db: t.db });
    try {
      const res = await strict.fetch(new Request('http://test/alerts', { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(t.key) }, body: JSON.stringify(priceAlert()) }));
      expect(res.status).toBe(422);
      // The default settings: https only, and the receiver's 127.0.0.1 is refused by the SSRF guard too.
      expect(((await res.json()) as any).error.details.errors).toEqual([
        { location: 'body', field: 'url', message: 'must use https' },
        { location: 'body', field: 'url', message: 'must point at a public host, not a private, loopback or local one (127.0.0.1 is a loopback address)' },
      ]);
    } finally {
      await strict.close();
    }
    expectError(await t.post('/alerts', priceAlert()), 401, 'unauthorized');
    const anon = await t.gql(`mutation { createAlert(input: { kind: "price", marketHashName: "x", url: "https://e.com" }) { secret } }`);
    expect(anon.body.errors[0].extensions.code).toBe('unauthorized');
  });

  it('at most the bound per account (409 beyond it); another account\'s alert is a 404 everywhere', async () => {
    const a = await createAccount(t.db, { credits: 10n });
    const b = await createAccount(t.db, { credits: 10n });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(expectEnvelope(await t.post('/alerts', priceAlert({ level: String(10 + i) }), bearer(a.key))).alert.id);
    const over = expectError(await t.post('/alerts', priceAlert(), bearer(a.key)), 409, 'conflict');
    expect(over.details).toEqual({ max_alerts: 5 });
    expect(expectEnvelope(await t.get('/alerts', bearer(b.key)))).toEqual([]);
    expectError(await t.get(`/alerts/${ids[0]}/deliveries`, bearer(b.key)), 404, 'not_found');
    expectError(await asJson(await del(`/alerts/${ids[0]}`, bearer(b.key))), 404, 'not_found');
    expectError(await t.get(`/alerts/not-a-uuid/deliveries`, bearer(b.key)), 404, 'not_found');
    const gql = await t.gql(`mutation($id: String!) { deleteAlert(id: $id) { id } }`, { id: ids[0] }, bearer(b.key));
    expect(gql.body.errors[0].extensions.code).toBe('not_found');
    // The owner deletes one (GraphQL) and may register again.
    const gone = await t.gql(`mutation($id: String!) { deleteAlert(id: $id) { id level } }`, { id: ids[0] }, bearer(a.key));
    expect(gone.body.data.deleteAlert).toEqual({ id: ids[0], level: '10' });
    expectError(await t.get(`/alerts/${ids[0]}/deliveries`, bearer(a.key)), 404, 'not_found');
    const again = await t.gql(
      `mutation($input: CreateAlertInput!) { createAlert(input: $input) { secret alert { id kind } } }`,
      { input: { kind: 'price', marketHashName: ITEM, marketCode: 'BUFF163', side: 'bid', direction: 'above', level: '1000', url: `${rx.url}/g` } },
      bearer(a.key),
    );
    expect(again.body.errors).toBeUndefined();
    expect(again.body.data.createAlert.secret).toMatch(/^whsec_/);
    for (const id of [...ids.slice(1), again.body.data.createAlert.alert.id]) expectEnvelope(await asJson(await del(`/alerts/${id}`, bearer(a.key))));
  });
});

describe('evaluation and delivery', () => {
  it('fires once on crossing (not while it holds), re-arms when it stops holding; signed, charged once, logged', async () => {
    const acc = await createAccount(t.db, { credits: 10n });
    const created = expectEnvelope(await t.post('/alerts', priceAlert({ url: `${rx.url}/cross` }), bearer(acc.key)));
    const { id } = created.alert;
    rx.received = [];
    await ingest([obs(ITEM, { price: '96' })]);
    expect(await evaluate()).toBe(0); // still above 95
    await ingest([obs(ITEM, { price: '94.5' })]);
    expect(await evaluate()).toBe(1); // crossed below
    await ingest([obs(ITEM, { price: '94' })]);
    expect(await evaluate()).toBe(0); // still holding: no second event
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ attempted: 1, delivered: 1 });
    expect(rx.received).toHaveLength(1);
    const got = rx.received[0]!;
    expect(got.path).toBe('/cross');
    expect(got.headers['content-type']).toBe('application/json');
    const sig = String(got.headers['quotegate-signature']);
    expect(sig).toMatch(new RegExp(`^t=${Math.floor(T0.getTime() / 1000)},v1=[0-9a-f]{64}$`));
    expect(verify(created.secret, sig, got.body)).toBe(true);
    expect(verify(created.secret, sig, got.body + ' ')).toBe(false);
    const t0 = Math.floor(T0.getTime() / 1000);
    expect(verifySignature(created.secret, sig, got.body, t0)).toBe(true);
    expect(verifySignature(created.secret, sig, got.body, t0 + 301)).toBe(false); // too old: a replay
    expect(verifySignature('whsec_other', sig, got.body, t0)).toBe(false);
    const event = JSON.parse(got.body);
    expect(event).toMatchObject({ id: got.headers['quotegate-delivery'], type: 'alert.triggered', alert: { id, level: '95', holding: true }, observed: { market_code: 'BUFF163', side: 'ask', price: '94.5', currency_code: 'CNY' } });
    // The log, newest first, and exactly one credit.
    const log = await deliveries(id, acc.key);
    expect(log.deliveries).toHaveLength(1);
    expect(Object.keys(log.deliveries[0]).sort()).toEqual(Object.keys(AlertDeliveryOut.shape).sort());
    expect(log.deliveries[0]).toMatchObject({ id: event.id, status: 'delivered', attempts: 1, status_code: 200, error: null, response_excerpt: 'ok', charged: true, next_attempt_at: null });
    expect(await charges(event.id)).toEqual([{ amount: '1' }]);
    expect(await used(acc.accountId)).toBe(1n);
    // Re-arm: back above the level, then below again fires a second event.
    await ingest([obs(ITEM, { price: '97' })]);
    expect(await evaluate()).toBe(0);
    await ingest([obs(ITEM, { price: '93' })]);
    expect(await evaluate()).toBe(1);
    await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 });
    expect(rx.received).toHaveLength(2);
    const page1 = await deliveries(id, acc.key, '?limit=1');
    expect(page1.has_more).toBe(true);
    expect(page1.deliveries[0].id).toBe(JSON.parse(rx.received[1]!.body).id); // newest first
    const page2 = await deliveries(id, acc.key, `?limit=1&cursor=${page1.next_cursor}`);
    expect(page2).toMatchObject({ has_more: false, next_cursor: null });
    expect(page2.deliveries[0].id).toBe(event.id);
    expectError(await t.get(`/alerts/${id}/deliveries?limit=0`, bearer(acc.key)), 422, 'validation_failed');
    expectError(await t.get(`/alerts/${id}/deliveries?cursor=abc`, bearer(acc.key)), 422, 'validation_failed');
    const gql = await t.gql(`query($id: String!) { alertDeliveries(id: $id, limit: 5) { alertId hasMore deliveries { id status attempts charged } } }`, { id }, bearer(acc.key));
    expect(gql.body.data.alertDeliveries.deliveries.map((d: { id: string }) => d.id)).toEqual([page1.deliveries[0].id, event.id]);
    expect(await used(acc.accountId)).toBe(2n);
    expectEnvelope(await asJson(await del(`/alerts/${id}`, bearer(acc.key))));
    await ingest([obs(ITEM, { price: '100' })]);
    await evaluate();
  });

  it('retries after a 500 on the documented schedule, then delivers; the event is charged once', async () => {
    const acc = await createAccount(t.db, { credits: 10n });
    const created = expectEnvelope(await t.post('/alerts', priceAlert({ url: `${rx.url}/retry`, direction: 'above', level: '120' }), bearer(acc.key)));
    rx.received = [];
    rx.script = [500, 503];
    await ingest([obs(ITEM, { price: '121' })]);
    expect(await evaluate()).toBe(1);
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ attempted: 1, retrying: 1 });
    let log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'pending', attempts: 1, status_code: 500, error: 'http_500', charged: true, next_attempt_at: at(RETRY_DELAYS_SECONDS[0]!).toISOString() });
    expect(log.response_excerpt).toHaveLength(256); // capped
    // Not due yet: nothing is sent.
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => at(RETRY_DELAYS_SECONDS[0]! - 1) })).toMatchObject({ attempted: 0 });
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => at(RETRY_DELAYS_SECONDS[0]!) })).toMatchObject({ attempted: 1, retrying: 1 });
    const second = at(RETRY_DELAYS_SECONDS[0]! + RETRY_DELAYS_SECONDS[1]!);
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => second })).toMatchObject({ attempted: 1, delivered: 1 });
    expect(rx.received).toHaveLength(3);
    expect(new Set(rx.received.map((r) => r.headers['quotegate-delivery'])).size).toBe(1); // one event, three attempts
    log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'delivered', attempts: 3, status_code: 200, error: null, delivered_at: second.toISOString(), next_attempt_at: null });
    expect(await charges(log.id)).toEqual([{ amount: '1' }]);
    expect(await used(acc.accountId)).toBe(1n);
    expectEnvelope(await asJson(await del(`/alerts/${created.alert.id}`, bearer(acc.key))));
  });

  it('gives up after the last attempt; 410 Gone disables the alert', async () => {
    const acc = await createAccount(t.db, { credits: 10n });
    const failing = expectEnvelope(await t.post('/alerts', priceAlert({ market_hash_name: OTHER, url: `${rx.url}/fail`, direction: 'above', level: '11' }), bearer(acc.key)));
    rx.received = [];
    rx.script = Array(MAX_ATTEMPTS).fill(500);
    await ingest([obs(OTHER, { price: '12' })]);
    expect(await evaluate()).toBe(1);
    let when = 0;
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      await runDeliveries(t.db, { allowPrivateHosts: true, now: () => at(when) });
      when += RETRY_DELAYS_SECONDS[i] ?? 0;
    }
    expect(rx.received).toHaveLength(MAX_ATTEMPTS);
    expect((await deliveries(failing.alert.id, acc.key)).deliveries[0]).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS, error: 'http_500', next_attempt_at: null, charged: true });
    expect(await used(acc.accountId)).toBe(1n);
    expectEnvelope(await asJson(await del(`/alerts/${failing.alert.id}`, bearer(acc.key))));

    const gone = expectEnvelope(await t.post('/alerts', priceAlert({ market_hash_name: OTHER, url: `${rx.url}/gone`, direction: 'below', level: '5' }), bearer(acc.key)));
    rx.received = [];
    rx.script = [410];
    await ingest([obs(OTHER, { price: '4' })]);
    expect(await evaluate()).toBe(1);
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ failed: 1 });
    expect((await deliveries(gone.alert.id, acc.key)).deliveries[0]).toMatchObject({ status: 'failed', attempts: 1, status_code: 410, error: 'gone' });
    const listed = expectEnvelope(await t.get('/alerts', bearer(acc.key))).find((a: { id: string }) => a.id === gone.alert.id);
    expect(listed.disabled).toBe(true);
    // Disabled: later crossings make no events.
    await ingest([obs(OTHER, { price: '6' })]);
    await evaluate();
    await ingest([obs(OTHER, { price: '3' })]);
    expect(await evaluate()).toBe(0);
    await runDeliveries(t.db, { allowPrivateHosts: true, now: () => at(100_000) });
    expect(rx.received).toHaveLength(1);
  });

  it('an account without credits gets no delivery: the log says insufficient_credits', async () => {
    const poor = await createAccount(t.db, { credits: 0n });
    const created = expectEnvelope(await t.post('/alerts', priceAlert({ url: `${rx.url}/poor`, side: 'bid', direction: 'above', level: '91' }), bearer(poor.key)));
    rx.received = [];
    await ingest([obs(ITEM, { side: 'bid', price: '92' })]);
    expect(await evaluate()).toBe(1);
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ attempted: 0, failed: 1 });
    expect(rx.received).toHaveLength(0);
    const log = (await deliveries(created.alert.id, poor.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'failed', attempts: 0, error: 'insufficient_credits', charged: false, status_code: null });
    expect(await charges(log.id)).toEqual([]);
  });

  it('replicas share the work: two evaluators make one event, two delivery workers send it once', async () => {
    const acc = await createAccount(t.db, { credits: 10n });
    const created = expectEnvelope(await t.post('/alerts', priceAlert({ url: `${rx.url}/twice`, direction: 'above', level: '150' }), bearer(acc.key)));
    rx.received = [];
    await ingest([obs(ITEM, { price: '151' })]);
    const [a, b] = await Promise.all([evaluateAlerts(t.db, T0), evaluateAlerts(t.db, T0)]);
    expect(a.fired + b.fired).toBe(1);
    await evaluate();
    const runs = await Promise.all([runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 }), runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })]);
    expect(runs[0]!.attempted + runs[1]!.attempted).toBe(1);
    expect(rx.received).toHaveLength(1);
    expect((await deliveries(created.alert.id, acc.key)).deliveries).toHaveLength(1);
    expect(await used(acc.accountId)).toBe(1n);
    expectEnvelope(await asJson(await del(`/alerts/${created.alert.id}`, bearer(acc.key))));
    await ingest([obs(ITEM, { price: '100' })]);
    await evaluate();
  });

  it("the service's alert job judges and delivers in one tick (its first tick runs at start; stop waits for it)", async () => {
    const acc = await createAccount(t.db, { credits: 10n });
    const created = expectEnvelope(await t.post('/alerts', priceAlert({ url: `${rx.url}/job`, direction: 'above', level: '160' }), bearer(acc.key)));
    rx.received = [];
    await ingest([obs(ITEM, { price: '161' })]);
    await startAlertJob(t.db, { delivery: { allowPrivateHosts: true } }).stop();
    expect(rx.received.map((r) => r.path)).toEqual(['/job']);
    expect((await deliveries(created.alert.id, acc.key)).deliveries[0]).toMatchObject({ status: 'delivered', attempts: 1 });
    expectEnvelope(await asJson(await del(`/alerts/${created.alert.id}`, bearer(acc.key))));
    await ingest([obs(ITEM, { price: '100' })]);
    await evaluate();
  });

  it('route margin: fires when the best route between the two markets rises above the threshold (tradeRoutes in USD, funded and paid out as asked)', async () => {
    const NAME = 'AWP | Alerting Route (Factory New)';
    await ingest([
      obs(NAME, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '20' }),
      obs(NAME, { marketCode: 'BITSKINS', providerCode: 'BITSKINS', currencyCode: 'USD', price: '20' }),
      obs(NAME, { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', price: '20' }),
      obs(NAME, { marketCode: 'CSMONEY', providerCode: 'CSMONEY', currencyCode: 'USD', price: '20' }),
    ]);
    await evaluate();
    // A pair whose route is priced (from and to balances: the bundled fees lack some deposit and withdraw fees).
    const routes = expectEnvelope(await t.get(`/prices/routes?market_hash_name=${encodeURIComponent(NAME)}&currency=USD&fund=balance&payout=balance`, bearer(t.key))).routes;
    const pair = routes.find((r: { status: string }) => r.status === 'priced');
    expect(pair).toBeDefined();
    const buy = pair.buy.market_code as string;
    const sell = pair.sell.market_code as string;
    const acc = await createAccount(t.db, { credits: 10n });
    const created = expectEnvelope(await t.post('/alerts', { kind: 'route_margin', market_hash_name: NAME, buy_market: buy, sell_market: sell, margin: '0.5', fund: 'balance', payout: 'balance', url: `${rx.url}/route` }, bearer(acc.key)));
    expect(created.alert).toMatchObject({ kind: 'route_margin', buy_market: buy, sell_market: sell, margin: '0.5', fund: 'balance', payout: 'balance', holding: false, market_code: null, level: null });
    rx.received = [];
    await ingest([obs(NAME, { marketCode: buy, providerCode: buy, currencyCode: 'USD', price: '5' })]);
    expect(await evaluate()).toBe(1);
    await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 });
    expect(rx.received).toHaveLength(1);
    const event = JSON.parse(rx.received[0]!.body);
    const now = expectEnvelope(await t.get(`/prices/routes?market_hash_name=${encodeURIComponent(NAME)}&currency=USD&fund=balance&payout=balance&buy_on=${buy}&sell_on=${sell}`, bearer(t.key))).routes[0];
    expect(event.observed).toMatchObject({ buy_market: buy, sell_market: sell, margin: now.margin, currency_code: 'USD' });
    expect(Number(event.observed.margin)).toBeGreaterThan(0.5);
  });
});

describe('SSRF guard (ALERT_ALLOW_PRIVATE_HOSTS off)', () => {
  it('refuses a URL whose host is a non-public IP literal or a local name at registration: 422 on url, both faces', async () => {
    const guarded = createApp({ db: t.db, alerts: { allowHttp: true } });
    const acc = await createAccount(t.db, { credits: 10n });
    const post = async (url: string) => {
      const res = await guarded.fetch(new Request('http://test/alerts', { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(acc.key) }, body: JSON.stringify(priceAlert({ url })) }));
      return { status: res.status, body: (await res.json()) as any };
    };
    try {
      for (const url of [
        `${rx.url}/hook`,
        'http://127.1/x',
        'http://10.0.0.5/x',
        'https://172.20.1.1/x',
        'https://192.168.1.10/x',
        'http://169.254.169.254/latest/meta-data/',
        'http://0.0.0.0:8080/',
        'http://100.64.0.1/',
        'http://[::1]:8080/',
        'http://[::]/',
        'http://[fe80::1]/',
        'http://[fc00::1]/',
        'http://[fd12:3456:789a::1]/',
        'http://[::ffff:127.0.0.1]/',
        'http://[::ffff:a00:5]/',
        'http://[64:ff9b::a9fe:a9fe]/',
        'http://2130706433/',
        'http://0x7f.0.0.1/',
        'http://localhost:3000/hook',
        'http://LOCALHOST./hook',
        'http://api.localhost/hook',
        'http://printer.local/hook',
        'http://metadata.google.internal/computeMetadata/v1/',
        'http://metadata/',
      ]) {
        const r = await post(url);
        expect(r.status, url).toBe(422);
        expect(r.body.error.details.errors, url).toEqual([{ location: 'body', field: 'url', message: expect.stringMatching(/^must point at a public host, not a private, loopback or local one \(.+\)$/) }]);
      }
      expect((await post('http://10.0.0.5/x')).body.error.details.errors[0].message).toBe('must point at a public host, not a private, loopback or local one (10.0.0.5 is a private address)');
      expect((await post('http://[::ffff:127.0.0.1]/x')).body.error.details.errors[0].message).toContain('loopback');
      // Public hosts pass (a name is judged again at each delivery, on its addresses).
      for (const url of ['https://hooks.example.com/a', 'https://93.184.215.14/a', 'https://[2606:4700:4700::1111]/a']) {
        const r = await post(url);
        expect(r.status, url).toBe(200);
        expectEnvelope(await asJson(await del(`/alerts/${r.body.data.alert.id}`, bearer(acc.key))));
      }
      // GraphQL: the same rule, on the input's url.
      const res = await guarded.fetch(
        new Request('http://test/graphql', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...bearer(acc.key) },
          body: JSON.stringify({
            query: `mutation($input: CreateAlertInput!) { createAlert(input: $input) { secret } }`,
            variables: { input: { kind: 'price', marketHashName: ITEM, marketCode: 'BUFF163', side: 'ask', direction: 'below', level: '1', url: 'http://169.254.169.254/latest/meta-data/' } },
          }),
        }),
      );
      const gql = (await res.json()) as any;
      expect(gql.errors[0].extensions.code).toBe('validation_failed');
      expect(gql.errors[0].extensions.details.errors).toEqual([{ location: 'argument', field: 'url', message: 'must point at a public host, not a private, loopback or local one (169.254.169.254 is a linkLocal address)' }]);
      expect(expectEnvelope(await t.get('/alerts', bearer(acc.key)))).toEqual([]);
    } finally {
      await guarded.close();
    }
  });

  it('refuses at delivery a name that resolves to a private address (DNS rebinding): logged, retried, not charged; the connection goes to the address checked', async () => {
    const guarded = createApp({ db: t.db, alerts: { allowHttp: true } });
    const acc = await createAccount(t.db, { credits: 10n });
    const port = new URL(rx.url).port;
    const url = `http://hooks.example.test:${port}/rebind`;
    let created: any;
    try {
      const res = await guarded.fetch(new Request('http://test/alerts', { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(acc.key) }, body: JSON.stringify(priceAlert({ url, direction: 'above', level: '170' })) }));
      expect(res.status).toBe(200); // a public-looking name passes registration
      created = ((await res.json()) as any).data;
    } finally {
      await guarded.close();
    }
    rx.received = [];
    await ingest([obs(ITEM, { price: '171' })]);
    expect(await evaluate()).toBe(1);
    const asked: string[] = [];
    // The name now resolves to the receiver's loopback address: refused before any connection.
    const toLoopback = async (name: string) => {
      asked.push(name);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    expect(await runDeliveries(t.db, { now: () => T0, lookup: toLoopback })).toMatchObject({ attempted: 1, retrying: 1, delivered: 0 });
    expect(asked).toEqual(['hooks.example.test']);
    expect(rx.received).toHaveLength(0);
    let log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'pending', attempts: 1, status_code: null, error: 'address not allowed: 127.0.0.1', charged: false, response_excerpt: null });
    expect(await charges(log.id)).toEqual([]);
    expect(expectEnvelope(await t.get('/me', bearer(acc.key))).credit.used).toBe(0);
    // Any non-public address among the answers refuses the name, wherever it stands.
    const mixed = async () => [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.5', family: 4 }];
    expect(await runDeliveries(t.db, { now: () => at(RETRY_DELAYS_SECONDS[0]!), lookup: mixed })).toMatchObject({ attempted: 1, retrying: 1 });
    log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'pending', attempts: 2, error: 'address not allowed: 10.0.0.5', charged: false });
    expect(await used(acc.accountId)).toBe(0n);
    // With private hosts allowed, the same resolver's address is where the connection goes (the name is only the Host).
    const second = at(RETRY_DELAYS_SECONDS[0]! + RETRY_DELAYS_SECONDS[1]!);
    expect(await runDeliveries(t.db, { now: () => second, lookup: toLoopback, allowPrivateHosts: true })).toMatchObject({ attempted: 1, delivered: 1 });
    expect(rx.received.map((r) => [r.path, r.headers.host])).toEqual([['/rebind', `hooks.example.test:${port}`]]);
    log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'delivered', attempts: 3, status_code: 200, error: null, charged: true });
    expect(await charges(log.id)).toEqual([{ amount: '1' }]);
    expect(await used(acc.accountId)).toBe(1n);
    expectEnvelope(await asJson(await del(`/alerts/${created.alert.id}`, bearer(acc.key))));
    await ingest([obs(ITEM, { price: '100' })]);
    await evaluate();
  });
});

describe('a charge follows the data', () => {
  it('an attempt whose connection is refused is not charged; the retry that reaches the receiver is, once', async () => {
    // A port nothing listens on (taken, then released): connections to it are refused.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const acc = await createAccount(t.db, { credits: 10n });
    const created = expectEnvelope(await t.post('/alerts', priceAlert({ url: `http://127.0.0.1:${port}/late`, direction: 'above', level: '180' }), bearer(acc.key)));
    await ingest([obs(ITEM, { price: '181' })]);
    expect(await evaluate()).toBe(1);
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ attempted: 1, retrying: 1 });
    let log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'pending', attempts: 1, status_code: null, error: 'connection_error', charged: false, next_attempt_at: at(RETRY_DELAYS_SECONDS[0]!).toISOString() });
    expect(await charges(log.id)).toEqual([]);
    expect(expectEnvelope(await t.get('/me', bearer(acc.key))).credit.used).toBe(0);
    // The receiver comes up on that port: the retry is delivered and charged, exactly 1 credit.
    const late = new Receiver();
    await late.start(port);
    try {
      expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => at(RETRY_DELAYS_SECONDS[0]!) })).toMatchObject({ attempted: 1, delivered: 1 });
      expect(late.received.map((r) => r.path)).toEqual(['/late']);
    } finally {
      await late.close();
    }
    log = (await deliveries(created.alert.id, acc.key)).deliveries[0];
    expect(log).toMatchObject({ status: 'delivered', attempts: 2, status_code: 200, error: null, charged: true });
    expect(await charges(log.id)).toEqual([{ amount: '1' }]);
    expect(expectEnvelope(await t.get('/me', bearer(acc.key))).credit.used).toBe(1);
    expectEnvelope(await asJson(await del(`/alerts/${created.alert.id}`, bearer(acc.key))));
    await ingest([obs(ITEM, { price: '100' })]);
    await evaluate();
  });

  it('one credit left and two events due: one is sent and charged, the other waits for the next run and then fails unsent', async () => {
    const acc = await createAccount(t.db, { credits: 1n });
    const ids: string[] = [];
    for (const level of ['190', '191']) ids.push(expectEnvelope(await t.post('/alerts', priceAlert({ url: `${rx.url}/one-credit`, direction: 'above', level }), bearer(acc.key))).alert.id);
    rx.received = [];
    await ingest([obs(ITEM, { price: '192' })]);
    expect(await evaluate()).toBe(2);
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ attempted: 1, delivered: 1, deferred: 1 });
    expect(await runDeliveries(t.db, { allowPrivateHosts: true, now: () => T0 })).toMatchObject({ attempted: 0, failed: 1 });
    expect(rx.received).toHaveLength(1);
    const logs = await Promise.all(ids.map(async (id) => (await deliveries(id, acc.key)).deliveries[0]));
    expect(logs.map((l) => [l.status, l.charged, l.error]).sort()).toEqual([['delivered', true, null], ['failed', false, 'insufficient_credits']]);
    expect(await used(acc.accountId)).toBe(1n);
    for (const id of ids) expectEnvelope(await asJson(await del(`/alerts/${id}`, bearer(acc.key))));
    await ingest([obs(ITEM, { price: '100' })]);
    await evaluate();
  });
});

describe('rate limits of the alert rows', () => {
  it('the 31st registration in a minute is refused, REST and GraphQL counting against one allowance: 429 with Retry-After, GraphQL rate_limited', async () => {
    const fixed = Date.parse('2026-07-16T12:00:00Z');
    const limited = createApp({ db: t.db, alerts: { allowHttp: true, allowPrivateHosts: true, maxPerAccount: 50 }, rateLimiter: createRateLimiter({ now: () => fixed }) });
    const acc = await createAccount(t.db, { credits: 10n });
    const rest = async (body: unknown) => {
      const res = await limited.fetch(new Request('http://test/alerts', { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(acc.key) }, body: JSON.stringify(body) }));
      return { status: res.status, headers: res.headers, body: (await res.json()) as any };
    };
    const gql = async (query: string, variables: Record<string, unknown> = {}) => {
      const res = await limited.fetch(new Request('http://test/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(acc.key) }, body: JSON.stringify({ query, variables }) }));
      return { status: res.status, headers: res.headers, body: (await res.json()) as any };
    };
    const create = `mutation($input: CreateAlertInput!) { createAlert(input: $input) { alert { id } } }`;
    const input = (i: number) => ({ kind: 'price', marketHashName: ITEM, marketCode: 'BUFF163', side: 'ask', direction: 'above', level: String(1000 + i), url: `${rx.url}/limited` });
    try {
      for (let i = 0; i < 15; i++) {
        const r = await rest(priceAlert({ direction: 'above', level: String(500 + i) }));
        expect(r.status).toBe(200);
        expect(r.body.meta).toEqual({ request_id: r.body.meta.request_id, billable: false });
        const g = await gql(create, { input: input(i) });
        expect(g.body.errors).toBeUndefined();
      }
      const over = await rest(priceAlert({ direction: 'above', level: '600' }));
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('rate_limited');
      expect(over.body.error.details).toMatchObject({ limit: 30, window_seconds: 60 });
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(over.headers.get('ratelimit')).toMatch(/^"createAlert";r=0;t=\d+$/);
      const gOver = await gql(create, { input: input(99) });
      expect(gOver.status).toBe(429);
      expect(gOver.body.errors[0].extensions).toMatchObject({ code: 'rate_limited', details: { limit: 30, window_seconds: 60 } });
      expect(Number(gOver.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Nothing was registered by the refused ones; the other rows keep their own allowance.
      const list = await gql(`{ alerts { id } }`);
      expect(list.body.data.alerts).toHaveLength(30);
      // Deletion: 30 a minute as well, both faces; the 31st refused.
      for (const [i, a] of (list.body.data.alerts as { id: string }[]).entries()) {
        if (i % 2 === 0) expect((await limited.fetch(new Request(`http://test/alerts/${a.id}`, { method: 'DELETE', headers: bearer(acc.key) }))).status).toBe(200);
        else expect((await gql(`mutation($id: String!) { deleteAlert(id: $id) { id } }`, { id: a.id })).body.errors).toBeUndefined();
      }
      const delOver = await gql(`mutation($id: String!) { deleteAlert(id: $id) { id } }`, { id: crypto.randomUUID() });
      expect(delOver.body.errors[0].extensions.code).toBe('rate_limited');
      // The listings: 60 a minute (one used above).
      for (let i = 0; i < 59; i++) expect((await limited.fetch(new Request('http://test/alerts', { headers: bearer(acc.key) }))).status).toBe(200);
      const listOver = await limited.fetch(new Request('http://test/alerts', { headers: bearer(acc.key) }));
      expect(listOver.status).toBe(429);
      expect(listOver.headers.get('ratelimit')).toMatch(/^"listAlerts";r=0;t=\d+$/);
    } finally {
      await limited.close();
    }
    expect(expectEnvelope(await t.get('/alerts', bearer(acc.key)))).toEqual([]);
  });
});

/** A fetch Response as the test helpers' result (body parsed; checked against /openapi.json by t.get/t.post only). */
async function asJson(res: Response) {
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}
