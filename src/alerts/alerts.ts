/**
 * Webhook alerts (issue 44, point 3; docs/alerts.md): an account registers a condition on an item and an HTTPS URL;
 * when the condition starts to hold, the service POSTs a signed event to the URL.
 *
 * - Conditions: `price` (the published quote of one market and side crossing a level, above or below, in the
 *   market's currency) and `route_margin` (the best route buying on one market and selling on another, computed by
 *   `tradeRoutes` of src/fees/routes.ts in USD, funded and paid out as the alert says (default cash, as GET /prices/routes),
 *   rising above a margin fraction).
 * - Edge-triggered: each alert keeps `holding`, the condition's state at its last evaluation, starting with its
 *   state at registration. An event is made only when it turns from false to true; turning false re-arms it.
 * - Evaluation follows the change sequence (`quote_change`, src/quotes/changes.ts): `evaluateAlerts` judges the
 *   alerts of the items changed after the shared cursor (`alert_cursor`), on any replica, one at a time (an advisory
 *   lock), and writes the states, the new events and the cursor in one statement that first moves the cursor only
 *   from the position it read (so a second evaluator of the same changes writes nothing).
 * - Delivery uses the database as the queue: each event is an `alert_delivery` row; `runDeliveries` claims due rows
 *   with FOR UPDATE SKIP LOCKED (and a 60 s claim), so any number of replicas deliver each event once at a time.
 * - Where a webhook may point (the SSRF guard, src/lib/egress-guard.ts): at registration a URL whose host is a
 *   non-public IP literal or a local name (`localhost`, ...) is refused (422 on `url`); at delivery the host name is
 *   resolved, every address judged, and the connection pinned to the checked addresses (DNS rebinding cannot slip a
 *   private address in). A refused delivery is logged (`address not allowed: <address>`), retried as a failed
 *   attempt, and not charged. `allowPrivateHosts` (env ALERT_ALLOW_PRIVATE_HOSTS) turns both checks off.
 * - Billing ("a charge follows the data"): an event costs 1 credit, charged once, at the first attempt whose request
 *   reached the receiver (a connection to it was open: the body is written at once); an attempt that never connected
 *   (refused, DNS failure, the guard, a connect timeout) is free; retries after the charge are free. No credits: the
 *   event is not sent and fails with `insufficient_credits` (the balance is checked before sending, the charge taken
 *   after; see runDeliveries for the race between the two).
 * - Retries: 1 min, 5 min, 30 min, 2 h, 6 h after failures (6 attempts in all); 2xx = delivered; 410 Gone disables the
 *   alert; 10 s timeout; at most 256 characters of the answer are kept.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { ServiceError, notFound, validationError, type ValidationDetail } from '../lib/errors.js';
import { Money, toMoney, formatDecimal } from '../lib/money.js';
import { formatTimestamp } from '../lib/time.js';
import * as v from '../validation/params.js';
import { CS2_APP_ID } from '../collectors/importers.js';
import { loadQuotes, type MarketQuote } from '../quotes/quotes.js';
import { loadFeeBook } from '../valuation/daily.js';
import { tradeRoutes, type TradeRoute } from '../fees/routes.js';
import { availableCredits, chargeCredits } from '../accounts/billing.js';
import { fetch as undiciFetch, type Response as UndiciResponse } from 'undici';
import { addressRefusal, guardedAgent, hostNameProblem, type EgressState, type ResolveHost } from '../lib/egress-guard.js';

/** Alerts one account may hold at once (a registration beyond it: 409 `conflict`). */
export const MAX_ALERTS_PER_ACCOUNT = 50;
/** The longest webhook URL accepted (characters). */
export const MAX_WEBHOOK_URL_CHARS = 2048;
/** Seconds between a failed attempt and the next: after the 1st, 2nd, ... failure; then the event fails. */
export const RETRY_DELAYS_SECONDS: readonly number[] = [60, 300, 1800, 7200, 21_600];
/** Attempts of one event at most (the first and one per retry delay). */
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** Milliseconds an attempt may take, answer included. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Characters of an answer's body kept in the delivery log. */
export const RESPONSE_EXCERPT_CHARS = 256;
/**
 * Seconds a worker's claim on a delivery lasts (a worker that dies mid-attempt leaves it to others after this). A run
 * sends its claimed rows at once, so it ends within DELIVERY_TIMEOUT_MS and a few statements: far inside the claim.
 */
export const DELIVERY_CLAIM_SECONDS = 60;
/** Delivery log page size: default and bound (defined with the GraphQL argument rule, validation/params.ts). */
export const DEFAULT_DELIVERIES_PAGE = v.DEFAULT_DELIVERIES_PAGE;
export const MAX_DELIVERIES_PAGE = v.MAX_DELIVERIES_PAGE;
/** Credits one event costs (charged once, at its first attempt that reached the receiver). */
export const EVENT_CREDIT_COST = 1n;
/** The ledger's operation id of an event's charge. */
export const DELIVERY_OPERATION = 'alertDelivery';
/** The currency routes are judged in (a margin is a ratio, so any official currency gives nearly the same). */
export const ROUTE_CURRENCY = 'USD';

