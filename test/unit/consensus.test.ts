/** The consensus, the item valuation and the half-spread rules, on small hand-made inputs. */
import { describe, expect, it } from 'vitest';
import { Money } from '../../src/lib/money.js';
import { AMOUNT_DP, consensus, type Source } from '../../src/valuation/consensus.js';
import { askPath, bidPath } from '../../src/valuation/fee-path.js';
import type { MarketFees } from '../../src/fees/chain.js';
import { HalfSpreadTable, MIN_GROUP, priceBand } from '../../src/valuation/half-spread.js';
import { itemType } from '../../src/search/item-type.js';
import { oneSided, twoSided, valueSides, type CloseQuote, type ValuationModel } from '../../src/valuation/item.js';

const m = (s: string | number) => new Money(s);
const src = (market: string, amount: string, sigma = 0.05, feesKnown = true): Source => ({ market, provider: market, amount: m(amount), sigma, feesKnown });

describe('weighted robust consensus', () => {
  it('equal sources give their value and count; the weighted mean is reproducible from the weights', () => {
    const c = consensus([src('A', '100'), src('B', '102'), src('C', '98')])!;
    expect(c.count).toBe(3);
    const byHand = c.outcomes.reduce((s, o) => s.plus(o.source.amount.times(o.weight)), m(0)).div(c.outcomes.reduce((s, o) => s.plus(o.weight), m(0)));
    expect(c.amount.toFixed()).toBe(byHand.toDecimalPlaces(AMOUNT_DP).toFixed());
    expect(c.amount.toNumber()).toBeCloseTo(100, 0);
  });

  it('one fat-fingered or stale source barely moves it and does not count', () => {
    const good = [src('A', '100'), src('B', '101'), src('C', '99.5'), src('D', '100.5')];
    const clean = consensus(good)!;
    for (const wild of ['1000', '10', '160']) {
      const dirty = consensus([...good, src('X', wild)])!;
      expect(Math.abs(Math.log(dirty.amount.div(clean.amount).toNumber()))).toBeLessThan(0.002);
      expect(dirty.count).toBe(4);
      expect(dirty.outcomes.find((o) => o.source.market === 'X')).toMatchObject({ reason: 'outlier' });
      expect(dirty.outcomes.find((o) => o.source.market === 'X')!.weight.isZero()).toBe(true);
    }
    // A plain mean would have moved by far more.
    expect(Math.log(((100 + 101 + 99.5 + 100.5 + 160) / 5) / 100.25)).toBeGreaterThan(0.1);
  });

  it('sources with an unknown fee are left out when 2 markets with known fees remain, else kept (and their sigma carries the allowance)', () => {
    const left = consensus([src('A', '100'), src('B', '101'), src('U', '110', 0.06, false)])!;
    expect(left.count).toBe(2);
    expect(left.outcomes.find((o) => o.source.market === 'U')).toMatchObject({ reason: 'unknown_fee' });
    const kept = consensus([src('A', '100'), src('U', '101', 0.06, false), src('V', '99', 0.06, false)])!;
    expect(kept.count).toBe(3);
    expect(kept.outcomes.every((o) => o.reason === null)).toBe(true);
    // The same quotes with known fees (smaller sigma) are more certain.
    const known = consensus([src('A', '100'), src('U', '101', 0.05), src('V', '99', 0.05)])!;
    expect(kept.uncertainty).toBeGreaterThan(known.uncertainty);
  });

  it('uncertainty grows with disagreement; one source gets its own sigma', () => {
    expect(consensus([src('A', '100', 0.07)])!.uncertainty).toBeCloseTo(0.07, 12);
    const tight = consensus([src('A', '100'), src('B', '100.5'), src('C', '99.5')])!;
    const loose = consensus([src('A', '100'), src('B', '107'), src('C', '94')])!;
    expect(loose.uncertainty).toBeGreaterThan(tight.uncertainty);
  });
});

