/**
 * Fee schedules through time (issue: fees applied, point 4): importing a changed fee fact records a new
 * version from its effective day and keeps the old one; both faces answer the schedule in force on a
 * requested day (REST `as_of`, GraphQL `asOf`), today by default; the valuation reads the schedule of the
 * day it values; an unchanged import writes nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDir, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { loadFeeBook } from '../../src/valuation/daily.js';
import { formatDate } from '../../src/lib/time.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
let t: TestApp;

/** A copy of the bundled catalogue files whose Buff163 sale fee is `value` (with `effective_from` when given). */
function changedCatalogue(value: string, effectiveFrom?: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-fees-'));
  for (const f of ['websites.json', 'currencies.json']) fs.copyFileSync(path.join(dataDir, f), path.join(dir, f));
  const fees = JSON.parse(fs.readFileSync(path.join(dataDir, 'fees.json'), 'utf8')) as { market: string; purpose?: string; steps: { value: string }[]; effective_from?: string }[];
  const sale = fees.find((f) => f.market === 'buff163' && f.purpose === 'sale')!;
  sale.steps[0]!.value = value;
  if (effectiveFrom) sale.effective_from = effectiveFrom;
  fs.writeFileSync(path.join(dir, 'fees.json'), JSON.stringify(fees));
  return dir;
}

const saleFactor = (data: any) => data.slots.sale.calculation_chain.steps[0].value;
const schedule = async (query = '') => expectEnvelope(await t.get(`/websites/BUFF163/fee-schedule${query}`));
const today = formatDate(new Date());

beforeAll(async () => {
  t = await testApp();
  await ingestBatch(t.db, [obs(ITEM, { price: '100' })]);
});
afterAll(async () => {
  await t.close();
});

describe('a changed fee fact makes a new version; the old one stays', () => {
  it('REST as_of answers the schedule in force that day; today by default', async () => {
    const before = await schedule();
    expect(saleFactor(before)).toBe('0.975');
    const result = await importCatalogue(t.db.prisma, changedCatalogue('0.97', '2026-11-20'));
    expect(result.chains).toBe(1);
    // Importing the same changed facts again writes nothing.
    expect((await importCatalogue(t.db.prisma, changedCatalogue('0.97', '2026-11-20'))).chains).toBe(0);

    const old = await schedule('?as_of=2026-11-19');
    const changed = await schedule('?as_of=2026-11-20');
    expect(saleFactor(old)).toBe('0.975');
    expect(saleFactor(changed)).toBe('0.97');
    expect(old.slots.sale.calculation_chain.id).toBe(before.slots.sale.calculation_chain.id); // the old version is the chain it was
    expect(changed.slots.sale.calculation_chain.id).not.toBe(old.slots.sale.calculation_chain.id);
    expect(saleFactor(await schedule())).toBe('0.97');
    // The withdraw slot did not change: the same chain on both days, and the spec's shape is unchanged.
    expect(changed.slots.withdraw).toEqual(old.slots.withdraw);
    expect(Object.keys(changed).sort()).toEqual(['slots', 'website_code']);
  });

  it('a change without an effective day takes effect on the import day; earlier days keep theirs', async () => {
    expect((await importCatalogue(t.db.prisma, changedCatalogue('0.96'))).chains).toBe(1);
    expect(saleFactor(await schedule(`?as_of=${today}`))).toBe('0.96');
    expect(saleFactor(await schedule('?as_of=2026-11-21'))).toBe(today > '2026-11-21' ? '0.97' : '0.96');
    expect(saleFactor(await schedule('?as_of=1999-01-01'))).toBe('0.975');
  });

  it('GraphQL feeSchedule(asOf) gives the same versions, each slot with the day it took effect', async () => {
    const res = await t.gql(`{ website(code: "BUFF163") {
      old: feeSchedule(asOf: "2026-11-19") { asOf slots { sale { validFrom calculationChain { steps { ... on FeeOperatorStep { value } } } } } }
      now: feeSchedule { asOf slots { sale { validFrom } withdraw { validFrom } } } } }`);
    expect(res.body.errors).toBeUndefined();
    const w = res.body.data.website;
    expect(w.old).toEqual({ asOf: '2026-11-19', slots: { sale: { validFrom: '1970-01-01', calculationChain: { steps: [{ value: '0.975' }, {}] } } } });
    expect(w.now).toEqual({ asOf: today, slots: { sale: { validFrom: today }, withdraw: { validFrom: '1970-01-01' } } });
  });

  it('after-fee amounts use the schedule in force now; the valuation reads the schedule of the day it values', async () => {
    const res = await t.gql(`query($n: String!) { item(marketHashName: $n) { quotes(side: ask) { marketCode afterFees(path: SALE) { amount } } } }`, { n: ITEM }, t.auth());
    expect(res.body.data.item.quotes.find((q: any) => q.marketCode === 'BUFF163').afterFees.amount).toBe('96'); // 100 x 0.96
    const factor = async (day: string) => (await loadFeeBook(t.db, new Date(`${day}T00:00:00Z`))).feesOf('BUFF163').sale!.steps[0];
    expect(await factor('2026-11-19')).toMatchObject({ kind: 'fee', operator: 'mul' });
    expect(String((await factor('2026-11-19') as { value: unknown }).value)).toBe('0.975');
    expect(String((await factor('2026-11-20') as { value: unknown }).value)).toBe(today > '2026-11-20' ? '0.97' : '0.96');
  });

  it('refuses days that do not exist with 422 and the parameter named', async () => {
    for (const bad of ['2026-02-30', '2026-13-01', 'yesterday', '20261123']) {
      const res = await t.get(`/websites/BUFF163/fee-schedule?as_of=${bad}`);
      expectError(res, 422, 'validation_failed');
      expect(res.body.error.details.errors).toEqual([expect.objectContaining({ location: 'query', field: 'as_of' })]);
    }
    const gql = await t.gql(`{ website(code: "BUFF163") { feeSchedule(asOf: "2026-02-30") { asOf } } }`);
    expect(gql.body.errors[0].extensions).toMatchObject({ code: 'validation_failed' });
  });
});
