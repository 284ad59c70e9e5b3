/**
 * Date parameters on every face (`npm run test:fuzz`; issue 41, points 7 and 14): the GraphQL `Date` arguments
 * (valuationAccuracy from/to, priceHistory from/to, Item.history from/to, Website.feeSchedule asOf) and the pages'
 * `from`/`to` (/items/{name}, /valuation), with days in range, at its edges and beyond (generators.ts `edgeDay`:
 * years 0000-0099, 9999, 10000, 29 February of leap and common years) and malformed ones, as literals or variables.
 * The REST date parameters are fuzzed by rest.test.ts from the same pool. The oracle is the document's date rule
 * (`isDocumentedDay`): a date it refuses is a 422 `validation_failed` naming exactly the refused arguments (GraphQL)
 * or a 422 page naming the parameter (pages); a date it accepts is answered (200, or 422 for a range rule: reversed,
 * too long); never a 5xx, a 503 page or an internal error.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUZZ_RUNS, FUZZ_SEED, QUOTED_NAMES, call, describeRequest, fuzzTarget, record, report, type FuzzRequest, type FuzzTarget } from './harness.js';
import { edgeDay, encodeValue, encodingArb, isDocumentedDay } from './generators.js';

let t: FuzzTarget;
const started = performance.now();

beforeAll(async () => {
  console.log(`fuzz (dates): FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}`);
  t = await fuzzTarget();
});
afterAll(async () => {
  console.log(report('fuzz (dates)', (performance.now() - started) / 1000));
  await t?.close();
});

const ITEM = QUOTED_NAMES[0]!;
/** A date argument's value: in range (weight 2), at or beyond the edges (3), malformed (1), or left out (1). */
const dateValue = fc.oneof(
  { arbitrary: fc.constantFrom('2026-07-16', '2026-07-01', '2026-06-30', '2025-07-17', '2024-02-29'), weight: 2 },
  { arbitrary: edgeDay, weight: 3 },
  { arbitrary: fc.constantFrom('2026-02-30', '26-07-16', '2026-07-16T00:00:00Z', '', ' 2026-07-16', 'today', '2026-7-1'), weight: 1 },
  { arbitrary: fc.constant(null), weight: 1 },
);

const paren = (args: string[]) => (args.length ? `(${args.join(', ')})` : '');
/** The GraphQL fields with Date arguments: the selection for a list of arguments (`name: value`), and where its data is. */
const FIELDS: { name: string; dates: string[]; build: (args: string[]) => string; path: string[] }[] = [
  { name: 'valuationAccuracy', dates: ['from', 'to'], build: (a) => `valuationAccuracy${paren(a)} { from to }`, path: ['valuationAccuracy'] },
  { name: 'priceHistory', dates: ['from', 'to'], build: (a) => `priceHistory${paren([`marketHashName: ${JSON.stringify(ITEM)}`, ...a])} { interval }`, path: ['priceHistory'] },
  { name: 'Item.history', dates: ['from', 'to'], build: (a) => `item(marketHashName: ${JSON.stringify(ITEM)}) { history${paren(a)} { interval } }`, path: ['item', 'history'] },
  { name: 'Website.feeSchedule', dates: ['asOf'], build: (a) => `website(code: "BUFF163") { feeSchedule${paren(a)} { asOf } }`, path: ['website', 'feeSchedule'] },
];

