/**
 * Loads the marketplace catalogue, the official currencies and the official fee chains from the
 * bundled data files (data/websites.json, data/currencies.json, data/fees.json) idempotently:
 * rows are upserted by natural keys, so a second run changes nothing.
 *
 * Rules (README "Data choices"):
 * - Currencies: the ECB set of currencies.json (usd_rate = usd_per_unit), plus the fiat codes only the
 *   csgotrader alternate set has (RUB, KZT, UAH, ...). BGN and HRK (replaced by the euro) and crypto
 *   (BTC, ETH, FET) are left out.
 * - Fee chains: one official chain per (website, purpose) that fees.json gives a purpose for; the first
 *   entry wins when several exist (BitSkins: the public-listing maximum 10%, not the private 2.5%).
 *   Schedules are versioned by day (`fee_schedule_slot.valid_from`): a changed fact adds a version from its
 *   `effective_from` (else the import's day) and the old version stays (see importSlot).
 *   A chain starts in the website's currency and, when that is not the home currency USD, ends with an
 *   `auto` convert step into USD (spec: ConfigOut.home_currency). Purposes with no entry stay null:
 *   unknown is never published as free.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Prisma, type PrismaClient } from '../generated/prisma/client.js';
import { canonicalRule, parseExactRule } from '../fees/exact-rules.js';
import { formatDate } from '../lib/time.js';
import { toMoney } from '../lib/money.js';

/** The home currency official chains convert into (spec: ConfigOut). */
export const HOME_CURRENCY = 'USD';

interface WebsiteRow {
  code: string;
  name: string;
  url: string | null;
  category: string;
  subCategory: string | null;
  is_deprecated: boolean;
  currency: string;
  fees_market: string | null;
}
interface FeeFact {
  market: string;
  name: string;
  purpose?: 'deposit' | 'sale' | 'withdraw';
  steps: { kind: 'fee'; operator: 'add' | 'sub' | 'mul' | 'div'; value: string; currency_code?: string }[];
  /** The marketplace's exact rule where the steps approximate it (src/fees/exact-rules.ts). */
  exact_rule?: unknown;
  /** The day this fact took effect (YYYY-MM-DD); a changed fact without it takes effect on the import's day. */
  effective_from?: string;
}
interface CurrencyFile {
  /** The day of the primary set's rates (YYYY-MM-DD). */
  date?: string;
  currencies: { code: string; name?: string; usd_per_unit: string }[];
  alternates: { date?: string; currencies: { code: string; usd_per_unit: string }[] }[];
}

const NOT_CURRENT_OR_NOT_FIAT = new Set(['BGN', 'HRK', 'BTC', 'ETH', 'FET']);

/** Counts of catalogue rows written (inserted or changed). */
export interface CatalogueImportResult {
  websites: number;
  currencies: number;
  chains: number;
}

/** Reads the three catalogue files from `dataDir` and upserts them; throws on a malformed file. */
export async function importCatalogue(prisma: PrismaClient, dataDir: string): Promise<CatalogueImportResult> {
  const websites = (JSON.parse(fs.readFileSync(path.join(dataDir, 'websites.json'), 'utf8')) as { websites: WebsiteRow[] }).websites;
  const currencyFile = JSON.parse(fs.readFileSync(path.join(dataDir, 'currencies.json'), 'utf8')) as CurrencyFile;
  const fees = JSON.parse(fs.readFileSync(path.join(dataDir, 'fees.json'), 'utf8')) as FeeFact[];

  const day = (d: string | undefined) => (d && /^\d{4}-\d{2}-\d{2}$/.test(d) ? new Date(`${d}T00:00:00Z`) : null);
  const currencyRows = new Map<string, { name: string | null; usdRate: string; rateDate: Date | null }>();
  for (const c of currencyFile.currencies) currencyRows.set(c.code, { name: c.name ?? null, usdRate: c.usd_per_unit, rateDate: day(currencyFile.date) });
  const alternate = currencyFile.alternates[0];
  for (const c of alternate?.currencies ?? []) {
    if (!currencyRows.has(c.code) && !NOT_CURRENT_OR_NOT_FIAT.has(c.code)) currencyRows.set(c.code, { name: null, usdRate: c.usd_per_unit, rateDate: day(alternate?.date) });
  }
  let currencies = 0;
  for (const code of [...currencyRows.keys()].sort()) {
    const row = currencyRows.get(code)!;
    const usdRate = toMoney(row.usdRate);
    const existing = await prisma.currency.findUnique({ where: { code } });
    const sameDate = (existing?.rateDate?.getTime() ?? null) === (row.rateDate?.getTime() ?? null);
    if (existing && existing.name === row.name && toMoney(existing.usdRate).eq(usdRate) && sameDate && existing.kind === 'fiat' && existing.isOfficial && !existing.isDeleted) continue;
    await prisma.currency.upsert({
      where: { code },
      create: { code, name: row.name, kind: 'fiat', usdRate: usdRate.toFixed(), rateDate: row.rateDate, isOfficial: true },
      update: { name: row.name, kind: 'fiat', usdRate: usdRate.toFixed(), rateDate: row.rateDate, isOfficial: true, isDeleted: false },
    });
    currencies += 1;
  }

  let websiteWrites = 0;
  for (const w of websites) {
    const data = {
      name: w.name,
      url: w.url,
      category: w.category,
      subCategory: w.subCategory,
      isDeprecated: w.is_deprecated,
      currencyCode: w.currency,
    };
    const existing = await prisma.website.findUnique({ where: { code: w.code } });
    if (existing && Object.entries(data).every(([k, v]) => existing[k as keyof typeof existing] === v)) continue;
    await prisma.website.upsert({ where: { code: w.code }, create: { code: w.code, ...data }, update: data });
    websiteWrites += 1;
  }

  const currencyIds = new Map((await prisma.currency.findMany({ select: { id: true, code: true } })).map((c) => [c.code, c.id]));
  const now = new Date();
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  let chains = 0;
  for (const w of websites) {
    for (const purpose of ['deposit', 'sale', 'withdraw'] as const) {
      const fact = fees.find((f) => f.market === w.fees_market && f.purpose === purpose);
      if (!fact) continue;
      const changed = await importSlot(prisma, w, purpose, fact, currencyIds, today);
      if (changed) chains += 1;
    }
  }
  return { websites: websiteWrites, currencies, chains };
}

