/**
 * Caller fee profiles (issue 44, point 3): the caller's own rates for markets whose official fee is unknown, so
 * routes through them can be priced. A rate is a fraction of the amount (0.05 = 5 %), 0 <= rate < 1, and fills a
 * slot (deposit, sale, withdraw) only where the market's official slot is null: an official fee always wins. A slot
 * filled so is a one-step chain `x (1 - rate)` in any currency (deposit: the cash paid in is credited less the fee,
 * so buying a price P costs P / (1 - rate)); every leg that used one lists its purposes in `callerFees`.
 *
 * REST syntax (`fee_profile`): `CODE:purpose=rate[,purpose=rate...][;CODE:...]`, e.g.
 * `C5GAME:sale=0.025,withdraw=0.01;BITSKINS:deposit=0`. GraphQL: a list of `CallerFeeInput`.
 */
import { Money } from '../lib/money.js';
import type { Chain, MarketFees } from './chain.js';

/** A fee purpose a caller may give a rate for. */
export type ProfilePurpose = 'deposit' | 'sale' | 'withdraw';
/** The caller's rates by market code, then purpose (fractions, exact decimals). */
export type FeeProfile = ReadonlyMap<string, Partial<Record<ProfilePurpose, Money>>>;

/** At most this many markets in one profile. */
export const MAX_PROFILE_MARKETS = 64;
/** A rate: 0, or a fraction below 1 with at most 6 decimals. */
const RATE = /^0(\.\d{1,6})?$/;
const MARKET = /^[A-Z0-9_]{1,32}$/;
const PURPOSES: readonly ProfilePurpose[] = ['deposit', 'sale', 'withdraw'];

/** One caller fee as GraphQL takes it (`CallerFeeInput`): rates as decimal strings. */
export interface CallerFee {
  marketCode: string;
  deposit?: string | null;
  sale?: string | null;
  withdraw?: string | null;
}

/**
 * Parses the REST syntax (module doc) into GraphQL's entries (rates not checked yet: `profileOf` does), or the list
 * of problems (each a sentence naming the part at fault): a part without `CODE:`, a pair that is not `purpose=rate`
 * with purpose deposit, sale or withdraw, a purpose given twice for a market.
 */
export function parseFeeProfile(text: string): { entries: CallerFee[] } | { problems: string[] } {
  const entries: CallerFee[] = [];
  const problems: string[] = [];
  for (const part of text.split(';')) {
    const colon = part.indexOf(':');
    if (colon < 0) {
      problems.push(`${JSON.stringify(part)} is not CODE:purpose=rate[,purpose=rate]`);
      continue;
    }
    const entry: CallerFee = { marketCode: part.slice(0, colon) };
    for (const pair of part.slice(colon + 1).split(',')) {
      const eq = pair.indexOf('=');
      const purpose = eq < 0 ? pair : pair.slice(0, eq);
      if (eq < 0 || !(PURPOSES as readonly string[]).includes(purpose)) {
        problems.push(`${JSON.stringify(pair)} in ${JSON.stringify(entry.marketCode)} is not purpose=rate with purpose deposit, sale or withdraw`);
        continue;
      }
      const p = purpose as ProfilePurpose;
      if (entry[p] !== undefined) problems.push(`${p} is given twice for ${entry.marketCode}`);
      entry[p] = pair.slice(eq + 1);
    }
    entries.push(entry);
  }
  return problems.length > 0 ? { problems } : { entries };
}

/**
 * Builds a profile from GraphQL's input list (or the parsed REST entries), or lists every problem: a market code
 * that is not A-Z, 0-9, `_` (1-32), a rate outside 0 <= rate < 1 or with more than 6 decimals, a market given
 * twice or with no rate, more than MAX_PROFILE_MARKETS markets.
 */
export function profileOf(entries: readonly CallerFee[]): { profile: FeeProfile } | { problems: string[] } {
  const problems: string[] = [];
  const out = new Map<string, Partial<Record<ProfilePurpose, Money>>>();
  if (entries.length > MAX_PROFILE_MARKETS) problems.push(`lists ${entries.length} markets; at most ${MAX_PROFILE_MARKETS}`);
  for (const e of entries) {
    if (!MARKET.test(e.marketCode)) problems.push(`${JSON.stringify(e.marketCode)} is not a market code (A-Z, 0-9, _; 1-32 characters)`);
    if (out.has(e.marketCode)) problems.push(`${e.marketCode} is given twice`);
    const rates: Partial<Record<ProfilePurpose, Money>> = {};
    for (const p of PURPOSES) {
      const raw = e[p];
      if (raw === undefined || raw === null) continue;
      if (!RATE.test(raw)) problems.push(`${p} of ${e.marketCode}: ${JSON.stringify(raw)} is not a rate from 0 to below 1 with at most 6 decimals`);
      else rates[p] = new Money(raw);
    }
    if (PURPOSES.every((p) => e[p] === undefined || e[p] === null)) problems.push(`${e.marketCode} gives no rate (deposit, sale or withdraw)`);
    out.set(e.marketCode, rates);
  }
  return problems.length > 0 ? { problems } : { profile: out };
}

/** The one-step chain of a caller's rate: `x (1 - rate)`, any currency. */
function callerChain(marketCode: string, purpose: ProfilePurpose, rate: Money): Chain {
  return { id: -1, name: `caller ${purpose} fee of ${marketCode}`, startCurrency: null, steps: [{ kind: 'fee', operator: 'mul', value: new Money(1).minus(rate), currencyCode: null }], exactRule: null };
}

/**
 * `fees` with the profile's rates of `marketCode` in its unknown slots, and the purposes so filled (empty when
 * none: the official fees unchanged).
 */
export function withCallerFees(marketCode: string, fees: MarketFees, profile: FeeProfile | null | undefined): { fees: MarketFees; filled: ProfilePurpose[] } {
  const rates = profile?.get(marketCode);
  if (!rates) return { fees, filled: [] };
  const out: MarketFees = { ...fees };
  const filled: ProfilePurpose[] = [];
  for (const p of PURPOSES) {
    const r = rates[p];
    if (out[p] === null && r !== undefined) {
      out[p] = callerChain(marketCode, p, r);
      filled.push(p);
    }
  }
  return { fees: out, filled };
}
