/**
 * Concurrent live subscriptions per account (issue: live, point 3; README, Extensions: live changes): at most
 * `max` open at once across every replica, counted in the `live_slot` table (PostgreSQL is what the replicas
 * share). Taking a slot is one transaction under a per-account advisory lock, so two replicas never both take
 * the last one. A replica moves its slots' `expires_at` forward every SLOT_REFRESH_SECONDS while they are open
 * and deletes a slot when its subscription ends; the slots of a replica that died lapse after SLOT_SECONDS.
 */
import crypto from 'node:crypto';
import type { Database } from '../db/client.js';
import { ServiceError } from '../lib/errors.js';

/** Seconds a slot lasts without a refresh (a dead replica's subscriptions count this long at most). */
export const SLOT_SECONDS = 90;
/** Seconds between refreshes of a replica's open slots. */
export const SLOT_REFRESH_SECONDS = 30;

/** 429 `too_many_subscriptions`: the account already has `max` live subscriptions open. */
export function tooManySubscriptions(max: number): ServiceError {
  return new ServiceError(
    'too_many_subscriptions',
    429,
    `This account already has ${max} live subscriptions open (the most at once, on all replicas together); close one first.`,
    { max_concurrent: max },
  );
}

/**
 * Takes one of `accountId`'s slots and returns its id. Throws 429 `too_many_subscriptions` when `max` slots that
 * have not lapsed are open. One transaction: the account's advisory lock, then a conditional insert read after it.
 */
export async function takeSlot(db: Database, accountId: string, max: number): Promise<string> {
  const id = crypto.randomUUID();
  const taken = await db.prisma.$transaction(async (tx) => {
    await tx.$queryRawUnsafe(`SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtext('quotegate:live'), hashtext($1::text))) l`, accountId);
    const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO live_slot (id, account_id, expires_at)
       SELECT $1::uuid, $2::text, now() + make_interval(secs => $3::int)
        WHERE (SELECT count(*) FROM live_slot WHERE account_id = $2::text AND expires_at > now()) < $4::int
       RETURNING id::text AS id`,
      id,
      accountId,
      SLOT_SECONDS,
      max,
    );
    return rows.length > 0;
  });
  if (!taken) throw tooManySubscriptions(max);
  return id;
}

/** Moves the given slots' expiry SLOT_SECONDS ahead (one statement) and deletes lapsed slots of any replica. */
export async function refreshSlots(db: Pick<Database, 'query'>, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await db.query(`UPDATE live_slot SET expires_at = now() + make_interval(secs => $2::int) WHERE id = ANY($1::uuid[])`, [ids, SLOT_SECONDS]);
  await db.query(`DELETE FROM live_slot WHERE expires_at < now() - interval '1 minute'`);
}

/** Gives a slot back (its subscription ended). */
export async function releaseSlot(db: Pick<Database, 'query'>, id: string): Promise<void> {
  await db.query(`DELETE FROM live_slot WHERE id = $1::uuid`, [id]);
}
