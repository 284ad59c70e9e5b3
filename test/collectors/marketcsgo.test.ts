/**
 * The market.csgo adapter against market.csgo's documented class/instance price list example (fixtures/marketcsgo,
 * PROVENANCE.md), served by the local upstream with its failure modes. Aggregation cases add class/instances derived
 * from the documented ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';
import { marketcsgo, MARKETCSGO_CLASS_INSTANCE_PATH } from '../../src/collectors/sources/marketcsgo.js';

const FIXTURE = path.join(import.meta.dirname, 'fixtures/marketcsgo/class_instance.json');
const recorded = fs.readFileSync(FIXTURE, 'utf8');
const ARCANE = 'Arcane Defiance Loading Screen';
const ARMOR = 'Armor of Utter Eradication';

describe('marketcsgo source', () => {
  let up: LocalUpstream;
  beforeAll(async () => {
    up = await startUpstream([{ path: MARKETCSGO_CLASS_INSTANCE_PATH, file: FIXTURE }]);
  });
  afterAll(async () => {
    await up.close();
  });
  const run = () => collectAll(marketcsgo.collect(bareContext(up.url)));
  const serve = (body: string) => up.route({ path: MARKETCSGO_CLASS_INSTANCE_PATH, body });
  /** The documented document with extra class/instances: copies of the documented Arcane entry with other values. */
  const withArcaneCopies = (copies: Record<string, unknown>[]) => {
    const doc = JSON.parse(recorded);
    const arcane = doc.items['1434515088_0'];
    copies.forEach((c, i) => (doc.items[`1434515088_${i + 1}`] = { ...arcane, ...c }));
    return JSON.stringify(doc);
  };

  it('maps the documented list to one ask and one bid per name, in the response currency, exact decimals', async () => {
    serve(recorded);
    const before = up.requests.length;
    const rows = await run();
    expect(up.requests.slice(before).map((r) => r.path)).toEqual(['/api/v2/prices/class_instance/USD.json']);
    const base = { marketCode: 'MARKETCSGO', currencyCode: 'RUB', quantity: null };
    expect(rows).toEqual([
      { ...base, marketHashName: ARCANE, side: 'ask', price: '0.5' },
      { ...base, marketHashName: ARCANE, side: 'bid', price: '0.1' },
      { ...base, marketHashName: ARMOR, side: 'ask', price: '0.6' },
      { ...base, marketHashName: ARMOR, side: 'bid', price: '0.1' },
    ]);
    expect(marketcsgo.completeListing).toBe(false);
    expect(marketcsgo.providerCode).toBe('MARKETCSGO');
  });

  it('aggregates class/instances of one name: lowest price, highest buy order (decimal comparison), null buy order ignored', async () => {
    serve(
      withArcaneCopies([
        { price: '0.455', buy_order: '0.12' },
        { price: '10.00', buy_order: null },
        { price: null, buy_order: '0.3' },
      ]),
    );
    const rows = await run();
    expect(rows.filter((r) => r.marketHashName === ARCANE).map((r) => [r.side, r.price])).toEqual([
      ['ask', '0.455'],
      ['bid', '0.3'],
    ]);
  });

  it('passes a price that is not a positive decimal through on its own row for the runner to reject', async () => {
    serve(withArcaneCopies([{ price: '0', buy_order: 'n/a' }]));
    const rows = await run();
    expect(rows.filter((r) => r.marketHashName === ARCANE).map((r) => [r.side, r.price])).toEqual([
      ['ask', '0'],
      ['bid', 'n/a'],
      ['ask', '0.5'],
      ['bid', '0.1'],
    ]);
  });

  it('ignores unknown fields', async () => {
    const doc = JSON.parse(recorded);
    doc.generated_by = { node: 'x', n: [1, 2] };
    doc.items['1479313949_0'].phase = 'Ruby';
    serve(JSON.stringify(doc));
    const rows = await run();
    expect(rows.map((r) => [r.marketHashName, r.side, r.price])).toEqual([
      [ARCANE, 'ask', '0.5'],
      [ARCANE, 'bid', '0.1'],
      [ARMOR, 'ask', '0.6'],
      [ARMOR, 'bid', '0.1'],
    ]);
  });

  it('fails loudly when a required field is renamed', async () => {
    for (const [from, to] of [
      ['"buy_order":', '"best_order":'],
      ['"price":', '"min_price":'],
      ['"items":', '"list":'],
      ['"currency":', '"cur":'],
    ]) {
      serve(recorded.replaceAll(from!, to!));
      await expect(run(), from).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
    }
  });

  it('rejects HTML, a truncated body and a 200 with an error object as a format failure', async () => {
    serve(recorded);
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(MARKETCSGO_CLASS_INSTANCE_PATH, mode);
      await expect(run(), mode).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
      up.play(MARKETCSGO_CLASS_INSTANCE_PATH, null);
    }
    serve('{"success":false,"error":"Bad KEY"}');
    await expect(run()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
  });
});
