/**
 * The administration commands of the `quotegate` CLI (accounts, keys, credits, subscriptions, service
 * tokens) as plain functions `(db, args) -> result`. The CLI runs them on its own database connection, or
 * (embedded PGlite held by a running service) sends `{command, args}` over the admin channel
 * (src/admin/channel.ts) and the service runs the very same function on its database. Printing (text or
 * `--json`) stays in the CLI; a command's result object is exactly its `--json` output.
 *
 * Arguments are the CLI's options and arguments as given (strings, flags as booleans), validated here with
 * zod on whichever side runs the command; every failure is a ServiceError (422 for invalid arguments,
 * 404 unknown id, 409 existing account) whose message the CLI prints as `error: <message>`.
 */
import { z } from 'zod';
import type { Database } from '../db/client.js';
import {
  createAccount,
  createApiKey,
  createServiceToken,
  revokeApiKey,
  revokeServiceToken,
  setAccountDisabled,
  setSubscriptions,
  type SubscriptionInput,
} from '../accounts/accounts.js';
import { grantCredits } from '../accounts/billing.js';
import { ENDPOINTS } from '../catalogue/endpoints.js';
import { notFound, validationError } from '../lib/errors.js';

/** A whole number given as decimal digits (at most 16), at least `min`; the message names the CLI option. */
const whole = (option: string, min: bigint) =>
  z
    .string({ error: `${option} is required` })
    .refine((v) => /^\d{1,16}$/.test(v) && BigInt(v) >= min, `${option} must be a whole number >= ${min}`);

const id = (what: string) => z.string({ error: `${what} is required` }).min(1, `${what} must not be empty`);

/** A subscription expiring `days` whole days from now. */
const expiresIn = (days: string) => new Date(Date.now() + Number(days) * 86_400_000);

const subscriptionJson = (s: SubscriptionInput) => ({ category: s.category, plan_id: s.planId, expires_at: s.expiresAt.toISOString() });

/** The user operation ids an API key may be limited to (catalogue rows with role `user`). */
const userOperations = () => ENDPOINTS.filter((e) => e.roles.includes('user')).map((e) => e.operationId);

/** Defines one command: its argument schema and its work on an open database. */
function command<S extends z.ZodType, R extends Record<string, unknown>>(args: S, run: (db: Database, args: z.output<S>) => Promise<R>) {
  return { args, run };
}

