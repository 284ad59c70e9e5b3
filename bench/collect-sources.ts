/**
 * The bench's bulk sources and their synthetic upstream bodies (`npm run bench:collect`, bench/collect.ts). Bench
 * only: never registered. Loaded by `quotegate collect --sources-module bench/collect-sources.ts`.
 *
 * - `bench-csgotrader`: csgotrader-like per-provider files (`/latest/{buff163,youpin,csfloat,skinport,csmoney,steam,bitskins}.json`,
 *   the field layout of data/prices/csgotrader_daily_2026-07/PROVENANCE.md: Buff163 `starting_at.price` ask and
 *   `highest_order.price` bid, Youpin a bare number, Skinport `starting_at`, Steam `last_24h`, the others `price`),
 *   USD, converted by the runner to each market's own currency; 7 markets, a complete listing.
 * - `bench-list`: one market's whole list as a JSON array (`/v1/items`: `market_hash_name`, `currency`,
 *   `min_price`, `quantity`), WAXPEER, USD.
 * Bodies (a few MB each) are read whole and parsed by lossless-json, about 3x faster here than stream-json;
 * BENCH_STREAMING=1 streams them through stream-json instead. Numbers stay their source text either way.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import streamArray from 'stream-json/streamers/stream-array.js';
import streamObject from 'stream-json/streamers/stream-object.js';
import { parse as parseLossless } from 'lossless-json';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../src/collectors/source.js';

/** csgotrader-like files: file name -> how its value maps to quote rows. */
const FILES: { file: string; rows: (name: string, v: any) => Omit<RawQuote, 'marketHashName' | 'currencyCode'>[] }[] = [
  {
    file: 'buff163',
    rows: (_n, v) => [
      { marketCode: 'BUFF163', side: 'ask', price: v?.starting_at?.price ?? null },
      { marketCode: 'BUFF163', side: 'bid', price: v?.highest_order?.price ?? null },
    ],
  },
  { file: 'youpin', rows: (_n, v) => [{ marketCode: 'YOUPIN', side: 'ask', price: typeof v === 'string' ? v : null }] },
  { file: 'csfloat', rows: (_n, v) => [{ marketCode: 'CSFLOAT', side: 'ask', price: v?.price ?? null }] },
  { file: 'skinport', rows: (_n, v) => [{ marketCode: 'SKINPORT', side: 'ask', price: v?.starting_at ?? null }] },
  { file: 'csmoney', rows: (_n, v) => [{ marketCode: 'CSMONEY', side: 'ask', price: v?.price ?? null }] },
  { file: 'steam', rows: (_n, v) => [{ marketCode: 'STEAM', side: 'ask', price: v?.last_24h ?? null }] },
  { file: 'bitskins', rows: (_n, v) => [{ marketCode: 'BITSKINS', side: 'ask', price: v?.price ?? null }] },
];

/** A response body as a Node stream. */
function nodeBody(res: Response): Readable {
  if (!res.body) throw new UpstreamError('format', 'empty body');
  return Readable.fromWeb(res.body as unknown as NodeReadableStream);
}

/** BENCH_STREAMING=1: parse every body with stream-json as it arrives (the slower, bounded-memory way). */
const STREAMING = process.env.BENCH_STREAMING === '1';

const limits = { requestsPerMinute: 600, concurrency: 2, timeoutMs: 120_000, retries: 1 };