describe('item valuation', () => {
  const cny: MarketFees = { deposit: null, sale: null, withdraw: null };
  const rates = new Map([
    ['CNY', m('0.14')],
    ['USD', m('1')],
  ]);
  const model: ValuationModel = {
    marketSigma: () => 0.05,
    tau: 0.01,
    path: (_market, side, currency) => (side === 'ask' ? askPath(cny, currency, rates) : bidPath(cny, currency, rates)),
  };
  const close = (market: string, side: 'ask' | 'bid', price: string): CloseQuote => ({ market, provider: market, side, currency: 'CNY', price: m(price), ageDays: 1 });

  it('excludes a buy order priced above the same market\'s sell listing; two-sided mid is the midpoint', () => {
    const sides = valueSides([close('A', 'ask', '98'), close('A', 'bid', '99'), close('B', 'ask', '98'), close('B', 'bid', '95')], model)!;
    expect(sides.crossed).toEqual(['A']);
    const v = twoSided(sides);
    expect(v).toMatchObject({ isTwoSided: true, askQuoteCount: 2, bidQuoteCount: 1 });
    expect(v.askAmount.toFixed()).toBe('100'); // 98 / 0.98 (unknown deposit)
    expect(v.bidAmount!.toFixed()).toBe('85.678125'); // 95 x 0.925 x 0.975 (6 decimals: exact)
    expect(v.mid.toFixed()).toBe(v.askAmount.plus(v.bidAmount!).div(2).toDecimalPlaces(AMOUNT_DP).toFixed());
  });

  it('one-sided: the ask less the typical half-spread of comparable items; no bid amount, no bid count', () => {
    const sides = valueSides([close('A', 'ask', '98'), close('A', 'bid', '120')], model)!;
    expect(sides.bid).toBeNull();
    const v = oneSided(sides.ask, { h: 0.05, s: 0.03, group: 'type+band', n: 40 });
    expect(v).toMatchObject({ isTwoSided: false, bidAmount: null, askQuoteCount: 1, bidQuoteCount: 0 });
    expect(v.mid.toFixed()).toBe(m('100').times(m(Math.exp(-0.05)).toSignificantDigits(6)).toDecimalPlaces(AMOUNT_DP).toFixed());
    expect(v.uncertainty).toBeCloseTo(Math.round(Math.hypot(sides.ask.uncertainty, 0.03) * 1e6) / 1e6, 12);
  });

  it('no usable sell listing: no valuation', () => {
    expect(valueSides([close('A', 'bid', '95')], model)).toBeNull();
  });
});

describe('comparable items for the half-spread', () => {
  it('item types from market hash names', () => {
    expect(itemType('AK-47 | Redline (Field-Tested)')).toBe('weapon');
    expect(itemType('StatTrak™ M4A4 | Howl (Minimal Wear)')).toBe('weapon');
    expect(itemType('★ Karambit | Doppler (Factory New)')).toBe('knife');
    expect(itemType('★ Sport Gloves | Vice (Field-Tested)')).toBe('gloves');
    expect(itemType('Sticker | Titan (Holo) | Katowice 2014')).toBe('sticker');
    expect(itemType('Recoil Case')).toBe('container');
    expect(itemType('Sealed Graffiti | Lambda (Blood Red)')).toBe('graffiti');
    expect(itemType("'Blueberries' Buckshot | NSWC SEAL")).toBe('agent');
    expect(priceBand(m('1'))).toBe(0);
    expect(priceBand(m('3.2'))).toBe(1);
    expect(priceBand(m('200'))).toBe(4);
  });

  it('same type and band when the group is large enough, else type, band, every item', () => {
    const t = new HalfSpreadTable();
    for (let i = 0; i < MIN_GROUP; i++) t.add('weapon', 4, 0.02 + i * 0.001);
    for (let i = 0; i < MIN_GROUP - 1; i++) t.add('knife', 6, 0.1);
    expect(t.lookup('weapon', 4)).toMatchObject({ group: 'type+band', n: MIN_GROUP });
    expect(t.lookup('weapon', 4).h).toBeCloseTo(0.0295, 12);
    expect(t.lookup('weapon', 5)).toMatchObject({ group: 'type' });
    expect(t.lookup('knife', 4)).toMatchObject({ group: 'band', h: t.lookup('weapon', 4).h });
    expect(t.lookup('knife', 6)).toMatchObject({ group: 'all', n: 2 * MIN_GROUP - 1 });
    expect(new HalfSpreadTable().lookup('knife', 6)).toMatchObject({ group: 'default' });
  });
});
