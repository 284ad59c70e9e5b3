/**
 * Exact fee rules: what a marketplace really computes where the spec's four fee operators only
 * approximate it (issue: fees applied, point 2). A rule is data (data/fees.json `exact_rule`, stored in
 * `calculation_chain.exact_rule`) and replaces its chain's fee steps in GraphQL `afterFees`; the REST fee
 * schedule keeps showing the chain as the spec defines it (docs/fees.md).
 *
 * One rule kind today:
 * - `steam_market_fee` (Steam Community Market sale; sources in data/fees.json): a listing the buyer pays
 *   P for gives the seller the largest proceeds R (in units of `unit`, 0.01) with
 *   R + max(min, floor(R x steam_fee_rate)) + max(min, floor(R x game_fee_rate)) <= P,
 *   each fee rounded down to the unit; a unit left over (a P no R reaches exactly) goes to Steam's fee.
 *   So the seller's share is not P / 1.15: at P = 0.03 the seller gets 0.01, at 0.20 gets 0.18, at
 *   1,000.00 gets 869.58.
 */
import { z } from 'zod';
import { Money } from '../lib/money.js';

const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string');

/** Steam's sale rule (see module doc); rates are fractions, `minimumFee` and `unit` are amounts in the chain's currency. */
export interface SteamMarketFeeRule {
  kind: 'steam_market_fee';
  steamFeeRate: Money;
  gameFeeRate: Money;
  minimumFee: Money;
  unit: Money;
}

/** Every exact rule kind. */
export type ExactRule = SteamMarketFeeRule;

const steamRuleSchema = z.object({
  kind: z.literal('steam_market_fee'),
  steam_fee_rate: decimalString,
  game_fee_rate: decimalString,
  minimum_fee: decimalString,
  unit: decimalString.refine((u) => new Money(u).gt(0), 'must be positive'),
  description: z.string().optional(),
  source: z.string().min(1, 'is required: the public source of the rule'),
});

/** The stored (data/fees.json) form of a rule, as written to `calculation_chain.exact_rule`. */
export type ExactRuleJson = z.infer<typeof steamRuleSchema>;

/** Checks a rule as found in data/fees.json; throws an Error naming the problem (the import stops). */
export function parseExactRule(raw: unknown): ExactRuleJson {
  const parsed = steamRuleSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`fees.json exact_rule: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'rule'} ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** The rule a stored value holds, or null (no rule, or a value this version does not know: the chain's steps apply). */
export function exactRuleOf(stored: unknown): ExactRule | null {
  if (stored === null || stored === undefined) return null;
  const parsed = steamRuleSchema.safeParse(stored);
  if (!parsed.success) return null;
  const r = parsed.data;
  return { kind: 'steam_market_fee', steamFeeRate: new Money(r.steam_fee_rate), gameFeeRate: new Money(r.game_fee_rate), minimumFee: new Money(r.minimum_fee), unit: new Money(r.unit) };
}

/** True when two stored rules are the same (key order ignored: PostgreSQL's jsonb reorders keys). */
export function sameRule(a: unknown, b: unknown): boolean {
  return canonical(a ?? null) === canonical(b ?? null);
}

/** A stored rule (or any JSON value) as text with sorted keys, for comparisons. */
export function canonicalRule(v: unknown): string {
  return canonical(v);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** One Steam sale, in the chain's currency: the buyer's price split into proceeds and the two fees. */
export interface SteamSale {
  /** What the buyer pays (the listing price). */
  price: Money;
  /** What the seller receives. */
  proceeds: Money;
  /** Steam's fee, including any unit no proceeds reach exactly. */
  steamFee: Money;
  /** The game's (publisher's) fee. */
  gameFee: Money;
}

/** The two fees, in units, of proceeds of `r` units: each rate times r rounded down, at least `minUnits`. */
function feeUnits(r: bigint, rule: SteamMarketFeeRule, minUnits: bigint): { steam: bigint; game: bigint } {
  const fee = (rate: Money) => {
    const f = BigInt(rate.times(r.toString()).floor().toFixed());
    return f > minUnits ? f : minUnits;
  };
  return { steam: fee(rule.steamFeeRate), game: fee(rule.gameFeeRate) };
}

/**
 * Splits a Steam listing price into the seller's proceeds and the fees (see module doc). Returns null
 * when the price is below the smallest listing (R = 1 unit: 0.03 with the bundled rule) or not a whole
 * number of units. Exact integer arithmetic in units; no float anywhere.
 */
export function steamSale(price: Money, rule: SteamMarketFeeRule): SteamSale | null {
  const unitsDec = price.div(rule.unit);
  if (!unitsDec.isInteger() || unitsDec.lt(1)) return null;
  const p = BigInt(unitsDec.toFixed());
  const minUnits = BigInt(rule.minimumFee.div(rule.unit).ceil().toFixed());
  const total = (r: bigint) => {
    const f = feeUnits(r, rule, minUnits);
    return { sum: r + f.steam + f.game, ...f };
  };
  // The total is non-decreasing in R: start from the proportional estimate and step to the largest R that fits.
  let r = BigInt(new Money(p.toString()).div(new Money(1).plus(rule.steamFeeRate).plus(rule.gameFeeRate)).floor().toFixed());
  if (r < 1n) r = 1n;
  while (r > 1n && total(r).sum > p) r -= 1n;
  while (total(r + 1n).sum <= p) r += 1n;
  const t = total(r);
  if (t.sum > p) return null;
  const u = (n: bigint) => rule.unit.times(n.toString());
  return { price, proceeds: u(r), steamFee: u(t.steam + (p - t.sum)), gameFee: u(t.game) };
}
