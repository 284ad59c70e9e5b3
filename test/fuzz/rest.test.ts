/**
 * Contract fuzzing of every operation in /openapi.json (`npm run test:fuzz`): FUZZ_RUNS generated
 * requests per path and method (default 1000), mixing valid, boundary and invalid parameters and
 * bodies, callers of every kind, and a rate-limited replica for some of them. Each answer must be
 * what the document promises for it (see harness.ts `sendDocumented`), and the status must be the one
 * the document's rules give for that request (generators.ts: the oracle).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/app.js';
import { currentSequence } from '../../src/quotes/changes.js';
import { encodeSearchCursor, queryProblem, searchWords } from '../../src/search/query.js';
import { searchCursorProblem } from '../../src/validation/params.js';
import {
  FUZZ_RUNS,
  FUZZ_SEED,
  QUOTED_NAMES,
  call,
  credentialHeaders,
  describeRequest,
  fuzzTarget,
  record,
  report,
  sendDocumented,
  sentFor,
  type CallerKind,
  type Expectation,
  type FuzzRequest,
  type FuzzTarget,
} from './harness.js';
import {
  DOC,
  anyText,
  aroundBounds,
  bodyProblem,
  documentedOperations,
  edgeDay,
  encodeValue,
  encodingArb,
  ofLength,
  parameterProblems,
  queryArb,
  queryString,
  templateOf,
  withInserted,
} from './generators.js';

let t: FuzzTarget;
const started = performance.now();

/** The change sequence after the target's setup (nothing changes quotes during the run). */
let changeSeq = 0n;

beforeAll(async () => {
  console.log(`fuzz (REST): FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}`);
  t = await fuzzTarget();
  changeSeq = await currentSequence(t.db);
});
afterAll(async () => {
  console.log(report('fuzz (REST)', (performance.now() - started) / 1000));
  await t?.close();
});

const CALLERS: CallerKind[] = ['poor', 'unsynced', 'disabled', 'scoped', 'revoked', 'machine', 'unknown', 'malformed', 'none'];
const callerArb: fc.Arbitrary<CallerKind> = fc.oneof({ arbitrary: fc.constant<CallerKind>('rich'), weight: 12 }, { arbitrary: fc.constantFrom(...CALLERS), weight: 5 });

/** Items with quotes per app id; apps with an export snapshot. */
const quoted = new Map<string, string[]>([
  ['730', QUOTED_NAMES],
  ['570', ['Arcana']],
]);

const MARKET_CODES = ['BUFF163', 'STEAM', 'SKINPORT', 'CSCP', 'CSFLOAT', 'buff163', 'Buff163', 'A'.repeat(32), 'A'.repeat(33), '_', '0', '', ' ', 'BUFF 163', 'ÄÖ', 'B\u0000', '😀', 'CS-CP'];
const marketsText = fc.oneof(
  {
    arbitrary: fc
      .tuple(
        fc.array(fc.constantFrom(...MARKET_CODES), { maxLength: 6 }),
        fc.constantFrom(',', ', ', ' ,', ' , ', ',\t', ',\u00a0', ',,', '\u3000,'),
        fc.constantFrom('', ' ', ',', '\u00a0', '\n'),
      )
      .map(([codes, sep, pad]) => pad + codes.join(sep) + pad),
    weight: 6,
  },
  { arbitrary: anyText, weight: 2 },
  { arbitrary: fc.constantFrom(1000, 20_000).map((n) => Array.from({ length: n }, (_, i) => MARKET_CODES[i % 4]).join(',')), weight: 1 },
);

/** Cursors of GET /catalogue/items: of the searches `redline` and `ak-47 redline ft` (app 730), and of app 570. */
const SEARCH_CURSORS = [
  encodeSearchCursor('730', searchWords('redline'), { keyLength: 20, name: 'AWP | Redline (Field-Tested)' }),
  encodeSearchCursor('730', searchWords('ak-47 redline ft'), { keyLength: 22, name: 'AK-47 | Redline (Field-Tested)' }),
  encodeSearchCursor('570', searchWords('redline'), { keyLength: 0, name: '' }),
];

