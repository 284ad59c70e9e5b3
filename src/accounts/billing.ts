/**
 * Credits: what a request costs, the check before the work and the charge after it, and changes of
 * the granted total. Rules: spec Limits and each endpoint's Billing lines; CreditMeta.
 *
 * Every change of a counter is one SQL statement that also writes its ledger row, so
 * `account.credits_used` always equals the sum of `charge` rows and `credits_total` the sum of
 * `grant`/`sync` rows, across any number of replicas. A charge is conditional
 * (`credits_total - credits_used >= cost`), which makes concurrent requests exact: the rows a
 * balance covers are charged, the rest are refused, and the balance never goes below 0.
 */
import type { Database } from '../db/client.js';
import type { EndpointInfo } from '../catalogue/endpoints.js';
import { ensureAccount, type UserCaller } from './accounts.js';
import { ServiceError, notFound, validationError } from '../lib/errors.js';

/**
 * Credits one call of `row` costs (spec: UnitPricingSpec): `creditCost` flat, or `creditCost` per
 * started block of `unitSize` units (the batch counts every name, duplicates included). 0 = free.
 */
export function operationCost(row: EndpointInfo, units = 1): bigint {
  if (row.creditCost === 0) return 0n;
  if (!row.unitPricing) return BigInt(row.creditCost);
  const blocks = Math.ceil(units / row.unitPricing.unitSize);
  return BigInt(row.creditCost) * BigInt(Math.max(blocks, 1));
}

/** Whether a user request pays: free operations and active subscriptions (non-premium rows) do not. */
export function isBillable(caller: UserCaller, row: EndpointInfo, cost: bigint): boolean {
  if (cost === 0n) return false;
  if (caller.subscription && !row.premium) return false;
  return true;
}

export { remainingCredits } from './accounts.js';

/** 402 `credit_insufficient` with `details.required` and `details.remaining` (whole credits). */
export function creditInsufficient(required: bigint, remaining: bigint): ServiceError {
  return new ServiceError('credit_insufficient', 402, `This request costs ${required} credits; ${remaining} remain.`, {
    required: Number(required),
    remaining: Number(remaining),
  });
}

/** Who is charged for what: one ledger row. */
export interface Charge {
  accountId: string;
  keyId: string;
  /** Catalogue operation id(s), comma-separated for a GraphQL operation with several metered fields. */
  operationId: string;
  requestId: string;
  /** Whole credits, > 0. */
  cost: bigint;
}

/**
 * Charges `cost` credits if the available balance (total - used - reserved by replicas' leases, see
 * credit-leases.ts) covers them, with its ledger row, in one statement. Returns the available balance
 * after the charge, or null when it no longer covers it (nothing is written then).
 */
export async function chargeCredits(db: Pick<Database, 'query'>, c: Charge): Promise<bigint | null> {
  const rows = await db.query<{ remaining: string }>(
    `WITH debit AS (
       UPDATE account SET credits_used = credits_used + $2
        WHERE id = $1 AND credits_total - credits_used - credits_reserved >= $2
        RETURNING id, credits_total - credits_used - credits_reserved AS remaining
     ), entry AS (
       INSERT INTO credit_ledger (account_id, kind, amount, operation_id, request_id, key_id)
       SELECT id, 'charge', $2, $3, $4, $5::uuid FROM debit
     )
     SELECT remaining::text AS remaining FROM debit`,
    [c.accountId, c.cost.toString(), c.operationId, c.requestId, c.keyId],
  );
  return rows[0] ? BigInt(rows[0].remaining) : null;
}

/** The account's available balance now (total - used - reserved by replicas' leases, never below 0), whole credits; 0 for an unknown account. */
export async function availableCredits(db: Pick<Database, 'query'>, accountId: string): Promise<bigint> {
  const [row] = await db.query<{ remaining: string }>(
    `SELECT GREATEST(credits_total - credits_used - credits_reserved, 0)::text AS remaining FROM account WHERE id = $1`,
    [accountId],
  );
  return BigInt(row?.remaining ?? '0');
}

/**
 * Adds `amount` whole credits (> 0) to the account's granted total, with a `grant` ledger row.
 * Returns the new total. Throws 404 for an unknown account, 422 for amount <= 0.
 */
export async function grantCredits(db: Pick<Database, 'query' | 'notify'>, accountId: string, amount: bigint): Promise<bigint> {
  if (amount <= 0n) throw validationError([{ location: 'argument', field: 'amount', message: 'must be a whole number > 0' }], 'The amount must be a whole number > 0.');
  const rows = await db.query<{ total: string }>(
    `WITH up AS (UPDATE account SET credits_total = credits_total + $2 WHERE id = $1 RETURNING id, credits_total),
          entry AS (INSERT INTO credit_ledger (account_id, kind, amount) SELECT id, 'grant', $2 FROM up)
     SELECT credits_total::text AS total FROM up`,
    [accountId, amount.toString()],
  );
  if (!rows[0]) throw notFound(`No account ${accountId}.`);
  await db.notify('qg_auth', accountId);
  return BigInt(rows[0].total);
}

/**
 * Sets the account's granted total (the dashboard's figure), with a `sync` ledger row carrying the
 * signed change; creates an unsynced account when new. Used credits are never changed: when the
 * total falls below them, remaining is 0. Throws 422 for a negative total.
 */
export async function setCreditTotal(db: Database, accountId: string, total: bigint): Promise<void> {
  if (total < 0n) throw validationError([{ location: 'argument', field: 'total', message: 'must be a whole number >= 0' }], 'The credit total must be a whole number >= 0.');
  await ensureAccount(db, accountId);
  await db.query(
    `WITH before AS (SELECT id, credits_total FROM account WHERE id = $1 FOR UPDATE),
          up AS (UPDATE account a SET credits_total = $2 FROM before b WHERE a.id = b.id RETURNING a.id, $2::bigint - b.credits_total AS delta)
     INSERT INTO credit_ledger (account_id, kind, amount) SELECT id, 'sync', delta FROM up WHERE delta <> 0`,
    [accountId, total.toString()],
  );
  await db.notify('qg_auth', accountId);
}

/**
 * Gives back a charge whose answer was not delivered (the export file: a read error, or a client
 * that left before the last byte; README, Billing): `credits_used` goes down by `c.cost` with a
 * `refund` ledger row naming the same request, in one statement. At most one refund per request
 * id and never more than was charged for it; returns false when nothing was refunded (no such
 * charge, or already refunded). Ledger rule: credits_used = sum(charge) - sum(refund).
 */
export async function refundCredits(db: Pick<Database, 'query' | 'notify'>, c: Charge): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `WITH credit AS (
       UPDATE account SET credits_used = credits_used - $2
        WHERE id = $1 AND credits_used >= $2
          AND EXISTS (SELECT 1 FROM credit_ledger WHERE account_id = $1 AND request_id = $4 AND kind = 'charge' AND amount = $2)
          AND NOT EXISTS (SELECT 1 FROM credit_ledger WHERE account_id = $1 AND request_id = $4 AND kind = 'refund')
        RETURNING id
     ), entry AS (
       INSERT INTO credit_ledger (account_id, kind, amount, operation_id, request_id, key_id)
       SELECT id, 'refund', $2, $3, $4, $5::uuid FROM credit
     )
     SELECT id FROM credit`,
    [c.accountId, c.cost.toString(), c.operationId, c.requestId, c.keyId],
  );
  if (rows.length > 0) await db.notify('qg_auth', c.accountId);
  return rows.length > 0;
}
