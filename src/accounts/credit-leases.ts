/**
 * Billing without a database commit per request (issue: serving quotes at the machine's limit, step 5):
 * each replica reserves a block of an account's balance (a lease) with a conditional statement (the
 * reservations of many accounts asked for while the replica's previous lease statement runs go in one),
 * spends it in memory, and records what it spent in batches. Still exact across any number of
 * replicas: a credit is either unreserved, held by exactly one lease, or used, and every statement
 * that moves credits between those states is conditional.
 *
 * States of an account's credits (PostgreSQL, table `account` and `credit_lease`):
 * - available = credits_total - credits_used - credits_reserved; a reservation needs available >= its size.
 * - credits_reserved = sum of its leases' `amount` (reserved, not yet spent) + `spent` (spent and recorded on the
 *   lease's row, not yet settled).
 * - credits_used = sum(charge) - sum(refund) of the ledger, as before. A lease's spending reaches them in two steps:
 *   every flush records it on the lease's own row (`spent`, and in `unsettled` the ledger rows it will become: one per
 *   operation and key, its `amount` the credits of the `requests` it covers, its request id and time those of the last
 *   of them); a settlement moves it from reserved to used and writes those ledger rows, in one statement. Recording is
 *   one row update per busy lease a second; settling every second also updated the account row and inserted a ledger
 *   row (with its foreign-key check) per lease, several times the database's work of recording alone (EXPLAIN ANALYZE
 *   of a flush), which on the 2-vCPU bench machine was CPU taken from the service (`npm run bench`; figures in
 *   docs/benchmarks.md).
 * - What an account has used, as GET /me shows it: credits_used + the `spent` of its leases (src/accounts/accounts.ts).
 *
 * Rules:
 * - Only accounts with at least `minBalance` credits available take leases; a lease is at most
 *   1/16 of what is available and at most the larger of `maxLease` and LEASE_RUNWAY_MS (10 s) of the account's
 *   spending on this replica. Below that, and for operations whose charge can
 *   be refunded (the export: the refund names its ledger row), each charge is one conditional statement
 *   (`chargeCredits`), which counts reserved credits as unavailable. When the balance falls below
 *   `minBalance` a replica returns its lease at the next flush.
 * - Spent credits are recorded every `flushMs` (default 1,000 ms; `CREDIT_LEASE_FLUSH_MS`) and settled by the first
 *   flush `settleMs` (default 10,000 ms; `CREDIT_LEASE_SETTLE_SECONDS`) after the lease's last settlement; both at once on
 *   `flush()` (GET /me first flushes its account, so credits_used and the ledger show what this replica charged), when
 *   a lease is given back or swept (the row's recorded spending is settled as it is deleted), and on `close()`.
 * - A lease unused for `idleMs` (default half of `leaseSeconds`: 15 s) is given back. A lease is renewed by every flush that
 *   records spending on it; its row expires `leaseSeconds` (default 30 s) after the last renewal, and
 *   this replica stops spending it 10 s before that (clock skew and a slow flush cannot make both
 *   sides use it).
 * - Any replica sweeps expired leases (those of a replica that died) every 5 s: their recorded spending is settled,
 *   the rest goes back to available.
 *
 * Crash bound (docs/architecture.md, Billing): a replica killed without warning loses the charges it
 * answered since its last flush (at most `flushMs`, 1 s by default, of its traffic, and never more than its leases):
 * those requests were served and are not charged; the customer is never charged for anything not
 * served, and no replica ever spends more than the balance. What it recorded is settled and the reserved remainder
 * comes back when the lease expires. Spending recorded against a lease that was already swept (its replica was cut off from
 * the database for longer than the lease) is dropped for the same reason, and counted in
 * `quotegate_credit_lease_dropped_total`.
 */
import crypto from 'node:crypto';
import type { Database } from '../db/client.js';
import { chargeCredits, type Charge } from './billing.js';
import { creditLeaseDropped } from '../lib/metrics.js';

