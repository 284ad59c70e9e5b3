/**
 * Accounts, API keys, service tokens, profiles and subscriptions (spec: Account, Authentication).
 *
 * Credentials: an API key (role `user`) is `qg_` + 32 base64url characters; a service token (role
 * `machine`) is `qgs_` + 43 base64url characters. Both carry 192 random bits (at least the 128 the
 * issue asks for), only their SHA-256 hash is stored, the stored hash is compared in constant time,
 * and both are revocable. Secrets are printed once, at creation, and never logged or echoed.
 *
 * An account id is the dashboard's user id (any string of 1-128 characters). An account exists as
 * soon as anything about it is known (a key, credits, a subscription); its profile "has reached the
 * API" once it is synced (`profile_synced_at`), and only then does GET /me answer 200.
 */
import type { HeaderReader } from '../lib/headers.js';
import crypto from 'node:crypto';
import type { Database } from '../db/client.js';
import { ServiceError, notFound, validationError } from '../lib/errors.js';

/** Recognisable prefix of every API key (role `user`). */
export const KEY_PREFIX = 'qg_';
/** Recognisable prefix of every service token (role `machine`). */
export const TOKEN_PREFIX = 'qgs_';
const KEY_PATTERN = /^qg_[A-Za-z0-9_-]{32}$/;
const TOKEN_PATTERN = /^qgs_[A-Za-z0-9_-]{32}$/;

/** The active subscription of an account at a moment (spec: SyncSubscription). */
export interface ActiveSubscription {
  category: string;
  planId: string;
  expiresAt: Date;
}

/** A caller holding a valid API key: the key, its account and the account's state when the request began. */
export interface UserCaller {
  role: 'user';
  accountId: string;
  keyId: string;
  disabled: boolean;
  /** Catalogue operation ids the key may call; empty = every `user` operation. */
  allowedOperations: string[];
  /** Credits granted (whole credits). */
  creditsTotal: bigint;
  /** Credits consumed (whole credits). */
  creditsUsed: bigint;
  /** The subscription active at the start of the request (expiring last), or null. */
  subscription: ActiveSubscription | null;
}

/** A caller holding a valid service token (role `machine`, e.g. the dashboard's sync client). */
export interface MachineCaller {
  role: 'machine';
  tokenId: string;
  name: string;
}

/** Whoever a request's credential names. */
export type Caller = UserCaller | MachineCaller;

/** SHA-256 of a secret (its UTF-8 bytes), hex. One-shot `crypto.hash`: a third of createHash's time per key (every metered request hashes its key). */
export function hashSecret(secret: string): string {
  return crypto.hash('sha256', secret, 'hex');
}

/** True when `key` has the shape of an API key (does not check that it exists). */
export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** True when `token` has the shape of a service token. */
export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

/** A fresh random API key (192 bits). */
export function generateKey(): string {
  return KEY_PREFIX + crypto.randomBytes(24).toString('base64url');
}

/** A fresh random service token (192 bits). */
export function generateToken(): string {
  return TOKEN_PREFIX + crypto.randomBytes(24).toString('base64url');
}

/**
 * The account's active subscription at `$2` (the one expiring last among those not yet expired), as
 * columns sub_category, sub_plan_id, sub_expires_at; joined to an `account a`.
 */
const ACTIVE_SUBSCRIPTION_JOIN = `
       LEFT JOIN LATERAL (
         SELECT category AS sub_category, plan_id AS sub_plan_id, expires_at AS sub_expires_at FROM subscription
          WHERE account_id = a.id AND expires_at > $2
          ORDER BY expires_at DESC, id DESC LIMIT 1
       ) s ON true`;

function sameHash(stored: string, computed: string): boolean {
  return crypto.timingSafeEqual(Buffer.from(stored, 'hex'), Buffer.from(computed, 'hex'));
}

/** True when secret `given` equals `expected`, compared in constant time through their SHA-256 hashes (any lengths). */
export function sameSecret(given: string, expected: string): boolean {
  return sameHash(hashSecret(expected), hashSecret(given));
}

