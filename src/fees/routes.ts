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
 * Ranking: priced routes by margin (highest first), then net, then market codes; unpriced routes after
 * them by market codes.
 */
import { Money } from '../lib/money.js';
import { afterFees, withoutFees, type AfterFees, type FeeContext } from './applied.js';
import type { MarketFees, UsdRates } from './chain.js';

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
}

/**
 * The fields of a market quote (services/quotes.ts `MarketQuote`, which satisfies it) that a route reads;
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
}

const DAY_SECONDS = 86_400;

function leg(q: RouteQuote & { side: 'ask' | 'bid'; price: Money }, path: RouteLeg['path'], fees: Omit<AfterFees, 'path'>, now: Date): RouteLeg {
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
  const usable = quotes.filter((q): q is RouteQuote & { side: 'ask' | 'bid'; price: Money } => q.side !== 'mid' && q.price !== null && q.delistedAt === null && q.price.gt(0));
  const ctxOf = (market: string): FeeContext => ({ fees: book.feesOf(market), rates: book.rates, rateDates: book.rateDates });
  const buys = usable
    .filter((q) => q.side === 'ask' && (opts.buyOn === null || opts.buyOn.includes(q.marketCode)))
    .map((q) =>
      opts.fund === 'cash'
        ? leg(q, 'deposit', afterFees(ctxOf(q.marketCode), 'deposit', q.price, q.currencyCode, opts.currency), opts.now)
        : leg(q, 'balance', withoutFees(ctxOf(q.marketCode), q.price, q.currencyCode, opts.currency), opts.now),
    );
  const sells = usable
    .filter((q) => opts.sellOn === null || opts.sellOn.includes(q.marketCode))
    .map((q) => {
      const path = opts.payout === 'cash' ? 'sale_then_withdraw' : 'sale';
      return leg(q, path, afterFees(ctxOf(q.marketCode), path, q.price, q.currencyCode, opts.currency), opts.now);
    });
  const routes: TradeRoute[] = [];
  for (const buy of buys) {
    for (const sell of sells) {
      if (buy.marketCode === sell.marketCode) continue;
      const credibility = Math.min(buy.credibility, sell.credibility);
      if (credibility < opts.minCredibility) continue;
      const cost = buy.fees.amount;
      const proceeds = sell.fees.amount;
      const priced = cost !== null && proceeds !== null && cost.gt(0);
      const net = priced ? proceeds.minus(cost) : null;
      routes.push({ buy, sell, priced, net, margin: net && cost ? net.div(cost).toDecimalPlaces(6) : null, credibility });
    }
  }
  const codes = (r: TradeRoute) => `${r.buy.marketCode}\u0000${r.sell.marketCode}\u0000${r.sell.side}`;
  return routes.sort((a, b) => {
    if (a.priced !== b.priced) return a.priced ? -1 : 1;
    if (a.priced && b.priced) {
      const m = b.margin!.comparedTo(a.margin!);
      if (m !== 0) return m;
      const n = b.net!.comparedTo(a.net!);
      if (n !== 0) return n;
    }
    return codes(a) < codes(b) ? -1 : codes(a) > codes(b) ? 1 : 0;
  });
}
