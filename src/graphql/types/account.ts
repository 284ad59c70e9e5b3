/**
 * The caller's account (spec: GET /me, SyncUserView) and the dashboard's sync mutations, which only a
 * `machine` service token may call: upsert the profile, replace the subscriptions, set the credit total.
 */
import { z } from 'zod';
import { builder } from '../builder.js';
import { notFound } from '../../lib/errors.js';
import { chars } from '../../validation/params.js';
import {
  isValidAccountId,
  setSubscriptions,
  syncUserView,
  upsertProfile,
  type ActiveSubscription,
  type ProfileInput,
  type SyncUserView,
} from '../../accounts/accounts.js';
import { setCreditTotal } from '../../accounts/billing.js';
import type { Context } from '../context.js';

builder.scalarType('Credits', {
  description: 'A whole number of credits, as a JSON integer (0 to 2^53-1).',
  serialize: (value) => Number(value),
  parseValue: (value) => {
    if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
    if (typeof value === 'string' && /^\d{1,16}$/.test(value)) return BigInt(value);
    throw new TypeError('Credits must be a whole number');
  },
});

const SyncUserRef = builder.objectRef<Required<ProfileInput>>('SyncUser').implement({
  description: 'The account profile as the dashboard synced it; a missing value is null (REST: SyncUser).',
  fields: (t) => ({
    id: t.exposeString('id'),
    name: t.exposeString('name', { nullable: true }),
    email: t.exposeString('email', { nullable: true }),
    emailVerified: t.exposeBoolean('emailVerified', { nullable: true, description: 'null = unknown.' }),
    image: t.exposeString('image', { nullable: true, description: 'Avatar URL.' }),
    steamId: t.exposeString('steamId', { nullable: true, description: 'Linked game-platform account id.' }),
    createdAt: t.field({ type: 'DateTime', nullable: true, resolve: (u) => u.createdAt }),
    baseCurrency: t.exposeString('baseCurrency', { nullable: true, description: 'ISO 4217 code; null means USD.' }),
  }),
});

const SyncSubscriptionRef = builder.objectRef<ActiveSubscription>('SyncSubscription').implement({
  fields: (t) => ({
    category: t.exposeString('category'),
    planId: t.exposeString('planId'),
    expiresAt: t.field({ type: 'DateTime', resolve: (s) => s.expiresAt }),
  }),
});

const SyncCreditRef = builder.objectRef<SyncUserView['credit']>('SyncCredit').implement({
  description: 'Credit counters as billing applies them.',
  fields: (t) => ({
    total: t.field({ type: 'Credits', description: 'Credits granted.', resolve: (c) => c.total }),
    used: t.field({ type: 'Credits', description: 'Credits consumed.', resolve: (c) => c.used }),
    remaining: t.field({ type: 'Credits', description: 'total - used, never below 0.', resolve: (c) => c.remaining }),
  }),
});

const SyncUserViewRef = builder.objectRef<SyncUserView>('SyncUserView').implement({
  description: 'The caller\'s account at the moment of the request (REST: GET /me).',
  fields: (t) => ({
    user: t.field({ type: SyncUserRef, resolve: (v) => v.user }),
    subscription: t.field({
      type: SyncSubscriptionRef,
      nullable: true,
      description: 'The subscription active now (the one expiring last when several overlap); null when none.',
      resolve: (v) => v.subscription,
    }),
    credit: t.field({ type: SyncCreditRef, resolve: (v) => v.credit }),
  }),
});

interface SyncAccountShape {
  userId: string;
  view: SyncUserView | null;
}

const SyncAccountRef = builder.objectRef<SyncAccountShape>('SyncAccount').implement({
  description: 'The account after a sync mutation.',
  fields: (t) => ({
    userId: t.exposeString('userId'),
    profileSynced: t.boolean({ description: 'False until the profile has been upserted (GET /me answers 404 until then).', resolve: (a) => a.view !== null }),
    view: t.field({ type: SyncUserViewRef, nullable: true, description: 'What GET /me returns for this account; null while unsynced.', resolve: (a) => a.view }),
  }),
});

const rfc3339 = z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp' });
const userId = z.string().refine(isValidAccountId, { message: 'must be 1-128 characters without control characters' });

