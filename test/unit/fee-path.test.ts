/** Fee paths: each step kind on a worked example, the ask (inverted deposit) and bid paths, unknown fees. */
import { describe, expect, it } from 'vitest';
import { Money } from '../../src/lib/money.js';
import { allowanceFactor, allowanceSigma, askPath, bidPath, pathAmount } from '../../src/valuation/fee-path.js';
import { applyStep, ChainError, runChain, type Chain, type Conversion, type MarketFees } from '../../src/fees/chain.js';

const m = (s: string) => new Money(s);
// USD per unit: CNY 0.14, EUR 1.1 (round numbers, so every example can be checked by hand).
const rates = new Map([
  ['USD', m('1')],
  ['CNY', m('0.14')],
  ['EUR', m('1.1')],
]);
const start = (amount = '100', currency = 'CNY') => ({ a: m(amount), b: m('0'), currency });
const value = (x: { a: Money; b: Money; currency: string }) => `${x.a.toFixed()} ${x.currency}`;
const conv = (from: string, to: string, mode: 'auto' | 'fixed', rate: string | null = null): Conversion => ({ from, to, mode, rate: rate === null ? null : m(rate) });
const chain = (steps: Chain['steps'], startCurrency: string | null = 'CNY'): Chain => ({ id: 1, name: 't', startCurrency, steps });
const none: MarketFees = { deposit: null, sale: null, withdraw: null };

describe('one step of each kind on 100 CNY', () => {
  it('fee add / sub (operand in its own currency) / mul / div', () => {
    expect(applyStep(start(), { kind: 'fee', operator: 'add', value: m('2'), currencyCode: 'CNY' }, rates).b.toFixed()).toBe('2');
    expect(applyStep(start(), { kind: 'fee', operator: 'sub', value: m('2'), currencyCode: 'CNY' }, rates).b.toFixed()).toBe('-2');
    // 1 USD taken from a CNY amount: 1 / 0.14 CNY.
    expect(applyStep(start(), { kind: 'fee', operator: 'sub', value: m('1'), currencyCode: 'USD' }, rates).b.toFixed(10)).toBe('-7.1428571429');
    expect(value(applyStep(start(), { kind: 'fee', operator: 'mul', value: m('0.975'), currencyCode: null }, rates))).toBe('97.5 CNY');
    expect(applyStep(start(), { kind: 'fee', operator: 'div', value: m('1.15'), currencyCode: null }, rates).a.toFixed(6)).toBe('86.956522');
    expect(() => applyStep(start(), { kind: 'fee', operator: 'div', value: m('0'), currencyCode: null }, rates)).toThrow(ChainError);
  });

  it('convert auto (through both USD rates) and fixed (times its rate)', () => {
    expect(value(applyStep(start(), { kind: 'convert', convert: conv('CNY', 'USD', 'auto') }, rates))).toBe('14 USD');
    expect(value(applyStep(start(), { kind: 'convert', convert: conv('CNY', 'EUR', 'auto') }, rates))).toBe(`${m('14').div('1.1').toFixed()} EUR`);
    expect(value(applyStep(start(), { kind: 'convert', convert: conv('CNY', 'USD', 'fixed', '0.15') }, rates))).toBe('15 USD');
    // A convert from another currency does not apply.
    expect(() => applyStep(start(), { kind: 'convert', convert: conv('EUR', 'USD', 'auto') }, rates)).toThrow(ChainError);
  });

  it('convert group: min, max and avg of the members that apply', () => {
    const members = [conv('CNY', 'USD', 'auto'), conv('CNY', 'USD', 'fixed', '0.15'), conv('EUR', 'USD', 'fixed', '9')];
    const group = (rule: 'min' | 'max' | 'avg') => value(applyStep(start(), { kind: 'convert_operator_group', rule, members }, rates));
    expect(group('min')).toBe('14 USD');
    expect(group('max')).toBe('15 USD');
    expect(group('avg')).toBe('14.5 USD');
    expect(() => applyStep(start(), { kind: 'convert_operator_group', rule: 'min', members: [members[2]!] }, rates)).toThrow(ChainError);
  });

  it('a whole chain runs in order, converting into its start currency first', () => {
    const c = chain([
      { kind: 'fee', operator: 'mul', value: m('0.975'), currencyCode: null },
      { kind: 'fee', operator: 'sub', value: m('1'), currencyCode: 'CNY' },
      { kind: 'convert', convert: conv('CNY', 'USD', 'auto') },
    ]);
    expect(runChain(c, m('200'), 'CNY', rates)).toEqual({ amount: m('27.16'), currency: 'USD' }); // (200*0.975-1)*0.14
    // A price in EUR enters a CNY chain at official rates: 10 EUR = 11 / 0.14 CNY.
    expect(runChain(c, m('10'), 'EUR', rates).amount.toFixed(10)).toBe(m('11').div('0.14').times('0.975').minus(1).times('0.14').toFixed(10));
  });
});

