/**
 * Date parameters outside what the service can hold (issue 41, point 7): every date parameter of both faces and of
 * the pages takes a YYYY-MM-DD date that exists, from 1970-01-01 to 9999-12-31 (src/validation/params.ts `day`).
 * Before, year 0000 (which PostgreSQL has not) answered 500 `internal_error` on the API and a 503 page on the pages,
 * and a `to` in year 1 answered 500 (its default `from` fell before year 1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const N = encodeURIComponent(ITEM);

/** Valid-looking dates the service cannot hold, and days that do not exist. */
const OUTSIDE = ['0000-01-01', '0000-12-31', '0001-01-01', '0001-01-03', '0099-12-31', '1969-12-31', '10000-01-01'];
const NOT_DAYS = ['2023-02-29', '1900-02-29', '2100-02-29'];
/** The bounds and leap days: answered. */
const INSIDE = ['1970-01-01', '9999-12-31', '2024-02-29', '2000-02-29', '1972-02-29'];

let t: TestApp;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' })]);
});
afterAll(async () => {
  await t?.close();
});

/** The REST requests naming `d` in each date parameter (and a range built around it). */
function restRequests(d: string): { path: string; fields: string[] }[] {
  return [
    { path: `/valuation/accuracy?from=${d}&to=${d}`, fields: ['from', 'to'] },
    { path: `/valuation/accuracy?to=${d}`, fields: ['to'] },
    { path: `/prices/history?market_hash_name=${N}&from=${d}&to=${d}`, fields: ['from', 'to'] },
    { path: `/prices/history?market_hash_name=${N}&to=${d}&interval=week`, fields: ['to'] },
    { path: `/prices/history?market_hash_name=${N}&from=${d}&to=${d}&interval=month`, fields: ['from', 'to'] },
    { path: `/websites/BUFF163/fee-schedule?as_of=${d}`, fields: ['as_of'] },
  ];
}

/** GraphQL documents naming `d` in each Date argument, with the argument names refused when `d` is not a supported day. */
function graphqlDocuments(d: string): { query: string; variables?: Record<string, unknown>; fields: string[] }[] {
  return [
    { query: `{ valuationAccuracy(from: "${d}", to: "${d}") { from to } }`, fields: ['from', 'to'] },
    { query: `query($d: Date) { valuationAccuracy(to: $d) { from to } }`, variables: { d }, fields: ['to'] },
    { query: `{ website(code: "BUFF163") { feeSchedule(asOf: "${d}") { asOf } } }`, fields: ['asOf'] },
    { query: `{ priceHistory(marketHashName: "${ITEM}", from: "${d}", to: "${d}") { interval } }`, fields: ['from', 'to'] },
    { query: `query($d: Date) { item(marketHashName: "${ITEM}") { history(to: $d, interval: MONTH) { interval } } }`, variables: { d }, fields: ['to'] },
  ];
}

describe('dates outside 1970-01-01 .. 9999-12-31, and days that do not exist', () => {
  it('REST: 422 validation_failed naming each date parameter, never a 5xx', async () => {
    for (const d of [...OUTSIDE, ...NOT_DAYS]) {
      for (const { path, fields } of restRequests(d)) {
        const res = await t.get(path, t.auth());
        expect(res.status, `${path}: ${res.text}`).toBe(422);
        expect(res.body.error.code).toBe('validation_failed');
        const details = res.body.error.details.errors as { location: string; field: string; message: string }[];
        expect(details.map((e) => e.field).sort(), path).toEqual([...fields].sort());
        for (const e of details) {
          expect(e.location).toBe('query');
          expect(e.message).toContain('1970-01-01 to 9999-12-31');
        }
      }
    }
  });

  it('GraphQL: 422 validation_failed naming each Date argument, no data for the field', async () => {
    for (const d of [...OUTSIDE, ...NOT_DAYS]) {
      for (const { query, variables, fields } of graphqlDocuments(d)) {
        const res = await t.gql(query, variables, t.auth());
        const where = `${query} ${JSON.stringify(variables ?? {})}: ${res.text}`;
        expect(res.status, where).toBeLessThan(500);
        const errors = res.body.errors as { extensions: { code: string; details?: { errors: { field: string; message: string }[] } } }[];
        expect(errors?.length, where).toBeGreaterThan(0);
        expect(errors.map((e) => e.extensions.code), where).not.toContain('internal_error');
        const named = errors.flatMap((e) => e.extensions.details?.errors ?? []);
        expect(errors.every((e) => e.extensions.code === 'validation_failed'), where).toBe(true);
        expect([...new Set(named.map((e) => e.field))].sort(), where).toEqual([...fields].sort());
      }
    }
  });

  it('the pages: a 422 page naming the parameter (the item page and /valuation), never a 503', async () => {
    for (const d of [...OUTSIDE, ...NOT_DAYS]) {
      for (const [path, parameter] of [
        [`/items/${N}?from=${d}`, 'from'],
        [`/items/${N}?to=${d}`, 'to'],
        [`/items/${N}?from=${d}&to=${d}&interval=month`, 'from'],
        [`/valuation?from=${d}`, 'from'],
        [`/valuation?to=${d}`, 'to'],
      ] as const) {
        const res = await t.app.fetch(new Request(`http://test${path}`));
        const html = await res.text();
        expect(res.status, path).toBe(422);
        expect(res.headers.get('content-type')).toMatch(/^text\/html/);
        expect(res.headers.get('retry-after')).toBeNull();
        expect(html, path).toContain(d);
        expect(html, path).toContain('1970-01-01');
        // The item page names the parameter in its problem list; /valuation prefixes the message with it.
        expect(html, path).toMatch(new RegExp(`data-parameter="${parameter}"|<code>${parameter}</code>|<li>${parameter}: `));
      }
    }
  });
});

describe('the bounds and leap days are answered', () => {
  it('REST, GraphQL and the pages answer 1970-01-01, 9999-12-31 and 29 February of leap years', async () => {
    for (const d of INSIDE) {
      for (const { path } of restRequests(d)) {
        const res = await t.get(path, t.auth());
        expect(res.status, `${path}: ${res.text}`).toBe(200);
      }
      for (const { query, variables } of graphqlDocuments(d)) {
        const res = await t.gql(query, variables, t.auth());
        expect(res.body.errors, `${query}: ${res.text}`).toBeUndefined();
      }
      for (const path of [`/items/${N}?from=${d}&to=${d}`, `/valuation?from=${d}&to=${d}`]) {
        expect((await t.app.fetch(new Request(`http://test${path}`))).status, path).toBe(200);
      }
    }
  });
});
