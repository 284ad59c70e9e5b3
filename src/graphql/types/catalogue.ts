/** GraphQL types and root fields for websites, currencies and fee schedules (spec: Website, Currency, Fee schedule). */
import { builder, listComplexity } from '../builder.js';
import { only, paramArgs } from '../args.js';
import { argsRule, operationArgsRule } from '../../operations/operation.js';
import getFeeScheduleOp from '../../operations/get-fee-schedule.js';
import listWebsitesOp from '../../operations/list-websites.js';
import getWebsiteOp from '../../operations/get-website.js';
import listCurrenciesOp from '../../operations/list-currencies.js';
import getCurrencyOp from '../../operations/get-currency.js';
import { shapeFields } from '../shape-fields.js';
import { CurrencyOut, WebsiteOut } from '../../shapes/catalogue.js';
import * as catalogue from '../../catalogue/catalogue.js';
import { listCurrencies, listWebsites } from '../../catalogue/catalogue.js';
import { notFound } from '../../lib/errors.js';
import { formatDate } from '../../lib/time.js';
import { currencyDecimals } from '../../lib/money.js';
import type { Context } from '../context.js';

export const WebsiteRef = builder.objectRef<catalogue.Website>('Website').implement({
  description: 'A marketplace (REST: WebsiteOut).',
  fields: (t) => ({
    // The REST shape's fields (shapes/catalogue.ts), in camelCase.
    ...shapeFields(t, WebsiteOut, { descriptions: { code: 'Unique marketplace code.' } }),
    feeSchedule: t.field({
      type: FeeScheduleRef,
      description:
        'The official fee schedule in force on `asOf` (a UTC day; default today): one slot per purpose, each a chain or null (unknown or not offered). A fee change makes a new version; older days keep the schedule they had.',
      args: paramArgs(t.arg, only(getFeeScheduleOp.params, 'asOf')),
      validate: argsRule(only(getFeeScheduleOp.params, 'asOf')),
      resolve: (w, args, ctx) => ({ websiteCode: w.code, asOf: args.asOf ?? formatDate(ctx.now) }),
    }),
  }),
});

export const CurrencyRef = builder.objectRef<catalogue.Currency>('Currency').implement({
  description: 'A currency (REST: CurrencyOut; inside fee schedules: PublicCurrencyOut).',
  fields: (t) => ({
    ...shapeFields(t, CurrencyOut, { descriptions: { usd_rate: 'USD value of one unit.', ref_count: 'Number of convert operators using this currency.' } }),
    decimals: t.int({
      description:
        "Decimals of an amount in this currency: its ISO 4217 minor unit (2 for USD, EUR, CNY; 0 for JPY, KRW), 2 when ISO 4217 lists none. The `Rounded` amount fields round to it. Not in the REST CurrencyOut.",
      resolve: (c) => currencyDecimals(c.code),
    }),
  }),
});

const FeePurpose = builder.enumType('FeePurpose', { values: ['deposit', 'sale', 'withdraw'] as const });
const FeeArithmetic = builder.enumType('FeeArithmetic', { values: ['add', 'sub', 'mul', 'div'] as const });
const ConvertMode = builder.enumType('ConvertMode', { values: ['auto', 'fixed'] as const });
const GroupRule = builder.enumType('GroupRule', { values: ['min', 'max', 'avg'] as const });
const StepKind = builder.enumType('StepKind', { values: ['fee', 'convert', 'convert_operator_group'] as const });

interface FeeScheduleShape {
  websiteCode: string;
  /** The UTC day the schedule is read for, YYYY-MM-DD. */
  asOf: string;
}
type Slots = Partial<Record<'deposit' | 'sale' | 'withdraw', catalogue.FeeSlot>>;

type StepShape =
  | { kind: 'fee'; op: catalogue.FeeOperator }
  | { kind: 'convert'; op: catalogue.ConvertOperator }
  | { kind: 'convert_operator_group'; op: catalogue.ConvertOperatorGroup };

const FeeScheduleRef = builder.objectRef<FeeScheduleShape>('FeeSchedule').implement({
  description: 'The official fee schedule of a marketplace (REST: FeeScheduleOut).',
  fields: (t) => ({
    websiteCode: t.exposeString('websiteCode'),
    asOf: t.field({ type: 'Date', description: 'The day this schedule is in force for.', resolve: (s) => new Date(`${s.asOf}T00:00:00Z`) }),
    slots: t.field({
      type: FeeScheduleSlotsRef,
      resolve: async (s, _a, ctx) => {
        const slots = await ctx.loaders.slots.load(`${s.websiteCode}\u0000${s.asOf}`);
        return Object.fromEntries(slots.map((x) => [x.purpose, x])) as Slots;
      },
    }),
  }),
});