/** Options of the lease manager (see the module doc); amounts in whole credits, times in ms unless named. */
export interface CreditLeaseOptions {
  /** Accounts with fewer credits available are charged one statement per request (default 10,000). */
  minBalance?: bigint;
  /** Largest lease (default 1,000 credits). */
  maxLease?: bigint;
  /** Interval between flushes of spent credits (default 1,000 ms): the crash bound (module doc). */
  flushMs?: number;
  /** A lease's recorded charges are settled into credits_used and the ledger at least this often (default 10,000 ms). */
  settleMs?: number;
  /** A lease unused this long is given back (default: half of leaseSeconds). */
  idleMs?: number;
  /** Lifetime of a lease row after its last renewal, in seconds (default 30). */
  leaseSeconds?: number;
  /** This replica's name in `credit_lease.replica_id` (default a random id). */
  replicaId?: string;
}

/**
 * The charges of one lease, operation and key answered since the last flush: `cost` whole credits over
 * `requests` requests, `requestId` and `at` of the last one. Becomes one ledger row.
 */
interface Pending {
  accountId: string;
  operationId: string;
  keyId: string;
  cost: bigint;
  requests: number;
  requestId: string;
  /** Epoch ms of the last request (a number: a Date per billed request was garbage for the collector). */
  at: number;
}

/**
 * Adds `p` into `into` (same lease): entries of one operation and key are summed, the later request kept. Returns
 * the entry of `into` that now holds `p` (`p` itself, or the one it was added to).
 */
function addPending(into: Map<string, Pending>, p: Pending): Pending {
  const k = `${p.operationId}\u0000${p.keyId}`;
  const had = into.get(k);
  if (!had) {
    into.set(k, p);
    return p;
  }
  sumInto(had, p.cost, p.requests, p.requestId, p.at);
  return had;
}

/** Adds `cost` credits over `requests` requests to `had` (same operation and key), keeping the later request's id and time. */
function sumInto(had: Pending, cost: bigint, requests: number, requestId: string, at: number): void {
  had.cost += cost;
  had.requests += requests;
  if (at >= had.at) {
    had.at = at;
    had.requestId = requestId;
  }
}

interface Lease {
  id: string;
  accountId: string;
  /** Credits reserved and not yet spent. */
  left: bigint;
  /** Charges answered and not yet recorded, one entry per operation and key (see `Pending`). */
  pending: Map<string, Pending>;
  /**
   * The entry of `pending` the last charge went to (null after `pending` was replaced): the next charge of the same
   * operation and key is added to it without a key string and an object of its own (a billed GET's usual case).
   */
  lastPending: Pending | null;
  /** Charges recorded on the lease's row (its `spent` and `unsettled`) and not yet settled, likewise. */
  recorded: Map<string, Pending>;
  /** performance.now() ms of the lease's last settlement (or its creation). */
  settledAt: number;
  /** Credits available (unreserved) at the last statement that touched this lease. */
  available: bigint;
  /** Size of the last reservation: doubles on each refill, up to maxLease (or LEASE_RUNWAY_MS of spending, if more). */
  size: bigint;
  /** performance.now() ms of the last reservation, and the credits spent from the lease since (its spending rate). */
  reservedAt: number;
  spentSinceReserved: bigint;
  /** performance.now() ms after which this replica no longer spends the lease. */
  validUntil: number;
  /** performance.now() ms of the last charge. */
  lastUsed: number;
  /** A reservation in flight (concurrent charges of the account wait for it). */
  refilling: Promise<boolean> | null;
}

/** A reservation asked for (see `CreditLeases.reserve`): settled with the credits available after it, or null. */
interface Reservation {
  lease: Lease;
  amount: bigint;
  resolve(available: bigint | null): void;
  reject(e: unknown): void;
}

/**
 * Spending a lease covers at least, in ms: a refill reserves the larger of the doubled size (up to maxLease) and this
 * long of the account's spending on this replica at its rate since the last reservation (still at most 1/16 of what is
 * available). The refill is asked for when half is spent, so the reservation statement has half of this to complete
 * before requests would wait for it: with a fixed 1,000-credit lease, 300 billed GETs a second on embedded PGlite during
 * a collector run spent it faster than the statement (queued behind ingestion) came back, and GETs waited for credits.
 */
const LEASE_RUNWAY_MS = 10_000;
/** Shortest time a lease's spending rate is measured over, in ms (see LEASE_RUNWAY_MS). */
const RATE_WINDOW_MIN_MS = 100;

