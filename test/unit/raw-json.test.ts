/**
 * JSON text spliced into answers (src/lib/raw-json.ts): a text held as a string, as UTF-8 bytes or as its pieces
 * (JsonPieces, a long quote answer read from the database) is written the same, byte for byte, by every writer; the
 * REST writer keeps bytes and pieces apart instead of joining them.
 */
import { describe, expect, it } from 'vitest';
import { encodeWithRaw, JsonPieces, joinParts, RawJson, streamWithRaw, stringifyWithRaw } from '../../src/lib/raw-json.js';

const quote = (i: number) => `{"market_code":"M${i}","side":"ask","market_price_amount":"${i}.5","note":"é"}`;
const head = Array.from({ length: 40 }, (_, i) => quote(i)).join(',');
const tail = Array.from({ length: 40 }, (_, i) => quote(100 + i)).join(',');
const joined = `[${head},${quote(50)},${tail}]`;
const pieces = () => new JsonPieces(['[', head, ',', quote(50), ',', tail, ']']);
const envelope = (markets: RawJson) => ({ app_id: '730', market_hash_name: 'AK-47 | Redline (Field-Tested)', markets });
const expected = JSON.stringify(envelope(new RawJson(joined)));

async function streamed(value: unknown): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of streamWithRaw(value)) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

describe('JsonPieces', () => {
  it('is the joined text as a string and as its UTF-8 bytes, and counts its characters', () => {
    const p = pieces();
    expect(p.toString()).toBe(joined);
    expect(p.toBuffer().equals(Buffer.from(joined, 'utf8'))).toBe(true);
    expect(p.length).toBe(joined.length);
  });

  it('every writer writes an answer around pieces as the answer around the joined text', async () => {
    expect(stringifyWithRaw(envelope(new RawJson(pieces())))).toBe(expected);
    expect(JSON.stringify(envelope(new RawJson(pieces())))).toBe(expected);
    expect(await streamed(envelope(new RawJson(pieces())))).toBe(expected);
    const encoded = encodeWithRaw(envelope(new RawJson(pieces())));
    expect(typeof encoded).toBe('object');
    if (typeof encoded === 'string') return;
    expect(joinParts(encoded).toString('utf8')).toBe(expected);
    expect(encoded.bytes).toBe(Buffer.byteLength(expected, 'utf8'));
  });

  it('the REST writer hands the pieces on as they are, not joined', () => {
    const p = pieces();
    const encoded = encodeWithRaw(envelope(new RawJson(p)));
    if (typeof encoded === 'string') throw new Error('expected parts');
    for (const piece of p.pieces) expect(encoded.parts).toContain(piece);
    expect(encoded.parts.some((part) => part === joined)).toBe(false);
  });

  it('bytes and pieces in one answer keep their order', () => {
    const value = [new RawJson(Buffer.from('{"a":1}')), new RawJson(pieces()), new RawJson('"x"')];
    const encoded = encodeWithRaw(value);
    if (typeof encoded === 'string') throw new Error('expected parts');
    expect(joinParts(encoded).toString('utf8')).toBe(`[{"a":1},${joined},"x"]`);
  });
});
