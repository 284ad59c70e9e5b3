/**
 * The parameters several operations share, each declared once (src/operations/operation.ts `Param`): how its REST
 * text is read (the rules of src/validation/params.ts, the same ones the GraphQL arguments are checked with), its
 * default, its GraphQL argument, and what /openapi.json says of it. Messages are the 422 details clients see
 * (spec: Limits). A GraphQL argument's default is the REST default wherever both faces have one.
 */
import { z } from 'zod';
import * as v from '../validation/params.js';
import { CS2_APP_ID } from '../collectors/importers.js';
import { parseFeeProfile } from '../fees/profile.js';
import type { ArgParam, ArgSpec, Param, ParamLocation, Problems } from './operation.js';
import { ITEM } from './examples.js';

/** A comma-separated list of market codes as REST writes it (spaces around codes ignored). */
const MARKET_LIST_TEXT = /^\s*[A-Z0-9_]{1,32}\s*(,\s*[A-Z0-9_]{1,32}\s*)*$/;

interface SingleOptions {
  in?: ParamLocation;
  name: string;
  arg?: string;
  openapi: z.ZodType;
  example?: unknown;
  /** The value when the parameter is absent; `required` reports "is required". */
  absent: unknown;
  /** Reads one given text. */
  read(raw: string, p: Problems, location: ParamLocation): unknown;
  /** The GraphQL argument `arg` as the schema declares it. */
  graphql?: ArgSpec;
}

/** The value of an absent required parameter (reported as "is required"). */
export const REQUIRED = Symbol('required');

/** A parameter given at most once (a repeat is reported; the first value is read). */
export function single<const A extends string, const G extends ArgSpec>(o: SingleOptions & { arg: A; graphql: G }): ArgParam<A, G>;
export function single(o: SingleOptions): Param;
export function single(o: SingleOptions): Param {
  const location = o.in ?? 'query';
  return {
    in: location,
    name: o.name,
    arg: o.arg,
    openapi: o.openapi,
    example: o.example,
    graphql: o.graphql,
    read(raw, p) {
      if (raw.length > 1) p.add(location, o.name, 'must be given at most once');
      const first = raw[0];
      if (first === undefined) {
        if (o.absent === REQUIRED) {
          p.add(location, o.name, 'is required');
          return undefined;
        }
        return o.absent;
      }
      return o.read(first, p, location);
    },
  };
}

/** The item's market hash name (`market_hash_name`, required; exact, 1-255 characters). */
export const marketHashName = () =>
  single({
    name: 'market_hash_name',
    arg: 'marketHashName',
    openapi: v.marketHashName.meta({ description: "The item's market hash name: exact and case-sensitive, 1-255 characters." }),
    example: ITEM,
    absent: REQUIRED,
    read: (raw, p) => p.check('query', 'market_hash_name', v.marketHashName, raw),
    graphql: { type: 'String', required: true, rule: v.marketHashName },
  });

/** The game application id (`app_id`, default 730). */
export const appId = () =>
  single({
    name: 'app_id',
    arg: 'appId',
    openapi: v.appId.optional().meta({ description: 'Game application id, 1-16 characters; default 730 (CS2).' }),
    example: '730',
    absent: CS2_APP_ID,
    read: (raw, p) => p.check('query', 'app_id', v.appId, raw),
    graphql: { type: 'String', required: true, defaultValue: CS2_APP_ID, rule: v.appId },
  });

/**
 * A comma-separated list of market codes (null when absent; an empty text is reported); in GraphQL a list of codes
 * described by `graphqlDescription`.
 */
export const marketList = <const A extends string>(name: string, arg: A, description: string, graphqlDescription?: string, example = 'BUFF163,SKINPORT,CSCP') =>
  single({
    name,
    arg,
    openapi: z.string().regex(MARKET_LIST_TEXT).optional().meta({ description }),
    example,
    absent: null,
    read: (raw, p) => {
      if (raw.length === 0) {
        p.add('query', name, 'must not be empty');
        return null;
      }
      return p.check('query', name, v.marketList, raw.split(',').map((s) => s.trim())) ?? null;
    },
    graphql: { type: 'String', list: true, required: false, description: graphqlDescription, rule: v.marketList },
  });

/** The `markets` filter of the price operations. */
export const markets = (
  description = 'Comma-separated market codes (GET /websites; spaces around codes ignored); CSCP selects the valuation. Default: every market.',
  graphqlDescription?: string,
) => marketList('markets', 'markets', description, graphqlDescription);

/** The `side` filter (ask, bid, mid, all) with its default (the same on both faces). */
export const side = (
  absent: 'all' | 'ask',
  description = 'ask: sell listings; bid: buy orders; mid: the CSCP valuation; all (default): every side.',
  example: string = absent,
  graphqlDescription?: string,
) =>
  single({
    name: 'side',
    arg: 'side',
    openapi: v.side.optional().meta({ description }),
    example,
    absent,
    read: (raw, p) => p.check('query', 'side', v.side, raw),
    graphql: { type: 'SideFilter', required: true, defaultValue: absent, description: graphqlDescription },
  });

