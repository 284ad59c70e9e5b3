/**
 * Accounts and API keys. A key is `qg_` + 32 base64url characters (192 random bits); only its
 * SHA-256 hash is stored, and lookups compare hashes in constant time. Keys are printed once,
 * at creation, and never logged.
 */
import crypto from 'node:crypto';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Database } from '../db/client.js';

/** Recognisable prefix of every Quotegate API key. */
export const KEY_PREFIX = 'qg_';
const KEY_PATTERN = /^qg_[A-Za-z0-9_-]{32}$/;

/** The caller behind a valid key. */
export interface Caller {
  accountId: string;
  keyId: string;
  disabled: boolean;
}

/** SHA-256 of a key, hex. */
export function hashKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** True when `key` has the shape of a Quotegate key (does not check that it exists). */
export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** A fresh random key (192 bits). */
export function generateKey(): string {
  return KEY_PREFIX + crypto.randomBytes(24).toString('base64url');
}

/** Creates an account with `credits` granted and one API key; returns the key (shown once). */
export async function createAccount(prisma: PrismaClient, credits: number): Promise<{ accountId: string; keyId: string; key: string }> {
  if (!Number.isSafeInteger(credits) || credits < 0) throw new RangeError('credits must be a whole number >= 0');
  const accountId = crypto.randomUUID();
  const keyId = crypto.randomUUID();
  const key = generateKey();
  await prisma.$transaction([
    prisma.account.create({ data: { id: accountId, creditsTotal: BigInt(credits) } }),
    prisma.apiKey.create({ data: { id: keyId, accountId, prefix: key.slice(0, 8), hash: hashKey(key) } }),
  ]);
  return { accountId, keyId, key };
}

/** Resolves a key to its caller; null when malformed, unknown or revoked. */
export async function authenticate(db: Pick<Database, 'query'>, key: string): Promise<Caller | null> {
  if (!isWellFormedKey(key)) return null;
  const hash = hashKey(key);
  const rows = await db.query<{ id: string; account_id: string; hash: string; revoked_at: Date | null; disabled: boolean }>(
    `SELECT k.id, k.account_id, k.hash, k.revoked_at, a.disabled FROM api_key k JOIN account a ON a.id = k.account_id WHERE k.hash = $1`,
    [hash],
  );
  const row = rows[0];
  if (!row || row.revoked_at !== null) return null;
  if (!crypto.timingSafeEqual(Buffer.from(row.hash, 'hex'), Buffer.from(hash, 'hex'))) return null;
  return { accountId: row.account_id, keyId: row.id, disabled: row.disabled };
}

/**
 * The API key a request carries: `Authorization: Bearer <key>` or `X-API-Key: <key>`.
 * Returns null when neither header is present, `''` when a header is present but malformed.
 */
export function keyFromHeaders(headers: Headers): string | null {
  const auth = headers.get('authorization');
  if (auth !== null) {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : '';
  }
  const apiKey = headers.get('x-api-key');
  if (apiKey !== null) return apiKey.trim();
  return null;
}
