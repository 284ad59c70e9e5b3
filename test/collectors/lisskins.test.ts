/**
 * The Lis-skins adapter against a recorded excerpt of `api_csgo_full.json` (fixtures/lisskins, PROVENANCE.md), served
 * by the local upstream with its failure modes. Aggregation cases add listings derived from the recorded ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';
import { lisskins, LISSKINS_FULL_PATH } from '../../src/collectors/sources/lisskins.js';

const FIXTURE = path.join(import.meta.dirname, 'fixtures/lisskins/api_csgo_full.json');
const recorded = fs.readFileSync(FIXTURE, 'utf8');
const NOW = new Date('2025-06-12T12:00:00Z');
const AK = 'AK-47 | Phantom Disruptor (Field-Tested)';
const USP = 'USP-S | Ticket to Hell (Factory New)';

describe('lisskins source', () => {
  let up: LocalUpstream;
  beforeAll(async () => {
    up = await startUpstream([{ path: LISSKINS_FULL_PATH, file: FIXTURE }]);
  });
  afterAll(async () => {
    await up.close();
  });
  const run = () => collectAll(lisskins.collect(bareContext(up.url, { now: NOW })));
  const serve = (body: string) => up.route({ path: LISSKINS_FULL_PATH, body });
  /** The recorded document with extra listings: copies of the recorded AK-47 listing with other ids, prices, locks. */
  const withAkCopies = (copies: Record<string, unknown>[]) => {
    const doc = JSON.parse(recorded);
    const ak = doc.items[0];
    doc.items.push(...copies.map((c, i) => ({ ...ak, id: ak.id + 1000 + i, ...c })));
    return JSON.stringify(doc);
  };

  it('maps the recorded listings to one USD ask per item with its listing count', async () => {
    serve(recorded);
    const before = up.requests.length;
    const rows = await run();
    expect(up.requests.slice(before).map((r) => r.path)).toEqual(['/market_export_json/api_csgo_full.json']);
    expect(rows).toEqual([
      { marketHashName: AK, marketCode: 'LISSKINS', side: 'ask', currencyCode: 'USD', price: '4.26', quantity: 1 },
      { marketHashName: USP, marketCode: 'LISSKINS', side: 'ask', currencyCode: 'USD', price: '1.76', quantity: 1 },
    ]);
    expect(lisskins.completeListing).toBe(true);
  });

  it('aggregates listings per name to the minimum price (decimal comparison) and the count of deliverable listings', async () => {
    serve(
      withAkCopies([
        { price: 4.255 },
        { price: 10.1 },
        { price: 0.99, unlock_at: '2025-06-19T08:00:00.000000Z' }, // trade-locked until after NOW: not deliverable
        { price: 4.2, unlock_at: '2025-06-01T08:00:00.000000Z' }, // lock already over
      ]),
    );
    const rows = await run();
    expect(rows.find((r) => r.marketHashName === AK)).toMatchObject({ price: '4.2', quantity: 4 });
    expect(rows.find((r) => r.marketHashName === USP)).toMatchObject({ price: '1.76', quantity: 1 });
  });

  it('passes a listing whose price is not a positive decimal through on its own row for the runner to reject', async () => {
    serve(withAkCopies([{ price: 0 }, { price: 'n/a' }]));
    const rows = await run();
    expect(rows.filter((r) => r.marketHashName === AK).map((r) => [r.price, r.quantity])).toEqual([
      ['0', null],
      ['n/a', null],
      ['4.26', 1],
    ]);
  });

  it('ignores unknown fields', async () => {
    const doc = JSON.parse(recorded);
    doc.last_update = 1749729600;
    doc.export_meta = { version: 3, games: ['csgo'] };
    doc.items[1].delivery_type = 1;
    serve(JSON.stringify(doc));
    const rows = await run();
    expect(rows.map((r) => [r.marketHashName, r.price, r.quantity])).toEqual([
      [AK, '4.26', 1],
      [USP, '1.76', 1],
    ]);
  });

  it('fails loudly when a required field is renamed', async () => {
    serve(recorded.replace('"price":', '"cost":'));
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
    serve(recorded.replace('"items":', '"lots":'));
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
  });

  it('rejects HTML, a truncated body and a 200 with an error object as a format failure', async () => {
    serve(recorded);
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(LISSKINS_FULL_PATH, mode);
      await expect(run(), mode).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
      up.play(LISSKINS_FULL_PATH, null);
    }
    serve('{"status":"error","error_message":"export is being rebuilt"}');
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
  });
});
