/**
 * The streaming reader behind the bulk sources: chunk boundaries anywhere (even inside a UTF-8 character or a
 * number), numbers kept as source text, small top-level fields reported, everything else skipped, and every
 * whole-body failure an UpstreamError('format').
 */
import { describe, expect, it } from 'vitest';
import { readJsonListing, type ListingEvent, type ListingShape } from '../../src/collectors/sources/bulk-json.js';

/** A Response whose body arrives `size` bytes at a time. */
function chunked(text: string | Uint8Array, size: number, contentType = 'application/json'): Response {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + size));
      at += size;
    },
  });
  return new Response(body, { headers: { 'content-type': contentType } });
}

async function read(res: Response, shape: ListingShape) {
  const fields: Record<string, unknown> = {};
  const items: { key: string | number; value: unknown }[] = [];
  const events: ListingEvent['kind'][] = [];
  for await (const ev of readJsonListing(res, shape)) {
    events.push(ev.kind);
    if (ev.kind === 'field') fields[ev.key] = ev.value;
    else items.push(...ev.items);
  }
  return { fields, items, events };
}

const DOC =
  '{"success":true,"meta":{"deep":[{"x":[1,2,{"y":"z"}]}],"n":1e400},"items":[' +
  '{"name":"★ Karambit | Doppler (Factory New)","min":0.10000000000000000001,"count":3,"tags":["a",{"b":null}]},' +
  '"bare string",12.50,' +
  '{"name":"AK-47 | Redline (Field-Tested)","min":1234567890123456789012,"count":0}],"msg":"ok"}';

describe('readJsonListing', () => {
  it('streams the listing whatever the chunk size, numbers as their exact source text', async () => {
    for (const size of [1, 2, 3, 7, 64, 1 << 16]) {
      const { fields, items } = await read(chunked(DOC, size), { label: 't', listKey: 'items', fields: ['success', 'msg'] });
      expect(fields, `chunk ${size}`).toEqual({ success: true, msg: 'ok' });
      expect(items, `chunk ${size}`).toEqual([
        { key: 0, value: { name: '★ Karambit | Doppler (Factory New)', min: '0.10000000000000000001', count: '3', tags: ['a', { b: null }] } },
        { key: 1, value: 'bare string' },
        { key: 2, value: '12.50' },
        { key: 3, value: { name: 'AK-47 | Redline (Field-Tested)', min: '1234567890123456789012', count: '0' } },
      ]);
    }
  });

  it('reports a field before the items when it comes first, so an error flag stops the read early', async () => {
    const { events } = await read(chunked('{"success":false,"items":[1,2,3]}', 1), { label: 't', listKey: 'items', fields: ['success'] });
    expect(events[0]).toBe('field');
  });

  it('reads a listing keyed by name, and a root array', async () => {
    const keyed = await read(chunked('{"items":{"A | B (Field-Tested)":{"price":"1.5"},"C":{"price":"2"}}}', 5), {
      label: 't',
      listKey: 'items',
      listKind: 'object',
    });
    expect(keyed.items).toEqual([
      { key: 'A | B (Field-Tested)', value: { price: '1.5' } },
      { key: 'C', value: { price: '2' } },
    ]);
    const root = await read(chunked('[{"a":1},{"a":2}]', 4), { label: 't', listKey: null });
    expect(root.items.map((i) => i.value)).toEqual([{ a: '1' }, { a: '2' }]);
  });

  const failures: [string, Response, ListingShape][] = [
    ['HTML content type', chunked('<html></html>', 100, 'text/html; charset=utf-8'), { label: 't', listKey: 'items' }],
    ['HTML served as JSON', chunked('<!DOCTYPE html><html>', 100), { label: 't', listKey: 'items' }],
    ['cut off', chunked(DOC.slice(0, 120), 16), { label: 't', listKey: 'items' }],
    ['empty', chunked('', 16), { label: 't', listKey: 'items' }],
    ['missing listing', chunked('{"success":true,"data":[]}', 16), { label: 't', listKey: 'items' }],
    ['listing of the wrong kind', chunked('{"items":{"a":1}}', 16), { label: 't', listKey: 'items' }],
    ['root of the wrong kind', chunked('[1,2]', 16), { label: 't', listKey: 'items' }],
    ['trailing data', chunked('{"items":[]} {"items":[]}', 4), { label: 't', listKey: 'items' }],
    ['not UTF-8', chunked(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 3), { label: 't', listKey: 'items' }],
  ];
  for (const [what, res, shape] of failures) {
    it(`rejects ${what} as UpstreamError('format')`, async () => {
      await expect(read(res, shape)).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format' });
    });
  }
});
