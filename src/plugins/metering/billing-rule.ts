/**
 * The billing rule (README, Billing; src/plugins/metering.ts module doc): what of an executed answer is charged, and the
 * operations whose charge departs from the catalogue row's (their files' `billing`, src/operations/).
 */
import type { ExecutionResult } from 'graphql';
import { OPERATIONS } from '../../operations/index.js';
import { operationCost } from '../../accounts/billing.js';
import type { MeteredEdge } from './plan.js';


/**
 * Whether the REST face sends the data of an execution's result: any error makes the answer the error envelope
 * (src/rest/facade.ts `runRoute`), which carries none. The one test both the facade and the billing rule use.
 */
export function restSendsData(result: ExecutionResult): boolean {
  return result.errors === undefined || result.errors.length === 0;
}

/**
 * The billing rule (see the module doc): true when the answer made of `result` carries the data of the metered
 * root field `responseKey`, which is then charged. GraphQL: its value is in `data` and not null, whatever errors
 * the answer holds (errors inside the field included). An all-or-nothing answer (`allOrNothing`: a REST route's
 * document): the same, and the answer is not the error envelope (no error at all).
 * envelope. Constant time: the root value and, on REST, the error count; the result is never walked.
 */
export function deliversField(result: ExecutionResult, responseKey: string, allOrNothing: boolean): boolean {
  const data = result.data as Record<string, unknown> | null | undefined;
  if (data === null || data === undefined) return false;
  const value = data[responseKey];
  if (value === null || value === undefined) return false;
  return !allOrNothing || restSendsData(result);
}

/**
 * Instances of the value at `path` in `data` that are not null (lists on the way crossed: the edge's value under each
 * element counts once; the edge's own value counts once, a list too), the delivered instances of a metered edge. `allOrNothing` (a REST route's document): an answer with errors sends no data (restSendsData).
 */
export function deliveredInstances(result: ExecutionResult, path: readonly string[], allOrNothing: boolean): number {
  if (allOrNothing && !restSendsData(result)) return 0;
  const count = (value: unknown, i: number): number => {
    if (value === null || value === undefined) return 0;
    if (i === path.length) return 1; // the edge's own value (a list too: one instance)
    if (Array.isArray(value)) {
      let n = 0;
      for (const v of value) n += count(v, i);
      return n;
    }
    return typeof value === 'object' ? count((value as Record<string, unknown>)[path[i]!], i + 1) : 0;
  };
  return count(result.data, 0);
}

/**
 * The credits `instances` delivered instances of `edge` cost: a unit-priced row charges their units together (1 credit
 * per started block: 100 quotes' page and 100 items are one POST /prices/batch of 100 names each), any other row its
 * cost per instance. 0 for none.
 */
export function edgeCost(edge: MeteredEdge, instances: number): bigint {
  if (instances === 0) return 0n;
  return edge.row.unitPricing ? operationCost(edge.row, edge.units * instances) : operationCost(edge.row) * BigInt(instances);
}

/** The operations whose HEAD spends no rate-limit point (their files' `billing.headOutsideLimit`, src/operations/). */
export const HEAD_FREE_OF_LIMIT: ReadonlySet<string> = new Set(OPERATIONS.filter((o) => o.billing?.headOutsideLimit).map((o) => o.id));

/** The operations charged as a named ledger row, refunded when their answer is not delivered whole (`billing.paidOnDelivery`). */
export const PAID_ON_DELIVERY: ReadonlySet<string> = new Set(OPERATIONS.filter((o) => o.billing?.paidOnDelivery).map((o) => o.id));