/** Every admin command by name (`<group>.<verb>`, as on the command line). */
const ADMIN_COMMANDS = {
  /** `account create`: an account with its first API key (printed once). */
  'account.create': command(
    z
      .strictObject({
        id: z.string().optional(),
        credits: whole('--credits', 0n).default('0'),
        subscription: z.string().min(1).optional(),
        days: z.string().optional(),
        category: z.string().min(1).default('api'),
        name: z.string().optional(),
        email: z.string().optional(),
        unsynced: z.boolean().optional(),
      })
      .refine((a) => (a.subscription === undefined) === (a.days === undefined), '--subscription and --days go together')
      .refine((a) => a.days === undefined || /^\d{1,16}$/.test(a.days) && BigInt(a.days) >= 1n, '--days must be a whole number >= 1'),
    async (db, a) => {
      const credits = BigInt(a.credits);
      const subscription = a.subscription !== undefined && a.days !== undefined ? { category: a.category, planId: a.subscription, expiresAt: expiresIn(a.days) } : undefined;
      const r = await createAccount(db, { id: a.id, credits, subscription, profile: { name: a.name ?? null, email: a.email ?? null }, unsynced: a.unsynced });
      return {
        account_id: r.accountId,
        key_id: r.keyId,
        api_key: r.key,
        credits: Number(credits),
        subscription: subscription ? { plan_id: subscription.planId, expires_at: subscription.expiresAt.toISOString() } : null,
      };
    },
  ),
  /** `account disable <id>`: its keys get 403. */
  'account.disable': command(z.strictObject({ account_id: id('<account-id>') }), async (db, a) => {
    await setAccountDisabled(db, a.account_id, true);
    return { account_id: a.account_id, disabled: true };
  }),
  /** `account enable <id>`. */
  'account.enable': command(z.strictObject({ account_id: id('<account-id>') }), async (db, a) => {
    await setAccountDisabled(db, a.account_id, false);
    return { account_id: a.account_id, disabled: false };
  }),
  /** `key create --account ID [--operations a,b]`: another API key (printed once), optionally limited to some operations. */
  'key.create': command(
    z.strictObject({ account: id('--account'), name: z.string().optional(), operations: z.string().optional() }),
    async (db, a) => {
      const operations = a.operations ? a.operations.split(',').map((s) => s.trim()).filter(Boolean) : [];
      const allowed = userOperations();
      const unknown = operations.filter((o) => !allowed.includes(o));
      if (unknown.length > 0) {
        const message = `unknown operation id(s): ${unknown.join(', ')}; choose from ${allowed.join(', ')}`;
        throw validationError([{ location: 'argument', field: 'operations', message }], message);
      }
      const r = await createApiKey(db, a.account, { name: a.name, operations });
      return { account_id: a.account, key_id: r.keyId, api_key: r.key, operations };
    },
  ),
  /** `key revoke <key-id>`: the key gets 401 from then on. */
  'key.revoke': command(z.strictObject({ key_id: id('<key-id>') }), async (db, a) => {
    await revokeApiKey(db, a.key_id);
    return { key_id: a.key_id, revoked: true };
  }),
  /** `credits grant <account-id> <n>`: adds n to the granted total (a ledger row). */
  'credits.grant': command(z.strictObject({ account_id: id('<account-id>'), amount: whole('<amount>', 1n) }), async (db, a) => {
    const total = await grantCredits(db, a.account_id, BigInt(a.amount));
    return { account_id: a.account_id, granted: Number(a.amount), total: Number(total) };
  }),
  /** `subscription set <account-id> --plan P --days N` / `--none`: replaces the account's subscriptions. */
  'subscription.set': command(
    z
      .strictObject({
        account_id: id('<account-id>'),
        plan: z.string().min(1).optional(),
        days: z.string().optional(),
        category: z.string().min(1).default('api'),
        none: z.boolean().optional(),
      })
      .refine((a) => (a.none ? a.plan === undefined && a.days === undefined : a.plan !== undefined && a.days !== undefined), 'give --plan and --days, or --none')
      .refine((a) => a.days === undefined || /^\d{1,16}$/.test(a.days) && BigInt(a.days) >= 1n, '--days must be a whole number >= 1'),
    async (db, a) => {
      const subs = a.none || a.plan === undefined || a.days === undefined ? [] : [{ category: a.category, planId: a.plan, expiresAt: expiresIn(a.days) }];
      if ((await db.query(`SELECT 1 FROM account WHERE id = $1`, [a.account_id])).length === 0) throw notFound(`No account ${a.account_id}.`);
      await setSubscriptions(db, a.account_id, subs);
      return { account_id: a.account_id, subscriptions: subs.map(subscriptionJson) };
    },
  ),
  /** `token create --name N`: a `machine` service token (printed once). */
  'token.create': command(z.strictObject({ name: id('--name') }), async (db, a) => {
    const r = await createServiceToken(db, a.name);
    return { token_id: r.tokenId, token: r.token, role: 'machine' };
  }),
  /** `token revoke <token-id>`. */
  'token.revoke': command(z.strictObject({ token_id: id('<token-id>') }), async (db, a) => {
    await revokeServiceToken(db, a.token_id);
    return { token_id: a.token_id, revoked: true };
  }),
};

/** The name of an admin command, e.g. `account.create`. */
export type AdminCommandName = keyof typeof ADMIN_COMMANDS;
/** The arguments a command takes before validation (CLI options as given). */
export type AdminArgs<N extends AdminCommandName> = z.input<(typeof ADMIN_COMMANDS)[N]['args']>;
/** What a command returns: its `--json` output. */
export type AdminResult<N extends AdminCommandName> = Awaited<ReturnType<(typeof ADMIN_COMMANDS)[N]['run']>>;

/** True when `name` is an admin command (for requests arriving over the admin channel). */
export function isAdminCommand(name: unknown): name is AdminCommandName {
  return typeof name === 'string' && Object.hasOwn(ADMIN_COMMANDS, name);
}

/**
 * Validates `args` for `name`. Returns the parsed arguments; throws 422 `validation_failed` (message: the
 * problems, naming the CLI options, joined by `; `) when they are invalid. Needs no database.
 */
export function parseAdminArgs<N extends AdminCommandName>(name: N, args: unknown): z.output<(typeof ADMIN_COMMANDS)[N]['args']> {
  const r = ADMIN_COMMANDS[name].args.safeParse(args);
  if (r.success) return r.data as z.output<(typeof ADMIN_COMMANDS)[N]['args']>;
  const problems = r.error.issues.map((i) => ({ location: 'argument' as const, field: i.path.join('.') || name, message: i.message }));
  throw validationError(problems, problems.map((p) => p.message).join('; '));
}

/**
 * Runs admin command `name` with `args` (validated first) on `db` and returns its result (the `--json`
 * output). Throws ServiceError for invalid arguments (422), an unknown id (404) or an existing account (409);
 * other errors (database failures) propagate as they are.
 */
export async function runAdminCommand<N extends AdminCommandName>(db: Database, name: N, args: AdminArgs<N>): Promise<AdminResult<N>> {
  const parsed = parseAdminArgs(name, args);
  const cmd = ADMIN_COMMANDS[name] as unknown as { run: (db: Database, args: unknown) => Promise<AdminResult<N>> };
  return cmd.run(db, parsed);
}
