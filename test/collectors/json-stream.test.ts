/**
 * The one streaming reader of the bulk adapters (src/collectors/sources/json-stream.ts): the same entries whatever
 * the chunking of the body (down to a byte: a multi-byte character or a number split across chunks), numbers as
 * their exact source text, a listing at the root or inside a wrapper object with its status fields checked before
 * later entries, a `__proto__` key as data, and every whole-body failure as UpstreamError('format').
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  JsonNumber,
  MAX_DEPTH,
  MAX_ENTRY_TOKENS,
  jsonEntries,
  statusFieldChecks,
  type JsonEntriesOptions,
  type JsonEntry,
  type JsonValue,
} from '../../src/collectors/sources/json-stream.js';
import { projectRoot } from '../../src/lib/paths.js';

const BUFF = fs.readFileSync(path.join(projectRoot, 'test/collectors/fixtures/csgotrader/buff163.json'));
const SKINPORT = fs.readFileSync(path.join(projectRoot, 'test/collectors/fixtures/skinport/items-docs-example.json'));

/** A response whose body arrives in chunks of `size` bytes; `cancelled` turns true when the reader lets it go early. */
function chunked(body: string | Uint8Array, size: number, type = 'application/json'): Response & { cancelled: () => boolean } {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  let at = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, at + size));
      at += size;
    },
    cancel() {
      cancelled = at < bytes.length;
    },
  });
  return Object.assign(new Response(stream, { headers: { 'Content-Type': type } }), { cancelled: () => cancelled });
}

type Opts = Omit<JsonEntriesOptions, 'what'>;

async function entries(res: Response, opts: Opts = { list: 'object' }): Promise<JsonEntry[]> {
  const out: JsonEntry[] = [];
  for await (const e of jsonEntries(res, { what: 'test', ...opts })) out.push(e);
  return out;
}

/** Entries as plain JSON, numbers as `#<source text>`. */
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (x instanceof JsonNumber ? `#${x.text}` : x)));

/** Expects `p` to fail as a whole: UpstreamError('format') with `reason` in its message. */
const expectFormatError = (p: Promise<unknown>, reason: RegExp) =>
  expect(p).rejects.toMatchObject({ name: 'UpstreamError', kind: 'format', message: expect.stringMatching(reason) });

/** A wrapped listing with a skipped deep field, numbers beyond a float's precision and range, and a trailing field. */
const WRAPPED =
  '{"success":true,"meta":{"deep":[{"x":[1,2,{"y":"z"}]}],"n":1e400},"items":[' +
  '{"name":"★ Karambit | Doppler (Factory New)","min":0.10000000000000000001,"count":3,"tags":["a",{"b":null}]},' +
  '"bare string",12.50,' +
  '{"name":"AK-47 | Redline (Field-Tested)","min":1234567890123456789012,"count":0}],"msg":"ok"}';

describe('jsonEntries: chunking and values', () => {
  it('gives the same entries of a root object for any chunking, a byte at a time included', async () => {
    const whole = await entries(chunked(BUFF, BUFF.length));
    expect(whole).toHaveLength(35);
    for (const size of [1, 3, 7, 64, 1000]) expect(plain(await entries(chunked(BUFF, size))), `chunk ${size}`).toEqual(plain(whole));
    const doppler = whole.find((e) => e.key === '★ Butterfly Knife | Doppler (Factory New)')!;
    expect(plain(doppler.value)).toMatchObject({ starting_at: { price: '#1041.22', doppler: { Sapphire: '#19995.0', Emerald: 'null' } } });
  });

  it('splits a literal multi-byte character across chunks without harm (root array)', async () => {
    // The Skinport sample's ★ is 3 bytes in UTF-8.
    for (const size of [1, 2]) {
      const names = (await entries(chunked(SKINPORT, size), { list: 'array' })).map((e) => [e.key, (e.value as { market_hash_name: string }).market_hash_name]);
      expect(names).toEqual([
        [0, 'AK-47 | Aquamarine Revenge (Battle-Scarred)'],
        [1, '★ M9 Bayonet | Fade (Factory New)'],
      ]);
    }
  });

  it('streams a listing inside a wrapper for any chunking: numbers as exact source text, other keys skipped, fields checked', async () => {
    for (const size of [1, 2, 3, 7, 64, 1 << 16]) {
      const seen: Record<string, unknown> = {};
      const fields = { success: (v: JsonValue) => void (seen.success = v), msg: (v: JsonValue) => void (seen.msg = v) };
      const got = await entries(chunked(WRAPPED, size), { list: 'array', listKey: 'items', fields });
      expect(seen, `chunk ${size}`).toEqual({ success: true, msg: 'ok' });
      expect(plain(got), `chunk ${size}`).toEqual([
        { key: 0, value: { name: '★ Karambit | Doppler (Factory New)', min: '#0.10000000000000000001', count: '#3', tags: ['a', { b: null }] } },
        { key: 1, value: 'bare string' },
        { key: 2, value: '#12.50' },
        { key: 3, value: { name: 'AK-47 | Redline (Field-Tested)', min: '#1234567890123456789012', count: '#0' } },
      ]);
    }
  });

  it('reads an object of items inside a wrapper, without taking an item named `error` for an error object', async () => {
    const got = await entries(chunked('{"items":{"A | B (Field-Tested)":{"price":"1.5"},"error":{"price":2}},"currency":"USD"}', 5), { list: 'object', listKey: 'items' });
    expect(plain(got)).toEqual([
      { key: 'A | B (Field-Tested)', value: { price: '1.5' } },
      { key: 'error', value: { price: '#2' } },
    ]);
  });

  it('keeps a `__proto__` key as data, never as a prototype, and never looks a wrapper key up on a prototype', async () => {
    const [e] = await entries(chunked('{"__proto__": {"price": 1, "__proto__": {"polluted": true}}}', 5));
    expect(e!.key).toBe('__proto__');
    const v = e!.value as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(['price', '__proto__']);
    expect(Object.keys(v.__proto__ as object)).toEqual(['polluted']);
    expect('polluted' in v).toBe(false);
    expect('toString' in v).toBe(false); // nothing inherited: a field check by `in` sees only the upstream's keys
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const wrapped = await entries(chunked('{"toString":1,"__proto__":{"a":1},"constructor":[],"items":[1]}', 3), { list: 'array', listKey: 'items', fields: {} });
    expect(plain(wrapped)).toEqual([{ key: 0, value: '#1' }]);
  });

  it('stopping early lets the rest of the body go', async () => {
    const res = chunked(BUFF, 256);
    for await (const _e of jsonEntries(res, { what: 'test', list: 'object' })) break;
    expect(res.cancelled()).toBe(true);
  });
});