export const sources: CollectorSource[] = [
  {
    id: 'bench-csgotrader',
    providerCode: 'CSGOTRADER',
    markets: ['BUFF163', 'YOUPIN', 'CSFLOAT', 'SKINPORT', 'CSMONEY', 'STEAM', 'BITSKINS'],
    defaultBaseUrl: 'http://127.0.0.1:9',
    intervalSeconds: 3600,
    limits,
    completeListing: true,
    async *collect(ctx: SourceContext): AsyncIterable<RawQuote> {
      for (const f of FILES) {
        const res = await ctx.fetch(`/latest/${f.file}.json`);
        if (STREAMING) {
          for await (const { key, value } of nodeBody(res).pipe(streamObject.withParserAsStream({ numberAsString: true }))) {
            for (const r of f.rows(key, value)) yield { ...r, marketHashName: key, currencyCode: 'USD' };
          }
          continue;
        }
        let body: Record<string, unknown>;
        try {
          body = parseLossless(await res.text(), undefined, (s: string) => s) as Record<string, unknown>;
        } catch (e) {
          throw new UpstreamError('format', `${f.file}.json: ${(e as Error).message}`);
        }
        for (const key of Object.keys(body)) for (const r of f.rows(key, body[key])) yield { ...r, marketHashName: key, currencyCode: 'USD' };
      }
    },
  },
  {
    id: 'bench-list',
    providerCode: 'WAXPEER',
    markets: ['WAXPEER'],
    defaultBaseUrl: 'http://127.0.0.1:9',
    intervalSeconds: 3600,
    limits,
    completeListing: true,
    async *collect(ctx: SourceContext): AsyncIterable<RawQuote> {
      const res = await ctx.fetch('/v1/items');
      type Item = { market_hash_name: string; currency: string; min_price: string | null; quantity: string };
      const row = (v: Item): RawQuote => ({ marketHashName: v.market_hash_name, marketCode: 'WAXPEER', side: 'ask', currencyCode: v.currency, price: v.min_price, quantity: Number(v.quantity) });
      if (STREAMING) {
        for await (const { value } of nodeBody(res).pipe(streamArray.withParserAsStream({ numberAsString: true }))) yield row(value as Item);
        return;
      }
      let items: unknown;
      try {
        items = parseLossless(await res.text(), undefined, (s: string) => s);
      } catch (e) {
        throw new UpstreamError('format', `items: ${(e as Error).message}`);
      }
      if (!Array.isArray(items)) throw new UpstreamError('format', 'items: not a list');
      for (const v of items as Item[]) yield row(v);
    },
  },
];

/** A deterministic price text for item `i` on feed `k` (2 decimals, 0.03 to about 2,000). */
function price(i: number, k: number): string {
  const x = ((i * 2654435761 + k * 40503) >>> 0) % 200_000;
  return (x / 100 + 0.03).toFixed(2);
}

/** The synthetic bodies: csgotrader-like files for `names` (the first 30,000) and a list of `listNames` (40,000). */
export function benchBodies(names: readonly string[], listNames: readonly string[]): { path: string; body: Buffer }[] {
  const files: { path: string; body: Buffer }[] = [];
  const obj = (f: (n: string, i: number) => string) => Buffer.from(`{${names.map((n, i) => `${JSON.stringify(n)}:${f(n, i)}`).join(',')}}`);
  files.push({ path: '/latest/buff163.json', body: obj((_n, i) => `{"starting_at":{"price":${price(i, 1)},"doppler":null},"highest_order":{"price":${price(i, 2)},"doppler":null}}`) });
  files.push({ path: '/latest/youpin.json', body: obj((_n, i) => price(i, 3)) });
  files.push({ path: '/latest/csfloat.json', body: obj((_n, i) => `{"price":${price(i, 4)}}`) });
  files.push({ path: '/latest/skinport.json', body: obj((_n, i) => `{"suggested_price":${price(i, 5)},"starting_at":${price(i, 6)}}`) });
  files.push({ path: '/latest/csmoney.json', body: obj((_n, i) => `{"price":${price(i, 7)},"doppler":null}`) });
  files.push({ path: '/latest/steam.json', body: obj((_n, i) => `{"last_24h":${price(i, 8)},"last_7d":${price(i, 9)},"last_30d":${price(i, 10)},"last_90d":${price(i, 11)}}`) });
  files.push({ path: '/latest/bitskins.json', body: obj((_n, i) => `{"price":"${price(i, 12)}","instant_sale_price":null}`) });
  files.push({
    path: '/v1/items',
    body: Buffer.from(`[${listNames.map((n, i) => JSON.stringify({ market_hash_name: n, currency: 'USD', suggested_price: 1, min_price: Number(price(i, 13)), quantity: (i % 50) + 1 })).join(',')}]`),
  });
  return files;
}
