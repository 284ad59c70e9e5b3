/**
 * The market-wide route scan (issue 44, point 3; docs/fees.md, "The market-wide scan"): the best priced route of
 * each item across the catalogue, ranked by margin, bounded in memory and time whatever the catalogue's size.
 *
 * Method, in two steps:
 * 1. **Pre-selection in SQL** (TOP_CANDIDATES_SQL, one statement). Each market gets an estimated cost factor (buy
 *    side) and proceeds factor (sell side): the exact fee computation (src/fees/applied.ts, with the caller's fee
 *    profile) of a reference price of 100 USD, divided by 100; a market whose fee on that side is unknown (and not in
 *    the profile), or which `buyOn`/`sellOn` exclude, gets none and takes no part. For every item, the statement
 *    takes its cheapest estimated cost (asks x official USD rate x cost factor) and its highest estimated proceeds
 *    (asks and bids x rate x proceeds factor) over the quotes that pass the credibility and quantity floors, and keeps
 *    the `candidates` items with the highest estimated margin. PostgreSQL aggregates per item: the service never
 *    holds more than the candidates' names, whatever the number of quotes.
 * 2. **Exact routes in JS** for the candidates only, `CHUNK` items at a time (their published quotes through the
 *    quote cache, then `bestRoute`, the legs of GET /prices/routes with the same options, paired among the cheapest
 *    and best-paying ones only): each item's best priced route that meets `minMargin`; the best `limit` of them,
 *    ranked as routes are (margin, net, market codes).
 *
 * The estimate is exact for markets whose fees are proportional and differs slightly where a fee is fixed or rounded
 * (Steam's per-component rule, a fixed add/sub step); it may count the cheapest ask and the best sale on the same
 * market, which a route never does, and reads every provider's quote, not only the published one. So it may
 * over-rate an item (the exact step then ranks it lower) and, rarely, under-rate one just outside the candidates by
 * less than those differences. `candidates` is 5 x `limit`, at least 100 and at most 500.
 *
 * Load: the pre-selection reads every quote row once (measured: docs/fees.md, The market-wide scan), so each replica
 * runs at most SCANS_AT_ONCE of them at a time per database and keeps each candidate list for CANDIDATE_TTL_MS
 * (keyed by the statement's parameters, the credibility cut rounded down to the minute): repeated scans with the same
 * options within that time only price their candidates again, from current quotes. A quote change can so take up to
 * CANDIDATE_TTL_MS to move an item into the candidates; routes are always priced from current quotes.
 */
import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import { Money } from '../lib/money.js';
import { byCodePoint } from '../lib/order.js';
import type { Database } from '../db/client.js';
import type { MarketQuote } from './quotes.js';
import { afterFees, withoutFees } from '../fees/applied.js';
import { withCallerFees } from '../fees/profile.js';
import { bestRoute, compareRoutes, type RouteOptions, type TradeRoute } from '../fees/routes.js';
import type { MarketFees, UsdRates } from '../fees/chain.js';

/** Largest `limit` of the scan. */
export const MAX_TOP_ROUTES = 100;
/** Items whose exact routes are computed at once (their quotes held together). */
const CHUNK = 100;
const REFERENCE = new Money(100);
/** How long a candidate list is reused (module doc, Load). */
export const CANDIDATE_TTL_MS = 30_000;
/** Pre-selection statements run at once per replica and database. */
const SCANS_AT_ONCE = 2;

interface ScanState {
  limit: ReturnType<typeof pLimit>;
  candidates: LRUCache<string, Promise<string[]>>;
}
const scans = new WeakMap<object, ScanState>();

function scanState(db: object): ScanState {
  let s = scans.get(db);
  if (!s) scans.set(db, (s = { limit: pLimit(SCANS_AT_ONCE), candidates: new LRUCache({ max: 64, ttl: CANDIDATE_TTL_MS }) }));
  return s;
}

/** Options of `topRoutes`: a route's options plus the app, a margin floor and the number of routes. */
export interface TopRouteOptions extends RouteOptions {
  appId: string;
  /** Keep routes whose margin is at least this (a fraction); null = any priced route. */
  minMargin: Money | null;
  /** Routes answered, 1..MAX_TOP_ROUTES. */
  limit: number;
}

/** One route of the scan and its item. */
export interface TopRoute {
  appId: string;
  marketHashName: string;
  route: TradeRoute;
}

/**
 * The scan's answer: the ranked routes, how many items were computed exactly, and the markets left out of a side
 * because a fee that side needs is not known (code order): buying (`deposit` with `fund` cash) and selling (`sale`,
 * and `withdraw` with `payout` cash).
 */
