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

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The object schema inside `schema` (through nullable, optional and array wrappers), or null for a scalar. */
function objectInside(schema: z.ZodType): z.ZodObject | null {
  let s: z.ZodType = schema;
  for (;;) {
    if (s instanceof z.ZodObject) return s;
    if (s instanceof z.ZodNullable || s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
    else if (s instanceof z.ZodArray) s = s.element as z.ZodType;
    else return null;
  }
}

/**
 * The GraphQL selection that answers with exactly the keys of `schema` (a strict object): each
 * snake_case key aliases its camelCase GraphQL field (`is_deprecated: isDeprecated`), others are selected
 * as is; a key whose value is an object (or a list or nullable of one) selects that object's keys the same way.
 */
export function selectionOf(schema: z.ZodObject): string {
  return Object.entries(schema.shape as Record<string, z.ZodType>)
    .map(([k, field]) => {
      const head = camel(k) === k ? k : `${k}: ${camel(k)}`;
      const inner = objectInside(field);
      return inner ? `${head} { ${selectionOf(inner)} }` : head;
    })
    .join(' ');
}