const SyncUserInput = builder.inputType('SyncUserInput', {
  description: 'A profile as the dashboard holds it (REST shape: SyncUser). Fields left out are stored as null.',
  fields: (t) => ({
    id: t.string({ required: true }),
    name: t.string({ required: false }),
    email: t.string({ required: false }),
    emailVerified: t.boolean({ required: false }),
    image: t.string({ required: false }),
    steamId: t.string({ required: false }),
    createdAt: t.field({ type: 'DateTime', required: false }),
    baseCurrency: t.string({ required: false }),
  }),
});

const SyncSubscriptionInput = builder.inputType('SyncSubscriptionInput', {
  fields: (t) => ({
    category: t.string({ required: true }),
    planId: t.string({ required: true }),
    expiresAt: t.field({ type: 'DateTime', required: true }),
  }),
});

const profileRule = z.looseObject({
  user: z.looseObject({
    id: userId,
    name: chars(0, 256).nullish(),
    email: chars(0, 320).nullish(),
    image: chars(0, 2048).nullish(),
    steamId: chars(0, 64).nullish(),
    createdAt: rfc3339.nullish(),
    baseCurrency: z.string().regex(/^[A-Z]{3}$/, { message: 'must be an ISO 4217 code (3 uppercase letters)' }).nullish(),
  }),
});

const subscriptionsRule = z.looseObject({
  userId,
  subscriptions: z
    .array(z.looseObject({ category: chars(1, 64), planId: chars(1, 128), expiresAt: rfc3339 }))
    .max(100, { message: 'must list at most 100 subscriptions' }),
});

const creditTotalRule = z.looseObject({ userId });

async function accountAfterSync(ctx: Context, id: string): Promise<SyncAccountShape> {
  return { userId: id, view: await syncUserView(ctx.db, id, new Date()) };
}

builder.queryFields((t) => ({
  me: t.field({
    type: SyncUserViewRef,
    description: 'The account of the calling API key (REST: GET /me). Error `not_found` while the account has not been synced yet.',
    resolve: async (_r, _a, ctx) => {
      const caller = await ctx.requireUser('getMe');
      await ctx.leases?.flush(caller.accountId); // what this replica charged from its lease shows at once
      const view = await syncUserView(ctx.db, caller.accountId, ctx.now);
      if (!view) throw notFound('This account has not reached the API yet; retry shortly.');
      return view;
    },
  }),
}));

builder.mutationType({ description: 'Mutations: account sync for the dashboard and quote ingestion for collectors need a service token (role machine); createAlert and deleteAlert an API key (docs/alerts.md).' });

builder.mutationFields((t) => ({
  syncUpsertProfile: t.field({
    type: SyncAccountRef,
    description: 'Creates or replaces an account profile and marks it synced.',
    args: { user: t.arg({ type: SyncUserInput, required: true }) },
    validate: profileRule,
    resolve: async (_r, { user }, ctx) => {
      await ctx.requireMachine();
      await upsertProfile(ctx.db, {
        id: user.id,
        name: user.name ?? null,
        email: user.email ?? null,
        emailVerified: user.emailVerified ?? null,
        image: user.image ?? null,
        steamId: user.steamId ?? null,
        createdAt: user.createdAt ? new Date(user.createdAt) : null,
        baseCurrency: user.baseCurrency ?? null,
      });
      return accountAfterSync(ctx, user.id);
    },
  }),
  syncSetSubscriptions: t.field({
    type: SyncAccountRef,
    description: 'Replaces the account\'s subscriptions (an empty list removes them); creates the account when new.',
    args: { userId: t.arg.string({ required: true }), subscriptions: t.arg({ type: [SyncSubscriptionInput], required: true }) },
    validate: subscriptionsRule,
    resolve: async (_r, args, ctx) => {
      await ctx.requireMachine();
      await setSubscriptions(
        ctx.db,
        args.userId,
        args.subscriptions.map((s) => ({ category: s.category, planId: s.planId, expiresAt: new Date(s.expiresAt) })),
      );
      return accountAfterSync(ctx, args.userId);
    },
  }),
  syncSetCreditTotal: t.field({
    type: SyncAccountRef,
    description: 'Sets the credits granted to the account (used credits are kept); creates the account when new.',
    args: { userId: t.arg.string({ required: true }), total: t.arg({ type: 'Credits', required: true }) },
    validate: creditTotalRule,
    resolve: async (_r, args, ctx) => {
      await ctx.requireMachine();
      await setCreditTotal(ctx.db, args.userId, args.total);
      return accountAfterSync(ctx, args.userId);
    },
  }),
}));
