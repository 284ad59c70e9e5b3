/**
 * Cross-market routes (issue: fees applied, point 3; docs/fees.md): buy an item on market A at its ask,
 * sell it on market B at B's ask (listing at the current lowest ask) or into B's bid, with each market's
 * official fees applied (src/fees/applied.ts), in one currency at official rates, ranked by margin.
 *
 * - Buying (`fund`): `cash` pays A's deposit fees to fund the purchase (the DEPOSIT path: cash whose
 *   deposit credits the ask); `balance` spends a balance already held on A (the ask itself).
 * - Selling (`payout`): `cash` is B's sale then withdraw fees (SALE_THEN_WITHDRAW); `balance` keeps the
 *   proceeds on B (SALE).
 * - net = proceeds - cost; margin = net / cost (a fraction, 6 decimals, half-even). A route with an
 *   unknown fee on either leg is `unpriced`: no net, no margin, never ranked as profitable.
 * - Each leg's credibility is its quote's freshness: 1 when observed at the request's moment, halving
 *   every 24 hours since (2^(-age/24 h)); a route's credibility is the lower of its legs', and
 *   `minCredibility` drops routes below it.
 * - Caller fees (issue 44, point 3; src/fees/profile.ts): `feeProfile` fills a market's unknown slots with the
 *   caller's rates, so the route is priced; a leg lists the purposes it took from the profile (`callerFees`) and a
 *   route that used any is `feeSource: 'caller'`.
 * - Hold (data/trade-holds.json, src/fees/holds.ts): the days an item bought on A is locked before it can be
 *   traded to B and sold there, A's hold (null = unknown).
 * - Liquidity: `minQuantity` drops a route whose buy or sell quote reports a quantity below it; a quote without a
 *   quantity is kept, and its route says `quantityKnown: false`.
 * Ranking: priced routes by margin (highest first), then net, then market codes; unpriced routes after
 * them by market codes. `tradeRoutes` returns both; `rankedRoutes` leaves the unpriced out unless asked and
 * counts them.
 */
import { Money } from '../lib/money.js';
import { afterFees, withoutFees, type AfterFees, type FeeContext } from './applied.js';
import type { MarketFees, UsdRates } from './chain.js';
import { withCallerFees, type FeeProfile, type ProfilePurpose } from './profile.js';
import { holdOf, type TradeHold } from './holds.js';

/** How the buyer pays on market A. */
export type Funding = 'cash' | 'balance';
/** What the seller keeps from market B. */
export type Payout = 'cash' | 'balance';

/** One leg of a route: the quote it uses and its amount in the route's currency after that leg's fees. */
export interface RouteLeg {
  marketCode: string;
  side: 'ask' | 'bid';
  currencyCode: string;
  price: Money;
  observedAt: Date | null;
  freshAt: Date;
  /** Whole seconds between the quote's observation (else its last confirmation) and the request. */
  ageSeconds: number;
  /** 2^(-age / 24 h), between 0 and 1. */
  credibility: number;
  /** `deposit` or `balance` (buy leg), `sale` or `sale_then_withdraw` (sell leg). */
  path: 'deposit' | 'balance' | 'sale' | 'sale_then_withdraw';
  /** The leg's fees as applied: its amount in the route's currency (null when a fee is unknown), steps and rates. */
  fees: Omit<AfterFees, 'path'>;
  /** The quote's quantity (items listed or wanted at that price); null when the source does not report one. */
  quantity: number | null;
  /** Purposes of this leg priced with the caller's rates (`feeProfile`) because the official fee is unknown. */
  callerFees: ProfilePurpose[];
}

/** A buy-here-sell-there pair. */
export interface TradeRoute {
  buy: RouteLeg;
  sell: RouteLeg;
  priced: boolean;
  /** Proceeds minus cost in the route's currency; null when unpriced. */
  net: Money | null;
  /** net / cost, rounded to 6 decimals; null when unpriced. */
  margin: Money | null;
  credibility: number;
  /** `caller` when a leg used the caller's rates (`feeProfile`), else `official`. */
  feeSource: 'official' | 'caller';
  /** The buy market's trade hold: days before the item can be traded to the sell market (`days` null = unknown). */
  hold: TradeHold;
  /** True when both legs' quotes report a quantity (only then did `minQuantity` check the route). */
  quantityKnown: boolean;
}

/** Options of `tradeRoutes` (see the module doc). */
export interface RouteOptions {
  currency: string;
  buyOn: string[] | null;
  sellOn: string[] | null;
  fund: Funding;
  payout: Payout;
  minCredibility: number;
  now: Date;
  /** The caller's rates for unknown official fees (src/fees/profile.ts); absent = none. */
  feeProfile?: FeeProfile | null;
  /** Drop routes whose buy or sell quote reports a quantity below this; absent or null = no floor. */
  minQuantity?: number | null;
  /** Trade holds by market (default: data/trade-holds.json). */
  holds?: ReadonlyMap<string, TradeHold>;
}

