/**
 * Metering of live subscriptions (issue: live, point 3; issue 41, points 2-4; README, Extensions: live changes;
 * catalogue row `subscribePriceChanges`). Before a subscription starts, like any metered request
 * (plugins/metering.ts): credential, argument rules, then here `reserve` (its cursor: 410 `cursor_expired` below
 * the pruned horizon, 422 beyond the sequence; a concurrent slot of the account, live/live-slots.ts: 429
 * `too_many_subscriptions` beyond `maxConcurrent` on all replicas together), then the row's rate limit (one point
 * per subscription started) and the balance. A subscription refused by `reserve` spends no rate-limit point and
 * costs nothing (README: refused requests are not counted). Then `open`:
 * - the row's credit cost is charged per started minute connected, each minute up front: the first when the
 *   subscription starts (402 `credit_insufficient` when the balance no longer covers it: nothing starts);
 * - at every later minute the caller is read again (its key, its account, its subscription plan, its balance):
 *   a revoked key ends the subscription with 401 `unauthorized`, a disabled account (or a key no longer allowed
 *   the operation) with 403 `forbidden`; the minute is charged unless an active plan makes it free at that
 *   moment (a plan removed while the stream is open makes the next minute billable), and when it can no longer
 *   be paid the subscription ends with a terminal `credit_insufficient` error;
 * - between minutes, a change of the account (`qg_auth`: key revoked, account disabled, heard by every replica
 *   through PostgreSQL NOTIFY, as the caller cache hears it) re-checks its open subscriptions at once, so a
 *   revoked key or a disabled account ends them within a second or two on every replica; while a replica's
 *   LISTEN connection is down it re-checks every open subscription every ENTITLEMENT_POLL_MS instead;
 * - the slot is given back and the timers stopped when the subscription ends, however it ends.
 */
import type { Database } from '../db/client.js';
import type { EndpointInfo } from '../catalogue/endpoints.js';
import { forbidden, unauthorized, type ServiceError } from '../lib/errors.js';
import { availableCredits, chargeCredits, creditInsufficient, isBillable, operationCost, remainingCredits, type Charge } from '../accounts/billing.js';
import { callersByKeyIds, type UserCaller } from '../accounts/accounts.js';
import type { CreditLeases } from '../accounts/credit-leases.js';
import type { CallerCache } from '../accounts/caller-cache.js';
import { checkCursor } from '../quotes/changes.js';
import { releaseSlot, takeSlot } from './live-slots.js';
import type { LiveFilter, LiveHub, LiveSubscription } from './live.js';
import { creditsCharged, liveEntitlementEnds } from '../lib/metrics.js';

/** Seconds one charge of the row's cost pays for. */
export const LIVE_BILLING_SECONDS = 60;
/** Milliseconds between re-checks of every open subscription while this replica does not hear change signals. */
export const ENTITLEMENT_POLL_MS = 1000;

/** What the meter needs besides the hub. */
export interface LiveMeterDeps {
  db: Database;
  leases?: CreditLeases;
  callers?: CallerCache;
  /** Most live subscriptions one account may have open at once (all replicas). */
  maxConcurrent: number;
  /** Milliseconds one charge pays for (default LIVE_BILLING_SECONDS; tests shorten it). */
  minuteMs?: number;
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

/** What `reserve` took for a subscription about to start: its concurrent slot (give it back with `release` if it does not start). */
export interface LiveReservation {
  slot: string;
}

/** An open metered subscription. */
interface OpenStream {
  sub: LiveSubscription;
  /** The caller as last read (admission, then each minute). */
  caller: UserCaller;
  row: EndpointInfo;
  charge: Charge;
  /** Credits available as last seen (the lease's hint). */
  seen: bigint;
}

/**
 * The refusal an admitted caller gets now, or null when it may go on: `fresh` null (the key was revoked or no longer
 * exists) is 401 `unauthorized`; a disabled account or a key limited to other operations is 403 `forbidden`.
 */
export function entitlementRefusal(fresh: UserCaller | null, operationId: string): ServiceError | null {
  if (fresh === null) return unauthorized('The API key of this subscription was revoked; it ended.');
  if (fresh.disabled) return forbidden('The account of this API key was disabled; the subscription ended.');
  if (fresh.allowedOperations.length > 0 && !fresh.allowedOperations.includes(operationId)) return forbidden(`This API key is no longer allowed to call ${operationId}; the subscription ended.`);
  return null;
}

/** The replica's meter of live subscriptions (see the module doc). */
export class LiveMeter {
  readonly maxConcurrent: number;
  private readonly minuteMs: number;
  /** Open metered subscriptions by account. */
  private readonly byAccount = new Map<string, Set<OpenStream>>();
  /** Accounts whose subscriptions are re-checked in the next round; `all` for every account. */
  private readonly dirty = new Set<string>();
  private all = false;
  private scheduled = false;
  private poll: NodeJS.Timeout | null = null;
  private readonly unlisten: () => void;