/** Settings of the alert faces (per app). */
export interface AlertSettings {
  /** Accept `http:` webhook URLs (tests, local receivers); default false: https only. Env ALERT_ALLOW_HTTP. */
  allowHttp: boolean;
  /**
   * Accept webhook URLs whose host is a private, loopback, link-local or otherwise non-public address or a local
   * name (tests, local receivers); default false: refused (422 on `url`; src/lib/egress-guard.ts). Env
   * ALERT_ALLOW_PRIVATE_HOSTS, which also turns the delivery-time check off (DeliveryOptions.allowPrivateHosts).
   */
  allowPrivateHosts: boolean;
  /** Alerts per account (default MAX_ALERTS_PER_ACCOUNT). */
  maxPerAccount: number;
}

/** The default settings: https only, public hosts only, 50 alerts an account. */
export const DEFAULT_ALERT_SETTINGS: AlertSettings = { allowHttp: false, allowPrivateHosts: false, maxPerAccount: MAX_ALERTS_PER_ACCOUNT };

/** A level's and a margin's text (the refinements judge only such text; the patterns report the rest). */
const LEVEL_TEXT = /^\d{1,28}(\.\d{1,10})?$/;
const MARGIN_TEXT = /^-?\d{1,3}(\.\d{1,6})?$/;

const level = z
  .string({ message: 'must be a decimal string' })
  .regex(LEVEL_TEXT, { message: 'must be a positive decimal string with at most 28 digits before the point and 10 after it' })
  .refine((s) => !LEVEL_TEXT.test(s) || toMoney(s).gt(0), { message: 'must be greater than 0' });
const marginText = z
  .string({ message: 'must be a decimal string' })
  .regex(MARGIN_TEXT, { message: 'must be a decimal fraction string with at most 6 decimals (0.05 = 5 %)' })
  .refine((s) => !MARGIN_TEXT.test(s) || (toMoney(s).gt(-1) && toMoney(s).lte(100)), { message: 'must be greater than -1 and at most 100' });
const url = z.string({ message: 'must be a string' }).max(MAX_WEBHOOK_URL_CHARS, { message: `must be at most ${MAX_WEBHOOK_URL_CHARS} characters` });

/** A registration as both faces take it (REST body keys; GraphQL's input fields are their camelCase). */
export const alertInput = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({
      kind: z.literal('price'),
      market_hash_name: v.marketHashName,
      app_id: v.appId.optional(),
      market_code: v.marketCode,
      side: z.enum(['ask', 'bid'], { message: 'must be ask or bid' }),
      direction: z.enum(['above', 'below'], { message: 'must be above or below' }),
      level,
      url,
    }),
    z.strictObject({
      kind: z.literal('route_margin'),
      market_hash_name: v.marketHashName,
      app_id: v.appId.optional(),
      buy_market: v.marketCode,
      sell_market: v.marketCode,
      margin: marginText,
      fund: v.funding.optional(),
      payout: v.funding.optional(),
      url,
    }),
  ],
  { message: 'must be price or route_margin' },
);

/** A parsed registration. */
export type AlertInput = z.infer<typeof alertInput>;

/** A stored alert (the secret stays in the database but for the registration's answer). */
export interface Alert {
  id: string;
  accountId: string;
  kind: 'price' | 'route_margin';
  appId: string;
  marketHashName: string;
  marketCode: string | null;
  side: 'ask' | 'bid' | null;
  direction: 'above' | 'below' | null;
  level: Money | null;
  currencyCode: string | null;
  buyMarket: string | null;
  sellMarket: string | null;
  margin: Money | null;
  /** route_margin: how the buy is funded and the sale paid out (GET /prices/routes `fund`, `payout`). */
  fund: 'cash' | 'balance' | null;
  payout: 'cash' | 'balance' | null;
  url: string;
  holding: boolean;
  disabled: boolean;
  createdAt: Date;
}

/** One row of the delivery log. */
export interface AlertDelivery {
  id: string;
  seq: bigint;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  charged: boolean;
  createdAt: Date;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
}

