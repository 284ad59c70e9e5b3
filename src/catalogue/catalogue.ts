/**
 * Read side of the catalogue: websites, official currencies, fee schedules and their chains
 * (spec: WebsiteOut, CurrencyOut, FeeScheduleOut). Batch functions take many keys and run one
 * query each, so DataLoaders in the GraphQL context can call them without N+1 queries.
 */
import type { Database } from '../db/client.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { toMoney, type Money } from '../lib/money.js';
import { byCodePoint } from '../lib/order.js';

/** A marketplace (spec: WebsiteOut). */
export interface Website {
  code: string;
  name: string;
  url: string | null;
  category: string;
  subCategory: string | null;
  isDeprecated: boolean;
}

/** A currency (spec: CurrencyOut). `usdRate`: USD per one unit. */
export interface Currency {
  id: number;
  code: string;
  name: string | null;
  kind: string;
  usdRate: Money;
  ownerUserId: string | null;
  isOfficial: boolean;
  refCount: number;
  isDeleted: boolean;
}

/** One fee schedule slot: the official chain id of a website for a purpose. */
export interface FeeSlot {
  websiteCode: string;
  purpose: 'deposit' | 'sale' | 'withdraw';
  chainId: number;
  /** The first day this version of the slot is in force. */
  validFrom: Date;
}

/** A calculation chain without its steps (steps load separately). */
export interface Chain {
  id: number;
  name: string | null;
  startCurrencyCode: string | null;
}

/** A chain step in execution order; exactly one of the operator ids is set, as `kind` says. */
export interface ChainStep {
  chainId: number;
  position: number;
  kind: 'fee' | 'convert' | 'convert_operator_group';
  feeOperatorId: number | null;
  convertOperatorId: number | null;
  groupId: number | null;
}

/** A fee operator (spec: PublicFeeOperatorOut). */
export interface FeeOperator {
  id: number;
  name: string;
  operator: 'add' | 'sub' | 'mul' | 'div';
  value: Money;
  currencyCode: string | null;
}

/** A convert operator (spec: PublicConvertOperatorOut); `rate` in target units per source unit. */
export interface ConvertOperator {
  id: number;
  name: string;
  fromCurrencyId: number;
  toCurrencyId: number;
  mode: 'auto' | 'fixed';
  rate: Money | null;
}

/** A convert operator group (spec: PublicConvertOperatorGroupOut) with its member ids in order. */
export interface ConvertOperatorGroup {
  id: number;
  name: string;
  rule: 'min' | 'max' | 'avg';
  memberIds: number[];
}

function websiteOf(w: { code: string; name: string; url: string | null; category: string; subCategory: string | null; isDeprecated: boolean }): Website {
  return { code: w.code, name: w.name, url: w.url, category: w.category, subCategory: w.subCategory, isDeprecated: w.isDeprecated };
}

/** Websites ordered by code (code-point order); deprecated ones only when asked. */
export async function listWebsites(prisma: PrismaClient, includeDeprecated: boolean): Promise<Website[]> {
  const rows = await prisma.website.findMany({ where: includeDeprecated ? {} : { isDeprecated: false } });
  return rows.map(websiteOf).sort((a, b) => byCodePoint(a.code, b.code));
}

/** Websites by code, in key order; null for unknown codes. */
export async function websitesByCode(prisma: PrismaClient, codes: readonly string[]): Promise<(Website | null)[]> {
  const rows = await prisma.website.findMany({ where: { code: { in: [...codes] } } });
  const map = new Map(rows.map((r) => [r.code, websiteOf(r)]));
  return codes.map((c) => map.get(c) ?? null);
}

const CURRENCY_SQL = `
SELECT c.id, c.code, c.name, c.kind, c.usd_rate::text AS usd_rate, c.owner_user_id, c.is_official, c.is_deleted,
  (SELECT count(*)::int FROM convert_operator o WHERE o.from_currency_id = c.id OR o.to_currency_id = c.id) AS ref_count
FROM currency c`;

interface CurrencyRow {
  id: number;
  code: string;
  name: string | null;
  kind: string;
  usd_rate: string;
  owner_user_id: string | null;
  is_official: boolean;
  is_deleted: boolean;
  ref_count: number;
}