// The reservations asked for since the last one went out, in one statement (one lease per account): each is
// conditional on its own account's available credits. The accounts' rows are locked in id order first, so two
// replicas reserving for the same accounts at once wait for each other instead of deadlocking.
const RESERVE_SQL = `
WITH want AS (
  SELECT * FROM unnest($1::varchar[], $2::bigint[], $3::uuid[]) AS w(account_id, amount, lease_id)
), locked AS MATERIALIZED (
  SELECT a.id FROM account a WHERE a.id IN (SELECT account_id FROM want) ORDER BY a.id FOR UPDATE
), up AS (
  UPDATE account a SET credits_reserved = a.credits_reserved + w.amount
    FROM want w
   WHERE a.id = w.account_id AND a.id IN (SELECT id FROM locked) AND a.credits_total - a.credits_used - a.credits_reserved >= w.amount
   RETURNING a.id, w.amount, w.lease_id, a.credits_total - a.credits_used - a.credits_reserved AS available
), lease AS (
  INSERT INTO credit_lease (id, account_id, replica_id, amount, expires_at)
  SELECT lease_id, id, $4, amount, now() + make_interval(secs => $5) FROM up
  ON CONFLICT (id) DO UPDATE SET amount = credit_lease.amount + EXCLUDED.amount, expires_at = EXCLUDED.expires_at
)
SELECT lease_id::text AS lease_id, available::text AS available FROM up`;

// One statement for the pending charges of this replica's leases. Each lease's row gets what the replica has spent
// from it since its last settlement (`spent`, and `unsettled`: the ledger rows it becomes), absolute values, so a
// statement that failed is simply made again; `amount` keeps amount + spent (the lease's share of
// account.credits_reserved) unchanged. A lease marked `settle` moves its spending into account.credits_used and the
// ledger instead, in the same statement (its row's spent back to 0). Only leases whose row still exists count: one
// row per such lease comes back, with its account's available credits (total - used - reserved) after the statement
// (recording alone does not change them; the account rows read are the statement's snapshot).
const FLUSH_SQL = `
WITH s AS (
  SELECT (e->>0)::uuid AS lease_id, (e->>1)::bigint AS spent, (e->2)::text AS unsettled, (e->>3)::bool AS settle
    FROM json_array_elements($1::json) e
), up AS (
  UPDATE credit_lease l
     SET amount = l.amount + l.spent - s.spent,
         spent = CASE WHEN s.settle THEN 0 ELSE s.spent END,
         unsettled = CASE WHEN s.settle THEN '[]' ELSE s.unsettled END,
         expires_at = now() + make_interval(secs => $2)
    FROM s WHERE l.id = s.lease_id
  RETURNING l.id, l.account_id, s.spent, s.unsettled, s.settle
), settled AS (
  SELECT * FROM up WHERE settle AND spent > 0
), per_account AS (
  SELECT account_id, sum(spent) AS amount FROM settled GROUP BY account_id
), used AS (
  UPDATE account a SET credits_used = a.credits_used + p.amount, credits_reserved = a.credits_reserved - p.amount
    FROM per_account p WHERE a.id = p.account_id
  RETURNING a.id, a.credits_total - a.credits_used - a.credits_reserved AS available
), ledger AS (
  ${ledgerInsert('settled')}
)
SELECT up.id::text AS lease_id, COALESCE(used.available, a.credits_total - a.credits_used - a.credits_reserved)::text AS available
  FROM up JOIN account a ON a.id = up.account_id LEFT JOIN used ON used.id = up.account_id`;

/**
 * The INSERT of the ledger rows of the leases in `from` (a CTE with account_id and unsettled, JSON text): one charge
 * row per element of `unsettled` (see `unsettledJson`).
 */
function ledgerInsert(from: string): string {
  return `INSERT INTO credit_ledger (account_id, kind, amount, operation_id, request_id, key_id, created_at, requests)
  SELECT f.account_id, 'charge', (e->>'cost')::bigint, e->>'op', e->>'req', (e->>'key')::uuid, (e->>'at')::timestamptz, (e->>'n')::int
    FROM ${from} f, jsonb_array_elements(f.unsettled::jsonb) e`;
}