/** One page of the delivery log, newest first. */
export interface AlertDeliveryPage {
  alertId: string;
  deliveries: AlertDelivery[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * The problems of a webhook URL (empty = fine): it must parse as an absolute URL, use https (http too when
 * `allowHttp`), carry no user name or password, be at most MAX_WEBHOOK_URL_CHARS long and, unless
 * `allowPrivateHosts`, name a host that may be public: not a non-public IP literal (loopback, private, link-local,
 * unique-local, unspecified, IPv4-mapped forms of those, ...) nor a local name such as `localhost`
 * (`hostNameProblem`, src/lib/egress-guard.ts; a name is judged again on each delivery, on its addresses).
 */
export function webhookUrlProblems(raw: string, allowHttp: boolean, allowPrivateHosts = false): string[] {
  if (raw.length > MAX_WEBHOOK_URL_CHARS) return [`must be at most ${MAX_WEBHOOK_URL_CHARS} characters`];
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return ['must be an absolute URL'];
  }
  const problems: string[] = [];
  if (u.protocol !== 'https:' && !(allowHttp && u.protocol === 'http:')) problems.push(allowHttp ? 'must use https or http' : 'must use https');
  if (u.username !== '' || u.password !== '') problems.push('must not contain credentials');
  if (u.hostname === '') problems.push('must name a host');
  else if (!allowPrivateHosts) {
    const host = hostNameProblem(u.hostname);
    if (host !== null) problems.push(`must point at a public host, not a private, loopback or local one (${host})`);
  }
  return problems;
}

/** A new signing secret: `whsec_` and 32 random bytes, base64url. */
export function generateSigningSecret(): string {
  return `whsec_${crypto.randomBytes(32).toString('base64url')}`;
}

/**
 * The `Quotegate-Signature` header of `body` sent at `timestampSeconds` (unix seconds):
 * `t=<seconds>,v1=<hex HMAC-SHA256 of "<seconds>.<body>" keyed by the secret>`.
 */
export function signatureHeader(secret: string, timestampSeconds: number, body: string): string {
  const mac = crypto.createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}

/**
 * True when `header` (a Quotegate-Signature value) signs `body` with `secret` and its timestamp is at most
 * `toleranceSeconds` away from `nowSeconds` (docs/alerts.md shows the same check for receivers).
 */
export function verifySignature(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = new Map(header.split(',').map((p) => p.split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1');
  if (!Number.isSafeInteger(t) || given === undefined || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = signatureHeader(secret, t, body).split('v1=')[1]!;
  return given.length === expected.length && crypto.timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

interface AlertRow {
  id: string;
  account_id: string;
  key_id: string;
  kind: 'price' | 'route_margin';
  item_id: number;
  app_id: string;
  market_hash_name: string;
  market_code: string | null;
  side: 'ask' | 'bid' | null;
  direction: 'above' | 'below' | null;
  level: string | null;
  currency_code: string | null;
  buy_market: string | null;
  sell_market: string | null;
  margin: string | null;
  fund: 'cash' | 'balance' | null;
  payout: 'cash' | 'balance' | null;
  url: string;
  holding: boolean;
  disabled_at: Date | string | null;
  created_at: Date | string;
}

const ALERT_COLUMNS = `a.id::text AS id, a.account_id, a.key_id::text AS key_id, a.kind, a.item_id, i.app_id, i.market_hash_name, a.market_code,
  a.side, a.direction, a.level::text AS level, w.currency_code, a.buy_market, a.sell_market, a.margin::text AS margin, a.fund, a.payout, a.url, a.holding,
  a.disabled_at, a.created_at`;
const ALERT_FROM = `alert a JOIN item i ON i.id = a.item_id LEFT JOIN website w ON w.code = a.market_code`;

function alertOf(r: AlertRow): Alert {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    appId: r.app_id,
    marketHashName: r.market_hash_name,
    marketCode: r.market_code,
    side: r.side,
    direction: r.direction,
    level: r.level === null ? null : toMoney(r.level),
    currencyCode: r.kind === 'price' ? r.currency_code : null,
    buyMarket: r.buy_market,
    sellMarket: r.sell_market,
    margin: r.margin === null ? null : toMoney(r.margin),
    fund: r.fund,
    payout: r.payout,
    url: r.url,
    holding: r.holding,
    disabled: r.disabled_at !== null,
    createdAt: new Date(r.created_at),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** 404 for an alert id that is not one of the account's (malformed ids included: nothing tells them apart). */
function alertNotFound(id: string): ServiceError {
  return notFound(`No alert ${id} on this account.`);
}

/** The webhook body of one event (JSON text), made when the condition starts to hold. */
function eventBody(deliveryId: string, alert: Alert, observed: Record<string, unknown>, changeSeq: bigint, at: Date): string {
  return JSON.stringify({
    id: deliveryId,
    type: 'alert.triggered',
    created_at: formatTimestamp(at),
    change_seq: changeSeq.toString(),
    alert: alertJson(alert),
    observed,
  });
}

/** The REST (snake_case) form of an alert, as AlertOut and the event body carry it. */
export function alertJson(a: Alert): Record<string, unknown> {
  return {
    id: a.id,
    kind: a.kind,
    app_id: a.appId,
    market_hash_name: a.marketHashName,
    market_code: a.marketCode,
    side: a.side,
    direction: a.direction,
    level: a.level && formatDecimal(a.level),
    currency_code: a.currencyCode,
    buy_market: a.buyMarket,
    sell_market: a.sellMarket,
    margin: a.margin && formatDecimal(a.margin),
    fund: a.fund,
    payout: a.payout,
    url: a.url,
    holding: a.holding,
    disabled: a.disabled,
    created_at: formatTimestamp(a.createdAt),
  };
}

/** The condition's state on these quotes, and what was observed (the event's `observed`). */
interface Judgement {
  holds: boolean;
  observed: Record<string, unknown>;
}

type FeeBook = Awaited<ReturnType<typeof loadFeeBook>>;

/** Judges `alert` on the item's published quotes (see the module doc); `book` is needed for route alerts. */
function judge(alert: Alert, quotes: readonly MarketQuote[], book: FeeBook | null, now: Date): Judgement {
  if (alert.kind === 'price') {
    const q = quotes.find((x) => x.marketCode === alert.marketCode && x.side === alert.side);
    const price = q && q.delistedAt === null ? q.price : null;
    const holds = price !== null && (alert.direction === 'above' ? price.gt(alert.level!) : price.lt(alert.level!));
    return {
      holds,
      observed: { market_code: alert.marketCode, side: alert.side, price: price && formatDecimal(price), currency_code: q?.currencyCode ?? alert.currencyCode, observed_at: q?.observedAt ? formatTimestamp(q.observedAt) : null },
    };
  }
  let best: TradeRoute | undefined;
  if (book && book.rates.has(ROUTE_CURRENCY)) {
    const routes = tradeRoutes(quotes, book, { currency: ROUTE_CURRENCY, buyOn: [alert.buyMarket!], sellOn: [alert.sellMarket!], fund: alert.fund ?? 'cash', payout: alert.payout ?? 'cash', minCredibility: 0, now });
    best = routes.find((r) => r.priced);
  }
  const holds = best !== undefined && best.margin!.gt(alert.margin!);
  return {
    holds,
    observed: {
      buy_market: alert.buyMarket,
      sell_market: alert.sellMarket,
      sell_side: best?.sell.side ?? null,
      fund: alert.fund,
      payout: alert.payout,
      margin: best ? formatDecimal(best.margin!) : null,
      net: best ? formatDecimal(best.net!) : null,
      currency_code: ROUTE_CURRENCY,
    },
  };
}

/**
 * Registers an alert for the caller's account (key `keyId`): checks the input (422 `validation_failed` listing
 * every problem, `location` as given: `body` for REST, `argument` for GraphQL), the item (422 when the catalogue has
 * no such item) and the markets (422 when no such website), and the account's bound (409 `conflict` at
 * `settings.maxPerAccount`). Judges the condition on the current quotes (its starting `holding`: an alert whose
 * condition already holds fires only after it stops holding and crosses again). Returns the alert and its signing
 * secret, which is never shown again.
 */
export async function createAlert(
  db: Database,
  caller: { accountId: string; keyId: string },
  raw: unknown,
  settings: AlertSettings,
  location: ValidationDetail['location'],
  now: Date,
): Promise<{ alert: Alert; secret: string }> {
  const details: ValidationDetail[] = [];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw validationError([{ location, field: '', message: 'must be a JSON object' }]);
  const parsed = alertInput.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.code === 'unrecognized_keys') for (const k of issue.keys) details.push({ location, field: k, message: 'is not a known field' });
      else details.push({ location, field: issue.path.map(String).join('.'), message: issue.message });
    }
  }
  const rawUrl = (raw as { url?: unknown }).url;
  if (typeof rawUrl === 'string' && rawUrl.length <= MAX_WEBHOOK_URL_CHARS) for (const m of webhookUrlProblems(rawUrl, settings.allowHttp, settings.allowPrivateHosts)) details.push({ location, field: 'url', message: m });
  if (!parsed.success || details.length > 0) throw validationError(details);
  const input = parsed.data;
  const appId = input.app_id ?? CS2_APP_ID;
  const [item] = await db.query<{ id: number }>(`SELECT id FROM item WHERE app_id = $1 AND market_hash_name = $2`, [appId, input.market_hash_name]);
  if (!item) details.push({ location, field: 'market_hash_name', message: `is not an item of app ${appId} the service knows (GET /catalogue/items finds them)` });
  const markets = input.kind === 'price' ? [['market_code', input.market_code] as const] : [['buy_market', input.buy_market] as const, ['sell_market', input.sell_market] as const];
  const known = new Set(
    (await db.query<{ code: string }>(`SELECT code FROM website WHERE code = ANY($1::text[])`, [markets.map(([, c]) => c)])).map((r) => r.code),
  );
  for (const [field, code] of markets) if (!known.has(code)) details.push({ location, field, message: `is not a market the service knows (GET /websites lists them): ${code}` });
  if (input.kind === 'route_margin' && input.buy_market === input.sell_market) details.push({ location, field: 'sell_market', message: 'must differ from buy_market' });
  if (details.length > 0) throw validationError(details);

  const id = crypto.randomUUID();
  const secret = generateSigningSecret();
  // The bound and the insert in one statement: the count is taken under the account row's lock, so two
  // registrations at once cannot both pass it.
  const inserted = await db.query<{ id: string }>(
    `WITH acc AS (SELECT id FROM account WHERE id = $2 FOR UPDATE)
     INSERT INTO alert (id, account_id, key_id, kind, item_id, market_code, side, direction, level, buy_market, sell_market, margin, url, secret, holding, created_at, fund, payout)
     SELECT $1::uuid, acc.id, $3::uuid, $4, $5, $6, $7, $8, $9::numeric, $10, $11, $12::numeric, $13, $14, false, $15, $17::text, $18::text
       FROM acc WHERE (SELECT count(*) FROM alert WHERE account_id = $2) < $16
     RETURNING id::text AS id`,
    [
      id, caller.accountId, caller.keyId, input.kind, item!.id,
      input.kind === 'price' ? input.market_code : null, input.kind === 'price' ? input.side : null, input.kind === 'price' ? input.direction : null,
      input.kind === 'price' ? input.level : null, input.kind === 'route_margin' ? input.buy_market : null, input.kind === 'route_margin' ? input.sell_market : null,
      input.kind === 'route_margin' ? input.margin : null, input.url, secret, now, settings.maxPerAccount,
      input.kind === 'route_margin' ? (input.fund ?? 'cash') : null, input.kind === 'route_margin' ? (input.payout ?? 'cash') : null,
    ],
  );
  if (inserted.length === 0) {
    throw new ServiceError('conflict', 409, `This account already has ${settings.maxPerAccount} alerts, the most it may hold; delete one first.`, { max_alerts: settings.maxPerAccount });
  }
  const alert = (await loadAlerts(db, `a.id = $1::uuid`, [id]))[0]!;
  const quotes = (await loadQuotes(db, alert.appId, [alert.marketHashName])).get(alert.marketHashName) ?? [];
  const book = alert.kind === 'route_margin' ? await loadFeeBook(db, now) : null;
  const { holds } = judge(alert, quotes, book, now);
  if (holds) {
    await db.query(`UPDATE alert SET holding = true WHERE id = $1::uuid`, [id]);
    alert.holding = true;
  }
  return { alert, secret };
}

async function loadAlerts(db: Pick<Database, 'query'>, where: string, params: unknown[]): Promise<Alert[]> {
  const rows = await db.query<AlertRow>(`SELECT ${ALERT_COLUMNS} FROM ${ALERT_FROM} WHERE ${where} ORDER BY a.created_at DESC, a.id`, params);
  return rows.map(alertOf);
}

/** The account's alerts, newest first (at most MAX_ALERTS_PER_ACCOUNT, so never paged). */
export async function listAlerts(db: Pick<Database, 'query'>, accountId: string): Promise<Alert[]> {
  return loadAlerts(db, `a.account_id = $1`, [accountId]);
}

/** The account's alert `id`; 404 `not_found` when it is another account's, unknown or malformed. */
export async function getAlert(db: Pick<Database, 'query'>, accountId: string, id: string): Promise<Alert> {
  if (!UUID.test(id)) throw alertNotFound(id);
  const [alert] = await loadAlerts(db, `a.id = $1::uuid AND a.account_id = $2`, [id, accountId]);
  if (!alert) throw alertNotFound(id);
  return alert;
}

/** Deletes the account's alert `id` with its delivery log (pending events are not sent); returns it as it was. 404 as getAlert. */
export async function deleteAlert(db: Pick<Database, 'query'>, accountId: string, id: string): Promise<Alert> {
  const alert = await getAlert(db, accountId, id);
  const gone = await db.query(`DELETE FROM alert WHERE id = $1::uuid AND account_id = $2 RETURNING id`, [id, accountId]);
  if (gone.length === 0) throw alertNotFound(id);
  return alert;
}

interface DeliveryRow {
  id: string;
  seq: string;
  status: AlertDelivery['status'];
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  response_excerpt: string | null;
  charged: boolean;
  created_at: Date | string;
  last_attempt_at: Date | string | null;
  next_attempt_at: Date | string;
  delivered_at: Date | string | null;
}

const date = (d: Date | string | null): Date | null => (d === null ? null : new Date(d));

/**
 * One page of alert `id`'s delivery log, newest first: at most `limit` rows (1..MAX_DELIVERIES_PAGE) older than
 * `cursor` (the previous page's `nextCursor`). 404 as getAlert; 422 for a malformed cursor (`location` as given).
 */
export async function listDeliveries(
  db: Pick<Database, 'query'>,
  accountId: string,
  id: string,
  opts: { limit: number; cursor: string | null },
  location: ValidationDetail['location'] = 'query',
): Promise<AlertDeliveryPage> {
  if (opts.cursor !== null && !v.DELIVERY_CURSOR.test(opts.cursor)) throw validationError([{ location, field: 'cursor', message: 'must be a next_cursor this listing returned' }]);
  if (!Number.isInteger(opts.limit) || opts.limit < 1 || opts.limit > MAX_DELIVERIES_PAGE) {
    throw validationError([{ location, field: 'limit', message: `must be a whole number from 1 to ${MAX_DELIVERIES_PAGE}` }]);
  }
  await getAlert(db, accountId, id);
  const rows = await db.query<DeliveryRow>(
    `SELECT id::text AS id, seq::text AS seq, status, attempts, last_status_code, last_error, response_excerpt, charged, created_at, last_attempt_at, next_attempt_at, delivered_at
       FROM alert_delivery WHERE alert_id = $1::uuid AND ($2::bigint IS NULL OR seq < $2::bigint) ORDER BY seq DESC LIMIT $3`,
    [id, opts.cursor, opts.limit + 1],
  );
  const page = rows.slice(0, opts.limit).map(
    (r): AlertDelivery => ({
      id: r.id,
      seq: BigInt(r.seq),
      status: r.status,
      attempts: r.attempts,
      statusCode: r.last_status_code,
      error: r.last_error,
      responseExcerpt: r.response_excerpt,
      charged: r.charged,
      createdAt: new Date(r.created_at),
      lastAttemptAt: date(r.last_attempt_at),
      nextAttemptAt: r.status === 'pending' ? new Date(r.next_attempt_at) : null,
      deliveredAt: date(r.delivered_at),
    }),
  );
  const hasMore = rows.length > opts.limit;
  return { alertId: id, deliveries: page, hasMore, nextCursor: hasMore ? page[page.length - 1]!.seq.toString() : null };
}

/** Changes read by one evaluation at most (the next evaluation goes on from there). */
export const EVALUATION_CHUNK = 5000;

/** What one evaluation did. */
export interface EvaluationResult {
  /** False when another evaluator held the lock (nothing was done). */
  ran: boolean;
  /** Changes judged (the cursor moved past them). */
  changes: number;
  /** Alerts whose condition was judged. */
  judged: number;
  /** Events made (conditions that started to hold). */
  fired: number;
}

/**
 * Judges the alerts of the items changed after the shared cursor (see the module doc), at most EVALUATION_CHUNK
 * changes. Safe on any number of replicas: one evaluates at a time, and the write moves the cursor only from the
 * position read, so no change is judged into events twice. Call until `changes` is 0 to catch up.
 */
export async function evaluateAlerts(db: Database, now: Date = new Date()): Promise<EvaluationResult> {
  const locked = await db.withLock('qg_alert_evaluator', () => evaluateLocked(db, now));
  return locked.acquired ? locked.result : { ran: false, changes: 0, judged: 0, fired: 0 };
}

async function evaluateLocked(db: Database, now: Date): Promise<EvaluationResult> {
  await db.query(`INSERT INTO alert_cursor (id, last_seq) SELECT 1, COALESCE(MAX(seq), 0) FROM quote_change ON CONFLICT (id) DO NOTHING`);
  const [cursor] = await db.query<{ last_seq: string }>(`SELECT last_seq::text AS last_seq FROM alert_cursor WHERE id = 1`);
  const from = BigInt(cursor!.last_seq);
  const changes = await db.query<{ seq: string; item_id: number; market_code: string; side: string }>(
    `SELECT seq::text AS seq, item_id, market_code, side FROM quote_change WHERE seq > $1::bigint ORDER BY seq LIMIT $2`,
    [from.toString(), EVALUATION_CHUNK],
  );
  if (changes.length === 0) return { ran: true, changes: 0, judged: 0, fired: 0 };
  const upto = BigInt(changes[changes.length - 1]!.seq);
  const itemIds = [...new Set(changes.map((c) => c.item_id))];
  const rows = await db.query<AlertRow>(`SELECT ${ALERT_COLUMNS} FROM ${ALERT_FROM} WHERE a.item_id = ANY($1::int[]) AND a.disabled_at IS NULL`, [itemIds]);
  // An alert is judged when a change touched its market (price: its market and side; route: either market).
  const touched = new Set(changes.map((c) => `${c.item_id}\u0000${c.market_code}\u0000${c.side}`));
  const relevant = rows.filter((r) =>
    r.kind === 'price'
      ? touched.has(`${r.item_id}\u0000${r.market_code}\u0000${r.side}`)
      : ['ask', 'bid'].some((s) => touched.has(`${r.item_id}\u0000${r.buy_market}\u0000${s}`) || touched.has(`${r.item_id}\u0000${r.sell_market}\u0000${s}`)),
  );
  const states: { id: string; holding: boolean }[] = [];
  const events: { id: string; alertId: string; accountId: string; payload: string }[] = [];
  if (relevant.length > 0) {
    const book = relevant.some((r) => r.kind === 'route_margin') ? await loadFeeBook(db, now) : null;
    const byApp = new Map<string, Set<string>>();
    for (const r of relevant) byApp.set(r.app_id, (byApp.get(r.app_id) ?? new Set()).add(r.market_hash_name));
    const quotes = new Map<string, MarketQuote[]>();
    for (const [appId, names] of byApp) for (const [name, q] of await loadQuotes(db, appId, [...names])) quotes.set(`${appId}\u0000${name}`, q);
    for (const r of relevant) {
      const alert = alertOf(r);
      const j = judge(alert, quotes.get(`${r.app_id}\u0000${r.market_hash_name}`) ?? [], book, now);
      if (j.holds === r.holding) continue;
      states.push({ id: r.id, holding: j.holds });
      if (j.holds) {
        const deliveryId = crypto.randomUUID();
        events.push({ id: deliveryId, alertId: r.id, accountId: r.account_id, payload: eventBody(deliveryId, { ...alert, holding: true }, j.observed, upto, now) });
      }
    }
  }
  // One statement: the cursor moves only from where it was read; the states and events are written only then.
  await db.query(
    `WITH c AS (UPDATE alert_cursor SET last_seq = $2::bigint WHERE id = 1 AND last_seq = $1::bigint RETURNING 1),
          s AS (UPDATE alert SET holding = x.holding
                  FROM unnest($3::uuid[], $4::boolean[]) AS x(id, holding)
                 WHERE alert.id = x.id AND EXISTS (SELECT 1 FROM c))
     INSERT INTO alert_delivery (id, alert_id, account_id, payload, status, next_attempt_at, created_at)
     SELECT e.id, e.alert_id, e.account_id, e.payload, 'pending', $9, $9
       FROM unnest($5::uuid[], $6::uuid[], $7::text[], $8::text[]) AS e(id, alert_id, account_id, payload)
       JOIN alert ON alert.id = e.alert_id
      WHERE EXISTS (SELECT 1 FROM c)`,
    [
      from.toString(), upto.toString(),
      states.map((s) => s.id), states.map((s) => s.holding),
      events.map((e) => e.id), events.map((e) => e.alertId), events.map((e) => e.accountId), events.map((e) => e.payload),
      now,
    ],
  );
  return { ran: true, changes: changes.length, judged: relevant.length, fired: events.length };
}

/** How the delivery worker sends and what clock it reads (tests inject both). */
export interface DeliveryOptions {
  /** The clock (default the system's): due times, claims, signatures' timestamps. */
  now?: () => Date;
  /** Milliseconds an attempt may take, connecting included (default DELIVERY_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Deliveries claimed per run (default 20). */
  batch?: number;
  /**
   * Connect to non-public addresses too (default false: the SSRF guard refuses them; env ALERT_ALLOW_PRIVATE_HOSTS,
   * as AlertSettings.allowPrivateHosts). Tests' receivers on 127.0.0.1 need it.
   */
  allowPrivateHosts?: boolean;
  /**
   * How host names are resolved (default the system's resolver, dns.lookup with every address): every address is
   * judged by the guard and the connection goes only to those. Tests inject one to play a name that resolves to a
   * private address.
   */
  lookup?: ResolveHost;
  logger?: Logger;
}

/** What one run of the worker did. */
export interface DeliveryRunResult {
  attempted: number;
  delivered: number;
  /** Events given up in this run (410, out of attempts, no credits, alert disabled). */
  failed: number;
  /** Attempts that failed and will be retried. */
  retrying: number;
  /**
   * Uncharged events left for the next run, unattempted: the account's credits were all held by its other events
   * of this run (each needs its credit before it is sent; an attempt that does not reach its receiver frees it).
   */
  deferred: number;
}

interface ClaimedRow {
  id: string;
  alert_id: string;
  account_id: string;
  key_id: string;
  payload: string;
  attempts: number;
  charged: boolean;
  url: string;
  secret: string;
  disabled: boolean;
}

/** The outcome of one HTTP attempt. */
interface Attempt {
  statusCode: number | null;
  error: string | null;
  excerpt: string | null;
  /**
   * True when the request reached the receiver: a connection to it was open (the body is written on it at once),
   * whether or not an answer came. False for a refused connection, a DNS failure, the guard's refusal, a connect
   * timeout. The charge follows it (docs/alerts.md, Billing).
   */
  sent: boolean;
}

async function readExcerpt(res: UndiciResponse): Promise<string | null> {
  if (!res.body) return null;
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_EXCERPT_CHARS * 4) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // a body cut short: keep what arrived
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? null : [...text].slice(0, RESPONSE_EXCERPT_CHARS).join('');
}

/** The `code` of the first error in `e`'s cause chain that has one (a fetch failure wraps the socket's error). */
function errorCode(e: unknown): string | undefined {
  for (let at: unknown = e, depth = 0; at && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/**
 * One attempt of `row`: a signed POST through a guarded connection of its own (src/lib/egress-guard.ts: the name is
 * resolved once, every address judged unless `allowPrivateHosts`, and the connection made only to those). Errors:
 * `address not allowed: <address>` (the guard), `dns_error`, `connection_error`, `timeout`, `http_<status>`, `gone`.
 */
async function send(row: ClaimedRow, now: Date, timeoutMs: number, allowPrivateHosts: boolean, lookup: ResolveHost | undefined): Promise<Attempt> {
  const t = Math.floor(now.getTime() / 1000);
  const state: EgressState = { connected: false };
  const agent = guardedAgent({ allowPrivate: allowPrivateHosts, resolve: lookup, connectTimeoutMs: timeoutMs, state });
  try {
    const res = await undiciFetch(row.url, {
      method: 'POST',
      redirect: 'manual',
      dispatcher: agent,
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'Quotegate-Webhooks/1',
        'Quotegate-Delivery': row.id,
        'Quotegate-Event': 'alert.triggered',
        'Quotegate-Signature': signatureHeader(row.secret, t, row.payload),
      },
      body: row.payload,
    });
    const excerpt = await readExcerpt(res);
    return { statusCode: res.status, error: res.status >= 200 && res.status < 300 ? null : res.status === 410 ? 'gone' : `http_${res.status}`, excerpt, sent: true };
  } catch (e) {
    const refused = addressRefusal(e);
    if (refused) return { statusCode: null, error: refused.message, excerpt: null, sent: false };
    const name = (e as { name?: string }).name;
    const code = errorCode(e);
    const error = name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' ? 'dns_error' : 'connection_error';
    return { statusCode: null, error, excerpt: null, sent: state.connected };
  } finally {
    void agent.destroy().catch(() => undefined);
  }
}

/**
 * Sends the due deliveries (one run; the service calls it every second, tests call it directly with their clock):
 * claims up to `batch` pending rows due by `now` (FOR UPDATE SKIP LOCKED, then a claim of DELIVERY_CLAIM_SECONDS) and
 * sends them at once, signed, through the SSRF guard (DeliveryOptions.allowPrivateHosts, lookup); records the outcome:
 * delivered on 2xx; on 410 the event fails and the alert is disabled; otherwise a retry after
 * RETRY_DELAYS_SECONDS[attempts - 1], or failure after MAX_ATTEMPTS.
 *
 * Billing (docs/alerts.md, Billing; "a charge follows the data"): an uncharged event is sent only when the account's
 * available balance covers its credit (read once per run and account, each of the run's uncharged events of the
 * account holding one credit of it; none left at all: the event fails unsent with `insufficient_credits`; all held by
 * the run's other events: it is left for the next run, `deferred`). Its credit is charged (chargeCredits, the
 * conditional statement) after an attempt that reached the receiver (`Attempt.sent`), once; an attempt that did not
 * is free and leaves the event uncharged for its retry. The race: API requests or another replica may spend the
 * balance between the check and the charge. The event was sent then, and the balance never goes below 0, so nothing is
 * charged (what is possible of 1 credit: none): a delivered event stays delivered with `charged: false`, the service
 * bearing the credit; an undelivered one ends (failed, `insufficient_credits`) rather than being retried unpaid.
 */
export async function runDeliveries(db: Database, opts: DeliveryOptions = {}): Promise<DeliveryRunResult> {
  const now = (opts.now ?? (() => new Date()))();
  const timeoutMs = opts.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const allowPrivateHosts = opts.allowPrivateHosts ?? false;
  const result: DeliveryRunResult = { attempted: 0, delivered: 0, failed: 0, retrying: 0, deferred: 0 };
  const claimed = await db.query<ClaimedRow>(
    `WITH due AS (
       SELECT seq FROM alert_delivery
        WHERE status = 'pending' AND next_attempt_at <= $1 AND (locked_until IS NULL OR locked_until <= $1)
        ORDER BY next_attempt_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED
     ), claimed AS (
       UPDATE alert_delivery d SET locked_until = $1::timestamptz + make_interval(secs => $3) FROM due WHERE d.seq = due.seq
       RETURNING d.seq, d.id, d.alert_id, d.account_id, d.payload, d.attempts, d.charged
     )
     SELECT c.id::text AS id, c.alert_id::text AS alert_id, c.account_id, a.key_id::text AS key_id, c.payload, c.attempts, c.charged,
            a.url, a.secret, a.disabled_at IS NOT NULL AS disabled
       FROM claimed c JOIN alert a ON a.id = c.alert_id
      ORDER BY c.seq`,
    [now, opts.batch ?? 20, DELIVERY_CLAIM_SECONDS],
  );
  // The balance each account with uncharged events has for this run (its events hold a credit each before sending).
  const balance = new Map<string, bigint>();
  for (const r of claimed) if (!r.charged && !r.disabled && !balance.has(r.account_id)) balance.set(r.account_id, await availableCredits(db, r.account_id));
  const budget = new Map(balance);
  // The claimed rows are sent at once (each attempt at most timeoutMs), so a run ends well within its claim.
  const deliverOne = async (row: ClaimedRow): Promise<void> => {
    const finish = async (fields: { status: AlertDelivery['status']; attempt: Attempt | null; error?: string; next?: Date }) => {
      const a = fields.attempt;
      await db.query(
        `UPDATE alert_delivery SET status = $2::text, attempts = attempts + $3, last_status_code = CASE WHEN $3 = 1 THEN $4::int ELSE last_status_code END,
                last_error = $5, response_excerpt = $6, last_attempt_at = CASE WHEN $3 = 1 THEN $7::timestamptz ELSE last_attempt_at END,
                next_attempt_at = COALESCE($8, next_attempt_at), delivered_at = CASE WHEN $2::text = 'delivered' THEN $7::timestamptz END, locked_until = NULL
          WHERE id = $1::uuid`,
        [row.id, fields.status, a ? 1 : 0, a?.statusCode ?? null, fields.error ?? a?.error ?? null, a?.excerpt ?? null, now, fields.next ?? null],
      );
    };
    if (row.disabled) {
      await db.query(`UPDATE alert_delivery SET status = 'failed', last_error = 'alert_disabled', locked_until = NULL WHERE id = $1::uuid`, [row.id]);
      result.failed++;
      return;
    }
    if (!row.charged) {
      // Decided before the first await of any row: the run's rows of one account share its balance in claim order.
      const left = budget.get(row.account_id)!;
      if (left < EVENT_CREDIT_COST) {
        if (balance.get(row.account_id)! < EVENT_CREDIT_COST) {
          await finish({ status: 'failed', attempt: null, error: 'insufficient_credits' });
          result.failed++;
        } else {
          await db.query(`UPDATE alert_delivery SET locked_until = NULL WHERE id = $1::uuid`, [row.id]);
          result.deferred++;
        }
        return;
      }
      budget.set(row.account_id, left - EVENT_CREDIT_COST);
    }
    result.attempted++;
    const attempt = await send(row, now, timeoutMs, allowPrivateHosts, opts.lookup);
    const attempts = row.attempts + 1;
    let unpaid = false;
    if (!row.charged && attempt.sent) {
      const after = await chargeCredits(db, { accountId: row.account_id, keyId: row.key_id, operationId: DELIVERY_OPERATION, requestId: row.id, cost: EVENT_CREDIT_COST });
      if (after === null) unpaid = true;
      else {
        await db.query(`UPDATE alert_delivery SET charged = true WHERE id = $1::uuid`, [row.id]);
        await db.notify('qg_auth', row.account_id).catch(() => undefined); // caches of the balance see the charge
      }
    }
    if (attempt.error === null) {
      await finish({ status: 'delivered', attempt });
      result.delivered++;
    } else if (attempt.error === 'gone') {
      await finish({ status: 'failed', attempt });
      await db.query(`UPDATE alert SET disabled_at = $2, disabled_reason = 'gone' WHERE id = $1::uuid AND disabled_at IS NULL`, [row.alert_id, now]);
      result.failed++;
    } else if (unpaid) {
      await finish({ status: 'failed', attempt, error: 'insufficient_credits' });
      result.failed++;
    } else if (attempts >= MAX_ATTEMPTS) {
      await finish({ status: 'failed', attempt });
      result.failed++;
    } else {
      await finish({ status: 'pending', attempt, next: new Date(now.getTime() + RETRY_DELAYS_SECONDS[attempts - 1]! * 1000) });
      result.retrying++;
    }
    if (unpaid) opts.logger?.warn({ delivery: row.id, account: row.account_id }, 'alert delivery sent but its credit could not be charged (the balance was spent meanwhile)');
    opts.logger?.info({ delivery: row.id, alert: row.alert_id, attempt: attempts, status: attempt.statusCode, error: attempt.error, sent: attempt.sent }, 'alert delivery attempt');
  };
  await Promise.all(claimed.map(deliverOne));
  return result;
}
