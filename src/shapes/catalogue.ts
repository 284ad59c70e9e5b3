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

/**
 * The GraphQL selection that answers with exactly the keys of `schema` (a flat strict object): each
 * snake_case key aliases its camelCase GraphQL field (`is_deprecated: isDeprecated`), others are selected as is.
 */
export function selectionOf(schema: z.ZodObject): string {
  return Object.keys(schema.shape)
    .map((k) => (camel(k) === k ? k : `${k}: ${camel(k)}`))
    .join(' ');
}
