/**
 * The streaming entry reader of the bulk adapters (src/collectors/sources/json-stream.ts): the same entries
 * whatever the chunking of the body (a multi-byte character or a number split across chunks), numbers as their
 * source text, a `__proto__` key as data, and whole-body failures as UpstreamError('format').
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonNumber, MAX_DEPTH, jsonEntries, type JsonEntry } from '../../src/collectors/sources/json-stream.js';
import { UpstreamError } from '../../src/collectors/source.js';
import { projectRoot } from '../../src/lib/paths.js';

const BYTES = fs.readFileSync(path.join(projectRoot, 'test/collectors/fixtures/csgotrader/buff163.json'));

/** A response whose body arrives in chunks of `size` bytes. */
function chunked(bytes: Uint8Array, size: number, type = 'application/json'): Response {
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, at + size));
      at += size;
    },
  });
  return new Response(body, { headers: { 'Content-Type': type } });
}

async function entries(res: Response, top: 'object' | 'array' = 'object'): Promise<JsonEntry[]> {
  const out: JsonEntry[] = [];
  for await (const e of jsonEntries(res, { what: 'test', top })) out.push(e);
  return out;
}

const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (x instanceof JsonNumber ? `#${x.text}` : x)));

describe('jsonEntries', () => {
  it('gives the same entries for any chunking, a byte at a time included', async () => {
    const whole = await entries(chunked(BYTES, BYTES.length));
    expect(whole).toHaveLength(35);
    for (const size of [1, 3, 7, 64, 1000]) expect(plain(await entries(chunked(BYTES, size)))).toEqual(plain(whole));
    const doppler = whole.find((e) => e.key === '★ Butterfly Knife | Doppler (Factory New)')!;
    expect(plain(doppler.value)).toMatchObject({ starting_at: { price: '#1041.22', doppler: { Sapphire: '#19995.0', Emerald: 'null' } } });
    // A literal multi-byte character (the Skinport sample's ★, 3 bytes in UTF-8) split across chunks.
    const sp = fs.readFileSync(path.join(projectRoot, 'test/collectors/fixtures/skinport/items-docs-example.json'));
    const names = (await entries(chunked(sp, 1), 'array')).map((e) => (e.value as { market_hash_name: string }).market_hash_name);
    expect(names).toEqual(['AK-47 | Aquamarine Revenge (Battle-Scarred)', '★ M9 Bayonet | Fade (Factory New)']);
  });

  it('keeps a `__proto__` key as data, never as a prototype', async () => {
    const [e] = await entries(chunked(Buffer.from('{"__proto__": {"price": 1, "__proto__": {"polluted": true}}}'), 5));
    expect(e!.key).toBe('__proto__');
    const v = e!.value as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(['price', '__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('fails as a whole on invalid UTF-8, a too deep entry, and a top-level scalar', async () => {
    const fail = async (res: Response, reason: RegExp, top: 'object' | 'array' = 'object') => {
      const err = await entries(res, top).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect((err as UpstreamError).kind).toBe('format');
      expect((err as UpstreamError).message).toMatch(reason);
    };
    await fail(chunked(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 2), /not valid JSON/);
    await fail(chunked(Buffer.from(`{"a": ${'['.repeat(MAX_DEPTH + 1)}${']'.repeat(MAX_DEPTH + 1)}}`), 4), /nested deeper than 16/);
    await fail(chunked(Buffer.from('"Service Unavailable"'), 4), /expected a JSON array at the top, found a string/, 'array');
    await fail(chunked(Buffer.from('{"a": 1}'), 4, 'text/html; charset=utf-8'), /HTML instead of JSON/);
  });
});
