/**
 * Typical half-spread of comparable items, for one-sided valuations (spec: ValuationOut.is_two_sided
 * false: "the sell consensus less a typical half-spread of comparable items").
 *
 * Half-spread of a two-sided item (log scale): h = ln(ask / mid) with mid = (ask + bid) / 2, computed
 * from the day's two-sided valuations (ask and bid consensus, CNY).
 * Comparable items: same item type (itemType: the kind of item its market hash name names) and same
 * price band (priceBand: half-decades of the ask consensus in CNY: [1, 3.16), [3.16, 10), [10, 31.6) ...).
 * A group needs MIN_GROUP two-sided items; otherwise the rule widens to the same type, then the same
 * band, then every two-sided item of the day, then a fixed default (no two-sided item at all).
 * Typical half-spread = median h of the group; its spread s (68.27th percentile of |h - median|, at
 * least MIN_SPREAD_SIGMA) joins the one-sided
 * item's uncertainty. The one-sided mid is ask x e^(-h), with e^(-h) rounded to 6 significant digits.
 */
import { Money } from '../lib/money.js';
import { median, q68 } from './robust.js';

/** Two-sided items a comparable group needs before its median is used. */
export const MIN_GROUP = 20;
/** Half-spread (log) used when the day has no two-sided item at all, and its uncertainty. */
const DEFAULT_HALF_SPREAD = { h: 0.04, s: 0.04 };

/** Price band of an amount in CNY: floor(2 x log10(amount)), i.e. half-decades (0 = [1, 3.16)). */
export function priceBand(amount: Money): number {
  return Math.floor(2 * Math.log10(Math.max(amount.toNumber(), 1e-6)));
}

/** Typical half-spread for one comparable group, with the group it came from. */
export interface HalfSpread {
  /** Median log half-spread. */
  h: number;
  /** Its dispersion (log). */
  s: number;
  /** `type+band`, `type`, `band`, `all` or `default`. */
  group: string;
  /** Two-sided items in the group. */
  n: number;
}

/** The table of typical half-spreads of one day, from that day's two-sided items. */
export class HalfSpreadTable {
  private readonly byKey = new Map<string, number[]>();
  private readonly all: number[] = [];
  private readonly cache = new Map<string, HalfSpread>();

  /** Adds one two-sided item: its type, band and log half-spread. */
  add(type: string, band: number, h: number): void {
    if (!Number.isFinite(h)) return;
    for (const key of [`${type}/${band}`, `${type}/*`, `*/${band}`]) {
      let list = this.byKey.get(key);
      if (!list) this.byKey.set(key, (list = []));
      list.push(h);
    }
    this.all.push(h);
    this.cache.clear();
  }

  /** The typical half-spread for an item of `type` in `band` (see the module rule). */
  lookup(type: string, band: number): HalfSpread {
    const cacheKey = `${type}/${band}`;
    const hit = this.cache.get(cacheKey);
    if (hit) return hit;
    let out: HalfSpread = { ...DEFAULT_HALF_SPREAD, group: 'default', n: 0 };
    for (const [key, group] of [
      [`${type}/${band}`, 'type+band'],
      [`${type}/*`, 'type'],
      [`*/${band}`, 'band'],
    ] as const) {
      const list = this.byKey.get(key);
      if (list && list.length >= MIN_GROUP) {
        out = { h: median(list), s: spread(list), group, n: list.length };
        break;
      }
    }
    if (out.group === 'default' && this.all.length > 0) out = { h: median(this.all), s: spread(this.all), group: 'all', n: this.all.length };
    this.cache.set(cacheKey, out);
    return out;
  }

  /** Every group with enough items, for the run's stats: key -> {h, s, n}. */
  summary(): Record<string, { h: number; s: number; n: number }> {
    const out: Record<string, { h: number; s: number; n: number }> = {};
    for (const [key, list] of [...this.byKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (list.length >= MIN_GROUP) out[key] = { h: round6(median(list)), s: round6(spread(list)), n: list.length };
    }
    if (this.all.length > 0) out['*/*'] = { h: round6(median(this.all)), s: round6(spread(this.all)), n: this.all.length };
    return out;
  }
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** Smallest half-spread dispersion (price ticks make identical cheap items look certain). */
const MIN_SPREAD_SIGMA = 0.01;

/** Dispersion of half-spreads around their median: 68.27th percentile of |h - median|, at least MIN_SPREAD_SIGMA. */
function spread(list: number[]): number {
  const m = median(list);
  return Math.max(MIN_SPREAD_SIGMA, q68(list.map((h) => h - m)));
}

/** e^(-h) as a decimal factor, 6 significant digits (applied to the ask consensus). */
export function halfSpreadFactor(h: number): Money {
  return new Money(Math.exp(-h)).toSignificantDigits(6);
}
