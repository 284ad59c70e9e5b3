/**
 * A collector run's rows between the upstream and the ingestion (docs/collectors.md, "Validation"): every
 * RawQuote an adapter yields is checked here, a bad one counted by reason and skipped, a good one converted to
 * its market's own currency when it came in another and kept in a compact columnar buffer (names interned, prices
 * as decimal strings, numbers in typed arrays) until the whole response was read and judged; only then does the
 * runner turn the buffer into QuoteObservations, a chunk at a time, for the bulk ingestion.
 *
 * Rules (a row failing one is skipped, counted under that reason):
 * - `name`: the market hash name is a string of 1-255 characters (code points), not blank, without NUL
 *   (the API's own rule for names, src/validation/params.ts);
 * - `market`: the market is one the source reports (`CollectorSource.markets`), in the catalogue and not deprecated;
 * - `side`: `ask` or `bid`;
 * - `currency`: the row's currency is an official, not deleted currency of the catalogue with a USD rate (and so
 *   is the market's, when the price must be converted);
 * - `price`: null, or a decimal string of 1-28 integer and at most 10 fraction digits greater than 0 (no sign,
 *   no exponent: never a JS number); after a conversion, still greater than 0 at the market currency's precision;
 * - `quantity`: absent, null or a whole number 0 to 2^31-1;
 * - `duplicate`: the same name, market and side again in the same run (the first one counts);
 * - `observed_at`: absent, or a valid Date (a row's own observation time, RawQuote.observedAt).
 * Conversion: price x usd_rate(row currency) / usd_rate(market currency) (usd_rate = USD per unit, the catalogue's
 * official rates), decimal.js with 40 significant digits, rounded half-even to the market currency's ISO 4217
 * minor units (2 for CNY, EUR, USD; Intl's currency data).
 */
import { Money, toMoney } from '../lib/money.js';
import type { QuoteObservation } from '../validation/ingest.js';
import type { RawQuote } from './source.js';

/** Why a row was skipped. */
export type SkipReason = 'name' | 'market' | 'side' | 'currency' | 'price' | 'quantity' | 'duplicate' | 'observed_at';

/** The catalogue facts rows are checked against. */
export interface RowRules {
  /** Catalogue markets: code -> own currency, deprecated. */
  markets: ReadonlyMap<string, { currencyCode: string; isDeprecated: boolean }>;
  /** Markets the source reports. */
  sourceMarkets: readonly string[];
  /** Official currencies: code -> USD per unit. */
  usdRates: ReadonlyMap<string, Money>;
}

const PRICE = /^\d{1,28}(\.\d{1,10})?$/;
const MAX_NAME = 255;
const INT_MAX = 2_147_483_647;