/**
 * An optional UTC day (YYYY-MM-DD that exists, MIN_DAY to MAX_DAY; null when absent); a `Date` argument in GraphQL.
 * For /openapi.json: `format: date` says it exists, `pattern` gives the supported years.
 */
export const day = <const A extends string>(name: string, arg: A, description: string, example?: string, graphqlDescription?: string) =>
  single({
    name,
    arg,
    openapi: z
      .string()
      .regex(new RegExp(v.DAY_PATTERN))
      .optional()
      .meta({ format: 'date', description: `${description} A date YYYY-MM-DD that exists, from ${v.MIN_DAY} to ${v.MAX_DAY}; other dates are 422.` }),
    example,
    absent: null,
    read: (raw, p) => p.check('query', name, v.day, raw) ?? null,
    graphql: { type: 'Date', required: false, description: graphqlDescription, rule: v.day },
  });

/** A `true`/`false` query parameter with its default (the same on both faces). */
export const flag = <const A extends string>(name: string, arg: A, absent: boolean, description: string, graphqlDescription?: string) =>
  single({
    name,
    arg,
    openapi: z.enum(['true', 'false']).optional().meta({ description }),
    example: String(!absent),
    absent,
    read: (raw, p) => {
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      p.add('query', name, 'must be true or false');
      return absent;
    },
    graphql: { type: 'Boolean', required: true, defaultValue: absent, description: graphqlDescription },
  });

/** A whole number from `min` to `max` (GraphQL `Int` arguments), refused as "must be a whole number from min to max". */
export function wholeNumber(min: number, max: number): z.ZodType<number> {
  const message = `must be a whole number from ${min} to ${max}`;
  return z.number({ message }).int({ message }).min(min, { message }).max(max, { message });
}

/**
 * A whole number in decimal digits (at most `digits` of them) from `min` to `max`, with its default (the same on
 * both faces); anything else is reported as "must be a whole number from min to max".
 */
export const count = <const A extends string>(
  name: string,
  arg: A,
  o: { digits: number; min: number; max: number; absent: number; description: string; graphqlDescription?: string; example?: string },
) =>
  single({
    name,
    arg,
    openapi: z.string().regex(new RegExp(`^\\d{1,${o.digits}}$`)).optional().meta({ description: o.description }),
    example: o.example,
    absent: o.absent,
    read: (raw, p) => {
      const n = new RegExp(`^\\d{1,${o.digits}}$`).test(raw) ? Number(raw) : NaN;
      if (!(n >= o.min && n <= o.max)) {
        p.add('query', name, `must be a whole number from ${o.min} to ${o.max}`);
        return undefined;
      }
      return n;
    },
    graphql: { type: 'Int', required: true, defaultValue: o.absent, description: o.graphqlDescription, rule: wholeNumber(o.min, o.max) },
  });

/** A change sequence number (`since`: a cursor of the feed; null when absent). */
export const since = (description: string, graphqlDescription: string) =>
  single({
    name: 'since',
    arg: 'since',
    openapi: z.string().regex(/^\d{1,19}$/).optional().meta({ description }),
    example: '316000',
    absent: null,
    read: (raw, p) => p.check('query', 'since', v.changeCursor, raw),
    graphql: { type: 'String', required: false, description: graphqlDescription, rule: v.changeCursor },
  });

/** A marketplace code in the path (`code`; unknown codes answer 404). */
export const websiteCode = () =>
  single({
    in: 'path',
    name: 'code',
    arg: 'code',
    openapi: v.websiteCode.meta({ description: 'A marketplace code as GET /websites lists it.' }),
    example: 'BUFF163',
    absent: REQUIRED,
    read: (raw, p) => p.check('path', 'code', v.websiteCode, raw),
    graphql: { type: 'String', required: true, rule: v.websiteCode },
  });

/** An alert id in the path (`id`; someone else's or unknown is 404). */
export const alertId = () =>
  single({
    in: 'path',
    name: 'id',
    arg: 'id',
    openapi: z.string().meta({ description: 'The alert id (GET /alerts).' }),
    absent: REQUIRED,
    read: (raw) => raw,
    graphql: { type: 'String', required: true },
  });

/** The currency of a route operation's amounts (`currency`, required: an official currency code). */
const routeCurrency = () =>
  single({
    name: 'currency',
    arg: 'currency',
    openapi: v.currencyCode.meta({ description: 'The currency of every amount: an official currency code (GET /currencies).' }),
    example: 'CNY',
    absent: REQUIRED,
    read: (raw, p) => p.check('query', 'currency', v.currencyCode, raw),
    graphql: { type: 'String', required: true, description: 'The currency of every amount (an official currency code).', rule: v.currencyCode },
  });