describe('money paths into CNY', () => {
  it('ask: the deposit chain inverted at the price (cash needed so that the credited balance pays the price)', () => {
    // Deposit: 3 % fee plus 2 CNY per deposit, credited in USD.
    const deposit = chain([
      { kind: 'fee', operator: 'mul', value: m('0.97'), currencyCode: null },
      { kind: 'fee', operator: 'sub', value: m('2'), currencyCode: 'CNY' },
      { kind: 'convert', convert: conv('CNY', 'USD', 'auto') },
    ]);
    const p = askPath({ ...none, deposit }, 'USD', rates);
    expect(p.unknown).toEqual([]);
    // A 14 USD listing needs 100 CNY credited: (100 + 2) / 0.97 CNY of cash.
    const cash = pathAmount(p, m('14'));
    expect(cash.toFixed(10)).toBe(m('102').div('0.97').toFixed(10));
    expect(runChain(deposit, cash, 'CNY', rates).amount.toFixed(12)).toBe('14.000000000000');
  });

  it('bid: sale then withdraw, each in its start currency, then CNY (BUFF163: 0.975 x 0.99)', () => {
    const sale = chain([{ kind: 'fee', operator: 'mul', value: m('0.975'), currencyCode: null }, { kind: 'convert', convert: conv('CNY', 'USD', 'auto') }]);
    const withdraw = chain([{ kind: 'fee', operator: 'mul', value: m('0.99'), currencyCode: null }, { kind: 'convert', convert: conv('CNY', 'USD', 'auto') }]);
    const p = bidPath({ deposit: null, sale, withdraw }, 'CNY', rates);
    expect(p).toMatchObject({ unknown: [], allowanceSigma: 0 });
    expect(p.a.toFixed()).toBe('0.96525');
    expect(pathAmount(p, m('198.19')).toFixed()).toBe('191.3028975');
  });

  it('an unknown (null) slot is never free: its allowance factor applies and widens the source', () => {
    expect(allowanceFactor('deposit').toFixed()).toBe('0.98');
    expect(allowanceFactor('sale').toFixed()).toBe('0.925');
    expect(allowanceFactor('withdraw').toFixed()).toBe('0.975');
    const ask = askPath(none, 'CNY', rates);
    expect(ask).toMatchObject({ unknown: ['deposit'] });
    expect(pathAmount(ask, m('98')).toDecimalPlaces(20).toFixed()).toBe('100'); // 98 / 0.98
    expect(ask.allowanceSigma).toBeCloseTo(-Math.log(0.96) / Math.sqrt(12), 12);
    const bid = bidPath(none, 'CNY', rates);
    expect(bid.unknown).toEqual(['sale', 'withdraw']);
    expect(pathAmount(bid, m('100')).toFixed()).toBe('90.1875'); // 100 x 0.925 x 0.975
    expect(bid.allowanceSigma).toBeCloseTo(Math.hypot(allowanceSigma('sale'), allowanceSigma('withdraw')), 12);
    expect(bid.allowanceSigma).toBeGreaterThan(allowanceSigma('sale'));
  });
});