const slotField = (purpose: 'deposit' | 'sale' | 'withdraw') =>
  ({ nullable: true, description: `The ${purpose} chain; null when unknown or not offered (never means free).` }) as const;

const FeeScheduleSlotsRef = builder.objectRef<Slots>('FeeScheduleSlots').implement({
  fields: (t) => ({
    deposit: t.field({ type: FeeScheduleSlotRef, ...slotField('deposit'), resolve: (s) => s.deposit ?? null }),
    sale: t.field({ type: FeeScheduleSlotRef, ...slotField('sale'), resolve: (s) => s.sale ?? null }),
    withdraw: t.field({ type: FeeScheduleSlotRef, ...slotField('withdraw'), resolve: (s) => s.withdraw ?? null }),
  }),
});

const FeeScheduleSlotRef = builder.objectRef<catalogue.FeeSlot>('FeeScheduleSlot').implement({
  fields: (t) => ({
    purpose: t.field({ type: FeePurpose, resolve: (s) => s.purpose }),
    validFrom: t.field({ type: 'Date', description: 'The first day this version of the slot is in force (1970-01-01 for the first known version).', resolve: (s) => s.validFrom }),
    calculationChain: t.field({
      type: ChainRef,
      resolve: async (s, _a, ctx) => {
        const chain = await ctx.loaders.chain.load(s.chainId);
        if (!chain) throw new Error(`chain ${s.chainId} of slot ${s.websiteCode}/${s.purpose} is missing`);
        return chain;
      },
    }),
  }),
});

async function loadStep(step: catalogue.ChainStep, ctx: Context): Promise<StepShape> {
  if (step.kind === 'fee') return { kind: 'fee', op: (await ctx.loaders.feeOperator.load(step.feeOperatorId!))! };
  if (step.kind === 'convert') return { kind: 'convert', op: (await ctx.loaders.convertOperator.load(step.convertOperatorId!))! };
  return { kind: 'convert_operator_group', op: (await ctx.loaders.group.load(step.groupId!))! };
}

const ChainRef = builder.objectRef<catalogue.Chain>('CalculationChain').implement({
  description: 'A fully expanded calculation chain (REST: PublicCalculationChainOut). Id 0 is the no-fee chain.',
  fields: (t) => ({
    id: t.exposeInt('id', { nullable: true }),
    name: t.exposeString('name', { nullable: true }),
    startCurrency: t.exposeString('startCurrencyCode', {
      nullable: true,
      description: 'Currency a price must be in for the chain to apply; null = any currency.',
    }),
    steps: t.field({
      type: [ChainStepRef],
      extensions: listComplexity(16),
      description: 'Steps in execution order.',
      resolve: async (c, _a, ctx) => Promise.all((await ctx.loaders.steps.load(c.id)).map((s) => loadStep(s, ctx))),
    }),
  }),
});

const ChainStepRef = builder.interfaceRef<StepShape>('ChainStep').implement({
  description: 'One step of a chain, discriminated by `kind`.',
  resolveType: (s) => (s.kind === 'fee' ? 'FeeOperatorStep' : s.kind === 'convert' ? 'ConvertOperatorStep' : 'ConvertOperatorGroupStep'),
  fields: (t) => ({
    kind: t.field({ type: StepKind, resolve: (s) => s.kind }),
    id: t.int({ nullable: true, resolve: (s) => s.op.id }),
    name: t.string({ resolve: (s) => s.op.name }),
  }),
});

builder.objectRef<Extract<StepShape, { kind: 'fee' }>>('FeeOperatorStep').implement({
  description: 'A fee applied to the running amount (REST: PublicFeeOperatorOut).',
  interfaces: [ChainStepRef],
  isTypeOf: (s) => (s as StepShape).kind === 'fee',
  fields: (t) => ({
    operator: t.field({ type: FeeArithmetic, resolve: (s) => s.op.operator }),
    value: t.field({ type: 'Decimal', resolve: (s) => s.op.value }),
    currencyCode: t.string({ nullable: true, description: 'Currency of the amount for add and sub; null for mul and div.', resolve: (s) => s.op.currencyCode }),
  }),
});