/**
 * Resolves an API key to its caller, with the account's counters and active subscription at `now`,
 * in one SQL statement (the hot path of every metered request). Null when malformed, unknown or revoked.
 */
export async function authenticateKey(db: Pick<Database, 'query'>, key: string, now = new Date()): Promise<UserCaller | null> {
  if (!isWellFormedKey(key)) return null;
  return (await authenticateKeyHashes(db, [{ hash: hashSecret(key), now }]))[0]!;
}

/**
 * Resolves API keys by their SHA-256 hashes (hex, `hashSecret`) in one SQL statement: for each ask, in order, the
 * caller with the account's counters and the subscription active at the ask's `now` (the one expiring last), or
 * null when unknown or revoked. The caller cache (accounts/caller-cache.ts) sends the misses of one turn of the event
 * loop together: a replica whose 3,000 accounts' entries expired at once made 3,000 statements, each costing
 * PostgreSQL more than the index lookups it ran (`npm run bench`, PostgreSQL's CPU per subscription GET).
 */
export async function authenticateKeyHashes(db: Pick<Database, 'query'>, asks: readonly { hash: string; now: Date }[]): Promise<(UserCaller | null)[]> {
  if (asks.length === 0) return [];
  // The statement reads subscriptions active at the earliest `now`; each ask then drops one that ended by its own.
  let earliest = asks[0]!.now;
  for (const a of asks) if (a.now < earliest) earliest = a.now;
  const rows = await db.query<{
    id: string;
    account_id: string;
    hash: string;
    revoked_at: Date | null;
    allowed_operations: string[] | null;
    disabled: boolean;
    credits_total: string;
    credits_used: string;
    sub_category: string | null;
    sub_plan_id: string | null;
    sub_expires_at: Date | null;
  }>(
    `SELECT k.id, k.account_id, k.hash, k.revoked_at, k.allowed_operations, a.disabled,
            a.credits_total::text AS credits_total, a.credits_used::text AS credits_used, s.*
       FROM api_key k
       JOIN account a ON a.id = k.account_id ${ACTIVE_SUBSCRIPTION_JOIN}
      WHERE k.hash = ANY($1::char(64)[])`, // api_key.hash is char(64): a text[] would cast the column and miss its index
    [[...new Set(asks.map((a) => a.hash))], earliest],
  );
  const byHash = new Map(rows.map((r) => [r.hash, r]));
  return asks.map(({ hash, now }) => {
    const row = byHash.get(hash);
    if (!row || row.revoked_at !== null || !sameHash(row.hash, hash)) return null;
    const subscription =
      row.sub_category !== null && new Date(row.sub_expires_at!) > now ? { category: row.sub_category, planId: row.sub_plan_id!, expiresAt: new Date(row.sub_expires_at!) } : null;
    return {
      role: 'user',
      accountId: row.account_id,
      keyId: row.id,
      disabled: row.disabled,
      allowedOperations: row.allowed_operations ?? [],
      creditsTotal: BigInt(row.credits_total),
      creditsUsed: BigInt(row.credits_used),
      subscription,
    };
  });
}

/**
 * The callers behind API keys by key id (`UserCaller.keyId`), as they stand at `now`: each key's account state,
 * counters and the subscription active at `now`; a key that is unknown or revoked is absent from the map. One
 * statement for all of them. For re-checking callers that were admitted earlier (an open live subscription:
 * live/live-billing.ts), where the key's secret is no longer at hand.
 */
