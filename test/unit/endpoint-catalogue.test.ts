import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOGUE_FILE, ENDPOINTS, loadCatalogue } from '../../src/catalogue/endpoints.js';
import { operationCost } from '../../src/accounts/billing.js';

describe('endpoint catalogue (data/endpoints.json)', () => {
  it("holds the spec's 13 operations with the spec costs and limits, and the extensions", () => {
    expect(ENDPOINTS).toHaveLength(24);
    const row = (id: string) => ENDPOINTS.find((e) => e.operationId === id)!;
    // Extension (README): an item's cross-market routes, billed and limited like GET /prices.
    expect(row('getRoutes')).toMatchObject({ method: 'GET', path: '/prices/routes', creditCost: 1, rateLimit: { maxRequests: 120, windowSeconds: 60 }, roles: ['user'], graphqlFields: ['routes', 'Item.routes'] });
    // Extension (docs/fees.md, The market-wide scan): the best routes across the catalogue, 5 credits, 12 a minute.
    expect(row('getTopRoutes')).toMatchObject({ method: 'GET', path: '/prices/routes/top', creditCost: 5, rateLimit: { maxRequests: 12, windowSeconds: 60 }, roles: ['user'], graphqlFields: ['topRoutes'] });
    // Extension (README, docs/history.md): an item's price history, billed and limited like GET /prices.
    expect(row('getPriceHistory')).toMatchObject({ method: 'GET', path: '/prices/history', creditCost: 1, rateLimit: { maxRequests: 120, windowSeconds: 60 }, roles: ['user'], graphqlFields: ['priceHistory', 'Item.history'] });
    // Extension (README, docs/valuation.md section 10): the valuation's published accuracy, public and free like /status.
    expect(row('getValuationAccuracy')).toMatchObject({ method: 'GET', path: '/valuation/accuracy', creditCost: 0, rateLimit: null, roles: [], graphqlFields: [] });
    // Extension (docs/search.md): the item catalogue search; its hits carry CSCP quotes, so a page is billed like GET /prices.
    expect(row('searchItems')).toMatchObject({ method: 'GET', path: '/catalogue/items', creditCost: 1, rateLimit: { maxRequests: 120, windowSeconds: 60 }, recommendedIntervalSeconds: null, roles: ['user'], graphqlFields: ['items'] });
    expect(row('getPrices')).toMatchObject({ creditCost: 1, rateLimit: { maxRequests: 120, windowSeconds: 60 }, roles: ['user'], graphqlFields: ['prices', 'item'] });
    expect(row('batchPrices').rateLimit).toEqual({ maxRequests: 20, windowSeconds: 60 });
    // Metered edges (docs/graphql.md): a marketplace's quote pages and a quote's item are charged as batches of names.
    expect(row('batchPrices').graphqlFields).toEqual(['batchPrices', 'Website.quotes', 'MarketQuote.item']);
    expect(row('exportPrices')).toMatchObject({ creditCost: 10, rateLimit: { maxRequests: 2, windowSeconds: 60 } });
    expect(ENDPOINTS.filter((e) => e.premium)).toEqual([]);
    expect([1, 100, 101, 200, 201, 1000].map((n) => Number(operationCost(row('batchPrices'), n)))).toEqual([1, 1, 2, 2, 3, 10]);
    expect(Number(operationCost(row('getMe')))).toBe(0);
    // Extension (docs/alerts.md): webhook alerts, registered and listed free with an API key (each event costs 1 credit,
    // not a request), rate limited per account: registration and deletion 30 a minute, the listings 60.
    for (const [id, method, p, field, max] of [['createAlert', 'POST', '/alerts', 'createAlert', 30], ['listAlerts', 'GET', '/alerts', 'alerts', 60], ['deleteAlert', 'DELETE', '/alerts/{id}', 'deleteAlert', 30], ['listAlertDeliveries', 'GET', '/alerts/{id}/deliveries', 'alertDeliveries', 60]] as const) {
      expect(row(id)).toMatchObject({ method, path: p, creditCost: 0, rateLimit: { maxRequests: max, windowSeconds: 60 }, roles: ['user'], graphqlFields: [field] });
    }
  });

  it('refuses a file with a repeated operation or GraphQL field', () => {
    const rows = JSON.parse(fs.readFileSync(CATALOGUE_FILE, 'utf8'));
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qg-cat-')), 'endpoints.json');
    fs.writeFileSync(file, JSON.stringify([...rows, { ...rows[5], operation_id: 'pricesAgain', path: '/prices2' }]));
    expect(() => loadCatalogue(file)).toThrow(/field prices appears twice/);
    fs.writeFileSync(file, JSON.stringify([...rows, { ...rows[0], extra: 1 }]));
    expect(() => loadCatalogue(file)).toThrow();
    // A metered edge belongs to one row too, and must be a root field name or a Type.field coordinate.
    fs.writeFileSync(file, JSON.stringify([...rows, { ...rows[5], operation_id: 'quotesAgain', path: '/prices3', graphql_fields: ['Website.quotes'] }]));
    expect(() => loadCatalogue(file)).toThrow(/field Website.quotes appears twice/);
    fs.writeFileSync(file, JSON.stringify([...rows, { ...rows[5], operation_id: 'badField', path: '/prices4', graphql_fields: ['website.quotes.edges'] }]));
    expect(() => loadCatalogue(file)).toThrow(/coordinate/);
  });
});
