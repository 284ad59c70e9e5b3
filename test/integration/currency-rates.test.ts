/**
 * The one read of currency rates (src/catalogue/catalogue.ts `readCurrencyRates`), on the bundled catalogue plus a
 * user's own currency and a deleted one: which currencies it returns with and without `officialOnly`, and the rate
 * exactly as stored (18 decimals, decimal.js) with its publication day.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importCatalogue } from '../../src/catalogue/import.js';
import { readCurrencyRates } from '../../src/catalogue/catalogue.js';
import { dataDir } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await testDatabase();
  await importCatalogue(db.prisma, dataDir);
  await db.query(
    `INSERT INTO currency (code, name, kind, usd_rate, rate_date, owner_user_id, is_official, is_deleted)
     VALUES ('MYGOLD', 'my gold', 'custom', 0.123456789012345678, NULL, 'user-1', false, false),
            ('OLDCUR', 'gone', 'custom', 2, '2026-01-02', 'user-1', false, true)`,
  );
  await db.query(`UPDATE currency SET usd_rate = 0.100000000000000001, rate_date = '2026-07-16' WHERE code = 'EUR'`);
});
afterAll(async () => {
  await db?.destroy();
});

describe('readCurrencyRates', () => {
  it('every currency not deleted; with officialOnly the official ones alone', async () => {
    const all = await readCurrencyRates(db);
    const official = await readCurrencyRates(db, { officialOnly: true });
    const codes = (rows: { code: string }[]) => rows.map((r) => r.code).sort();
    expect(codes(all)).toContain('MYGOLD');
    expect(codes(all)).not.toContain('OLDCUR');
    expect(codes(official)).toEqual(codes(all).filter((c) => c !== 'MYGOLD'));
    expect(official.every((r) => r.isOfficial)).toBe(true);
    expect(all.find((r) => r.code === 'MYGOLD')).toMatchObject({ isOfficial: false, rateDate: null });
    expect(official.map((r) => r.code)).toEqual(expect.arrayContaining(['USD', 'EUR', 'CNY']));
  });

  it('the rate exactly as stored (no float rounding) and the day it was published', async () => {
    const byCode = new Map((await readCurrencyRates(db)).map((r) => [r.code, r]));
    // 0.100000000000000001 is 0.1 as a float.
    expect(byCode.get('EUR')!.usdRate.toFixed()).toBe('0.100000000000000001');
    expect(byCode.get('EUR')!.rateDate).toBe('2026-07-16');
    expect(byCode.get('MYGOLD')!.usdRate.toFixed()).toBe('0.123456789012345678');
    expect(byCode.get('USD')!.usdRate.toFixed()).toBe('1');
    const [cny] = await db.query<{ id: number }>(`SELECT id FROM currency WHERE code = 'CNY'`);
    expect(byCode.get('CNY')!.id).toBe(cny!.id);
  });
});