/** Values per parameter name (the document's names): `valid` ones and `any` (valid, boundary or invalid). */
function pools(): { valid: Record<string, fc.Arbitrary<string>>; any: Record<string, fc.Arbitrary<string>> } {
  const names = [...QUOTED_NAMES, 'Arcana', 'Unknown item', 'AK-47 | Redline (Field-Tested) ', 'ak-47 | redline (field-tested)'];
  const validCodes = fc.array(fc.constantFrom('BUFF163', 'STEAM', 'SKINPORT', 'CSCP', 'CSFLOAT', 'A'.repeat(32), '_', '0'), { minLength: 1, maxLength: 5 });
  const valid: Record<string, fc.Arbitrary<string>> = {
    market_hash_name: fc.oneof({ arbitrary: fc.constantFrom(...names), weight: 5 }, { arbitrary: fc.integer({ min: 1, max: 255 }).chain(ofLength), weight: 1 }),
    app_id: fc.oneof({ arbitrary: fc.constantFrom('730', '730', '730', '570', '440'), weight: 5 }, { arbitrary: fc.integer({ min: 1, max: 16 }).chain(ofLength), weight: 1 }),
    markets: fc.tuple(validCodes, fc.constantFrom(',', ', ', ' , ', ',\t', ',\u00a0', '\u3000,')).map(([codes, sep]) => codes.join(sep)),
    side: fc.constantFrom('ask', 'bid', 'mid', 'all'),
    include_deprecated: fc.constantFrom('true', 'false'),
    search: fc.oneof({ arbitrary: fc.constantFrom('US', 'usd', 'u', 'CNY', '', '%', '_', 'Ü'), weight: 5 }, { arbitrary: fc.integer({ min: 0, max: 64 }).chain(ofLength), weight: 1 }),
    code: fc.oneof({ arbitrary: fc.constantFrom(...t.websiteCodes), weight: 5 }, { arbitrary: fc.constantFrom('NOPE', 'buff163', 'x'.repeat(64), '😀'.repeat(64)), weight: 1 }),
    currency_id: fc.oneof({ arbitrary: fc.constantFrom(...t.currencyIds.map(String)), weight: 5 }, { arbitrary: fc.constantFrom('0', '2147483647', '007', '99999'), weight: 1 }),
    'if-none-match': fc.constantFrom(...t.etags, ...t.etags.map((e) => `W/${e}`), '*', `"x", ${t.etags[0]}`, '"x"', 'W/"x"', ''),
    // GET /prices/routes
    currency: fc.constantFrom('USD', 'EUR', 'CNY', ...t.currencyCodes),
    buy_on: fc.tuple(validCodes, fc.constantFrom(',', ', ', ' , ')).map(([codes, sep]) => codes.join(sep)),
    sell_on: fc.tuple(validCodes, fc.constantFrom(',', ', ', ' , ')).map(([codes, sep]) => codes.join(sep)),
    fund: fc.constantFrom('cash', 'balance'),
    payout: fc.constantFrom('cash', 'balance'),
    min_credibility: fc.constantFrom('0', '0.5', '1', '1.0', '0.000001', '0.99'),
    // GET /prices/routes and /prices/routes/top (a profile naming a market twice, or over 64 markets, is refused by the answer: see expectValid)
    min_quantity: fc.constantFrom('0', '1', '2', '5', '999999', '1000000', '000001'),
    include_unpriced: fc.constantFrom('true', 'false'),
    fee_profile: fc
      .array(
        fc.tuple(
          fc.constantFrom('C5GAME', 'STEAM', 'BITSKINS', 'YOUPIN', 'A'.repeat(32), '_', 'NOPE'),
          fc.subarray(['deposit', 'sale', 'withdraw'], { minLength: 1 }),
          fc.constantFrom('0', '0.05', '0.999999', '0.1', '0.000001'),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((parts) => parts.map(([m, ps, r]) => `${m}:${ps.map((p) => `${p}=${r}`).join(',')}`).join(';')),
    // GET /prices/routes/top
    min_margin: fc.constantFrom('0', '0.05', '-1', '-1.0', '-0.5', '1000', '1000.000000', '999.999999', '12'),
    // GET /websites/{code}/fee-schedule
    as_of: fc.constantFrom('2026-11-23', '1970-01-01', '2024-02-29', '2000-01-01', '2000-02-29', '2099-12-31', '9999-12-31'),
    // GET /prices/history (a range the interval does not allow is refused by the answer: see expectValid)
    from: fc.constantFrom('2026-07-01', '2026-07-16', '2025-07-17', '2021-07-26', '2024-02-29', '1970-01-01', '2099-12-31', '9999-12-31', '1972-02-29'),
    to: fc.constantFrom('2026-07-31', '2026-07-16', '2026-01-01', '2024-02-19', '2099-12-31', '1970-01-01', '9999-12-31', '2000-02-29'),
    interval: fc.constantFrom('day', 'week', 'month'),
    // GET /prices/changes (a cursor beyond the current sequence, or a limit outside 1-1000, is refused by the answer)
    since: fc.constantFrom('0', '1', '2', '3', '007', '999', '9223372036854775807', '9223372036854775808', '9999999999999999999'),
    limit: fc.constantFrom('1', '2', '500', '1000', '0', '1001', '0001'),
    // GET /catalogue/items (a q without a letter or digit or with over 32 words, a limit outside 1-50 and a cursor of
    // another search are refused by the answer: see expectValid)
    q: fc.oneof(
      { arbitrary: fc.constantFrom('redline', 'ak-47 redline ft', 'REDLINE ak47 field tested', '★ karambit fn', 'st', 'case', 'Recoil Case', '龍', 'x', 'no such thing', '| - ()'), weight: 5 },
      { arbitrary: fc.integer({ min: 1, max: 255 }).chain(ofLength), weight: 1 },
    ),
    cursor: fc.constantFrom(...SEARCH_CURSORS),
    // GET /prices/export (an extension: docs/export.md)
    format: fc.constantFrom('json', 'ndjson'),
    // DELETE /alerts/{id}, GET /alerts/{id}/deliveries (docs/alerts.md): alert ids no fuzz caller owns (404)
    id: fc.oneof({ arbitrary: fc.uuid(), weight: 5 }, { arbitrary: fc.constantFrom('3f0c1f4e-8a57-4a4e-9d0b-6f1f6a2f9a10', '00000000-0000-0000-0000-000000000000'), weight: 1 }),
  };
  const invalid: Record<string, fc.Arbitrary<string>> = {
    market_hash_name: fc.oneof(aroundBounds(1, 255), withInserted(fc.constantFrom(...names), fc.constantFrom('\u0000', '\ud800', '\udc00', '\u200b'))),
    app_id: fc.oneof(fc.constantFrom('0730', '730 ', ' 730', ''), aroundBounds(1, 16)),
    markets: marketsText,
    side: fc.constantFrom('ASK', 'Ask', ' ask', 'ask ', 'both', '', 'all,ask', 'mid\u0000'),
    include_deprecated: fc.constantFrom('TRUE', 'True', '1', '0', 'yes', '', ' true', 'false\u0000'),
    search: aroundBounds(0, 64),
    code: fc.oneof(aroundBounds(1, 64), fc.constantFrom(...t.websiteCodes.map((c) => c.toLowerCase()))),
    currency_id: fc.oneof(
      fc.constantFrom('2147483648', '-1', '-0', '+1', '1.0', '1e3', '0x1A', ' 1', '1 ', '00000000001', '9999999999', '99999999999', '9'.repeat(400), 'abc', '١٢٣', '1,2'),
      fc.integer().map(String),
    ),
    'if-none-match': fc.oneof(fc.string({ unit: 'binary-ascii', maxLength: 60 }), fc.constantFrom(4096, 4097, 20_000).map((n) => `"${'e'.repeat(n - 2)}"`)),
    // Well-formed but not official (XXX, ZZZ) is refused by the answer itself, not the parameter rules (see expectValid).
    currency: fc.constantFrom('usd', 'Usd', 'U', '', ' USD', 'USD ', 'U$D', 'A'.repeat(17), 'XXX', 'ZZZ', 'USD\u0000', '€'),
    buy_on: marketsText,
    sell_on: marketsText,
    fund: fc.constantFrom('CASH', 'card', '', 'cash ', 'balance,cash'),
    payout: fc.constantFrom('BALANCE', 'bank', '', ' cash'),
    min_credibility: fc.constantFrom('2', '-0', '-0.5', '1.5', '.5', '0.', '1e-3', 'NaN', '', ' 0', '0x1', '1.01'),
    min_quantity: fc.constantFrom('-1', '1000001', '1.5', '', ' 1', '1e3', 'x', '0000001', '9'.repeat(20)),
    include_unpriced: fc.constantFrom('TRUE', '1', '', 'yes', ' false'),
    fee_profile: fc.constantFrom('', 'C5GAME', 'C5GAME:', 'C5GAME:sale', 'C5GAME:sale=1', 'C5GAME:sale=0.05;', 'c5game:sale=0.05', 'C5GAME:fee=0.05', 'C5GAME:sale=-0.1', 'C5GAME:sale=0.1234567', 'C5GAME:sale=.5', 'C5GAME:sale=0.05,sale=0.06', 'C5GAME:sale=0.05\u0000'),
    min_margin: fc.constantFrom('-2', '1001', '1000.1', '-1.5', '0.1234567', '', '5%', '.5', '1e-2', ' 0', '+1', '-'),
    // Malformed days, and days at and beyond the supported range (edgeDay: years 0000-0099, 9999, 10000, 29 February).
    as_of: fc.oneof(fc.constantFrom('2026-02-30', '2025-02-29', '2026-13-01', '2026-00-10', '26-11-23', '2026-11-23T00:00:00Z', 'today', '', ' 2026-11-23', '2026/11/23', '20261123'), edgeDay),
    from: fc.oneof(fc.constantFrom('2026-02-30', '2026-13-01', '26-11-23', '2026-11-23T00:00:00Z', 'yesterday', '', ' 2026-07-01'), edgeDay),
    to: fc.oneof(fc.constantFrom('2025-02-29', '2026-00-10', '2026/07/31', '20260731', 'now', ''), edgeDay),
    interval: fc.constantFrom('DAY', 'Day', 'hour', 'year', '', ' day', 'week,month'),
    since: fc.constantFrom('-1', 'abc', '', ' 1', '1 ', '1.0', '1e3', '0x1', '9'.repeat(20), '١٢٣', '+1'),
    limit: fc.constantFrom('-1', '', '1.5', 'x', '10000', ' 5', '1e2'),
    q: fc.oneof(aroundBounds(1, 255), fc.constantFrom('', 'ak\u000047', Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '))),
    cursor: fc.constantFrom('', 'not a cursor', '%%%', 'A'.repeat(1401), Buffer.from('[1,"x",1,"y"]').toString('base64url')),
    format: fc.constantFrom('JSON', 'NDJSON', 'Json', '', 'csv', ' json', 'ndjson ', 'json,ndjson', 'ndjson\u0000'),
    id: fc.oneof(fc.constantFrom('not-a-uuid', '3F0C1F4E-8A57-4A4E-9D0B-6F1F6A2F9A10', '3f0c1f4e8a574a4e9d0b6f1f6a2f9a10', '..', ' ', '1'), aroundBounds(1, 64)),
  };
  const any = Object.fromEntries(
    Object.keys(valid).map((name) => [
      name,
      fc.oneof({ arbitrary: valid[name]!, weight: 6 }, { arbitrary: invalid[name]!, weight: 3 }, { arbitrary: name === 'code' || name === 'currency_id' ? anyText.filter((s) => s !== '') : anyText, weight: 2 }),
    ]),
  );
  return { valid, any };
}

/** A header value a client can send (no NUL, CR or LF; Latin-1 only). */
const headerSafe = (s: string) => s.replace(/[\u0000\r\n]/g, '').replace(/[^\u0000-\u00ff]/g, '?');

// ---------------------------------------------------------------------------------------------
// POST bodies

const jsonish = (leaf: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { arbitrary: leaf, weight: 8 },
    { arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, '', [], {}), weight: 2 },
    { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 1 },
  );

const nameValue = fc.oneof(
  { arbitrary: fc.constantFrom(...QUOTED_NAMES, 'Arcana', 'Unknown'), weight: 6 },
  { arbitrary: aroundBounds(1, 255), weight: 1 },
  { arbitrary: anyText, weight: 2 },
  { arbitrary: fc.constantFrom(null, 1, true, ['x'], { a: 1 }), weight: 1 },
);
/** 0, 1, 2..5, around 100 and 1000, far over: names repeat to reach the count (duplicates are allowed). */
const namesValue = fc.oneof(
  {
    arbitrary: fc
      .tuple(fc.array(nameValue, { minLength: 1, maxLength: 5 }), fc.oneof({ arbitrary: fc.integer({ min: 1, max: 5 }), weight: 6 }, { arbitrary: fc.constantFrom(0, 99, 100, 101, 999, 1000, 1001, 5000), weight: 2 }))
      // A name far over its bound (aroundBounds goes up to ~70k characters) repeated 5,000 times would be a body of
      // hundreds of MB that JSON.stringify cannot make (seed 2012573112): such names are sent a few at a time;
      // bodies over the 2 MiB limit are the 'huge' form's.
      .map(([names, n]) => Array.from({ length: names.some((x) => typeof x === 'string' && x.length > 1000) ? Math.min(n, 5) : n }, (_, i) => names[i % names.length])),
    weight: 10,
  },
  { arbitrary: fc.constantFrom('Recoil Case', 1, null, {}, true), weight: 1 },
);
const marketsValue = fc.oneof(
  { arbitrary: fc.array(fc.constantFrom(...MARKET_CODES), { maxLength: 5 }), weight: 6 },
  { arbitrary: fc.constant(null), weight: 1 },
  { arbitrary: fc.constantFrom('BUFF163', 'BUFF163,STEAM', 1, {}, [1], [null], [['BUFF163']]), weight: 1 },
  { arbitrary: fc.constantFrom(1000, 50_000).map((n) => Array.from({ length: n }, (_, i) => MARKET_CODES[i % 4])), weight: 1 },
);
const batchObject = fc.record(
  {
    market_hash_names: namesValue,
    app_id: jsonish(fc.constantFrom('730', '570', '', '7'.repeat(16), '7'.repeat(17), 'a\u0000')),
    markets: marketsValue,
    side: jsonish(fc.constantFrom('ask', 'bid', 'mid', 'all', 'ASK', '', 'both')),
    unknown: fc.dictionary(fc.constantFrom('extra', '__proto__', 'constructor', 'Market_hash_names', 'market_hash_names ', 'toString', ''), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
  },
  { requiredKeys: [] },
).map(({ unknown, ...known }) => {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(unknown ?? {})) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return Object.assign(o, known);
});

/** POST /alerts (docs/alerts.md): leaves valid, boundary and invalid, any key missing or unknown. */
const ALERT_URLS = ['https://example.com/hook', 'https://hooks.example.com:8443/a?b=c', 'http://127.0.0.1:9/x', 'https://u:p@example.com/', 'ftp://example.com/', 'not a url', 'https://', `https://example.com/${'a'.repeat(2100)}`, ''];
const alertObject = fc
  .record(
    {
      kind: jsonish(fc.constantFrom('price', 'route_margin', 'PRICE', 'volume', '')),
      market_hash_name: nameValue,
      app_id: jsonish(fc.constantFrom('730', '570', '', '7'.repeat(17))),
      market_code: jsonish(fc.constantFrom(...MARKET_CODES)),
      side: jsonish(fc.constantFrom('ask', 'bid', 'mid', 'all', 'ASK', '')),
      direction: jsonish(fc.constantFrom('above', 'below', 'up', '')),
      level: jsonish(fc.constantFrom('95', '0.0000000001', '0', '-1', '1e3', '1.', '.5', '1'.repeat(29), '1.12345678901', 'NaN', '10,5', ' 1')),
      buy_market: jsonish(fc.constantFrom(...MARKET_CODES)),
      sell_market: jsonish(fc.constantFrom(...MARKET_CODES)),
      margin: jsonish(fc.constantFrom('0.05', '-0.5', '-1', '100', '100.000001', '1000', '0.1234567', '5%', '')),
      fund: jsonish(fc.constantFrom('cash', 'balance', 'card')),
      payout: jsonish(fc.constantFrom('cash', 'balance', 'bank')),
      url: jsonish(fc.constantFrom(...ALERT_URLS)),
      unknown: fc.dictionary(fc.constantFrom('extra', '__proto__', 'constructor', 'Kind', 'secret'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    },
    { requiredKeys: [] },
  )
  .map(({ unknown, ...known }) => {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(unknown ?? {})) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
    return Object.assign(o, known);
  });

type BodyForm = 'json' | 'pretty' | 'truncated' | 'garbage' | 'trailing' | 'bom' | 'dupkey' | 'latin1' | 'utf16' | 'badutf8' | 'deep' | 'empty' | 'blank' | 'toplevel' | 'huge';
const bodyFormArb = fc.oneof(
  { arbitrary: fc.constant<BodyForm>('json'), weight: 20 },
  { arbitrary: fc.constantFrom<BodyForm>('pretty', 'truncated', 'garbage', 'trailing', 'bom', 'dupkey', 'latin1', 'utf16', 'badutf8', 'deep', 'empty', 'blank', 'toplevel'), weight: 8 },
  { arbitrary: fc.constant<BodyForm>('huge'), weight: 1 },
);

/** Serialises a body object in one of the forms above (most of them not valid JSON). */
function serialise(value: unknown, form: BodyForm, n: number): string | Uint8Array {
  const json = JSON.stringify(value);
  switch (form) {
    case 'json':
      return json;
    case 'pretty':
      return JSON.stringify(value, null, 2);
    case 'truncated':
      return json.slice(0, n % Math.max(1, json.length));
    case 'garbage':
      return ['{', '}', '{"market_hash_names": [', "{'market_hash_names': ['x']}", '{"market_hash_names": ["x"],}', 'NaN', '// c\n{}', '{"a":1}{"b":2}'][n % 8]!;
    case 'trailing':
      return `${json} x`;
    case 'bom':
      return `\ufeff${json}`;
    case 'dupkey':
      return json.replace(/^\{/, '{"side":"sideways",');
    case 'latin1':
      return new Uint8Array(Buffer.from(json, 'latin1'));
    case 'utf16':
      return new Uint8Array(Buffer.from(json, 'utf16le'));
    case 'badutf8':
      return new Uint8Array(Buffer.concat([Buffer.from(json.slice(0, json.length >> 1)), Buffer.from([0xed, 0xa0, 0x80, 0xff]), Buffer.from(json.slice(json.length >> 1))]));
    case 'deep':
      return n % 2 === 0 ? '['.repeat(100_000) + ']'.repeat(100_000) : `{"market_hash_names": ${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    case 'empty':
      return '';
    case 'blank':
      return ' \n\t ';
    case 'toplevel':
      return JSON.stringify([null, 1, 'x', [value], true][n % 5]);
    case 'huge':
      return JSON.stringify({ market_hash_names: ['x'.repeat(MAX_BODY_BYTES - 22 + (n % 3))] });
  }
}

const CONTENT_TYPES = [
  'application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', null, 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/graphql',
];

/** The document's verdict on a body as bytes: 413 over the limit, else 422 problems or null. */
function bodyVerdict(template: string, body: string | Uint8Array): { tooLarge: boolean; problem: string | null } {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  if (bytes.byteLength > MAX_BODY_BYTES) return { tooLarge: true, problem: null };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { tooLarge: false, problem: 'not UTF-8' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { tooLarge: false, problem: 'not JSON' };
  }
  return { tooLarge: false, problem: bodyProblem(template, 'POST', value) };
}

// ---------------------------------------------------------------------------------------------
// Expectations

/**
 * 401 or 403 when the caller's credential cannot call this API-key operation (checked before the
 * parameters, README: order of checks); null for public operations and callers that may call it.
 */
function credentialVerdict(template: string, method: string, caller: CallerKind): Expectation | null {
  const op = DOC.paths[template]![method.toLowerCase()]!;
  if (!op.security || op.security.length === 0) return null;
  if (['none', 'malformed', 'unknown', 'revoked'].includes(caller)) return { statuses: [401], reason: `caller ${caller}` };
  if (caller === 'disabled' || caller === 'machine' || (caller === 'scoped' && op.operationId !== 'getMe')) return { statuses: [403], reason: `caller ${caller}` };
  return null;
}

/**
 * The statuses the document's rules allow for a request that is valid as far as parameters go:
 * public operations answer 200 (404 for an unknown code or id); API-key operations 401 for a missing,
 * malformed, unknown or revoked key, 403 for a disabled account, a key limited to other operations or
 * a service token, else the answer (404 for an item without quotes or an unsynced account), plus 402
 * for the poor account and 429 on the rate-limited replica.
 */
function expectValid(template: string, method: string, url: URL, headers: Headers, caller: CallerKind, limited: boolean): Expectation {
  const op = DOC.paths[template]![method.toLowerCase()]!;
  const q = url.searchParams;
  const seg = (i: number) => decodeURIComponent(url.pathname.split('/')[i]!);
  if (!op.security || op.security.length === 0) {
    if (op.operationId === 'getWebsite' || op.operationId === 'getFeeSchedule') {
      return t.websiteCodes.includes(seg(2)) ? { statuses: [200], reason: 'known code' } : { statuses: [404], reason: 'unknown code' };
    }
    if (op.operationId === 'getCurrency') {
      return t.currencyIds.includes(Number(seg(2))) ? { statuses: [200], reason: 'official currency' } : { statuses: [404], reason: 'no such official currency' };
    }
    if (op.operationId === 'getValuationAccuracy') {
      // Defaults: `to` yesterday, `from` 89 days before `to`; a reversed range or one over 366 days is 422.
      const to = q.get('to') ?? new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      const from = q.get('from') ?? new Date(Date.parse(to) - 89 * 86_400_000).toISOString().slice(0, 10);
      const span = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1;
      return from > to || span > 366 ? { statuses: [422], reason: 'reversed or too long range' } : { statuses: [200], reason: 'public, valid range' };
    }
    return { statuses: [200], reason: 'public, valid' };
  }
  const refused = credentialVerdict(template, method, caller);
  if (refused) return refused;
  const x = op['x-quotegate'];
  const extra = [...(caller === 'poor' && x.credit_cost > 0 ? [402] : []), ...(limited && x.rate_limit ? [429] : [])];
  const appId = q.get('app_id') ?? '730';
  let statuses: number[];
  switch (op.operationId) {
    case 'getMe':
      statuses = caller === 'unsynced' ? [404] : [200];
      break;
    case 'getPrices':
      statuses = (quoted.get(appId) ?? []).includes(q.get('market_hash_name')!) ? [200] : [404];
      break;
    case 'getRoutes': {
      // A profile naming a market twice is 422 (the parameter rules); then an item without quotes is 404; a
      // well-formed currency code without an official rate is then 422.
      const profile = q.get('fee_profile');
      const markets = profile === null ? [] : profile.split(';').map((p) => p.split(':')[0]);
      // A purpose given twice for one market is 422 too ("sale is given twice for C5GAME").
      const twice = profile !== null && profile.split(';').some((p) => { const purposes = (p.split(':')[1] ?? '').split(',').map((x) => x.split('=')[0]); return new Set(purposes).size !== purposes.length; });
      if (new Set(markets).size !== markets.length || twice) statuses = [422];
      else if (!(quoted.get(appId) ?? []).includes(q.get('market_hash_name')!)) statuses = [404];
      else statuses = t.currencyCodes.includes(q.get('currency')!) ? [200] : [422];
      break;
    }
    case 'getTopRoutes': {
      // Beyond the parameter patterns: limit 1-100, a profile naming a market twice, a currency without an official rate.
      const limit = q.get('limit');
      const profile = q.get('fee_profile');
      const markets = profile === null ? [] : profile.split(';').map((p) => p.split(':')[0]);
      // A purpose given twice for one market is 422 too ("sale is given twice for C5GAME").
      const twice = profile !== null && profile.split(';').some((p) => { const purposes = (p.split(':')[1] ?? '').split(',').map((x) => x.split('=')[0]); return new Set(purposes).size !== purposes.length; });
      const bad = (limit !== null && (Number(limit) < 1 || Number(limit) > 100)) || new Set(markets).size !== markets.length || twice || !t.currencyCodes.includes(q.get('currency')!);
      statuses = bad ? [422] : [200];
      break;
    }
    case 'getPriceHistory': {
      // The range is checked first (422: reversed or longer than the interval allows), then the item (404).
      const interval = (q.get('interval') ?? 'day') as 'day' | 'week' | 'month';
      const to = q.get('to') ?? new Date().toISOString().slice(0, 10);
      const max = { day: 366, week: 1830, month: 3660 }[interval];
      const from = q.get('from') ?? new Date(Date.parse(to) - (max - 1) * 86_400_000).toISOString().slice(0, 10);
      const span = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1;
      if (from > to || span > max) statuses = [422];
      else statuses = (quoted.get(appId) ?? []).includes(q.get('market_hash_name')!) ? [200] : [404];
      break;
    }
    case 'getPriceChanges': {
      // A cursor beyond the current sequence is 422 (nothing was pruned: no 410); limit 1-1000.
      const since = q.get('since');
      const limit = q.get('limit');
      const badLimit = limit !== null && (Number(limit) < 1 || Number(limit) > 1000);
      statuses = badLimit || (since !== null && BigInt(since) > changeSeq) ? [422] : [200];
      break;
    }
    case 'searchItems': {
      // The search's own rules beyond the parameter schema: q needs a letter or digit and at most 32 words, limit is
      // 1-50, a cursor must come from the same search (words and app id).
      const text = q.get('q')!;
      const limit = q.get('limit');
      const cursor = q.get('cursor');
      const bad = queryProblem(text) !== null || (limit !== null && (Number(limit) < 1 || Number(limit) > 50)) || (cursor !== null && searchCursorProblem(cursor, text, appId) !== null);
      statuses = bad ? [422] : [200];
      break;
    }
    case 'subscribePriceChanges': {
      // A cursor beyond the current sequence is 422 (nothing was pruned: no 410); otherwise the stream opens.
      const since = q.get('since') ?? headers.get('last-event-id');
      statuses = since !== null && BigInt(since) > changeSeq ? [422] : [200];
      break;
    }
    case 'exportPrices':
      statuses = quoted.has(appId) ? (headers.has('if-none-match') ? [200, 304] : [200]) : [404];
      break;
    case 'listAlertDeliveries': {
      // A limit outside 1-100 is 422; the fuzz callers own no alert, so any id is 404 (docs/alerts.md).
      const limit = q.get('limit');
      statuses = limit !== null && (Number(limit) < 1 || Number(limit) > 100) ? [422] : [404];
      break;
    }
    case 'deleteAlert':
      statuses = [404];
      break;
    default:
      statuses = [200];
  }
  return { statuses: [...statuses, ...extra], reason: `caller ${caller}, valid request${limited ? ', rate-limited replica' : ''}` };
}

// ---------------------------------------------------------------------------------------------
// One property per documented operation

interface Generated {
  request: FuzzRequest;
  caller: CallerKind;
}

/** A registration the service accepts (200), or 409 once the caller holds 50 alerts: known items and markets, https URLs. */
const validAlert = fc.oneof(
  fc.record(
    {
      kind: fc.constant('price'),
      market_hash_name: fc.constantFrom(...QUOTED_NAMES),
      market_code: fc.constantFrom('BUFF163', 'STEAM', 'SKINPORT'),
      side: fc.constantFrom('ask', 'bid'),
      direction: fc.constantFrom('above', 'below'),
      level: fc.constantFrom('95', '0.0000000001', '1234567890123456789012345678.5', '10.5'),
      url: fc.constantFrom('https://example.com/hook', 'https://hooks.example.com:8443/a?b=c'),
    },
    { requiredKeys: ['kind', 'market_hash_name', 'market_code', 'side', 'direction', 'level', 'url'] },
  ),
  fc.record(
    {
      kind: fc.constant('route_margin'),
      market_hash_name: fc.constantFrom(...QUOTED_NAMES),
      app_id: fc.constant('730'),
      buy_market: fc.constantFrom('BUFF163', 'STEAM'),
      sell_market: fc.constantFrom('SKINPORT', 'CSFLOAT'),
      margin: fc.constantFrom('0.05', '-0.5', '100', '0'),
      fund: fc.constantFrom('cash', 'balance'),
      payout: fc.constantFrom('cash', 'balance'),
      url: fc.constant('https://example.com/hook'),
    },
    { requiredKeys: ['kind', 'market_hash_name', 'buy_market', 'sell_market', 'margin', 'url'] },
  ),
);

/**
 * The answer's own rules of a registration whose body matches the document's schema (src/alerts/alerts.ts): an
 * https URL without credentials, a level above 0, a margin above -1 and at most 100, a known item and known markets,
 * two different markets. Null when none is broken.
 */
function alertRuleProblem(body: Record<string, unknown>): string | null {
  let u: URL;
  try {
    u = new URL(String(body.url));
  } catch {
    return 'url: not a URL';
  }
  if (u.protocol !== 'https:' || u.username !== '' || u.password !== '' || u.hostname === '') return 'url: not https, or with credentials';
  const appId = (body.app_id as string | undefined) ?? '730';
  if (!(quoted.get(appId) ?? []).includes(String(body.market_hash_name))) return 'market_hash_name: no such item';
  if (body.kind === 'price') {
    if (Number(body.level) <= 0) return 'level: not above 0';
    if (!t.websiteCodes.includes(String(body.market_code))) return 'market_code: unknown';
  } else {
    const m = Number(body.margin);
    if (!(m > -1 && m <= 100)) return 'margin: out of range';
    if (!t.websiteCodes.includes(String(body.buy_market)) || !t.websiteCodes.includes(String(body.sell_market))) return 'market: unknown';
    if (body.buy_market === body.sell_market) return 'sell_market: same as buy_market';
  }
  return null;
}

const validBatch = fc.record(
  {
    market_hash_names: fc
      .tuple(fc.array(fc.constantFrom(...QUOTED_NAMES, 'Arcana', 'Unknown'), { minLength: 1, maxLength: 5 }), fc.oneof({ arbitrary: fc.integer({ min: 1, max: 10 }), weight: 5 }, { arbitrary: fc.constantFrom(100, 101, 1000), weight: 1 }))
      .map(([names, n]) => Array.from({ length: n }, (_, i) => names[i % names.length])),
    app_id: fc.constantFrom('730', '570', '440'),
    markets: fc.option(fc.array(fc.constantFrom('BUFF163', 'STEAM', 'SKINPORT', 'CSCP', 'A'.repeat(32)), { minLength: 1, maxLength: 4 })),
    side: fc.constantFrom('ask', 'bid', 'mid', 'all'),
  },
  { requiredKeys: ['market_hash_names'] },
);

/**
 * Requests of one operation: about two in five built from valid values only (so the answers behind
 * validation are fuzzed too), the rest from any values, duplicated, bare or unknown parameters, and
 * bodies in any form; callers of every kind; one in ten sent to the rate-limited replica.
 */
function requestArb(template: string, method: string): fc.Arbitrary<Generated> {
  const op = DOC.paths[template]![method.toLowerCase()]!;
  const { valid, any } = pools();
  const params = op.parameters ?? [];
  const pathNames = params.filter((p) => p.in === 'path').map((p) => p.name);
  const queryParams = params.filter((p) => p.in === 'query');
  const headerNames = params.filter((p) => p.in === 'header').map((p) => p.name);
  const pathArb = (values: Record<string, fc.Arbitrary<string>>) =>
    fc.tuple(...pathNames.map((n) => fc.tuple(values[n] ?? anyText, encodingArb))).map((vals) => {
      let p = template;
      vals.forEach(([v, enc], i) => (p = p.replace(`{${pathNames[i]}}`, encodeValue(v, enc === 'plus' ? 'component' : enc))));
      return p;
    });
  const validQuery = fc
    .tuple(fc.tuple(...queryParams.map((p) => (p.required ? valid[p.name]! : fc.option(valid[p.name]!, { freq: 2 })))), encodingArb)
    .map(([vals, enc]) => queryString(vals.flatMap((v, i) => (v === null ? [] : [{ name: queryParams[i]!.name, value: v, encoding: enc }])), 0));
  const wildQuery = queryArb(queryParams.map((p) => p.name), Object.fromEntries(queryParams.map((p) => [p.name, any[p.name] ?? anyText])));
  const headerParams = (values: Record<string, fc.Arbitrary<string>>) => fc.tuple(...headerNames.map((n) => fc.option(values[n] ?? anyText, { freq: 2 })));
  const alerts = template === '/alerts';
  const wildBody = fc.tuple(alerts ? alertObject : batchObject, bodyFormArb, fc.nat(), fc.constantFrom(...CONTENT_TYPES)).map(([v, form, n, type]) => ({ body: serialise(v, form, n), type }));
  const validBody = (alerts ? validAlert : validBatch).map((v) => ({ body: JSON.stringify(v), type: 'application/json' as string | null }));
  const parts = (validMode: boolean) =>
    fc.record({
      path: pathArb(validMode ? valid : any),
      query: validMode ? validQuery : wildQuery,
      headerParams: headerParams(validMode ? valid : any),
      body: op.requestBody ? (validMode ? validBody : wildBody) : fc.constant(undefined),
    });
  return fc
    .record({
      parts: fc.oneof({ arbitrary: parts(true), weight: 2 }, { arbitrary: parts(false), weight: 3 }),
      caller: callerArb,
      spelling: fc.nat(),
      limited: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      slash: fc.integer({ min: 0, max: 19 }),
    })
    .map(({ parts: { path, query, headerParams, body }, caller, spelling, limited, slash }) => {
      const headers: [string, string][] = [...credentialHeaders(t, caller, spelling)];
      headerParams.forEach((v, i) => v !== null && headers.push([headerNames[i]!, headerSafe(v)]));
      if (body?.type) headers.push(['Content-Type', body.type]);
      const request: FuzzRequest = { method, target: `${path}${slash === 0 ? '/' : ''}${query}`, headers, limited };
      if (body) request.body = body.body;
      return { request, caller };
    })
    .filter(({ request }) => templateOf(new URL(`http://fuzz.test${request.target}`).pathname, method) === template);
}

async function runOne(template: string, method: string, g: Generated): Promise<void> {
  const url = new URL(`http://fuzz.test${g.request.target}`);
  const headers = new Headers(g.request.headers);
  const problems = parameterProblems(template, method, url, headers);
  let expected: Expectation | undefined;
  const verdict = g.request.body !== undefined ? bodyVerdict(template, g.request.body) : null;
  if (verdict?.tooLarge) expected = { statuses: [413], reason: `body over ${MAX_BODY_BYTES} bytes` };
  else if (verdict?.problem) problems.push(`body: ${verdict.problem}`);
  // POST /alerts: a body the schema accepts may still break the answer's own rules (422), and a caller holding 50
  // alerts gets 409 (docs/alerts.md).
  if (template === '/alerts' && method === 'POST' && !verdict?.tooLarge && problems.length === 0) {
    const body = JSON.parse(typeof g.request.body === 'string' ? g.request.body : new TextDecoder().decode(g.request.body));
    const rule = alertRuleProblem(body);
    expected = credentialVerdict(template, method, g.caller) ?? (rule ? { statuses: [422], reason: rule } : { statuses: g.request.limited ? [200, 409, 429] : [200, 409], reason: `caller ${g.caller}, valid registration${g.request.limited ? ', rate-limited app (30 a minute per account)' : ''}` });
  }
  if (problems.length > 0) expected ??= credentialVerdict(template, method, g.caller) ?? undefined;
  expected ??= problems.length > 0 ? { statuses: [422], reason: problems.join('; ') } : expectValid(template, method, url, headers, g.caller, Boolean(g.request.limited));
  const got = await sendDocumented(t, template, g.request, expected);
  // The answer is about what was asked: the same names, in request order, duplicates kept.
  if (got.status === 200 && template === '/prices/batch') {
    const asked = JSON.parse(new TextDecoder().decode(typeof g.request.body === 'string' ? new TextEncoder().encode(g.request.body) : g.request.body)).market_hash_names;
    expect(got.body.data.items.map((i: { market_hash_name: string }) => i.market_hash_name), describeRequest(g.request)).toEqual(asked);
  }
  if (got.status === 200 && template === '/prices') expect(got.body.data.market_hash_name, describeRequest(g.request)).toBe(url.searchParams.get('market_hash_name'));
}

describe('contract fuzzing: every operation of /openapi.json', () => {
  for (const { template, method } of documentedOperations()) {
    it(`${method} ${template}: ${FUZZ_RUNS} generated requests, each answered as documented`, async () => {
      await fc.assert(
        fc.asyncProperty(requestArb(template, method), (g) => runOne(template, method, g)),
        { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: false },
      );
      expect(sentFor(`${method} ${template}`)).toBeGreaterThanOrEqual(FUZZ_RUNS);
    });
  }

  it('paths and methods outside the document: never 5xx, always X-Request-ID, errors in the envelope', async () => {
    const segment = fc.oneof(
      fc.constantFrom('prices', 'batch', 'export', 'websites', 'currencies', 'me', 'status', 'health', 'config', 'endpoints', 'fee-schedule', 'BUFF163', '1', '..', '.', '', '%2e%2e', '%2F', 'openapi.json', 'metrics'),
      anyText.map((s) => encodeValue(s, 'component')),
    );
    const arb = fc.record({
      method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND'),
      segments: fc.array(segment, { minLength: 1, maxLength: 4 }),
      body: fc.option(fc.constantFrom('{}', '{"market_hash_names":["Recoil Case"]}', 'x'), { freq: 3 }),
      caller: callerArb,
      spelling: fc.nat(),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ method, segments, body, caller, spelling }) => {
        const request: FuzzRequest = { method, target: `/${segments.join('/')}`, headers: credentialHeaders(t, caller, spelling) };
        if (body !== null && method !== 'GET' && method !== 'HEAD') request.body = body;
        const got = await call(t, request);
        const pathname = new URL(`http://fuzz.test${request.target}`).pathname;
        const template = templateOf(pathname, method);
        record(template ? `${method} ${template} (via odd paths)` : 'other paths and methods', got.status);
        const where = `${describeRequest(request)}\n  answer: ${got.status} ${got.text.slice(0, 500)}`;
        expect(got.status, where).toBeLessThan(500);
        const id = got.headers.get('x-request-id');
        expect(id, where).toMatch(/^[0-9a-f-]{36}$/);
        if (got.status >= 400 && method !== 'HEAD' && /json/.test(got.headers.get('content-type') ?? '')) {
          expect(Object.keys(got.body).sort(), where).toEqual(['error', 'meta']);
          expect(got.body.meta.request_id, where).toBe(id);
          if (got.status === 405) expect(got.headers.get('allow'), where).toBeTruthy();
        }
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });
});