export async function callersByKeyIds(db: Pick<Database, 'query'>, keyIds: readonly string[], now: Date): Promise<Map<string, UserCaller>> {
  const out = new Map<string, UserCaller>();
  if (keyIds.length === 0) return out;
  const rows = await db.query<{
    id: string;
    account_id: string;
    allowed_operations: string[] | null;
    disabled: boolean;
    credits_total: string;
    credits_used: string;
    sub_category: string | null;
    sub_plan_id: string | null;
    sub_expires_at: Date | null;
  }>(
    `SELECT k.id::text AS id, k.account_id, k.allowed_operations, a.disabled,
            a.credits_total::text AS credits_total, a.credits_used::text AS credits_used, s.*
       FROM api_key k
       JOIN account a ON a.id = k.account_id ${ACTIVE_SUBSCRIPTION_JOIN}
      WHERE k.id = ANY($1::uuid[]) AND k.revoked_at IS NULL`,
    [[...new Set(keyIds)], now],
  );
  for (const row of rows) {
    out.set(row.id, {
      role: 'user',
      accountId: row.account_id,
      keyId: row.id,
      disabled: row.disabled,
      allowedOperations: row.allowed_operations ?? [],
      creditsTotal: BigInt(row.credits_total),
      creditsUsed: BigInt(row.credits_used),
      subscription: row.sub_category !== null ? { category: row.sub_category, planId: row.sub_plan_id!, expiresAt: new Date(row.sub_expires_at!) } : null,
    });
  }
  return out;
}

/** Resolves a service token to its caller; null when malformed, unknown or revoked. */
export async function authenticateToken(db: Pick<Database, 'query'>, token: string): Promise<MachineCaller | null> {
  if (!isWellFormedToken(token)) return null;
  const hash = hashSecret(token);
  const rows = await db.query<{ id: string; name: string; role: string; hash: string; revoked_at: Date | null }>(
    `SELECT id, name, role, hash, revoked_at FROM service_token WHERE hash = $1`,
    [hash],
  );
  const row = rows[0];
  if (!row || row.revoked_at !== null || row.role !== 'machine' || !sameHash(row.hash, hash)) return null;
  return { role: 'machine', tokenId: row.id, name: row.name };
}

/**
 * The credential a request carries: `Authorization: Bearer <secret>` or `X-API-Key: <secret>`.
 * Returns null when neither header is present, `''` when a header is present but malformed.
 */
export function credentialFromHeaders(headers: HeaderReader): string | null {
  const auth = headers.get('authorization');
  if (auth !== null) {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : '';
  }
  const apiKey = headers.get('x-api-key');
  if (apiKey !== null) return apiKey.trim();
  return null;
}

/** Account id rule: the dashboard's user id, 1-128 characters, no control characters. */
export function isValidAccountId(id: string): boolean {
  return id.length >= 1 && id.length <= 128 && !/[\u0000-\u001f\u007f]/.test(id);
}

function requireAccountId(id: string): void {
  if (!isValidAccountId(id)) throw validationError([{ location: 'argument', field: 'id', message: 'must be 1-128 characters without control characters' }], 'The account id must be 1-128 characters without control characters.');
}

/** A profile as the dashboard sends it (spec: SyncUser); undefined fields are stored as null. */
export interface ProfileInput {
  id: string;
  name?: string | null;
  email?: string | null;
  emailVerified?: boolean | null;
  image?: string | null;
  steamId?: string | null;
  createdAt?: Date | null;
  baseCurrency?: string | null;
}

/** A subscription as the dashboard or the CLI sets it (spec: SyncSubscription). */
export interface SubscriptionInput {
  category: string;
  planId: string;
  expiresAt: Date;
}

/** Options of createAccount. `credits` are whole credits >= 0; `profile` fields make it synced at once. */
export interface NewAccount {
  id?: string;
  credits?: bigint;
  subscription?: SubscriptionInput;
  profile?: Omit<ProfileInput, 'id'>;
  /** Leave the profile unsynced (GET /me answers 404 until the dashboard syncs it). Default false. */
  unsynced?: boolean;
}

/**
 * Creates an account (id = a random UUID unless given) with its first API key; returns the key,
 * shown once. The account is synced (GET /me works) unless `unsynced`. Credits are recorded as a
 * `grant` ledger row. Throws 422 for a bad id or negative credits, 409 `conflict` when the id exists.
 */