export interface TopRoutes {
  routes: TopRoute[];
  candidateItems: number;
  unpricedBuyMarkets: string[];
  unpricedSellMarkets: string[];
}

/**
 * Why markets were left out of the scan and how to bring them in, or null when none was (the counterpart of a
 * single item's `left_out_reason`, docs/fees.md).
 */
export function topLeftOutReason(r: Pick<TopRoutes, 'unpricedBuyMarkets' | 'unpricedSellMarkets'>, fund: 'cash' | 'balance', payout: 'cash' | 'balance'): string | null {
  const parts: string[] = [];
  if (r.unpricedBuyMarkets.length > 0) parts.push(`buying${fund === 'cash' ? ' with cash (deposit)' : ''} on ${r.unpricedBuyMarkets.join(', ')}`);
  if (r.unpricedSellMarkets.length > 0) parts.push(`selling${payout === 'cash' ? ' for cash (sale, withdraw)' : ' (sale)'} on ${r.unpricedSellMarkets.join(', ')}`);
  if (parts.length === 0) return null;
  const switches = [fund === 'cash' && r.unpricedBuyMarkets.length > 0 ? 'fund=balance' : null, payout === 'cash' && r.unpricedSellMarkets.length > 0 ? 'payout=balance' : null].filter((x) => x !== null);
  return `unknown official fee for ${parts.join('; ')}; give your own rates with fee_profile (GraphQL feeProfile)${switches.length > 0 ? ` or trade from and to the market balance (${switches.join(', ')})` : ''}`;
}

/** What the scan needs of the fee book (the same as `tradeRoutes`). */
type Book = { feesOf(market: string): MarketFees; rates: UsdRates; rateDates: ReadonlyMap<string, string> };

/**
 * The pre-selection (method step 1). Parameters: $1 market codes, $2 cost factors, $3 proceeds factors (null = the
 * market takes no part on that side), $4 oldest observation accepted (null = any), $5 minimum quantity (null = none),
 * $6 app id, $7 number of candidates.
 */
export const TOP_CANDIDATES_SQL = `
WITH f AS (
  SELECT * FROM unnest($1::text[], $2::numeric[], $3::numeric[]) AS f(market_code, buy_factor, sell_factor)
),
q AS (
  SELECT sq.item_id, sq.side, sq.price * c.usd_rate AS usd, f.buy_factor, f.sell_factor
  FROM source_quote sq
  JOIN f ON f.market_code = sq.market_code
  JOIN currency c ON c.code = sq.currency_code AND NOT c.is_deleted
  WHERE sq.delisted_at IS NULL AND sq.price > 0
    AND ($4::timestamptz IS NULL OR coalesce(sq.observed_at, sq.fresh_at) >= $4::timestamptz)
    AND ($5::int IS NULL OR sq.quantity IS NULL OR sq.quantity >= $5::int)
),
per_item AS (
  SELECT item_id,
    min(usd * buy_factor) FILTER (WHERE side = 'ask' AND buy_factor IS NOT NULL) AS cost,
    max(usd * sell_factor) FILTER (WHERE side IN ('ask', 'bid') AND sell_factor IS NOT NULL) AS proceeds
  FROM q GROUP BY item_id
)
SELECT i.market_hash_name
FROM per_item p JOIN item i ON i.id = p.item_id
WHERE i.app_id = $6 AND p.cost > 0 AND p.proceeds IS NOT NULL
ORDER BY (p.proceeds - p.cost) / p.cost DESC, i.market_hash_name
LIMIT $7`;

/**
 * A market's estimated cost and proceeds factors (method step 1), as decimal strings; null = takes no part, and
 * `unknownBuy`/`unknownSell` when that is because a fee the side needs is unknown (not a filter).
 */