/** `fund` or `payout` (cash or balance, default cash); GraphQL types them RouteFunding and RoutePayout. */
const funding = <const N extends 'fund' | 'payout', const T extends 'RouteFunding' | 'RoutePayout'>(name: N, type: T, description: string) =>
  single({
    name,
    arg: name,
    openapi: v.funding.optional().meta({ description }),
    example: 'balance',
    absent: 'cash',
    read: (raw, p) => p.check('query', name, v.funding, raw),
    graphql: { type, required: true, defaultValue: 'cash' },
  });

/**
 * The options both route operations and `Item.routes` share (docs/fees.md): `currency` (required), `buy_on`,
 * `sell_on`, `fund`, `payout`, `min_credibility`, `min_quantity`, `fee_profile`. `buyDefault` names the default buy
 * markets in the REST description.
 */
export const routeOptions = (buyDefault: string) =>
  [
    routeCurrency(),
    marketList('buy_on', 'buyOn', `Comma-separated market codes to buy on (default: ${buyDefault}).`, 'Markets to buy on (default: every market with an ask).', 'BUFF163,YOUPIN'),
    marketList('sell_on', 'sellOn', 'Comma-separated market codes to sell on (default: every market).', 'Markets to sell on (default: every market with an ask or a bid).', 'SKINPORT,CSFLOAT'),
    funding('fund', 'RouteFunding', "cash (default): the buyer pays the market's deposit fees; balance: spends a balance held there."),
    funding('payout', 'RoutePayout', 'cash (default): sale then withdraw fees; balance: sale fees only, proceeds stay on the market.'),
    single({
      name: 'min_credibility',
      arg: 'minCredibility',
      openapi: z
        .string()
        .regex(/^(0(\.\d+)?|1(\.0+)?)$/)
        .optional()
        .meta({ description: 'Drop routes whose credibility (2^(-age / 24 h) of the older leg) is lower; 0-1, default 0.' }),
      example: '0.5',
      absent: 0,
      read: (raw, p) => {
        if (/^(0(\.\d+)?|1(\.0+)?)$/.test(raw)) return Number(raw);
        p.add('query', 'min_credibility', 'must be a number from 0 to 1');
        return undefined;
      },
      graphql: { type: 'Float', required: true, defaultValue: 0, description: 'Drop routes whose credibility is lower (0-1).', rule: v.minCredibility },
    }),
    single({
      name: 'min_quantity',
      arg: 'minQuantity',
      openapi: z
        .string()
        .regex(/^(\d{1,6}|1000000)$/)
        .optional()
        .meta({ description: 'Drop routes whose buy or sell quote reports a quantity below this (0-1000000); a quote without a quantity is kept and its route says quantity_known: false.' }),
      example: '5',
      absent: null,
      read: (raw, p) => p.check('query', 'min_quantity', v.minQuantity, /^(\d{1,6}|1000000)$/.test(raw) ? Number(raw) : NaN),
      graphql: {
        type: 'Int',
        required: false,
        description: 'Drop routes whose buy or sell quote reports a quantity below this (0-1000000); a quote without a quantity is kept and its route says quantityKnown: false.',
        rule: v.minQuantity,
      },
    }),
    single({
      name: 'fee_profile',
      arg: 'feeProfile',
      openapi: z
        .string()
        .regex(/^[A-Z0-9_]{1,32}:(deposit|sale|withdraw)=0(\.\d{1,6})?(,(deposit|sale|withdraw)=0(\.\d{1,6})?)*(;[A-Z0-9_]{1,32}:(deposit|sale|withdraw)=0(\.\d{1,6})?(,(deposit|sale|withdraw)=0(\.\d{1,6})?)*)*$/)
        .optional()
        .meta({
          description:
            'Your own fee rates for markets whose official fees are unknown: `CODE:purpose=rate[,purpose=rate][;CODE:...]`, purpose deposit, sale or withdraw, rate a fraction 0 <= rate < 1 with at most 6 decimals (0.05 = 5 %), at most 64 markets, each market and purpose once. A rate fills only an unknown slot; routes priced with it say fee_source: caller.',
        }),
      example: 'YOUPIN:deposit=0,withdraw=0.01',
      absent: null,
      read: (raw, p) => {
        const parsed = parseFeeProfile(raw);
        if ('problems' in parsed) {
          for (const problem of parsed.problems) p.add('query', 'fee_profile', problem);
          return undefined;
        }
        return p.check('query', 'fee_profile', v.feeProfile, parsed.entries);
      },
      graphql: {
        type: 'CallerFeeInput',
        list: true,
        required: false,
        description: 'Your own rates for markets whose official fees are unknown: routes through them are priced with them (feeSource: caller). At most 64 markets.',
        rule: v.feeProfile,
      },
    }),
  ] as const;