export async function createAccount(db: Database, opts: NewAccount = {}): Promise<{ accountId: string; keyId: string; key: string }> {
  const accountId = opts.id ?? crypto.randomUUID();
  requireAccountId(accountId);
  const credits = opts.credits ?? 0n;
  if (credits < 0n) throw validationError([{ location: 'argument', field: 'credits', message: 'must be a whole number >= 0' }], 'credits must be a whole number >= 0');
  const exists = await db.query(`SELECT 1 FROM account WHERE id = $1`, [accountId]);
  if (exists.length > 0) throw new ServiceError('conflict', 409, `Account ${accountId} already exists.`);
  const p = opts.profile ?? {};
  const { prisma } = db;
  await prisma.$transaction([
    prisma.account.create({
      data: {
        id: accountId,
        creditsTotal: credits,
        profileSyncedAt: opts.unsynced ? null : new Date(),
        name: p.name ?? null,
        email: p.email ?? null,
        emailVerified: p.emailVerified ?? null,
        image: p.image ?? null,
        steamId: p.steamId ?? null,
        userCreatedAt: p.createdAt ?? null,
        baseCurrency: p.baseCurrency ?? null,
      },
    }),
    ...(credits > 0n ? [prisma.creditLedgerEntry.create({ data: { accountId, kind: 'grant', amount: credits } })] : []),
    ...(opts.subscription ? [prisma.subscription.create({ data: { accountId, ...opts.subscription } })] : []),
  ]);
  const { keyId, key } = await createApiKey(db, accountId);
  return { accountId, keyId, key };
}

/**
 * Adds an API key to an existing account; returns the key, shown once. `operations` restricts it to
 * those catalogue operation ids (empty = every `user` operation). Throws 404 for an unknown account.
 */
export async function createApiKey(db: Database, accountId: string, opts: { name?: string; operations?: string[] } = {}): Promise<{ keyId: string; key: string }> {
  const found = await db.query(`SELECT 1 FROM account WHERE id = $1`, [accountId]);
  if (found.length === 0) throw notFound(`No account ${accountId}.`);
  const keyId = crypto.randomUUID();
  const key = generateKey();
  await db.prisma.apiKey.create({
    data: { id: keyId, accountId, name: opts.name ?? null, prefix: key.slice(0, 8), hash: hashSecret(key), allowedOperations: opts.operations ?? [] },
  });
  return { keyId, key };
}

/** Revokes an API key by id (idempotent: the first revocation time is kept). Throws 404 for an unknown key. */
export async function revokeApiKey(db: Database, keyId: string): Promise<void> {
  const rows = await db.query<{ account_id: string }>(`UPDATE api_key SET revoked_at = COALESCE(revoked_at, now()) WHERE id::text = $1 RETURNING account_id`, [keyId]);
  if (rows.length === 0) throw notFound(`No API key ${keyId}.`);
  await db.notify('qg_auth', rows[0]!.account_id); // cached lookups of the key end on every replica
}

/** Creates a `machine` service token named `name`; returns it, shown once. */
export async function createServiceToken(db: Database, name: string): Promise<{ tokenId: string; token: string }> {
  const tokenId = crypto.randomUUID();
  const token = generateToken();
  await db.prisma.serviceToken.create({ data: { id: tokenId, name, role: 'machine', prefix: token.slice(0, 8), hash: hashSecret(token) } });
  return { tokenId, token };
}

/** Revokes a service token by id. Throws 404 for an unknown token. */
export async function revokeServiceToken(db: Database, tokenId: string): Promise<void> {
  const rows = await db.query(`UPDATE service_token SET revoked_at = COALESCE(revoked_at, now()) WHERE id::text = $1 RETURNING id`, [tokenId]);
  if (rows.length === 0) throw notFound(`No service token ${tokenId}.`);
}

/** Disables (or re-enables) an account: its keys then get 403. Throws 404 for an unknown account. */
export async function setAccountDisabled(db: Database, accountId: string, disabled: boolean): Promise<void> {
  const rows = await db.query(`UPDATE account SET disabled = $2 WHERE id = $1 RETURNING id`, [accountId, disabled]);
  if (rows.length === 0) throw notFound(`No account ${accountId}.`);
  await db.notify('qg_auth', accountId);
}

/**
 * Makes sure an account row exists (unsynced when new): the dashboard may push credits or plans
 * before the profile. Throws 422 for an id that breaks the account id rule.
 */
