/**
 * GraphQL fields derived from an output shape (src/shapes/, issue: serving quotes at the machine's limit,
 * "one definition per shape"): one field per key of the zod object, named in camelCase (`is_deprecated` ->
 * `isDeprecated`), nullable exactly where the shape is, and typed from it: the shapes' `decimal` ->
 * `Decimal`, `timestamp` -> `DateTime`, `day` -> `Date`, an integer -> `Int`, another number -> `Float`,
 * a boolean -> `Boolean`, any other string -> `String`. The parent's camelCase property is read (GraphQL's default resolver)
 * unless `read` names another; enums and nested objects come from `refs`, field descriptions from
 * `descriptions`. Adding a key to a shape adds the GraphQL field; a key whose type cannot be derived
 * throws at schema build.
 */
import { z } from 'zod';
import { builder } from './builder.js';
import { day, decimal, timestamp } from '../shapes/quote.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
type FieldBuilder<Parent> = PothosSchemaTypes.ObjectFieldBuilder<Types, Parent>;

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** How a field that cannot be derived is typed: a GraphQL enum or object ref (optionally a list). */
export type ShapeRef = { type: unknown };

/** The GraphQL scalar a zod schema maps to, or null. */
function scalarOf(schema: z.ZodType): string | null {
  if (schema === decimal) return 'Decimal';
  if (schema === timestamp) return 'DateTime';
  if (schema === day) return 'Date';
  if (schema instanceof z.ZodNumber) return schema.isInt ? 'Int' : 'Float';
  if (schema instanceof z.ZodBoolean) return 'Boolean';
  if (schema instanceof z.ZodString) return 'String';
  return null;
}

/**
 * The fields of `shape` for a Pothos object type over `Parent` (see the module doc). `read` maps a REST key
 * to the parent's value when it is not the camelCase property; `refs` types keys that are enums or objects.
 */
export function shapeFields<Parent>(
  t: FieldBuilder<Parent>,
  shape: z.ZodObject,
  opts: {
    read?: Partial<Record<string, (parent: Parent) => unknown>>;
    refs?: Partial<Record<string, ShapeRef>>;
    descriptions?: Partial<Record<string, string>>;
  } = {},
): Record<string, ReturnType<FieldBuilder<Parent>['field']>> {
  const fields: Record<string, ReturnType<FieldBuilder<Parent>['field']>> = {};
  for (const [key, raw] of Object.entries(shape.shape as Record<string, z.ZodType>)) {
    const nullable = raw instanceof z.ZodNullable;
    const inner = nullable ? ((raw as z.ZodNullable<z.ZodType>).unwrap() as z.ZodType) : raw;
    const name = camel(key);
    const type = opts.refs?.[key]?.type ?? scalarOf(inner);
    if (type === null) throw new Error(`shape field ${key}: no GraphQL type can be derived; give it in refs`);
    const read = opts.read?.[key];
    const description = opts.descriptions?.[key];
    fields[name] = t.field({
      type: type as 'String',
      nullable,
      ...(description ? { description } : {}),
      // Without `read`, no resolver: the parent's property of the field's name is read by GraphQL's default
      // resolver, which graphql-jit (REST documents, shared subscription executions) inlines as a property
      // read; a resolver function costs it a closure, path and resolve info per field and row.
      ...(read ? { resolve: (p: Parent) => read(p) as never } : {}),
    } as never);
  }
  return fields;
}