function currencyOf(r: CurrencyRow): Currency {
  return {
    id: r.id,
    code: r.code,
    name: r.name,
    kind: r.kind,
    usdRate: toMoney(r.usd_rate),
    ownerUserId: r.owner_user_id,
    isOfficial: r.is_official,
    refCount: r.ref_count,
    isDeleted: r.is_deleted,
  };
}

/** One currency's USD rate as the currency table holds it (spec: CurrencyOut.usd_rate, RateUsedOut). */
export interface CurrencyRate {
  id: number;
  code: string;
  /**
   * US dollars per one unit of the currency, exact: a decimal.js value parsed from the column's text
   * (DECIMAL(38,18)), never a float. Not checked: a caller that needs a usable rate skips those not above 0.
   */
  usdRate: Money;
  /** The UTC day (YYYY-MM-DD) the rate was published by its source; null when the source gave none. */
  rateDate: string | null;
  /** True for the catalogue's currencies (ECB set and ISO fiat codes); false for a user's own currency. */
  isOfficial: boolean;
}

const RATES_SQL = `SELECT id, code, usd_rate::text AS usd_rate, to_char(rate_date, 'YYYY-MM-DD') AS rate_date, is_official FROM currency WHERE NOT is_deleted`;

/**
 * The USD rates of every currency not deleted (with `officialOnly`, of the official ones alone), in no particular
 * order: one statement on the raw driver (`Database.query`, counted in `queryCount`). The one read of rates for
 * conversions: the item pages, the fee book of the valuation and the routes (`loadFeeBook`), the collectors'
 * conversion into market currencies and the rates collector's comparison with what it fetched.
 *
 * As of: the table holds one rate per currency, the latest written by the rates collector (collectors/rates.ts)
 * or the catalogue import, dated by `rateDate`; this returns those current values. There is no history of rates, so
 * a caller computing for a past day gets today's rates. Throws what the driver throws when the table cannot be read.
 */
export async function readCurrencyRates(db: Pick<Database, 'query'>, opts: { officialOnly?: boolean } = {}): Promise<CurrencyRate[]> {
  const rows = await db.query<{ id: number; code: string; usd_rate: string; rate_date: string | null; is_official: boolean }>(opts.officialOnly ? `${RATES_SQL} AND is_official` : RATES_SQL);
  return rows.map((r) => ({ id: r.id, code: r.code, usdRate: toMoney(r.usd_rate), rateDate: r.rate_date, isOfficial: r.is_official }));
}

/** Official, not deleted currencies ordered by code; `search` = case-insensitive substring of the code. */
export async function listCurrencies(prisma: PrismaClient, search: string | null): Promise<Currency[]> {
  const rows = await prisma.$queryRawUnsafe<CurrencyRow[]>(
    `${CURRENCY_SQL} WHERE c.is_official AND NOT c.is_deleted AND ($1::text IS NULL OR strpos(lower(c.code), lower($1::text)) > 0)`,
    search,
  );
  return rows.map(currencyOf).sort((a, b) => byCodePoint(a.code, b.code));
}

/** Currencies by id in key order (any currency, for chain steps); null for unknown ids. */
export async function currenciesById(prisma: PrismaClient, ids: readonly number[]): Promise<(Currency | null)[]> {
  const rows = await prisma.$queryRawUnsafe<CurrencyRow[]>(`${CURRENCY_SQL} WHERE c.id = ANY($1::int[])`, [...ids]);
  const map = new Map(rows.map((r) => [r.id, currencyOf(r)]));
  return ids.map((id) => map.get(id) ?? null);
}

/**
 * The fee schedule slots in force on a day, per key `websiteCode + '\u0000' + YYYY-MM-DD`, in key order: for
 * each purpose the version with the latest `valid_from` on or before that day (none = the slot is null).
 */