export async function ensureAccount(db: Database, accountId: string): Promise<void> {
  requireAccountId(accountId);
  await db.query(`INSERT INTO account (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, [accountId]);
}

/**
 * Stores the profile (spec: SyncUser) and marks it synced; creates the account when new. Fields not
 * given become null (the dashboard sends the whole profile).
 */
export async function upsertProfile(db: Database, p: ProfileInput): Promise<void> {
  await ensureAccount(db, p.id);
  await db.query(
    `UPDATE account SET name = $2, email = $3, email_verified = $4, image = $5, steam_id = $6, user_created_at = $7,
            base_currency = $8, profile_synced_at = now() WHERE id = $1`,
    [p.id, p.name ?? null, p.email ?? null, p.emailVerified ?? null, p.image ?? null, p.steamId ?? null, p.createdAt ?? null, p.baseCurrency ?? null],
  );
}

/** Replaces the account's subscriptions with `subs` (an empty list removes them all); creates the account when new. */
export async function setSubscriptions(db: Database, accountId: string, subs: SubscriptionInput[]): Promise<void> {
  await ensureAccount(db, accountId);
  const { prisma } = db;
  await prisma.$transaction([
    prisma.subscription.deleteMany({ where: { accountId } }),
    prisma.subscription.createMany({ data: subs.map((s) => ({ accountId, ...s })) }),
  ]);
  await db.notify('qg_auth', accountId);
}

/** The account view of GET /me (spec: SyncUserView), read at `now`. */
export interface SyncUserView {
  user: Required<ProfileInput>;
  subscription: ActiveSubscription | null;
  credit: { total: bigint; used: bigint; remaining: bigint };
}

/**
 * The account's SyncUserView at `now`: counters as billing applies them (used = credits_used + what the
 * account's credit leases recorded and did not settle yet; remaining = total - used, never below 0), the active
 * subscription expiring last. Null when the profile has not been synced.
 */
export async function syncUserView(db: Database, accountId: string, now = new Date()): Promise<SyncUserView | null> {
  const rows = await db.query<{
    id: string;
    name: string | null;
    email: string | null;
    email_verified: boolean | null;
    image: string | null;
    steam_id: string | null;
    user_created_at: Date | null;
    base_currency: string | null;
    profile_synced_at: Date | null;
    credits_total: string;
    credits_used: string;
    sub_category: string | null;
    sub_plan_id: string | null;
    sub_expires_at: Date | null;
  }>(
    `SELECT a.id, a.name, a.email, a.email_verified, a.image, a.steam_id, a.user_created_at, a.base_currency, a.profile_synced_at,
            a.credits_total::text AS credits_total,
            -- Credits used: settled, plus what credit leases recorded and have not settled yet (accounts/credit-leases.ts).
            (a.credits_used + COALESCE((SELECT sum(l.spent) FROM credit_lease l WHERE l.account_id = a.id), 0))::text AS credits_used, s.*
       FROM account a ${ACTIVE_SUBSCRIPTION_JOIN}
      WHERE a.id = $1`,
    [accountId, now],
  );
  const r = rows[0];
  if (!r || r.profile_synced_at === null) return null;
  const total = BigInt(r.credits_total);
  const used = BigInt(r.credits_used);
  return {
    user: {
      id: r.id,
      name: r.name,
      email: r.email,
      emailVerified: r.email_verified,
      image: r.image,
      steamId: r.steam_id,
      createdAt: r.user_created_at ? new Date(r.user_created_at) : null,
      baseCurrency: r.base_currency,
    },
    subscription: r.sub_category !== null ? { category: r.sub_category, planId: r.sub_plan_id!, expiresAt: new Date(r.sub_expires_at!) } : null,
    credit: { total, used, remaining: remainingCredits(total, used) },
  };
}

/** Credits left: total - used, never below 0 (whole credits; spec: CreditMeta.remaining). */
export function remainingCredits(total: bigint, used: bigint): bigint {
  return total > used ? total - used : 0n;
}