// Deleting lease rows (given back, or expired: a replica that died) settles what they recorded as spent and gives
// back the rest of their reservation.
const deleteLeases = (where: string) => `
WITH gone AS (DELETE FROM credit_lease WHERE ${where} RETURNING account_id, amount, spent, unsettled),
     per_account AS (SELECT account_id, sum(amount + spent) AS reserved, sum(spent) AS spent FROM gone GROUP BY account_id),
     ledger AS (${ledgerInsert('gone')})
UPDATE account a SET credits_reserved = a.credits_reserved - p.reserved, credits_used = a.credits_used + p.spent
  FROM per_account p WHERE a.id = p.account_id`;

const RETURN_SQL = deleteLeases('id = ANY($1::uuid[])');

const SWEEP_SQL = deleteLeases('expires_at < now()');

/**
 * The `unsettled` JSON of a lease row: one object per operation and key, {op, key, cost (whole credits, a string),
 * n (requests), req (the last request's id), at (its time, ISO 8601)}, each the ledger row it becomes.
 */
function unsettledJson(rows: Iterable<Pending>): string {
  const out: unknown[] = [];
  for (const r of rows) out.push({ op: r.operationId, key: r.keyId, cost: r.cost.toString(), n: r.requests, req: r.requestId, at: new Date(r.at).toISOString() });
  return JSON.stringify(out);
}

/** The lease manager of one replica (see the module doc). */
export class CreditLeases {
  private readonly leases = new Map<string, Lease>();
  private readonly minBalance: bigint;
  private readonly maxLease: bigint;
  private readonly idleMs: number;
  private readonly settleMs: number;
  private readonly leaseSeconds: number;
  private readonly replicaId: string;
  private readonly timers: NodeJS.Timeout[];
  /** The flush in flight; flushes never overlap. */
  private flushing: Promise<void> | null = null;
  /**
   * This replica's lease statements run one at a time: a flush and a reservation of the same lease lock
   * its row and its account in opposite orders, which would otherwise deadlock.
   */
  private queue: Promise<unknown> = Promise.resolve();
  /** The tail of each account's queue of reservations and one-statement charges (see `withAccount`). */
  private readonly locks = new Map<string, Promise<void>>();
  /** Reservations waiting for their statement (see `reserve`). */
  private reservations: Reservation[] = [];
  /** Leases being given back, by account: a one-statement charge of the account waits for it (else the credits look reserved). */
  private readonly returning = new Map<string, Promise<void>>();
  private closed = false;

  constructor(
    private readonly db: Database,
    opts: CreditLeaseOptions = {},
  ) {
    this.minBalance = opts.minBalance ?? 10_000n;
    this.maxLease = opts.maxLease ?? 1000n;
    this.leaseSeconds = opts.leaseSeconds ?? 30;
    this.idleMs = opts.idleMs ?? (this.leaseSeconds * 1000) / 2;
    this.replicaId = (opts.replicaId ?? crypto.randomUUID()).slice(0, 64);
    const flushMs = opts.flushMs ?? 1000;
    this.settleMs = opts.settleMs ?? 10_000;
    this.timers = [
      setInterval(() => void this.flushPeriodic().catch(() => undefined), flushMs),
      setInterval(() => void this.run(SWEEP_SQL, []).catch(() => undefined), 5000),
    ];
    for (const t of this.timers) t.unref();
  }

  /**
   * Charges `c.cost` whole credits (> 0) to `c.accountId` from the lease this replica holds for the account, at
   * once, when it covers the cost: the credits still available after the charge, as `charge` returns them. Undefined
   * (nothing charged) when no lease covers it now, or after `close()`: `charge` then decides. A synchronous answer
   * lets the metering plugin settle a billed request without a promise (envelop then runs the hooks after it
   * synchronously as well).
   */
  spendHeld(c: Charge): bigint | undefined {
    if (this.closed) return undefined;
    const lease = this.leases.get(c.accountId);
    if (lease && lease.left >= c.cost && performance.now() < lease.validUntil) return this.spend(lease, c);
    return undefined;
  }