/** A chain as the import compares it: name, start currency, exact rule and steps, as one string. */
function chainSignature(c: { name: string | null; start: string | null; rule: unknown; steps: string[] }): string {
  return JSON.stringify([c.name, c.start, c.rule === null || c.rule === undefined ? null : canonicalRule(c.rule), c.steps]);
}

/** The chain a fee fact describes for a website (see the module doc). */
function plannedChain(website: WebsiteRow, fact: FeeFact): string {
  const steps = fact.steps.map((s) => {
    const currencyCode = s.operator === 'add' || s.operator === 'sub' ? (s.currency_code ?? website.currency) : null;
    return `fee:${s.operator}:${toMoney(s.value).toFixed()}:${currencyCode}`;
  });
  if (website.currency !== HOME_CURRENCY) steps.push(`convert:auto:${website.currency}:${HOME_CURRENCY}`);
  const rule = fact.exact_rule === undefined ? null : parseExactRule(fact.exact_rule);
  return chainSignature({ name: fact.name, start: website.currency, rule, steps });
}

/** The stored chain `chainId` in the form of plannedChain. */
async function storedChain(prisma: PrismaClient, chainId: number): Promise<string> {
  const chain = await prisma.calculationChain.findUniqueOrThrow({
    where: { id: chainId },
    include: { steps: { orderBy: { position: 'asc' }, include: { feeOperator: true, convertOperator: { include: { fromCurrency: true, toCurrency: true } } } } },
  });
  const steps = chain.steps.map((s) =>
    s.kind === 'fee' && s.feeOperator
      ? `fee:${s.feeOperator.operator}:${toMoney(s.feeOperator.value).toFixed()}:${s.feeOperator.currencyCode}`
      : s.kind === 'convert' && s.convertOperator
        ? `convert:${s.convertOperator.mode}:${s.convertOperator.fromCurrency.code}:${s.convertOperator.toCurrency.code}`
        : `${s.kind}:${s.groupId}`,
  );
  return chainSignature({ name: chain.name, start: chain.startCurrencyCode, rule: chain.exactRule, steps });
}

/**
 * Imports one slot's fee fact as a version of the website's schedule (docs/fees.md, fee schedules through
 * time): the first version is valid from 1970-01-01; a fact that differs from the version in force last
 * adds a version valid from the fact's `effective_from` (else the import's UTC day), and the older one stays;
 * a change dated on or before the last version's day corrects that version in place. Returns true when
 * anything was written.
 */