  constructor(
    private readonly hub: LiveHub,
    private readonly deps: LiveMeterDeps,
  ) {
    this.maxConcurrent = deps.maxConcurrent;
    this.minuteMs = deps.minuteMs ?? LIVE_BILLING_SECONDS * 1000;
    // The caller cache's change signals: `*` when the LISTEN connection came back (signals may have been missed).
    this.unlisten = deps.db.onNotify('qg_auth', (accountId) => this.signalled(accountId));
  }

  /**
   * Before the rate limit (see the module doc): checks `since` (throws 410 `cursor_expired`, 422 beyond the
   * sequence) and takes one of the account's slots (throws 429 `too_many_subscriptions`). Nothing is held when it throws.
   */
  async reserve(accountId: string, since: bigint | null): Promise<LiveReservation> {
    await checkCursor(this.deps.db, since);
    return { slot: await takeSlot(this.deps.db, accountId, this.maxConcurrent) };
  }

  /** Gives back what `reserve` took (the subscription was refused after it, or never started). Never throws. */
  async release(reservation: LiveReservation): Promise<void> {
    await releaseSlot(this.deps.db, reservation.slot).catch(() => undefined); // else it lapses (live-slots.ts SLOT_SECONDS)
  }

  /**
   * Starts a metered subscription on the hub with the slot of `reservation` (taken now when absent). Throws 429
   * `too_many_subscriptions` (no reservation), 402 `credit_insufficient`, 410 `cursor_expired` or 422 (a `since`
   * beyond the sequence); nothing is held then, the reservation included.
   */
  async open(start: LiveStart, reservation?: LiveReservation): Promise<LiveSubscription> {
    const { caller, row } = start;
    const { db } = this.deps;
    const cost = operationCost(row);
    const slot = reservation?.slot ?? (await takeSlot(db, caller.accountId, this.maxConcurrent));
    let sub: LiveSubscription;
    try {
      // Opened first (its cursor checks may refuse it), charged next: a refused subscription costs nothing.
      sub = await this.hub.open(start.filter, { since: start.since, valuations: start.valuations });
    } catch (e) {
      await releaseSlot(db, slot).catch(() => undefined);
      throw e;
    }
    const stream: OpenStream = {
      sub,
      caller,
      row,
      charge: { accountId: caller.accountId, keyId: caller.keyId, operationId: row.operationId, requestId: start.requestId, cost },
      seen: remainingCredits(caller.creditsTotal, caller.creditsUsed),
    };
    try {
      if (isBillable(caller, row, cost) && (await this.chargeMinute(stream)) === null) throw creditInsufficient(cost, await availableCredits(db, caller.accountId));
    } catch (e) {
      await sub.return();
      await releaseSlot(db, slot).catch(() => undefined);
      throw e;
    }
    this.hub.holdSlot(slot);
    this.track(stream);
    // A change of the account heard between its admission and now found no stream of it to end: read it once more.
    this.signalled(caller.accountId);
    const timer = setInterval(() => void this.minute(stream), this.minuteMs);
    timer.unref();
    sub.onEnd(() => {
      clearInterval(timer);
      this.untrack(stream);
      this.hub.dropSlot(slot);
      void releaseSlot(db, slot).catch(() => undefined); // else it lapses (live-slots.ts SLOT_SECONDS)
    });
    return sub;
  }