  /**
   * Charges `c.cost` whole credits (> 0) to `c.accountId`, whose balance was last seen as `seenAvailable`
   * (total - used). From this replica's lease when it holds one that covers the cost, else by
   * reserving one (large balances), else with one conditional statement. Returns the credits still
   * available to the account after the charge (not counting other replicas' unspent leases), or null
   * when the balance does not cover the cost (nothing is charged then). `direct` forces the one-statement
   * charge (charges that may be refunded). Throws when the database fails (nothing is charged then).
   */
  async charge(c: Charge, seenAvailable: bigint, direct = false): Promise<bigint | null> {
    if (!direct) {
      const spent = this.spendHeld(c);
      if (spent !== undefined) return spent;
    }
    const lease = this.leases.get(c.accountId);
    const leasing = !direct && !this.closed;
    // No lease in play for the account on this replica and none wanted: one statement, concurrently with others.
    if ((!leasing || seenAvailable < this.minBalance) && !lease && !this.locks.has(c.accountId)) {
      await this.returning.get(c.accountId);
      const left = await chargeCredits(this.db, c);
      if (left !== null || (!this.leases.has(c.accountId) && !this.locks.has(c.accountId))) return left;
      // Refused while this replica started a lease of the account: decide again under the account's lock.
    }
    // Reserving, giving back and the one-statement charge that follows happen one request at a time per
    // account, so a charge is never refused for credits this replica itself holds.
    return this.withAccount(c.accountId, async () => {
      if (leasing && !this.closed) {
        let held = this.leases.get(c.accountId);
        if (held && held.left >= c.cost && performance.now() < held.validUntil) return this.spend(held, c);
        if (held && performance.now() >= held.validUntil) {
          // Past its local end its row may be swept any moment (the sweep settles what it recorded): not refilled
          // under the same id, where a new row would be charged again for the charges recorded on the old one.
          await this.giveBack([held]);
          held = undefined;
        }
        const available = held ? held.available : seenAvailable;
        if (available >= this.minBalance) {
          held ??= this.newLease(c.accountId, available);
          if ((await this.refill(held, c.cost)) && this.leases.get(c.accountId) === held && held.left >= c.cost) return this.spend(held, c);
        }
      }
      const held = this.leases.get(c.accountId);
      if (held) await this.giveBack([held]);
      await this.returning.get(c.accountId);
      return chargeCredits(this.db, c);
    });
  }