export function marketFactors(market: string, book: Book, opts: Pick<RouteOptions, 'fund' | 'payout' | 'feeProfile' | 'buyOn' | 'sellOn'>): { buy: string | null; sell: string | null; unknownBuy: boolean; unknownSell: boolean } {
  const { fees } = withCallerFees(market, book.feesOf(market), opts.feeProfile);
  const ctx = { fees, rates: book.rates, rateDates: book.rateDates };
  const factor = (amount: Money | null) => (amount === null || amount.lte(0) ? null : amount.div(REFERENCE).toString());
  let buy: string | null = null;
  let sell: string | null = null;
  let unknownBuy = false;
  let unknownSell = false;
  try {
    if (opts.buyOn === null || opts.buyOn.includes(market)) {
      const cost = opts.fund === 'cash' ? afterFees(ctx, 'deposit', REFERENCE, 'USD', 'USD').amount : withoutFees(ctx, REFERENCE, 'USD', 'USD').amount;
      unknownBuy = cost === null;
      buy = factor(cost);
    }
    if (opts.sellOn === null || opts.sellOn.includes(market)) {
      const proceeds = afterFees(ctx, opts.payout === 'cash' ? 'sale_then_withdraw' : 'sale', REFERENCE, 'USD', 'USD').amount;
      unknownSell = proceeds === null;
      sell = factor(proceeds);
    }
  } catch {
    // A chain that cannot run on a USD amount (a rate missing from the book): the market takes no part.
  }
  return { buy, sell, unknownBuy, unknownSell };
}

/**
 * The scan (module doc). `markets`: the market codes to consider (the catalogue's); `quotesOf` loads the published
 * quotes of a list of names (the quote cache or one statement). Throws what `tradeRoutes` throws (ChainError when
 * `opts.currency` has no official rate: callers check it first) and the database's errors.
 */
export async function topRoutes(
  db: Pick<Database, 'query'>,
  book: Book,
  markets: readonly string[],
  quotesOf: (appId: string, names: readonly string[]) => Promise<Map<string, MarketQuote[]>>,
  opts: TopRouteOptions,
): Promise<TopRoutes> {
  const codes: string[] = [];
  const buys: (string | null)[] = [];
  const sells: (string | null)[] = [];
  const unpricedBuyMarkets: string[] = [];
  const unpricedSellMarkets: string[] = [];
  for (const m of markets) {
    const f = marketFactors(m, book, opts);
    if (f.unknownBuy) unpricedBuyMarkets.push(m);
    if (f.unknownSell) unpricedSellMarkets.push(m);
    if (f.buy === null && f.sell === null) continue;
    codes.push(m);
    buys.push(f.buy);
    sells.push(f.sell);
  }
  unpricedBuyMarkets.sort(byCodePoint);
  unpricedSellMarkets.sort(byCodePoint);
  const unpriced = { unpricedBuyMarkets, unpricedSellMarkets };
  if (!buys.some((b) => b !== null) || !sells.some((s) => s !== null)) return { routes: [], candidateItems: 0, ...unpriced };
  // credibility = 2^(-age / 24 h) >= c  <=>  age <= -log2(c) x 24 h; one second of slack (the exact step decides).
  // Rounded down to the minute: a looser cut (the exact step decides), and one cache key a minute.
  const cut = opts.minCredibility > 0 ? opts.now.getTime() - (-Math.log2(opts.minCredibility) * 86_400 + 1) * 1000 : null;
  const oldest = cut === null || !Number.isFinite(cut) || cut < -8.64e15 ? null : new Date(Math.floor(cut / 60_000) * 60_000).toISOString();
  const candidates = Math.min(500, Math.max(100, opts.limit * 5));
  const params = [codes, buys, sells, oldest, opts.minQuantity ?? null, opts.appId, candidates];
  const state = scanState(db);
  const key = JSON.stringify(params);
  let pending = state.candidates.get(key);
  if (!pending) {
    pending = state.limit(async () => (await db.query<{ market_hash_name: string }>(TOP_CANDIDATES_SQL, params)).map((r) => r.market_hash_name));
    state.candidates.set(key, pending);
    pending.catch(() => state.candidates.delete(key));
  }
  const names = await pending;
  let best: TopRoute[] = [];
  for (let i = 0; i < names.length; i += CHUNK) {
    const chunk = names.slice(i, i + CHUNK);
    const quotes = await quotesOf(opts.appId, chunk);
    for (const name of chunk) {
      const list = quotes.get(name);
      if (!list) continue;
      const top = bestRoute(list, book, opts);
      if (top && (opts.minMargin === null || top.margin!.gte(opts.minMargin))) best.push({ appId: opts.appId, marketHashName: name, route: top });
    }
    // Keep only what can still be answered: the chunk's quotes go out of reach here.
    best = best.sort(compareTop).slice(0, opts.limit);
  }
  return { routes: best, candidateItems: names.length, ...unpriced };
}

/** Routes' ranking, then the item name (code-point order) between equal routes. */
function compareTop(a: TopRoute, b: TopRoute): number {
  return compareRoutes(a.route, b.route) || (a.marketHashName < b.marketHashName ? -1 : a.marketHashName > b.marketHashName ? 1 : 0);
}