const convertFields = <T extends { op: catalogue.ConvertOperator } | catalogue.ConvertOperator>(get: (x: T) => catalogue.ConvertOperator) =>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Pothos's field builder of two object types at once has no nameable type
  ((t: any) => ({
    from: t.field({ type: CurrencyRef, resolve: async (x: T, _a: unknown, ctx: Context) => (await ctx.loaders.currency.load(get(x).fromCurrencyId))! }),
    to: t.field({ type: CurrencyRef, resolve: async (x: T, _a: unknown, ctx: Context) => (await ctx.loaders.currency.load(get(x).toCurrencyId))! }),
    mode: t.field({ type: ConvertMode, resolve: (x: T) => get(x).mode }),
    rate: t.field({ type: 'Decimal', nullable: true, description: 'Target units per source unit (fixed mode).', resolve: (x: T) => get(x).rate }),
  }));

builder.objectRef<Extract<StepShape, { kind: 'convert' }>>('ConvertOperatorStep').implement({
  description: 'A currency conversion (REST: PublicConvertOperatorOut): auto via both usd_rate values, fixed via rate.',
  interfaces: [ChainStepRef],
  isTypeOf: (s) => (s as StepShape).kind === 'convert',
  fields: convertFields((x: { op: catalogue.ConvertOperator }) => x.op),
});

const ConvertOperatorRef = builder.objectRef<catalogue.ConvertOperator>('ConvertOperator').implement({
  description: 'A member of a convert operator group (REST: PublicConvertOperatorOut).',
  fields: (t) => ({
    kind: t.field({ type: StepKind, resolve: () => 'convert' as const }),
    id: t.exposeInt('id', { nullable: true }),
    name: t.exposeString('name'),
    ...convertFields((x: catalogue.ConvertOperator) => x)(t),
  }),
});

builder.objectRef<Extract<StepShape, { kind: 'convert_operator_group' }>>('ConvertOperatorGroupStep').implement({
  description: 'Several conversions; `rule` picks among members that convert (REST: PublicConvertOperatorGroupOut).',
  interfaces: [ChainStepRef],
  isTypeOf: (s) => (s as StepShape).kind === 'convert_operator_group',
  fields: (t) => ({
    rule: t.field({ type: GroupRule, resolve: (s) => s.op.rule }),
    members: t.field({
      type: [ConvertOperatorRef],
      extensions: listComplexity(16),
      resolve: async (s, _a, ctx) => (await ctx.loaders.convertOperator.loadMany(s.op.memberIds)).map((m) => {
        if (m instanceof Error || m === null) throw new Error('group member missing');
        return m;
      }),
    }),
  }),
});

builder.queryFields((t) => ({
  websites: t.field({
    type: [WebsiteRef],
    extensions: listComplexity(64),
    description: 'Marketplaces ordered by code; deprecated ones only with includeDeprecated.',
    args: paramArgs(t.arg, listWebsitesOp.params),
    resolve: async (_r, args, ctx) => {
      const list = await listWebsites(ctx.db.prisma, args.includeDeprecated);
      for (const w of list) ctx.loaders.website.prime(w.code, w);
      return list;
    },
  }),
  website: t.field({
    type: WebsiteRef,
    description: 'One marketplace by code (deprecated ones too). Error `not_found` for an unknown code.',
    args: paramArgs(t.arg, getWebsiteOp.params),
    validate: operationArgsRule(getWebsiteOp),
    resolve: async (_r, args, ctx) => {
      const w = await ctx.loaders.website.load(args.code);
      if (!w) throw notFound(`No marketplace with code ${JSON.stringify(args.code)}.`);
      return w;
    },
  }),
  currencies: t.field({
    type: [CurrencyRef],
    extensions: listComplexity(256),
    description: 'Official currencies ordered by code; `search` is a case-insensitive substring of the code.',
    args: paramArgs(t.arg, listCurrenciesOp.params),
    validate: operationArgsRule(listCurrenciesOp),
    resolve: (_r, args, ctx) => listCurrencies(ctx.db.prisma, args.search ?? null),
  }),
  currency: t.field({
    type: CurrencyRef,
    description: 'One official currency by id. Error `not_found` when unknown, deleted or not official.',
    args: paramArgs(t.arg, getCurrencyOp.params),
    validate: operationArgsRule(getCurrencyOp),
    resolve: async (_r, args, ctx) => {
      const c = await ctx.loaders.currency.load(args.id);
      if (!c || c.isDeleted || !c.isOfficial) throw notFound(`No official currency with id ${args.id}.`);
      return c;
    },
  }),
}));