describe('jsonEntries: wrapper status fields', () => {
  const opts = (status?: string): Opts => ({ list: 'array', listKey: 'items', fields: statusFieldChecks('test', { status }) });

  it('fails on success false, an error or another status before handing on a later entry', async () => {
    const cases: [string, RegExp, string?][] = [
      ['{"success":false,"msg":"Too many requests","items":[1,2,3]}', /success=false/],
      ['{"success":true,"error":"Bad KEY","items":[1]}', /error "Bad KEY"/],
      ['{"status":"error","items":[1]}', /status="error"/, 'success'],
    ];
    for (const [body, reason, status] of cases) {
      const handed: JsonEntry[] = [];
      const read = (async () => {
        for await (const e of jsonEntries(chunked(body, 1), { what: 'test', ...opts(status) })) handed.push(e);
      })();
      await expectFormatError(read, reason);
      expect(handed, body).toEqual([]);
    }
  });

  it('accepts success true, a falsy error, the expected status, and absent fields', async () => {
    for (const body of ['{"success":true,"error":null,"status":"success","items":[1]}', '{"error":"","items":[1]}', '{"items":[1]}']) {
      expect(await entries(chunked(body, 4), opts('success')), body).toHaveLength(1);
    }
  });
});

describe('jsonEntries: whole-body failures', () => {
  const wrapped: Opts = { list: 'array', listKey: 'items' };
  const cases: [string, string | Uint8Array, Opts, RegExp, string?][] = [
    ['HTML content type', '{"a": 1}', { list: 'object' }, /HTML instead of JSON/, 'text/html; charset=utf-8'],
    ['HTML served as JSON', '<!DOCTYPE html><html>', { list: 'array' }, /not valid JSON/],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), { list: 'object' }, /not valid JSON/],
    ['an empty body', '', wrapped, /empty body/],
    ['a body cut off inside an entry', WRAPPED.slice(0, 120), wrapped, /truncated/],
    ['a body cut off after a whole entry', '{"a": {"price": 1}, ', { list: 'object' }, /truncated/],
    ['a wrapper cut off after its listing', '{"items":[1,2]', wrapped, /truncated/],
    ['data after the end', '{"items":[]} {"items":[]}', wrapped, /not valid JSON/],
    ['a top-level scalar', '"Service Unavailable"', { list: 'array' }, /expected a JSON array at the top, found a string/],
    ['a root of the wrong kind', '[1,2]', wrapped, /expected a JSON object at the top, found array/],
    ['an error object where a list belongs', '{"success":false,"error":"Internal error"}', { list: 'array' }, /error object instead of the data: .*Internal error/],
    ['an error key in an object of items', '{"errors":[{"message":"Invalid currency"}]}', { list: 'object' }, /error object.*Invalid currency/],
    ['a missing listing (renamed)', '{"success":true,"data":[]}', wrapped, /no "items" in the response/],
    ['a listing of the wrong kind', '{"items":{"a":1}}', wrapped, /"items" is not a JSON array, found object/],
    ['an entry nested too deep', `{"a": ${'['.repeat(MAX_DEPTH + 1)}${']'.repeat(MAX_DEPTH + 1)}}`, { list: 'object' }, /nested deeper than 16/],
    ['an entry of too many tokens', `[[${'1,'.repeat(MAX_ENTRY_TOKENS)}1]]`, { list: 'array' }, /more than 100000 tokens/],
    ['a checked field nested too deep', `{"error": ${'['.repeat(MAX_DEPTH + 1)}${']'.repeat(MAX_DEPTH + 1)}, "items": []}`, { ...wrapped, fields: statusFieldChecks('test') }, /nested deeper/],
  ];
  for (const [what, body, opts, reason, type] of cases) {
    it(`fails on ${what}`, async () => {
      await expectFormatError(entries(chunked(body, 3, type), opts), reason);
    });
  }

  it('a skipped wrapper value is not built, however deep', async () => {
    const deep = `{"meta": ${'['.repeat(MAX_DEPTH * 4)}${']'.repeat(MAX_DEPTH * 4)}, "items": [1]}`;
    expect(await entries(chunked(deep, 7), wrapped)).toHaveLength(1);
  });
});
