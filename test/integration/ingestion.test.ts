import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
const at = (iso: string) => new Date(iso);

async function state(name: string, market = 'BUFF163', provider = 'BUFF163', side = 'ask') {
  const rows = await db.prisma.$queryRawUnsafe<any[]>(
    `SELECT q.price::text AS price, q.quantity, q.changed_at, q.observed_at, q.delisted_at, q.fresh_at
     FROM source_quote q JOIN item i ON i.id = q.item_id
     WHERE i.market_hash_name = $1 AND q.market_code = $2 AND q.provider_code = $3 AND q.side = $4::quote_side`,
    name, market, provider, side,
  );
  return rows[0];
}

beforeAll(async () => {
  db = await testDatabase();
});
afterAll(async () => {
  await db?.destroy();
});

describe('ingestion state rules', () => {
  it('changed_at moves only when price or quantity changes; observed_at and fresh_at move on every newer sighting', async () => {
    await ingestQuotes(db, [obs('A', { price: '10.00', quantity: 3, observedAt: at('2026-07-11T10:00:00Z') })]);
    await ingestQuotes(db, [obs('A', { price: '10', quantity: 3, observedAt: at('2026-07-12T10:00:00Z') })]);
    let s = await state('A');
    expect(s.changed_at).toEqual(at('2026-07-11T10:00:00Z'));
    expect(s.observed_at).toEqual(at('2026-07-12T10:00:00Z'));
    expect(s.fresh_at).toEqual(at('2026-07-12T10:00:00Z'));
    await ingestQuotes(db, [obs('A', { price: '10', quantity: 4, observedAt: at('2026-07-13T10:00:00Z') })]);
    s = await state('A');
    expect(s.changed_at).toEqual(at('2026-07-13T10:00:00Z'));
    await ingestQuotes(db, [obs('A', { price: '11', quantity: 4, observedAt: at('2026-07-14T10:00:00Z') })]);
    s = await state('A');
    expect(s.price).toBe('11.0000000000');
    expect(s.changed_at).toEqual(at('2026-07-14T10:00:00Z'));
  });

  it('an observation not newer than the stored one changes nothing (replays are idempotent)', async () => {
    const before = await state('A');
    const r = await ingestQuotes(db, [
      obs('A', { price: '99', quantity: 1, observedAt: at('2026-07-12T00:00:00Z') }),
      obs('A', { price: '99', quantity: 1, observedAt: at('2026-07-14T10:00:00Z') }),
    ]);
    expect(r).toEqual({ inserted: 0, updated: 0, skipped: 2, confirmed: 0 });
    expect(await state('A')).toEqual(before);
  });

  it('several sightings of one quote in one call are applied in time order', async () => {
    const r = await ingestQuotes(db, [
      obs('B', { price: '7', quantity: 2, observedAt: at('2026-07-12T00:00:00Z') }),
      obs('B', { price: '5', quantity: 2, observedAt: at('2026-07-11T00:00:00Z') }),
      obs('B', { price: '7', quantity: 2, observedAt: at('2026-07-13T00:00:00Z') }),
    ]);
    expect(r).toEqual({ inserted: 1, updated: 2, skipped: 0, confirmed: 1 });
    const s = await state('B');
    expect(s.price).toBe('7.0000000000');
    expect(s.changed_at).toEqual(at('2026-07-12T00:00:00Z'));
    expect(s.observed_at).toEqual(at('2026-07-13T00:00:00Z'));
  });

  it('delisting keeps the last price, sets quantity 0 and delisted_at; relisting clears it', async () => {
    await ingestQuotes(db, [obs('C', { price: '3.5', quantity: 9, observedAt: at('2026-07-11T00:00:00Z') })]);
    await ingestQuotes(db, [obs('C', { price: null, delisted: true, observedAt: at('2026-07-12T00:00:00Z') })]);
    let s = await state('C');
    expect(s).toMatchObject({ price: '3.5000000000', quantity: 0 });
    expect(s.delisted_at).toEqual(at('2026-07-12T00:00:00Z'));
    expect(s.changed_at).toEqual(at('2026-07-12T00:00:00Z'));
    await ingestQuotes(db, [obs('C', { price: null, delisted: true, observedAt: at('2026-07-13T00:00:00Z') })]);
    s = await state('C');
    expect(s.delisted_at).toEqual(at('2026-07-12T00:00:00Z'));
    expect(s.changed_at).toEqual(at('2026-07-12T00:00:00Z'));
    await ingestQuotes(db, [obs('C', { price: '3.6', quantity: 1, observedAt: at('2026-07-14T00:00:00Z') })]);
    s = await state('C');
    expect(s).toMatchObject({ price: '3.6000000000', quantity: 1, delisted_at: null });
  });

  it('fresh_at includes the last full-scan completion of the market', async () => {
    await db.prisma.marketScan.create({ data: { marketCode: 'SKINPORT', providerCode: 'SKINPORT', completedAt: at('2026-07-20T00:00:00Z') } });
    await ingestQuotes(db, [obs('D', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at('2026-07-15T00:00:00Z') })]);
    const s = await state('D', 'SKINPORT', 'SKINPORT');
    expect(s.fresh_at).toEqual(at('2026-07-20T00:00:00Z'));
    expect(s.changed_at).toEqual(at('2026-07-15T00:00:00Z'));
  });
});
