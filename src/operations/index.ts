/**
 * The operation registry: every documented REST operation, one file each in this folder (src/operations/operation.ts
 * says what a file declares and what is derived from it). Adding an operation: write its file, add it here and give
 * it its catalogue row in data/endpoints.json; its REST route, document and OpenAPI entry follow.
 */
import type { Operation } from './operation.js';
import batchPrices from './batch-prices.js';
import createAlert from './create-alert.js';
import deleteAlert from './delete-alert.js';
import exportPrices from './export-prices.js';
import getConfig from './get-config.js';
import getCurrency from './get-currency.js';
import getFeeSchedule from './get-fee-schedule.js';
import getHealth from './get-health.js';
import getMe from './get-me.js';
import getPriceChanges from './get-price-changes.js';
import getPriceHistory from './get-price-history.js';
import getPrices from './get-prices.js';
import getRoutes from './get-routes.js';
import getStatus from './get-status.js';
import getTopRoutes from './get-top-routes.js';
import getValuationAccuracy from './get-valuation-accuracy.js';
import getWebsite from './get-website.js';
import listAlertDeliveries from './list-alert-deliveries.js';
import listAlerts from './list-alerts.js';
import listCurrencies from './list-currencies.js';
import listEndpoints from './list-endpoints.js';
import listWebsites from './list-websites.js';
import searchItems from './search-items.js';
import subscribePriceChanges from './subscribe-price-changes.js';

/** Every operation, by catalogue order of nothing in particular (the OpenAPI document sorts by path). */
export const OPERATIONS: readonly Operation[] = [
  batchPrices,
  createAlert,
  deleteAlert,
  exportPrices,
  getConfig,
  getCurrency,
  getFeeSchedule,
  getHealth,
  getMe,
  getPriceChanges,
  getPriceHistory,
  getPrices,
  getRoutes,
  getStatus,
  getTopRoutes,
  getValuationAccuracy,
  getWebsite,
  listAlertDeliveries,
  listAlerts,
  listCurrencies,
  listEndpoints,
  listWebsites,
  searchItems,
  subscribePriceChanges,
];

const byId = new Map(OPERATIONS.map((op) => [op.id, op]));

/** The operation with catalogue id `id`; throws for an unknown id (a programming error). */
export function operation(id: string): Operation {
  const op = byId.get(id);
  if (!op) throw new Error(`no operation ${id}`);
  return op;
}