export async function slotsByWebsiteAndDay(prisma: PrismaClient, keys: readonly string[]): Promise<FeeSlot[][]> {
  const pairs = keys.map((k) => k.split('\u0000') as [string, string]);
  const rows = await prisma.$queryRawUnsafe<{ website_code: string; day: string; purpose: FeeSlot['purpose']; chain_id: number; valid_from: string }[]>(
    `SELECT DISTINCT ON (k.website_code, k.day, s.purpose) k.website_code, to_char(k.day, 'YYYY-MM-DD') AS day, s.purpose::text AS purpose, s.chain_id,
            (s.valid_from::text || 'T00:00:00Z') AS valid_from
       FROM unnest($1::text[], $2::date[]) AS k(website_code, day)
       JOIN fee_schedule_slot s ON s.website_code = k.website_code AND s.valid_from <= k.day
      ORDER BY k.website_code, k.day, s.purpose, s.valid_from DESC`,
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  );
  return pairs.map(([code, day]) =>
    rows
      .filter((r) => r.website_code === code && r.day === day)
      .map((r) => ({ websiteCode: code, purpose: r.purpose, chainId: Number(r.chain_id), validFrom: new Date(r.valid_from) })),
  );
}

/** Chains by id in key order. */
export async function chainsById(prisma: PrismaClient, ids: readonly number[]): Promise<(Chain | null)[]> {
  const rows = await prisma.calculationChain.findMany({ where: { id: { in: [...ids] } } });
  const map = new Map(rows.map((r) => [r.id, { id: r.id, name: r.name, startCurrencyCode: r.startCurrencyCode }]));
  return ids.map((id) => map.get(id) ?? null);
}

/** Steps of each chain in execution order. */
export async function stepsByChain(prisma: PrismaClient, chainIds: readonly number[]): Promise<ChainStep[][]> {
  const rows = await prisma.chainStep.findMany({ where: { chainId: { in: [...chainIds] } }, orderBy: [{ chainId: 'asc' }, { position: 'asc' }] });
  return chainIds.map((id) => rows.filter((r) => r.chainId === id));
}

/** Fee operators by id in key order. */
export async function feeOperatorsById(prisma: PrismaClient, ids: readonly number[]): Promise<(FeeOperator | null)[]> {
  const rows = await prisma.$queryRawUnsafe<{ id: number; name: string; operator: FeeOperator['operator']; value: string; currency_code: string | null }[]>(
    `SELECT id, name, operator::text AS operator, value::text AS value, currency_code FROM fee_operator WHERE id = ANY($1::int[])`,
    [...ids],
  );
  const map = new Map(rows.map((r) => [r.id, { id: r.id, name: r.name, operator: r.operator, value: toMoney(r.value), currencyCode: r.currency_code }]));
  return ids.map((id) => map.get(id) ?? null);
}

/** Convert operators by id in key order. */
export async function convertOperatorsById(prisma: PrismaClient, ids: readonly number[]): Promise<(ConvertOperator | null)[]> {
  const rows = await prisma.$queryRawUnsafe<{ id: number; name: string; from_currency_id: number; to_currency_id: number; mode: 'auto' | 'fixed'; rate: string | null }[]>(
    `SELECT id, name, from_currency_id, to_currency_id, mode::text AS mode, rate::text AS rate FROM convert_operator WHERE id = ANY($1::int[])`,
    [...ids],
  );
  const map = new Map(
    rows.map((r) => [r.id, { id: r.id, name: r.name, fromCurrencyId: r.from_currency_id, toCurrencyId: r.to_currency_id, mode: r.mode, rate: r.rate === null ? null : toMoney(r.rate) }]),
  );
  return ids.map((id) => map.get(id) ?? null);
}

/** Convert operator groups by id in key order, with member ids in position order. */
export async function groupsById(prisma: PrismaClient, ids: readonly number[]): Promise<(ConvertOperatorGroup | null)[]> {
  const rows = await prisma.convertOperatorGroup.findMany({ where: { id: { in: [...ids] } }, include: { members: { orderBy: { position: 'asc' } } } });
  const map = new Map(rows.map((r) => [r.id, { id: r.id, name: r.name, rule: r.rule, memberIds: r.members.map((m) => m.convertOperatorId) }]));
  return ids.map((id) => map.get(id) ?? null);
}
