/**
 * A test-only collector source (never registered in src/collectors/registry.ts): reads `GET /v1/list?key=...`
 * of a local upstream (test/collectors/upstream.ts), a JSON body `{"items":[{name, market, side, currency, price,
 * quantity}]}` with prices as decimal strings, and yields its rows as they are, good or bad, so the runner's
 * validation, judgement and ingestion are what is tested. A body that is not JSON, or a 200 with an error
 * object, fails as a whole (UpstreamError `format`), as a real adapter must.
 * `quotegate collect --sources-module test/collectors/fake-source.ts` loads `sources` (the worker tests).
 */
import { UpstreamError, type CollectorSource, type RawQuote } from '../../src/collectors/source.js';

/** One row of the fake upstream's list. */
export interface FakeItem {
  name: string;
  market: string;
  side: 'ask' | 'bid';
  currency: string;
  price: string | null;
  quantity?: number | null;
  /** When the upstream saw the row (any text: `new Date(seen)`, so a bad one is an invalid Date); absent: none. */
  seen?: string;
}

/** The fake upstream's body for `items`. */
export function fakeBody(items: FakeItem[]): string {
  return JSON.stringify({ items });
}

/** A fake source; `over` replaces any field (id, markets, limits, credentialEnv, completeListing...). */
export function fakeSource(over: Partial<CollectorSource> = {}): CollectorSource {
  return {
    id: 'fake',
    providerCode: 'FAKE',
    markets: ['SKINPORT', 'BITSKINS'],
    defaultBaseUrl: 'http://127.0.0.1:9',
    intervalSeconds: 60,
    limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 2000, retries: 2 },
    completeListing: true,
    async *collect(ctx): AsyncIterable<RawQuote> {
      const query = ctx.credential ? `?key=${encodeURIComponent(ctx.credential)}` : '';
      const res = await ctx.fetch(`/v1/list${query}`, { headers: ctx.credential ? { authorization: `Bearer ${ctx.credential}` } : {} });
      const type = res.headers.get('content-type') ?? '';
      if (!type.includes('json')) throw new UpstreamError('format', `expected JSON, got ${type || 'no content type'}`);
      const text = await res.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (e) {
        throw new UpstreamError('format', `not JSON: ${(e as Error).message}`);
      }
      const items = (body as { items?: unknown }).items;
      if (!Array.isArray(items)) throw new UpstreamError('format', `no items list: ${text.slice(0, 100)}`);
      for (const it of items as FakeItem[]) {
        yield {
          marketHashName: it.name,
          marketCode: it.market,
          side: it.side,
          currencyCode: it.currency,
          price: it.price,
          quantity: it.quantity ?? null,
          ...(it.seen === undefined ? {} : { observedAt: new Date(it.seen) }),
        };
      }
    },
    ...over,
  };
}

/** For `quotegate collect --sources-module`: two fake sources, each its own upstream (COLLECTOR_FAKE_A_URL, COLLECTOR_FAKE_B_URL). */
export const sources: CollectorSource[] = [
  fakeSource({ id: 'fake-a', providerCode: 'FAKEA', markets: ['SKINPORT'], intervalSeconds: 100 }),
  fakeSource({ id: 'fake-b', providerCode: 'FAKEB', markets: ['BITSKINS'], intervalSeconds: 100 }),
];
