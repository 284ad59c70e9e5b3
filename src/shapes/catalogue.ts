/**
 * Catalogue shapes, defined once (spec: WebsiteOut, CurrencyOut, PublicCurrencyOut): the OpenAPI document
 * serves these schemas, the REST documents select their fields (`selectionOf`), and the tests take their
 * key lists from them.
 */
import { z } from 'zod';
import { decimal } from './quote.js';

/** A marketplace (spec: WebsiteOut). */
export const WebsiteOut = z
  .strictObject({ code: z.string(), name: z.string(), url: z.string().nullable(), category: z.string(), subCategory: z.string().nullable(), is_deprecated: z.boolean() })
  .meta({ id: 'WebsiteOut' });
/** A currency with its owner and usage (spec: CurrencyOut). */
export const CurrencyOut = z
  .strictObject({
    id: z.int().nullable(),
    code: z.string(),
    name: z.string().nullable(),
    kind: z.string(),
    usd_rate: decimal,
    owner_user_id: z.string().nullable(),
    is_official: z.boolean(),
    ref_count: z.int(),
    is_deleted: z.boolean(),
  })
  .meta({ id: 'CurrencyOut' });
/** A currency as fee chains show it (spec: PublicCurrencyOut). */
export const PublicCurrencyOut = z
  .strictObject({ id: z.int().nullable(), code: z.string(), name: z.string().nullable(), kind: z.string(), usd_rate: decimal })
  .meta({ id: 'PublicCurrencyOut' });

const convertFields = {
  id: z.int().nullable(),
  name: z.string(),
  from: PublicCurrencyOut,
  to: PublicCurrencyOut,
  mode: z.enum(['auto', 'fixed']),
  rate: decimal.nullable(),
};
/** A conversion step (spec: PublicConvertOperatorOut). */
export const PublicConvertOperatorOut = z.strictObject({ kind: z.literal('convert'), ...convertFields }).meta({ id: 'PublicConvertOperatorOut' });
/** A fee step (spec: PublicFeeOperatorOut). */
export const PublicFeeOperatorOut = z
  .strictObject({ kind: z.literal('fee'), id: z.int().nullable(), name: z.string(), operator: z.enum(['add', 'sub', 'mul', 'div']), value: decimal, currency_code: z.string().nullable() })
  .meta({ id: 'PublicFeeOperatorOut' });
/** A group of conversions (spec: PublicConvertOperatorGroupOut). */
export const PublicConvertOperatorGroupOut = z
  .strictObject({
    kind: z.literal('convert_operator_group'),
    id: z.int().nullable(),
    name: z.string(),
    rule: z.enum(['min', 'max', 'avg']),
    members: z.array(PublicConvertOperatorOut),
  })
  .meta({ id: 'PublicConvertOperatorGroupOut' });
/** A calculation chain (spec: PublicCalculationChainOut). */
export const PublicCalculationChainOut = z
  .strictObject({
    id: z.int().nullable(),
    name: z.string().nullable(),
    start_currency: z.string().nullable(),
    steps: z.array(z.discriminatedUnion('kind', [PublicFeeOperatorOut, PublicConvertOperatorOut, PublicConvertOperatorGroupOut])),
  })
  .meta({ id: 'PublicCalculationChainOut' });
/** One slot of a fee schedule (spec: FeeScheduleSlotOut). */
export const FeeScheduleSlotOut = z
  .strictObject({ purpose: z.enum(['deposit', 'sale', 'withdraw']), calculation_chain: PublicCalculationChainOut })
  .meta({ id: 'FeeScheduleSlotOut' });
/** A marketplace's fee schedule (spec: FeeScheduleOut): one slot per purpose, each a chain or null. */
export const FeeScheduleOut = z
  .strictObject({
    website_code: z.string(),
    slots: z.strictObject({ deposit: FeeScheduleSlotOut.nullable(), sale: FeeScheduleSlotOut.nullable(), withdraw: FeeScheduleSlotOut.nullable() }),
  })
  .meta({ id: 'FeeScheduleOut' });
const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The object or union schema inside `schema` (through nullable, optional and array wrappers), or null for a scalar. */
function objectInside(schema: z.ZodType): z.ZodObject | z.ZodUnion | null {
  let s: z.ZodType = schema;
  for (;;) {
    if (s instanceof z.ZodObject || s instanceof z.ZodUnion) return s;
    if (s instanceof z.ZodNullable || s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
    else if (s instanceof z.ZodArray) s = s.element as z.ZodType;
    else return null;
  }
}

/** GraphQL object type names of union members, by the member's schema id (`.meta({ id })`). */
export type UnionTypeNames = Record<string, string>;

/** Fee steps as GraphQL names them (interface `ChainStep`). */
export const STEP_TYPE_NAMES: UnionTypeNames = {
  PublicFeeOperatorOut: 'FeeOperatorStep',
  PublicConvertOperatorOut: 'ConvertOperatorStep',
  PublicConvertOperatorGroupOut: 'ConvertOperatorGroupStep',
};

/**
 * The GraphQL selection that answers with exactly the keys of `schema` (a strict object): each
 * snake_case key aliases its camelCase GraphQL field (`is_deprecated: isDeprecated`), others are selected
 * as is; a key whose value is an object (or a list or nullable of one) selects that object's keys the same
 * way, and a union of objects selects the keys its members share, then each member's own keys in an inline
 * fragment on the GraphQL type `unionTypes` names for the member's id.
 */
export function selectionOf(schema: z.ZodObject, unionTypes: UnionTypeNames = STEP_TYPE_NAMES): string {
  return Object.entries(schema.shape as Record<string, z.ZodType>)
    .map(([k, field]) => {
      const head = camel(k) === k ? k : `${k}: ${camel(k)}`;
      const inner = objectInside(field);
      if (inner instanceof z.ZodObject) return `${head} { ${selectionOf(inner, unionTypes)} }`;
      if (inner instanceof z.ZodUnion) return `${head} { ${unionSelection(inner, unionTypes)} }`;
      return head;
    })
    .join(' ');
}

function unionSelection(union: z.ZodUnion, unionTypes: UnionTypeNames): string {
  const members = (union.options as z.ZodType[]).map((m) => {
    if (!(m instanceof z.ZodObject)) throw new Error('selectionOf: a union member is not an object');
    const id = z.globalRegistry.get(m)?.id;
    const typeName = id ? unionTypes[id] : undefined;
    if (!typeName) throw new Error(`selectionOf: no GraphQL type named for union member ${id ?? '(no id)'}`);
    return { schema: m, typeName, keys: Object.keys(m.shape) };
  });
  const common = members[0]!.keys.filter((k) => members.every((m) => m.keys.includes(k)));
  const pick = (m: z.ZodObject, keys: string[]) => selectionOf(z.strictObject(Object.fromEntries(keys.map((k) => [k, (m.shape as Record<string, z.ZodType>)[k]!]))), unionTypes);
  const shared = pick(members[0]!.schema, common);
  const own = members.map((m) => `... on ${m.typeName} { ${pick(m.schema, m.keys.filter((k) => !common.includes(k)))} }`);
  return [shared, ...own].join(' ');
}