async function importSlot(
  prisma: PrismaClient,
  website: WebsiteRow,
  purpose: 'deposit' | 'sale' | 'withdraw',
  fact: FeeFact,
  currencyIds: Map<string, number>,
  today: Date,
): Promise<boolean> {
  const baseKey = `official:${website.code}:${purpose}`;
  const planned = plannedChain(website, fact); // throws for a malformed rule before anything is written
  const latest = await prisma.feeScheduleSlot.findFirst({ where: { websiteCode: website.code, purpose }, orderBy: { validFrom: 'desc' }, include: { chain: true } });
  if (!latest) {
    const chainId = await writeChain(prisma, baseKey, website, fact, currencyIds);
    await prisma.feeScheduleSlot.create({ data: { websiteCode: website.code, purpose, validFrom: FIRST_VERSION, chainId } });
    return true;
  }
  if ((await storedChain(prisma, latest.chainId)) === planned) return false;
  const from = effectiveFrom(fact) ?? today;
  if (from.getTime() <= latest.validFrom.getTime()) {
    await writeChain(prisma, latest.chain.key, website, fact, currencyIds);
    return true;
  }
  const chainId = await writeChain(prisma, `${baseKey}@${formatDate(from)}`, website, fact, currencyIds);
  await prisma.feeScheduleSlot.create({ data: { websiteCode: website.code, purpose, validFrom: from, chainId } });
  return true;
}

/** The day the first version of every slot is valid from (the first known schedule stands for earlier days too). */
const FIRST_VERSION = new Date('1970-01-01T00:00:00Z');

/** A fact's `effective_from` day (YYYY-MM-DD), or null when it has none. Throws for a malformed date. */
function effectiveFrom(fact: FeeFact): Date | null {
  if (fact.effective_from === undefined) return null;
  const d = /^\d{4}-\d{2}-\d{2}$/.test(fact.effective_from) ? new Date(`${fact.effective_from}T00:00:00Z`) : null;
  if (!d || Number.isNaN(d.getTime()) || formatDate(d) !== fact.effective_from) throw new Error(`fees.json ${fact.market} ${fact.purpose}: effective_from must be a date YYYY-MM-DD, got ${fact.effective_from}`);
  return d;
}

/** Writes chain `key` (created, or updated in place with its operators and steps) as `fact` describes it; returns its id. */
async function writeChain(prisma: PrismaClient, key: string, website: WebsiteRow, fact: FeeFact, currencyIds: Map<string, number>): Promise<number> {
  const name = fact.name;
  const exactRule = fact.exact_rule === undefined ? null : parseExactRule(fact.exact_rule);
  const ruleJson = exactRule === null ? Prisma.DbNull : (exactRule as unknown as Prisma.InputJsonValue);
  const chain = await prisma.calculationChain.upsert({
    where: { key },
    create: { key, name, startCurrencyCode: website.currency, isOfficial: true, exactRule: ruleJson },
    update: { name, startCurrencyCode: website.currency, isOfficial: true, exactRule: ruleJson },
  });
  const steps: { kind: 'fee' | 'convert'; feeOperatorId?: number; convertOperatorId?: number }[] = [];
  for (const [i, s] of fact.steps.entries()) {
    const opKey = `${key}#${i}`;
    const value = toMoney(s.value);
    const currencyCode = s.operator === 'add' || s.operator === 'sub' ? (s.currency_code ?? website.currency) : null;
    const opName = `${fact.name} (${s.operator} ${value.toFixed()})`;
    const op = await prisma.feeOperator.upsert({
      where: { key: opKey },
      create: { key: opKey, name: opName, operator: s.operator, value: value.toFixed(), currencyCode },
      update: { name: opName, operator: s.operator, value: value.toFixed(), currencyCode },
    });
    steps.push({ kind: 'fee', feeOperatorId: op.id });
  }
  if (website.currency !== HOME_CURRENCY) {
    const fromId = currencyIds.get(website.currency);
    const toId = currencyIds.get(HOME_CURRENCY);
    if (fromId === undefined || toId === undefined) throw new Error(`currency ${website.currency} or ${HOME_CURRENCY} missing from currencies.json`);
    const convKey = `auto:${website.currency}:${HOME_CURRENCY}`;
    const conv = await prisma.convertOperator.upsert({
      where: { key: convKey },
      create: { key: convKey, name: `${website.currency} to ${HOME_CURRENCY} at official rates`, fromCurrencyId: fromId, toCurrencyId: toId, mode: 'auto', rate: null },
      update: {},
    });
    steps.push({ kind: 'convert', convertOperatorId: conv.id });
  }
  for (const [position, s] of steps.entries()) {
    await prisma.chainStep.upsert({
      where: { chainId_position: { chainId: chain.id, position } },
      create: { chainId: chain.id, position, kind: s.kind, feeOperatorId: s.feeOperatorId ?? null, convertOperatorId: s.convertOperatorId ?? null },
      update: { kind: s.kind, feeOperatorId: s.feeOperatorId ?? null, convertOperatorId: s.convertOperatorId ?? null, groupId: null },
    });
  }
  await prisma.chainStep.deleteMany({ where: { chainId: chain.id, position: { gte: steps.length } } });
  return chain.id;
}