  /** Runs `work` after every earlier `withAccount` work of the same account has settled. */
  private withAccount<T>(accountId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(accountId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(accountId, tail);
    void tail.then(() => {
      if (this.locks.get(accountId) === tail) this.locks.delete(accountId);
    });
    return next;
  }

  /**
   * Runs one lease statement after this replica's previous one (see `queue`); `sql` may be a function giving the
   * statement and its parameters when its turn comes (a batch of reservations takes every one asked for until then).
   */
  private run<T>(sql: string | (() => [string, unknown[]]), params: unknown[] = []): Promise<T[]> {
    const go = () => {
      const [text, values] = typeof sql === 'string' ? [sql, params] : sql();
      return this.db.query<T>(text, values);
    };
    const next = this.queue.then(go, go);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private newLease(accountId: string, available: bigint): Lease {
    const now = performance.now();
    // Its first settlement comes at a random point of the first settleMs, so leases taken together (a replica that
    // just started) do not all settle in the same flush ever after.
    const settledAt = now - Math.random() * this.settleMs;
    const lease: Lease = { id: crypto.randomUUID(), accountId, left: 0n, pending: new Map(), lastPending: null, recorded: new Map(), settledAt, available, size: 16n, reservedAt: now, spentSinceReserved: 0n, validUntil: 0, lastUsed: now, refilling: null };
    this.leases.set(accountId, lease);
    return lease;
  }

  private spend(lease: Lease, c: Charge): bigint {
    lease.left -= c.cost;
    lease.spentSinceReserved += c.cost;
    const last = lease.lastPending;
    if (last !== null && last.operationId === c.operationId && last.keyId === c.keyId) {
      sumInto(last, c.cost, 1, c.requestId, Date.now());
    } else {
      lease.lastPending = addPending(lease.pending, { accountId: c.accountId, operationId: c.operationId, keyId: c.keyId, cost: c.cost, requests: 1, requestId: c.requestId, at: Date.now() });
    }
    lease.lastUsed = performance.now();
    if (lease.left * 2n < lease.size && lease.refilling === null) this.refillAhead(lease, c.cost);
    return lease.available + lease.left;
  }

  /**
   * Reserves the lease's next block in the background once half of the last one is spent, so the
   * account's requests keep spending from memory instead of waiting for the reservation statement (which
   * queues behind this replica's flushes). Under the account's lock, and only while the lease is still the
   * account's: a lease being given back is not refilled. A refusal or a failure is left to the next charge.
   */
  private refillAhead(lease: Lease, cost: bigint): void {
    void this.withAccount(lease.accountId, async () => {
      if (this.closed || this.leases.get(lease.accountId) !== lease || lease.left * 2n >= lease.size) return;
      await this.refill(lease, cost);
    }).catch(() => undefined);
  }

  /** Reserves the lease's next block (at least `cost`); false when the balance does not allow it. */
  private refill(lease: Lease, cost: bigint): Promise<boolean> {
    lease.refilling ??= (async () => {
      try {
        let want = lease.size < this.maxLease ? lease.size * 2n : this.maxLease;
        // At least LEASE_RUNWAY_MS of this replica's spending on the account at the rate since the last reservation,
        // the rate taken over at least RATE_WINDOW_MIN_MS (a burst of a few requests in a millisecond is not a rate).
        const elapsedMs = Math.max(RATE_WINDOW_MIN_MS, Math.round(performance.now() - lease.reservedAt));
        const byRate = (lease.spentSinceReserved * BigInt(LEASE_RUNWAY_MS)) / BigInt(elapsedMs);
        if (byRate > want) want = byRate;
        const cap = lease.available / 16n;
        if (want > cap) want = cap;
        if (want < cost) want = cost;
        if (lease.available - want < this.minBalance / 2n) return false;
        const confirmed = performance.now();
        const available = await this.reserve(lease, want);
        if (available === null) return false;
        lease.left += want;
        lease.size = want;
        lease.reservedAt = performance.now();
        lease.spentSinceReserved = 0n;
        lease.available = available;
        lease.validUntil = confirmed + (this.leaseSeconds - 10) * 1000;
        return true;
      } finally {
        lease.refilling = null;
      }
    })();
    return lease.refilling;
  }

  /**
   * Reserves `amount` more credits for `lease` (creating its row on the first reservation): the credits then
   * available to the account, or null when they did not cover `amount`. Reservations asked for while this
   * replica's previous lease statement runs go together in one statement when their turn comes, so a burst of
   * accounts refilling at once (a replica that just started: every lease grows from 16 credits) costs a few
   * statements, not one each queued behind the other. Throws when the database fails.
   */
  private reserve(lease: Lease, amount: bigint): Promise<bigint | null> {
    return new Promise((resolve, reject) => {
      this.reservations.push({ lease, amount, resolve, reject });
      if (this.reservations.length > 1) return; // goes with the statement already waiting for its turn
      let sent: Reservation[] = [];
      void this.run<{ lease_id: string; available: string }>(() => {
        sent = this.reservations;
        this.reservations = [];
        return [RESERVE_SQL, [sent.map((r) => r.lease.accountId), sent.map((r) => r.amount.toString()), sent.map((r) => r.lease.id), this.replicaId, this.leaseSeconds]];
      }).then(
        (rows) => {
          // By lease, not account: should one account ever appear twice, only the reservation that took effect counts.
          const byLease = new Map(rows.map((r) => [r.lease_id, BigInt(r.available)]));
          for (const r of sent) r.resolve(byLease.get(r.lease.id) ?? null);
        },
        (e: unknown) => {
          for (const r of sent) r.reject(e);
        },
      );
    });
  }

  /**
   * Records and settles every charge of this replica not yet settled (one statement), or those of `accountId` only
   * (GET /me, so what this replica charged shows in credits_used and the ledger at once). Leases unused for idleMs,
   * or of accounts whose balance fell below minBalance, are given back. Throws when the database fails (the charges
   * stay pending and go with the next flush).
   */
  flush(accountId?: string): Promise<void> {
    return this.write(accountId, () => true);
  }

  /**
   * The periodic flush (every `flushMs`): every lease's new charges are recorded on its row; a lease settled longer
   * than `settleMs` ago is settled in the same statement.
   */
  private flushPeriodic(): Promise<void> {
    const now = performance.now();
    return this.write(undefined, (lease) => now - lease.settledAt >= this.settleMs);
  }

  /**
   * One FLUSH_SQL statement over the leases (all, or `accountId`'s) with new charges, or with recorded ones when
   * `settle(lease)` says to settle them now; then, without `accountId`, the idle leases are given back.
   */
  private async write(accountId: string | undefined, settle: (lease: Lease) => boolean): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushing = (async () => {
      const one = accountId === undefined ? undefined : this.leases.get(accountId);
      const leases = accountId === undefined ? this.leases.values() : one ? [one] : [];
      const batch: { lease: Lease; rows: Map<string, Pending>; merged: Map<string, Pending>; settle: boolean }[] = [];
      // The statement's rows, one JSON array per lease: [lease id, spent (a decimal string), unsettled (its JSON, as
      // is), settle]. One JSON text, not four array parameters: pg escaped every quote of every lease's unsettled
      // JSON into an array literal (pg's prepareValue showed in the profile of a billed GET; docs/benchmarks.md).
      const rows: string[] = [];
      for (const lease of leases) {
        const settling = lease.recorded.size + lease.pending.size > 0 && settle(lease);
        if (lease.pending.size === 0 && !settling) continue;
        // What the row holds after the statement: the recorded charges and the new ones, summed per operation and key.
        const merged = new Map<string, Pending>();
        for (const p of lease.recorded.values()) addPending(merged, { ...p });
        for (const p of lease.pending.values()) addPending(merged, { ...p });
        let spent = 0n;
        for (const p of merged.values()) spent += p.cost;
        batch.push({ lease, rows: lease.pending, merged, settle: settling });
        rows.push(`["${lease.id}","${spent}",${unsettledJson(merged.values())},${settling}]`);
        lease.pending = new Map();
        lease.lastPending = null;
      }
      if (batch.length > 0) {
        try {
          const confirmed = performance.now();
          const result = await this.run<{ lease_id: string; available: string }>(FLUSH_SQL, [`[${rows.join(',')}]`, this.leaseSeconds]);
          const present = new Map(result.map((r) => [r.lease_id, r.available]));
          for (const b of batch) {
            const l = b.lease;
            if (!present.has(l.id)) {
              // The row is gone (swept while this replica was cut off): what it recorded was settled by the sweep;
              // the charges since are lost (module doc), and the lease is spent no more.
              let lost = 0;
              for (const p of b.rows.values()) lost += p.requests;
              creditLeaseDropped.inc(lost);
              l.recorded = new Map();
              l.left = 0n;
              l.validUntil = 0;
              continue;
            }
            l.validUntil = confirmed + (this.leaseSeconds - 10) * 1000;
            l.available = BigInt(present.get(l.id)!);
            if (b.settle) {
              l.recorded = new Map();
              l.settledAt = confirmed;
            } else {
              l.recorded = b.merged;
            }
          }
        } catch (e) {
          // Not recorded: they go with the next flush, first in line.
          for (const b of batch) {
            for (const p of b.lease.pending.values()) addPending(b.rows, p);
            b.lease.pending = b.rows;
            b.lease.lastPending = null;
          }
          throw e;
        }
      }
      if (!accountId) {
        const now = performance.now();
        const idle = [...this.leases.values()].filter((l) => !l.refilling && (now - l.lastUsed > this.idleMs || l.available < this.minBalance / 2n || now >= l.validUntil));
        if (idle.length > 0) await this.returnLeases(idle);
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = null;
    }
  }

  /** Flushes `leases`' pending charges and gives back their unspent credits. */
  private async giveBack(leases: Lease[]): Promise<void> {
    for (const l of leases) if (l.pending.size > 0) await this.flush(l.accountId);
    await this.returnLeases(leases);
  }

  private async returnLeases(leases: Lease[]): Promise<void> {
    const gone = leases.filter((l) => l.pending.size === 0 && this.leases.get(l.accountId) === l);
    if (gone.length === 0) return;
    for (const l of gone) this.leases.delete(l.accountId);
    const done = this.run(RETURN_SQL, [gone.map((l) => l.id)]).then(() => undefined);
    const settled = done.catch(() => undefined);
    for (const l of gone) this.returning.set(l.accountId, settled);
    try {
      await done;
    } finally {
      for (const l of gone) if (this.returning.get(l.accountId) === settled) this.returning.delete(l.accountId);
    }
  }

  /** Number of leases this replica holds (for tests and metrics). */
  get size(): number {
    return this.leases.size;
  }

  /** Flushes every pending charge and gives back every lease (graceful shutdown); later charges are direct. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flush();
    await this.returnLeases([...this.leases.values()]);
  }
}