/**
 * The fields of a market quote (quotes/quotes.ts `MarketQuote`, which satisfies it) that a route reads;
 * declared here because fees/ sits below the quote service.
 */
export interface RouteQuote {
  marketCode: string;
  side: 'ask' | 'bid' | 'mid';
  currencyCode: string;
  price: Money | null;
  observedAt: Date | null;
  freshAt: Date;
  delistedAt: Date | null;
  /** Units listed (ask) or wanted (bid); null when the source does not say (the liquidity filter keeps it). */
  quantity: number | null;
}

const DAY_SECONDS = 86_400;

const LEG_PURPOSES: Record<RouteLeg['path'], ProfilePurpose[]> = { deposit: ['deposit'], balance: [], sale: ['sale'], sale_then_withdraw: ['sale', 'withdraw'] };

function leg(q: RouteQuote & { side: 'ask' | 'bid'; price: Money }, path: RouteLeg['path'], fees: Omit<AfterFees, 'path'>, now: Date, filled: ProfilePurpose[]): RouteLeg {
  const seen = q.observedAt ?? q.freshAt;
  const ageSeconds = Math.max(0, Math.floor((now.getTime() - seen.getTime()) / 1000));
  return {
    marketCode: q.marketCode,
    side: q.side,
    currencyCode: q.currencyCode,
    price: q.price,
    observedAt: q.observedAt,
    freshAt: q.freshAt,
    ageSeconds,
    credibility: Math.pow(2, -ageSeconds / DAY_SECONDS),
    path,
    fees,
    quantity: q.quantity,
    callerFees: LEG_PURPOSES[path].filter((p) => filled.includes(p)),
  };
}

/**
 * Every route between the item's quotes (see the module doc), ranked. `feesOf` gives each market's
 * schedule; `rates` and `rateDates` the official rates. Throws ChainError only when `opts.currency` has
 * no official rate (callers check it first).
 */
export function tradeRoutes(
  quotes: readonly RouteQuote[],
  book: { feesOf(market: string): MarketFees; rates: UsdRates; rateDates: ReadonlyMap<string, string> },
  opts: RouteOptions,
): TradeRoute[] {
  const { buys, sells } = routeLegs(quotes, book, opts);
  const routes: TradeRoute[] = [];
  for (const buy of buys) {
    for (const sell of sells) {
      const route = pair(buy, sell, opts);
      if (route) routes.push(route);
    }
  }
  return routes.sort(compareRoutes);
}

/**
 * The item's best priced route by the ranking of the module doc (null when none is priced), without building every
 * pair: the market-wide scan's exact step (src/quotes/top-routes.ts). The legs that fail `minCredibility` or have no
 * amount are dropped (a route's credibility is its lower leg's), then only the buys costing at most the third-lowest
 * cost and the sells paying at least the third-highest proceeds are paired. The best route is among them: buys are
 * one per market and a market has at most two sells (ask, bid), so for any route some kept buy on another market
 * than its sell costs no more, and some kept sell on another market than its buy pays no less. (Routes whose
 * margins tie at 6 decimals may rank in another order than `tradeRoutes` would put them.)
 */
export function bestRoute(
  quotes: readonly RouteQuote[],
  book: { feesOf(market: string): MarketFees; rates: UsdRates; rateDates: ReadonlyMap<string, string> },
  opts: RouteOptions,
): TradeRoute | null {
  const { buys, sells } = routeLegs(quotes, book, opts);
  const ok = (l: RouteLeg) => l.fees.amount !== null && l.credibility >= opts.minCredibility;
  const cheap = buys.filter((l) => ok(l) && l.fees.amount!.gt(0)).sort((a, b) => a.fees.amount!.comparedTo(b.fees.amount!));
  const rich = sells.filter(ok).sort((a, b) => b.fees.amount!.comparedTo(a.fees.amount!));
  const k = 3;
  const buyCut = cheap[Math.min(k, cheap.length) - 1]?.fees.amount ?? undefined;
  const sellCut = rich[Math.min(k, rich.length) - 1]?.fees.amount ?? undefined;
  if (buyCut === undefined || sellCut === undefined) return null;
  let best: TradeRoute | null = null;
  for (const buy of cheap) {
    if (buy.fees.amount!.gt(buyCut)) break;
    for (const sell of rich) {
      if (sell.fees.amount!.lt(sellCut)) break;
      const route = pair(buy, sell, opts);
      if (route && route.priced && (best === null || compareRoutes(route, best) < 0)) best = route;
    }
  }
  return best;
}

type Book = { feesOf(market: string): MarketFees; rates: UsdRates; rateDates: ReadonlyMap<string, string> };

