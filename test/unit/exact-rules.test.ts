import { describe, expect, it } from 'vitest';
import { exactRuleOf, parseExactRule, sameRule, steamSale } from '../../src/fees/exact-rules.js';
import { Money } from '../../src/lib/money.js';
import fees from '../../data/fees.json' with { type: 'json' };

// The bundled rule, as data/fees.json states it (the Steam sale entry).
const stored = parseExactRule((fees as { market: string; purpose?: string; exact_rule?: unknown }[]).find((f) => f.market === 'steam' && f.purpose === 'sale')!.exact_rule);
const rule = exactRuleOf(stored)!;

/** Independent check by brute force over whole cents: the largest proceeds whose total fits the price. */
function byHand(priceCents: number): { proceeds: number; steam: number; game: number } | null {
  let best: { proceeds: number; steam: number; game: number } | null = null;
  for (let r = 1; r <= priceCents; r++) {
    const steam = Math.max(1, Math.floor((r * 5) / 100));
    const game = Math.max(1, Math.floor((r * 10) / 100));
    if (r + steam + game <= priceCents) best = { proceeds: r, steam: steam + (priceCents - (r + steam + game)), game };
  }
  return best;
}

describe("Steam's sale rule: per-component fees rounded down to the cent, at least one cent each", () => {
  it.each([
    ['0.03', '0.01', '0.01', '0.01'],
    ['0.20', '0.18', '0.01', '0.01'],
    ['1.00', '0.88', '0.04', '0.08'],
    ['1000.00', '869.58', '43.47', '86.95'],
  ])('a listing at %s gives the seller %s (Steam fee %s, game fee %s), not price / 1.15', (price, proceeds, steam, game) => {
    const sale = steamSale(new Money(price), rule)!;
    expect(sale.proceeds.toFixed(2)).toBe(proceeds);
    expect(sale.steamFee.toFixed(2)).toBe(steam);
    expect(sale.gameFee.toFixed(2)).toBe(game);
    expect(sale.proceeds.plus(sale.steamFee).plus(sale.gameFee).eq(price)).toBe(true);
  });

  it('differs from the chain approximation where the minimums bite', () => {
    // The REST chain (div 1.15) would pay 0.026... at 0.03 and 0.1739... at 0.20.
    expect(new Money('0.03').div('1.15').toFixed(4)).toBe('0.0261');
    expect(steamSale(new Money('0.03'), rule)!.proceeds.toFixed()).toBe('0.01');
  });

  it('matches a brute-force reading of the rule at every cent from 0.01 to 30.00', () => {
    for (let cents = 1; cents <= 3000; cents++) {
      const sale = steamSale(new Money(cents).div(100), rule);
      const expected = byHand(cents);
      if (expected === null) {
        expect(sale, `${cents} cents`).toBeNull();
        continue;
      }
      expect(sale && [sale.proceeds.times(100).toNumber(), sale.steamFee.times(100).toNumber(), sale.gameFee.times(100).toNumber()], `${cents} cents`).toEqual([
        expected.proceeds,
        expected.steam,
        expected.game,
      ]);
    }
  });

  it('refuses prices Steam cannot list: below 0.03 or not whole cents', () => {
    expect(steamSale(new Money('0.02'), rule)).toBeNull();
    expect(steamSale(new Money('0.125'), rule)).toBeNull();
  });

  it('reads only well-formed rules: a rule without its source or with a bad rate stops the import', () => {
    expect(() => parseExactRule({ ...stored, source: '' })).toThrow(/source/);
    expect(() => parseExactRule({ ...stored, steam_fee_rate: 'five percent' })).toThrow(/steam_fee_rate/);
    expect(exactRuleOf({ kind: 'unknown_rule' })).toBeNull();
    // jsonb reorders keys: the same rule in another order is the same rule.
    expect(sameRule(stored, Object.fromEntries(Object.entries(stored).reverse()))).toBe(true);
    expect(sameRule(stored, { ...stored, game_fee_rate: '0.09' })).toBe(false);
  });
});
