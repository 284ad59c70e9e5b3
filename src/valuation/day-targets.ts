/**
 * The targets a valuation day is scored against, and what a scored day teaches later valuations: shared by the
 * backtest (valuation/backtest.ts) and the published accuracy (valuation/accuracy.ts), which both read
 * them the same way (docs/valuation.md sections 8 and 10).
 */
import type { Database } from '../db/client.js';
import { toMoney, type Money } from '../lib/money.js';
import { formatDate } from '../lib/time.js';
import type { CloseQuote } from './item.js';
import type { CalibrationSegment, DayLearner } from './learning.js';
import { median } from './robust.js';
import type { FeeBook } from './daily.js';

/**
 * The parts of one item's valuation that its calibration learning reads: the side amounts (CNY cash), whether
 * it is two-sided, and its uncertainties before calibration (log scale; `bid` null on a one-sided item).
 */
export interface LearnedValuation {
  ask: Money;
  bid: Money | null;
  raw: { uncertainty: number; ask: number; bid: number | null };
  twoSided: boolean;
}

/** One target of a scored day: a market's close of that day on the cash scale (CNY, fees included), as a log. */
export interface DayTarget {
  side: 'ask' | 'bid';
  market: string;
  /** ln of the close through its market's fee path (ask: cash cost; bid: cash received), CNY. */
  y: number;
}

/**
 * What the markets showed on `date`, the targets a valuation of that day is scored against (docs/valuation.md
 * section 8): every market's close of the day (listed, with a price; the market's own feed before an
 * aggregator's), put on the cash scale with `book`'s fee path; closes without a known path are left out.
 * Keyed by item id; `ids` limits it to item ids in [lo, hi] (the scoring reads a page at a time).
 */
export async function dayTargets(db: Pick<Database, 'query'>, date: Date, book: FeeBook, ids?: { lo: number; hi: number }): Promise<Map<number, DayTarget[]>> {
  const rows = await db.query<{ item_id: number; market_code: string; side: 'ask' | 'bid'; currency_code: string; price: string }>(
    `SELECT DISTINCT ON (c.item_id, c.market_code, c.side) c.item_id, c.market_code, c.side::text AS side, c.currency_code, c.price::text AS price
       FROM daily_close c WHERE c.day = $1::date AND NOT c.delisted AND c.price IS NOT NULL AND c.item_id BETWEEN $2 AND $3
      ORDER BY c.item_id, c.market_code, c.side, (c.provider_code = c.market_code) DESC, c.confirmed_at DESC`,
    [formatDate(date), ids?.lo ?? -2147483648, ids?.hi ?? 2147483647],
  );
  const targets = new Map<number, DayTarget[]>();
  for (const r of rows) {
    const p = book.path(r.market_code, r.side, r.currency_code);
    if (!p) continue;
    const x = p.a.times(toMoney(r.price)).plus(p.b);
    if (!x.gt(0)) continue;
    let list = targets.get(r.item_id);
    if (!list) targets.set(r.item_id, (list = []));
    list.push({ side: r.side, market: r.market_code, y: Math.log(x.toNumber()) });
  }
  return targets;
}

/** The day's consensus target of each side: the per-item median of its targets (ln cash CNY). */
function consensusTargets(targets: readonly DayTarget[]): Record<'ask' | 'bid', number> {
  return {
    ask: median(targets.filter((t) => t.side === 'ask').map((t) => t.y)),
    bid: median(targets.filter((t) => t.side === 'bid').map((t) => t.y)),
  };
}

/**
 * Adds one item's market learning to `learner`: each previous close (its market's latest close in the window,
 * on the cash scale of `book`) against the day's consensus target of its side.
 */
export function learnMarkets(learner: DayLearner, closes: readonly CloseQuote[], targets: readonly DayTarget[], book: FeeBook): void {
  const target = consensusTargets(targets);
  for (const c of closes) {
    const t = target[c.side];
    if (!Number.isFinite(t)) continue;
    const p = book.path(c.market, c.side, c.currency);
    if (!p) continue;
    const x = p.a.times(c.price).plus(p.b);
    if (x.gt(0)) learner.addMarketError(`${c.market}/${c.side}`, Math.abs(t - Math.log(x.toNumber())));
  }
}

/**
 * Adds one valuation's calibration ratios to `learner`: each target's error against the raw uncertainty of
 * the item (segment one_sided or two_sided) and of its side (ask, bid).
 */
export function learnCalibration(learner: DayLearner, v: LearnedValuation, targets: readonly DayTarget[]): void {
  for (const t of targets) {
    const amount = t.side === 'ask' ? v.ask : v.bid;
    const rawSide = t.side === 'ask' ? v.raw.ask : v.raw.bid;
    if (amount === null || !amount.gt(0) || rawSide === null) continue;
    const error = Math.abs(t.y - Math.log(amount.toNumber()));
    learner.addRatio((v.twoSided ? 'two_sided' : 'one_sided') satisfies CalibrationSegment, error, v.raw.uncertainty);
    learner.addRatio(t.side, error, rawSide);
  }
}
