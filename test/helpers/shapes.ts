/** Exact field sets of the spec's "no extra fields" / "all fields required" objects. */
import { expect } from 'vitest';
import { MarketQuoteOut, ValuationOut } from '../../src/shapes/quote.js';
import { CurrencyOut, PublicCurrencyOut, WebsiteOut } from '../../src/shapes/catalogue.js';

/** Keys of the catalogue shapes, from their one definition (src/shapes/catalogue.ts). */
export const WEBSITE_KEYS = Object.keys(WebsiteOut.shape);
export const CURRENCY_KEYS = Object.keys(CurrencyOut.shape);
export const PUBLIC_CURRENCY_KEYS = Object.keys(PublicCurrencyOut.shape);
/** Keys of a quote and of its valuation, from the one definition of the shape (src/shapes/quote.ts). */
export const QUOTE_KEYS = Object.keys(MarketQuoteOut.shape);
export const VALUATION_KEYS = Object.keys(ValuationOut.shape);
/** Every field of a GraphQL MarketQuote with its valuation (camelCase, no aliases): the largest quote selection. */
export const QUOTE_SELECTION = `{ marketCode providerCode side marketCurrencyCode marketPriceAmount quantity isQuantityMinimum isAllItemsSamePrice
  changedAt observedAt delistedAt freshAt valuation { valuationDate credibility uncertainty isTwoSided askAmount bidAmount askQuoteCount bidQuoteCount } }`;
/** The selection of a full batchPrices answer with every quote field. */
export const BATCH_SELECTION = `{ appId side items { marketHashName markets ${QUOTE_SELECTION} } }`;
export const ENDPOINT_KEYS = ['method', 'path', 'premium', 'credit_cost', 'recommended_interval_seconds', 'rate_limit', 'unit_pricing', 'roles'];

/** Asserts `obj` has exactly these keys (no extra, none missing). */
export function expectKeys(obj: unknown, keys: string[]): void {
  expect(obj).toBeTypeOf('object');
  expect(Object.keys(obj as object).sort()).toEqual([...keys].sort());
}

/** Asserts a success envelope whose meta.request_id equals X-Request-ID; returns data. */
export function expectEnvelope(res: { status: number; headers: Headers; body: any }, status = 200): any {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['data', 'meta']);
  expect(res.body.meta.request_id).toBeTypeOf('string');
  expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
  return res.body.data;
}

/** Asserts an error envelope with this status and code; returns the error body. */
export function expectError(res: { status: number; headers: Headers; body: any }, status: number, code: string): any {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.message).toBeTypeOf('string');
  expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
  return res.body.error;
}

export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