/** The buy legs (asks) and sell legs (asks and bids) of the item's quotes for the options, before pairing. */
function routeLegs(quotes: readonly RouteQuote[], book: Book, opts: RouteOptions): { buys: RouteLeg[]; sells: RouteLeg[] } {
  const usable = quotes.filter((q): q is RouteQuote & { side: 'ask' | 'bid'; price: Money } => q.side !== 'mid' && q.price !== null && q.delistedAt === null && q.price.gt(0));
  const minQuantity = opts.minQuantity ?? null;
  const liquid = (q: RouteQuote) => minQuantity === null || q.quantity === null || q.quantity >= minQuantity;
  const ctxOf = (market: string): { ctx: FeeContext; filled: ProfilePurpose[] } => {
    const { fees, filled } = withCallerFees(market, book.feesOf(market), opts.feeProfile);
    return { ctx: { fees, rates: book.rates, rateDates: book.rateDates }, filled };
  };
  const buys = usable
    .filter((q) => q.side === 'ask' && liquid(q) && (opts.buyOn === null || opts.buyOn.includes(q.marketCode)))
    .map((q) => {
      const { ctx, filled } = ctxOf(q.marketCode);
      return opts.fund === 'cash'
        ? leg(q, 'deposit', afterFees(ctx, 'deposit', q.price, q.currencyCode, opts.currency), opts.now, filled)
        : leg(q, 'balance', withoutFees(ctx, q.price, q.currencyCode, opts.currency), opts.now, filled);
    });
  const sells = usable
    .filter((q) => liquid(q) && (opts.sellOn === null || opts.sellOn.includes(q.marketCode)))
    .map((q) => {
      const path = opts.payout === 'cash' ? 'sale_then_withdraw' : 'sale';
      const { ctx, filled } = ctxOf(q.marketCode);
      return leg(q, path, afterFees(ctx, path, q.price, q.currencyCode, opts.currency), opts.now, filled);
    });
  return { buys, sells };
}

/** The route of two legs, or null when they are on one market or below `minCredibility`. */
function pair(buy: RouteLeg, sell: RouteLeg, opts: RouteOptions): TradeRoute | null {
  if (buy.marketCode === sell.marketCode) return null;
  const credibility = Math.min(buy.credibility, sell.credibility);
  if (credibility < opts.minCredibility) return null;
  const cost = buy.fees.amount;
  const proceeds = sell.fees.amount;
  const priced = cost !== null && proceeds !== null && cost.gt(0);
  const net = priced ? proceeds.minus(cost) : null;
  return {
    buy,
    sell,
    priced,
    net,
    margin: net && cost ? net.div(cost).toDecimalPlaces(6) : null,
    credibility,
    feeSource: buy.callerFees.length > 0 || sell.callerFees.length > 0 ? 'caller' : 'official',
    hold: holdOf(buy.marketCode, opts.holds),
    quantityKnown: buy.quantity !== null && sell.quantity !== null,
  };
}

const codes = (r: TradeRoute) => `${r.buy.marketCode}\u0000${r.sell.marketCode}\u0000${r.sell.side}`;

/** The ranking of the module doc: priced by margin, then net (highest first), then market codes; unpriced last. */
export function compareRoutes(a: TradeRoute, b: TradeRoute): number {
  if (a.priced !== b.priced) return a.priced ? -1 : 1;
  if (a.priced && b.priced) {
    const m = b.margin!.comparedTo(a.margin!);
    if (m !== 0) return m;
    const n = b.net!.comparedTo(a.net!);
    if (n !== 0) return n;
  }
  return codes(a) < codes(b) ? -1 : codes(a) > codes(b) ? 1 : 0;
}

/** What `rankedRoutes` left out of an answer: how many unpriced routes, and the unknown fees that made them so. */
export interface LeftOut {
  unpriced: number;
  /** A sentence naming the markets and purposes whose fees are unknown (null when nothing was left out). */
  reason: string | null;
}

/**
 * The routes an answer lists: every priced route (ranked), plus the unpriced ones after them when
 * `includeUnpriced`; otherwise the unpriced are counted in `leftOut` with the unknown fees that caused them.
 */
export function rankedRoutes(routes: readonly TradeRoute[], includeUnpriced: boolean): { routes: TradeRoute[]; leftOut: LeftOut } {
  if (includeUnpriced) return { routes: [...routes], leftOut: { unpriced: 0, reason: null } };
  const kept = routes.filter((r) => r.priced);
  const dropped = routes.filter((r) => !r.priced);
  if (dropped.length === 0) return { routes: kept, leftOut: { unpriced: 0, reason: null } };
  const unknown = new Set<string>();
  for (const r of dropped) for (const l of [r.buy, r.sell]) for (const p of l.fees.unknownPurposes) unknown.add(`${p} on ${l.marketCode}`);
  const list = [...unknown].sort();
  const shown = list.slice(0, 10).join(', ') + (list.length > 10 ? ` and ${list.length - 10} more` : '');
  return {
    routes: kept,
    leftOut: {
      unpriced: dropped.length,
      reason: list.length > 0
        ? `unknown official fee (${shown}); give your own rates with fee_profile (GraphQL feeProfile), or include_unpriced=true to list them`
        : 'a leg cannot be priced (see each leg\'s reason with include_unpriced=true)',
    },
  };
}