/** ISO 4217 minor units of `code` (Intl's data), 2 when Intl does not know it. */
function currencyDigits(code: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/** True when `name` is an acceptable market hash name (see the file comment). */
function validName(name: unknown): name is string {
  if (typeof name !== 'string' || name.length === 0 || name.includes('\u0000') || name.trim() === '') return false;
  if (name.length <= MAX_NAME) return true;
  let n = 0;
  for (const _ of name) if (++n > MAX_NAME) return false;
  return true;
}

/** A growable Int32Array. */
class IntColumn {
  data = new Int32Array(1024);
  push(i: number, v: number): void {
    if (i >= this.data.length) {
      const next = new Int32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[i] = v;
  }
}

// Flag bits of a row: side, then (known, value) pairs for isQuantityMinimum and isAllItemsSamePrice, then delisted.
const BID = 1;
const QMIN_KNOWN = 2;
const QMIN = 4;
const SAME_KNOWN = 8;
const SAME = 16;
const DELISTED = 32;

/**
 * The validated rows of one run, compact. `add` checks and keeps a row (or counts its skip); `observations`
 * yields them back as QuoteObservations in chunks.
 */
export class QuoteBuffer {
  private readonly names: string[] = [];
  private readonly nameIndex = new Map<string, number>();
  private readonly marketCodes: string[];
  private readonly marketIndex = new Map<string, number>();
  private readonly prices: (string | null)[] = [];
  private readonly nameCol = new IntColumn();
  private readonly marketCol = new IntColumn();
  private readonly quantityCol = new IntColumn(); // -1 = null
  private readonly flagCol = new IntColumn();
  /** Rows with their own observation time (RawQuote.observedAt): row -> epoch ms. Few sources give one. */
  private readonly observed = new Map<number, number>();
  private readonly seen = new Set<number>();
  private readonly conversions = new Map<string, { factor: Money; digits: number } | null>();
  /** Rows kept. */
  size = 0;
  /** Rows kept per market. */
  readonly perMarket = new Map<string, number>();
  /** Rows skipped per reason. */
  readonly skips = new Map<SkipReason, number>();

  constructor(private readonly rules: RowRules) {
    this.marketCodes = [...new Set(rules.sourceMarkets)];
    if (this.marketCodes.length > 32) throw new RangeError('a source reports at most 32 markets');
    this.marketCodes.forEach((m, i) => this.marketIndex.set(m, i));
  }

  /** Rows skipped in all. */
  get skipped(): number {
    let n = 0;
    for (const v of this.skips.values()) n += v;
    return n;
  }

  private skip(reason: SkipReason): SkipReason {
    this.skips.set(reason, (this.skips.get(reason) ?? 0) + 1);
    return reason;
  }

  /** The factor from `from` to `to` and the digits of `to`; null when a rate is missing. */
  private conversion(from: string, to: string): { factor: Money; digits: number } | null {
    const key = `${from}>${to}`;
    let c = this.conversions.get(key);
    if (c === undefined) {
      const a = this.rules.usdRates.get(from);
      const b = this.rules.usdRates.get(to);
      c = a && b && a.gt(0) && b.gt(0) ? { factor: a.div(b), digits: currencyDigits(to) } : null;
      this.conversions.set(key, c);
    }
    return c;
  }

  /** Checks one row; keeps it and returns null, or counts and returns why it was skipped. */
  add(row: RawQuote): SkipReason | null {
    const r = row as Partial<RawQuote> | null;
    if (!r || typeof r !== 'object') return this.skip('name');
    if (!validName(r.marketHashName)) return this.skip('name');
    const marketCode = r.marketCode;
    const mi = typeof marketCode === 'string' ? this.marketIndex.get(marketCode) : undefined;
    const market = mi === undefined ? undefined : this.rules.markets.get(marketCode!);
    if (mi === undefined || !market || market.isDeprecated) return this.skip('market');
    if (r.side !== 'ask' && r.side !== 'bid') return this.skip('side');
    if (typeof r.currencyCode !== 'string' || !this.rules.usdRates.has(r.currencyCode)) return this.skip('currency');
    let price: string | null = null;
    if (r.price !== null && r.price !== undefined) {
      if (typeof r.price !== 'string' || !PRICE.test(r.price) || !/[1-9]/.test(r.price)) return this.skip('price');
      price = r.price;
      if (r.currencyCode !== market.currencyCode) {
        const c = this.conversion(r.currencyCode, market.currencyCode);
        if (!c) return this.skip('currency');
        const native = toMoney(price).times(c.factor).toDecimalPlaces(c.digits, Money.ROUND_HALF_EVEN);
        if (!native.gt(0) || native.gte('1e28')) return this.skip('price');
        price = native.toFixed();
      }
    }
    let quantity = -1;
    if (r.quantity !== null && r.quantity !== undefined) {
      if (typeof r.quantity !== 'number' || !Number.isInteger(r.quantity) || r.quantity < 0 || r.quantity > INT_MAX) return this.skip('quantity');
      quantity = r.quantity;
    }
    let observedMs: number | null = null;
    if (r.observedAt !== undefined) {
      if (!(r.observedAt instanceof Date) || Number.isNaN(r.observedAt.getTime())) return this.skip('observed_at');
      observedMs = r.observedAt.getTime();
    }
    let ni = this.nameIndex.get(r.marketHashName);
    const side = r.side === 'bid' ? 1 : 0;
    if (ni !== undefined && this.seen.has(ni * 64 + mi * 2 + side)) return this.skip('duplicate');
    if (ni === undefined) {
      ni = this.names.length;
      this.names.push(r.marketHashName);
      this.nameIndex.set(r.marketHashName, ni);
    }
    this.seen.add(ni * 64 + mi * 2 + side);
    let flags = side ? BID : 0;
    if (typeof r.isQuantityMinimum === 'boolean') flags |= QMIN_KNOWN | (r.isQuantityMinimum ? QMIN : 0);
    if (typeof r.isAllItemsSamePrice === 'boolean') flags |= SAME_KNOWN | (r.isAllItemsSamePrice ? SAME : 0);
    if (r.delisted === true) flags |= DELISTED;
    const i = this.size++;
    this.nameCol.push(i, ni);
    this.marketCol.push(i, mi);
    this.quantityCol.push(i, quantity);
    this.flagCol.push(i, flags);
    this.prices.push(price);
    if (observedMs !== null) this.observed.set(i, observedMs);
    this.perMarket.set(marketCode!, (this.perMarket.get(marketCode!) ?? 0) + 1);
    return null;
  }

  /**
   * The kept rows as observations of `providerCode` observed at `observedAt` (app 730; a row with its own earlier
   * observation time keeps it), `chunk` at a time, in their market's own currency.
   */
  *observations(providerCode: string, observedAt: Date, chunk: number): Generator<QuoteObservation[]> {
    for (let start = 0; start < this.size; start += chunk) {
      const end = Math.min(this.size, start + chunk);
      const out: QuoteObservation[] = [];
      for (let i = start; i < end; i++) {
        const marketCode = this.marketCodes[this.marketCol.data[i]!]!;
        const flags = this.flagCol.data[i]!;
        const q = this.quantityCol.data[i]!;
        const price = this.prices[i]!;
        out.push({
          appId: '730',
          marketHashName: this.names[this.nameCol.data[i]!]!,
          marketCode,
          providerCode,
          side: flags & BID ? 'bid' : 'ask',
          currencyCode: this.rules.markets.get(marketCode)!.currencyCode,
          price: price === null ? null : toMoney(price),
          quantity: q < 0 ? null : q,
          isQuantityMinimum: flags & QMIN_KNOWN ? (flags & QMIN) !== 0 : null,
          isAllItemsSamePrice: flags & SAME_KNOWN ? (flags & SAME) !== 0 : null,
          observedAt: this.observed.has(i) ? new Date(Math.min(this.observed.get(i)!, observedAt.getTime())) : observedAt,
          delisted: (flags & DELISTED) !== 0,
        });
      }
      yield out;
    }
  }
}