describe('date parameters, fuzzed', () => {
  it(`${FUZZ_RUNS} GraphQL documents with Date arguments: refused dates are 422 naming exactly those arguments`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...FIELDS), dateValue, dateValue, fc.boolean(), async (field, first, second, viaVariables) => {
        const values = field.dates.length === 2 ? [first, second] : [first];
        const given = field.dates.map((name, i) => ({ name, value: values[i] })).filter((a): a is { name: string; value: string } => a.value !== null);
        const defs = viaVariables && given.length ? `(${given.map((a) => `$${a.name}: Date`).join(', ')})` : '';
        const selection = field.build(given.map((a) => `${a.name}: ${viaVariables ? `$${a.name}` : JSON.stringify(a.value)}`));
        const query = `query${defs} { ${selection} }`;
        const variables = viaVariables ? Object.fromEntries(given.map((a) => [a.name, a.value])) : {};
        const request: FuzzRequest = {
          method: 'POST',
          target: '/graphql',
          headers: [['Content-Type', 'application/json'], ['Authorization', `Bearer ${t.secrets.rich}`]],
          body: JSON.stringify({ query, variables }),
        };
        const got = await call(t, request);
        record(`POST /graphql (${field.name} dates)`, got.status);
        const where = `${describeRequest(request)}\n  answer: ${got.status} ${got.text.slice(0, 800)}`;
        expect(got.status, where).toBeLessThan(500);
        expect(got.text, where).not.toMatch(/internal_error|INTERNAL_SERVER_ERROR|Unexpected error\./);
        const refused = given.filter((a) => !isDocumentedDay(a.value)).map((a) => a.name).sort();
        const errors = (got.body?.errors ?? []) as { extensions?: { code?: string; details?: { errors?: { field: string }[] } } }[];
        if (refused.length > 0) {
          expect(got.status, where).toBe(422);
          expect(errors.map((e) => e.extensions?.code), where).toEqual(errors.map(() => 'validation_failed'));
          const named = [...new Set(errors.flatMap((e) => e.extensions?.details?.errors ?? []).map((e) => e.field))].sort();
          expect(named, where).toEqual(refused);
          // None of the field's data left the service.
          let data: unknown = got.body?.data;
          for (const key of field.path) data = data && typeof data === 'object' ? (data as Record<string, unknown>)[key] : data;
          expect(data ?? null, where).toBeNull();
        } else {
          // Accepted dates: answered, or refused by a range rule (reversed, longer than allowed), never otherwise.
          expect([200, 422], where).toContain(got.status);
          for (const e of errors) expect(e.extensions?.code, where).toBe('validation_failed');
          if (got.status === 422) expect(errors.flatMap((e) => e.extensions?.details?.errors ?? []).length, where).toBeGreaterThan(0);
        }
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });

  it(`${FUZZ_RUNS} page requests with from/to: refused dates are a 422 page naming the parameter, never a 503`, async () => {
    const pages = fc.constantFrom(`/items/${encodeURIComponent(ITEM)}`, '/valuation');
    await fc.assert(
      fc.asyncProperty(pages, dateValue, dateValue, fc.constantFrom(null, 'day', 'week', 'month'), encodingArb, async (path, from, to, interval, encoding) => {
        const params: [string, string][] = [];
        if (from !== null) params.push(['from', from]);
        if (to !== null) params.push(['to', to]);
        if (interval !== null && path.startsWith('/items/')) params.push(['interval', interval]);
        const query = params.length ? `?${params.map(([k, v]) => `${k}=${encodeValue(v, encoding)}`).join('&')}` : '';
        const request: FuzzRequest = { method: 'GET', target: `${path}${query}`, headers: [] };
        const got = await call(t, request);
        record(`GET ${path.startsWith('/items/') ? '/items/{name}' : path} (page dates)`, got.status);
        const where = `${describeRequest(request)}\n  answer: ${got.status} ${got.text.replace(/\s+/g, ' ').slice(0, 600)}`;
        expect(got.status, where).toBeLessThan(500);
        expect(got.headers.get('content-type') ?? '', where).toMatch(/^text\/html/);
        // What the page reads: the query as the URL parser decodes it, trimmed on the item page.
        const read = new URL(`http://x${request.target}`).searchParams;
        const value = (name: string) => {
          const v = read.get(name);
          if (v === null) return null;
          const s = path.startsWith('/items/') ? v.trim() : v;
          return s === '' ? null : s;
        };
        const refused = ['from', 'to'].filter((name) => {
          const v = value(name);
          return v !== null && !isDocumentedDay(v);
        });
        if (refused.length > 0) {
          expect(got.status, where).toBe(422);
          for (const name of refused) expect(got.text, where).toMatch(new RegExp(`data-parameter="${name}"|<li>${name}: `));
        } else {
          expect([200, 422], where).toContain(got.status);
        }
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });
});
