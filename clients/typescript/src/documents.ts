/**
 * Typed GraphQL documents this client ships (each a `TypedDocument<Result, Variables>`; test/integration/client.test.ts
 * validates every one against the served schema and runs it). Write your own the same way:
 * `const q = '...' as TypedDocument<MyResult, MyVariables>`.
 */
import type { TypedDocument } from './typed-document.js';

/** An item's quotes with each market's name and fee-adjusted sale proceeds, in one request (billed as GET /prices). */
export const ItemQuotes = `query ItemQuotes($name: String!, $currency: String) {
  item(marketHashName: $name) {
    marketHashName
    quotes { marketCode side marketCurrencyCode marketPriceAmount quantity website { code name } afterFees(path: SALE_THEN_WITHDRAW, currency: $currency) { priced amount currencyCode } }
  }
}` as TypedDocument<
  {
    item: {
      marketHashName: string;
      quotes: {
        marketCode: string;
        side: 'ask' | 'bid' | 'mid';
        marketCurrencyCode: string;
        marketPriceAmount: string | null;
        quantity: number | null;
        website: { code: string; name: string } | null;
        afterFees: { priced: boolean; amount: string | null; currencyCode: string } | null;
      }[];
    } | null;
  },
  { name: string; currency?: string | null }
>;

/** One page of the change feed (billed as GET /prices/changes). */
export const PriceChanges = `query PriceChanges($since: String, $limit: Int! = 1000) {
  priceChanges(since: $since, limit: $limit) { nextCursor hasMore changes { seq marketHashName marketCode side quoteJson } }
}` as TypedDocument<
  { priceChanges: { nextCursor: string; hasMore: boolean; changes: { seq: string; marketHashName: string; marketCode: string; side: string; quoteJson: unknown }[] } },
  { since?: string | null; limit?: number }
>;

/** The caller's account: credits left and subscription (free). */
export const Me = `query Me { me { credit { total used remaining } subscription { planId expiresAt } } }` as TypedDocument<
  { me: { credit: { total: number; used: number; remaining: number }; subscription: { planId: string; expiresAt: string } | null } },
  Record<string, never>
>;