  /** Charges one minute of `s`; the balance left, or null when it does not cover it (nothing charged). Throws when the database fails. */
  private async chargeMinute(s: OpenStream): Promise<bigint | null> {
    const { leases, callers, db } = this.deps;
    const left = leases ? await leases.charge(s.charge, s.seen, false) : await chargeCredits(db, s.charge);
    if (left === null) {
      callers?.forgetAccount(s.caller.accountId);
      return null;
    }
    s.seen = left;
    callers?.charged(s.caller.accountId, s.caller.creditsTotal - left);
    creditsCharged.inc({ operation: s.row.operationId }, Number(s.charge.cost));
    return left;
  }

  /**
   * A started minute of `s` (every `minuteMs` after its start): the caller read again, then refused (the subscription
   * ends), free (an active plan), charged, or ended with `credit_insufficient`. A database failure skips this minute's
   * charge (the next one is tried).
   */
  private async minute(s: OpenStream): Promise<void> {
    if (s.sub.isEnded) return;
    const { db } = this.deps;
    try {
      const fresh = (await callersByKeyIds(db, [s.caller.keyId], new Date())).get(s.caller.keyId) ?? null;
      if (s.sub.isEnded) return;
      const refusal = entitlementRefusal(fresh, s.row.operationId);
      if (refusal) return this.end(s, refusal);
      s.caller = fresh!;
      s.seen = remainingCredits(fresh!.creditsTotal, fresh!.creditsUsed);
      if (!isBillable(fresh!, s.row, s.charge.cost)) return;
      if ((await this.chargeMinute(s)) === null) this.end(s, creditInsufficient(s.charge.cost, await availableCredits(db, s.caller.accountId).catch(() => 0n)));
    } catch {
      // the database failed: this minute is not charged, the next one is tried
    }
  }

  private end(s: OpenStream, error: ServiceError): void {
    if (s.sub.isEnded) return;
    liveEntitlementEnds.inc({ code: error.code });
    s.sub.fail(error);
  }

  private track(s: OpenStream): void {
    let set = this.byAccount.get(s.caller.accountId);
    if (!set) this.byAccount.set(s.caller.accountId, (set = new Set()));
    set.add(s);
    if (!this.poll) {
      // While signals are not heard (the LISTEN connection is down), every open subscription is re-checked instead.
      this.poll = setInterval(() => {
        if (!this.deps.db.listening()) this.signalled('*');
      }, ENTITLEMENT_POLL_MS);
      this.poll.unref();
    }
  }

  private untrack(s: OpenStream): void {
    const set = this.byAccount.get(s.caller.accountId);
    if (!set?.delete(s) || set.size > 0) return;
    this.byAccount.delete(s.caller.accountId);
    if (this.byAccount.size === 0 && this.poll) {
      clearInterval(this.poll);
      this.poll = null;
    }
  }

  /** A change signal for `accountId` (`*`: every account): its open subscriptions are re-checked after this turn. */
  private signalled(accountId: string): void {
    if (accountId === '*') this.all = true;
    else if (this.byAccount.has(accountId)) this.dirty.add(accountId);
    else return;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => void this.recheck());
  }

  /** Re-checks the signalled accounts' open subscriptions in one statement; a database failure retries them after ENTITLEMENT_POLL_MS. */
  private async recheck(): Promise<void> {
    this.scheduled = false;
    const accounts = this.all ? [...this.byAccount.keys()] : [...this.dirty];
    this.all = false;
    this.dirty.clear();
    const streams = accounts.flatMap((a) => [...(this.byAccount.get(a) ?? [])]);
    if (streams.length === 0) return;
    let fresh: Map<string, UserCaller>;
    try {
      fresh = await callersByKeyIds(this.deps.db, streams.map((s) => s.caller.keyId), new Date());
    } catch {
      setTimeout(() => {
        for (const a of accounts) this.signalled(a);
      }, ENTITLEMENT_POLL_MS).unref();
      return;
    }
    for (const s of streams) {
      const refusal = entitlementRefusal(fresh.get(s.caller.keyId) ?? null, s.row.operationId);
      if (refusal) this.end(s, refusal);
    }
  }

  /** Stops listening for change signals (shutdown; the hub ends the subscriptions). */
  close(): void {
    this.unlisten();
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  }
}
