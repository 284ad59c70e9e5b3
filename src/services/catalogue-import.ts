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
 *   A chain starts in the website's currency and, when that is not the home currency USD, ends with an
 *   `auto` convert step into USD (spec: ConfigOut.home_currency). Purposes with no entry stay null:
 *   unknown is never published as free.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Prisma, type PrismaClient } from '../generated/prisma/client.js';
import { parseExactRule, sameRule } from '../fees/exact-rules.js';
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
  let chains = 0;
  for (const w of websites) {
    for (const purpose of ['deposit', 'sale', 'withdraw'] as const) {
      const fact = fees.find((f) => f.market === w.fees_market && f.purpose === purpose);
      if (!fact) continue;
      const changed = await upsertOfficialChain(prisma, w, purpose, fact, currencyIds);
      if (changed) chains += 1;
    }
  }
  return { websites: websiteWrites, currencies, chains };
}

async function upsertOfficialChain(
  prisma: PrismaClient,
  website: WebsiteRow,
  purpose: 'deposit' | 'sale' | 'withdraw',
  fact: FeeFact,
  currencyIds: Map<string, number>,
): Promise<boolean> {
  const key = `official:${website.code}:${purpose}`;
  const name = fact.name;
  const before = await prisma.calculationChain.findUnique({ where: { key }, include: { steps: true } });
  // Checked before anything is written: a fact whose rule does not parse fails the import.
  const exactRule = fact.exact_rule === undefined ? null : parseExactRule(fact.exact_rule);
  const ruleJson = exactRule === null ? Prisma.DbNull : (exactRule as unknown as Prisma.InputJsonValue);
  const chain = await prisma.calculationChain.upsert({
    where: { key },
    create: { key, name, startCurrencyCode: website.currency, isOfficial: true, exactRule: ruleJson },
    update: { name, startCurrencyCode: website.currency, isOfficial: true, exactRule: ruleJson },
  });
  let changed =
    !before || before.name !== name || before.startCurrencyCode !== website.currency || !sameRule(before.exactRule, exactRule);
  const steps: { kind: 'fee' | 'convert'; feeOperatorId?: number; convertOperatorId?: number }[] = [];
  for (const [i, s] of fact.steps.entries()) {
    const opKey = `${key}#${i}`;
    const value = toMoney(s.value);
    const currencyCode = s.operator === 'add' || s.operator === 'sub' ? (s.currency_code ?? website.currency) : null;
    const opName = `${fact.name} (${s.operator} ${value.toFixed()})`;
    const existing = await prisma.feeOperator.findUnique({ where: { key: opKey } });
    if (!existing || existing.name !== opName || existing.operator !== s.operator || !toMoney(existing.value).eq(value) || existing.currencyCode !== currencyCode) {
      changed = true;
    }
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
    const prev = before?.steps.find((x) => x.position === position);
    if (!prev || prev.kind !== s.kind || prev.feeOperatorId !== (s.feeOperatorId ?? null) || prev.convertOperatorId !== (s.convertOperatorId ?? null)) {
      changed = true;
      await prisma.chainStep.upsert({
        where: { chainId_position: { chainId: chain.id, position } },
        create: { chainId: chain.id, position, kind: s.kind, feeOperatorId: s.feeOperatorId ?? null, convertOperatorId: s.convertOperatorId ?? null },
        update: { kind: s.kind, feeOperatorId: s.feeOperatorId ?? null, convertOperatorId: s.convertOperatorId ?? null, groupId: null },
      });
    }
  }
  const extra = await prisma.chainStep.deleteMany({ where: { chainId: chain.id, position: { gte: steps.length } } });
  if (extra.count > 0) changed = true;
  const slot = await prisma.feeScheduleSlot.findUnique({ where: { websiteCode_purpose: { websiteCode: website.code, purpose } } });
  if (!slot || slot.chainId !== chain.id) {
    changed = true;
    await prisma.feeScheduleSlot.upsert({
      where: { websiteCode_purpose: { websiteCode: website.code, purpose } },
      create: { websiteCode: website.code, purpose, chainId: chain.id },
      update: { chainId: chain.id },
    });
  }
  return changed;
}
