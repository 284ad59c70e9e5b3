/**
 * The Waxpeer adapter against Waxpeer's documented `/v1/prices` example response (fixtures/waxpeer, PROVENANCE.md),
 * served by the local upstream with its failure modes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';
import { waxpeer, waxpeerPrice, WAXPEER_PRICES_PATH } from '../../src/collectors/sources/waxpeer.js';

const FIXTURE = path.join(import.meta.dirname, 'fixtures/waxpeer/prices.json');
const PATH = WAXPEER_PRICES_PATH.split('?')[0]!;
const recorded = fs.readFileSync(FIXTURE, 'utf8');

describe('waxpeer source', () => {
  let up: LocalUpstream;
  beforeAll(async () => {
    up = await startUpstream([{ path: PATH, file: FIXTURE }]);
  });
  afterAll(async () => {
    await up.close();
  });
  const run = () => collectAll(waxpeer.collect(bareContext(up.url)));
  const serve = (body: string) => up.route({ path: PATH, body });

  it('maps the recorded price list to one USD ask per item (min in thousandths of USD, count as quantity)', async () => {
    serve(recorded);
    const before = up.requests.length;
    const rows = await run();
    expect(up.requests.slice(before).map((r) => r.path)).toEqual(['/v1/prices?game=csgo&minified=1']);
    expect(rows).toEqual([
      {
        marketHashName: '★ Hand Wraps | Cobalt Skulls (Minimal Wear)',
        marketCode: 'WAXPEER',
        side: 'ask',
        currencyCode: 'USD',
        price: '937.999',
        quantity: 5,
      },
    ]);
    expect(waxpeer.completeListing).toBe(true);
    expect(waxpeer.providerCode).toBe('WAXPEER');
  });

  it('scales thousandths exactly, without floats', () => {
    expect(waxpeerPrice('1')).toBe('0.001');
    expect(waxpeerPrice('937999')).toBe('937.999');
    expect(waxpeerPrice('12345678901234567891')).toBe('12345678901234567.891');
    expect(waxpeerPrice('-5')).toBe('-5'); // not a price: passed through for the runner to reject
  });

  it('ignores unknown fields at the top and in items', async () => {
    const doc = JSON.parse(recorded);
    doc.generated_at = { by: 'new upstream field', n: [1, 2, 3] };
    doc.items[0].highest_offer_v2 = 123;
    serve(JSON.stringify(doc));
    const rows = await run();
    expect(rows.map((r) => [r.marketHashName, r.price, r.quantity])).toEqual([['★ Hand Wraps | Cobalt Skulls (Minimal Wear)', '937.999', 5]]);
  });

  it('fails loudly when a required field is renamed', async () => {
    serve(recorded.replace('"min":', '"min_price":'));
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
    serve(recorded.replace('"items":', '"data":'));
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format', message: expect.stringContaining('"items"') });
  });

  it('rejects HTML, a truncated body and a 200 with an error object as a format failure', async () => {
    serve(recorded);
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(PATH, mode);
      await expect(run(), mode).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
      up.play(PATH, null);
    }
    // Waxpeer's own error shape: {"success": false, "msg": ...}
    serve('{"success":false,"msg":"Too many requests"}');
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
  });
});
