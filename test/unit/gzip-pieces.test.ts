/** A gzip file joined from separately compressed pieces (src/lib/gzip-pieces.ts) reads back as the texts in order. */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { crc32Combine, deflatePiece, GzipJoiner } from '../../src/lib/gzip-pieces.js';

describe('gzip pieces', () => {
  it('combines CRC-32s as the CRC-32 of the concatenation', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 5000 }), (a, b) => {
        const whole = zlib.crc32(Buffer.concat([a, b])) >>> 0;
        expect(crc32Combine(zlib.crc32(a), zlib.crc32(b), b.length)).toBe(whole);
      }),
      { numRuns: 500 },
    );
  });

  it('joins pieces in any order into one gzip member that gunzip reads as the texts in that order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 50 }), fc.constantFrom('', ',', '{"a":1}'.repeat(2000))), { maxLength: 12 }), async (texts) => {
        const joiner = new GzipJoiner();
        const pieces = await Promise.all(texts.map((t) => deflatePiece(Buffer.from(t, 'utf8'))));
        const file = Buffer.concat([joiner.header(), ...pieces.map((p) => joiner.piece(p)), joiner.end()]);
        expect(zlib.gunzipSync(file).toString('utf8')).toBe(texts.join(''));
      }),
      { numRuns: 200 },
    );
  });

  it('gives the same bytes for the same text (so a reused piece equals a fresh one)', async () => {
    const text = '{"market_hash_name":"AK-47 | Redline (Field-Tested)","markets":[]}';
    expect(Buffer.compare((await deflatePiece(Buffer.from(text))).deflated, (await deflatePiece(Buffer.from(text))).deflated)).toBe(0);
  });
});
