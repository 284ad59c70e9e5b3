/**
 * Metering of live subscriptions (issue: live, point 3; README, Extensions: live changes; catalogue row
 * `subscribePriceChanges`): credential, argument rules, the row's rate limit (one point per subscription
 * started) and the balance are checked before the subscription starts, like any metered request
 * (plugins/metering.ts). Then, here:
 * - a concurrent slot of the account is taken (services/live-slots.ts): 429 `too_many_subscriptions` beyond
 *   `maxConcurrent`, on all replicas together;
 * - the row's credit cost is charged per started minute connected, each minute up front: the first when the
 *   subscription starts (402 `credit_insufficient` when the balance no longer covers it: nothing starts), the
 *   next every 60 s while it stays open. When a minute can no longer be paid the subscription ends with a
 *   terminal `credit_insufficient` error. An active subscription plan makes it free (the row is not premium).
 * - the slot is given back and the minute timer stopped when the subscription ends, however it ends.
 */
import type { Database } from '../db/client.js';
import type { EndpointInfo } from '../catalogue/endpoints.js';
import { availableCredits, chargeCredits, creditInsufficient, isBillable, operationCost, remainingCredits, type Charge } from './billing.js';
import type { UserCaller } from './accounts.js';
import type { CreditLeases } from './credit-leases.js';
import type { CallerCache } from './caller-cache.js';
import { releaseSlot, takeSlot } from './live-slots.js';
import type { LiveFilter, LiveHub, LiveSubscription } from './live.js';
import { creditsCharged } from '../lib/metrics.js';

/** Seconds one charge of the row's cost pays for. */
export const LIVE_BILLING_SECONDS = 60;

/** What a metered start needs besides the hub. */
export interface LiveMeterDeps {
  db: Database;
  leases?: CreditLeases;
  callers?: CallerCache;
  /** Most live subscriptions one account may have open at once (all replicas). */
  maxConcurrent: number;
}

/** One metered start: who, under which row, for which request id (the ledger rows carry it). */
export interface LiveStart {
  caller: UserCaller;
  row: EndpointInfo;
  requestId: string;
  filter: LiveFilter | null;
  since: bigint | null;
  valuations: boolean;
}

/**
 * Starts a metered subscription on `hub` (see the module doc). Throws 429 `too_many_subscriptions`,
 * 402 `credit_insufficient`, 410 `cursor_expired` or 422 (a `since` beyond the sequence); nothing is held then.
 */
export async function openMeteredSubscription(hub: LiveHub, deps: LiveMeterDeps, start: LiveStart): Promise<LiveSubscription> {
  const { caller, row } = start;
  const cost = operationCost(row);
  const billable = isBillable(caller, row, cost);
  const charge: Charge = { accountId: caller.accountId, keyId: caller.keyId, operationId: row.operationId, requestId: start.requestId, cost };
  let seen = remainingCredits(caller.creditsTotal, caller.creditsUsed);
  /** Charges one minute; the balance left, or null when it does not cover it (nothing charged). */
  const chargeMinute = async (): Promise<bigint | null> => {
    const left = deps.leases ? await deps.leases.charge(charge, seen, false) : await chargeCredits(deps.db, charge);
    if (left === null) {
      deps.callers?.forgetAccount(caller.accountId);
      return null;
    }
    seen = left;
    deps.callers?.charged(caller.accountId, caller.creditsTotal - left);
    creditsCharged.inc({ operation: row.operationId }, Number(cost));
    return left;
  };
  const slot = await takeSlot(deps.db, caller.accountId, deps.maxConcurrent);
  let sub: LiveSubscription;
  try {
    // Opened first (its cursor checks may refuse it), charged next: a refused subscription costs nothing.
    sub = await hub.open(start.filter, { since: start.since, valuations: start.valuations });
  } catch (e) {
    await releaseSlot(deps.db, slot).catch(() => undefined);
    throw e;
  }
  try {
    if (billable && (await chargeMinute()) === null) throw creditInsufficient(cost, await availableCredits(deps.db, caller.accountId));
  } catch (e) {
    await sub.return();
    await releaseSlot(deps.db, slot).catch(() => undefined);
    throw e;
  }
  hub.holdSlot(slot);
  const timer = billable
    ? setInterval(() => {
        void chargeMinute().then(
          async (left) => {
            if (left === null) sub.fail(creditInsufficient(cost, await availableCredits(deps.db, caller.accountId).catch(() => 0n)));
          },
          () => undefined, // the database failed: this minute is not charged, the next one is tried
        );
      }, LIVE_BILLING_SECONDS * 1000)
    : null;
  timer?.unref();
  sub.onEnd(() => {
    if (timer) clearInterval(timer);
    hub.dropSlot(slot);
    void releaseSlot(deps.db, slot).catch(() => undefined); // else it lapses (live-slots.ts SLOT_SECONDS)
  });
  return sub;
}
