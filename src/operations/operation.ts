/**
 * The operation registry's vocabulary: one `Operation` per documented REST operation (one file each in this
 * folder), declaring once what the faces used to declare apart:
 * - its inputs (`params`, `body`): each parameter's REST name and location, the GraphQL argument it feeds, the rule
 *   that reads its text (every problem reported as a 422 detail) and its OpenAPI schema and example;
 * - its GraphQL root field (`path`, the nested fields down to the priced value) and the selection in REST names;
 * - its REST behaviour (envelope, headers, streaming) and its OpenAPI response.
 * From it are derived: the REST route (src/rest/routes.ts), the document the route runs (`documentText`, its
 * variable types read from the schema's own arguments), the OpenAPI parameters, body, responses and statuses
 * (src/openapi/document.ts). Cost, rate limit, unit pricing and roles are the operation's catalogue row
 * (data/endpoints.json, by `id`): billing is decided by that data and by what the answer delivers
 * (src/plugins/metering.ts), never by the operation's code.
 */
import { getNamedType, type GraphQLField, type GraphQLSchema } from 'graphql';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { HeaderReader } from '../lib/headers.js';
import { validationError, type ValidationDetail } from '../lib/errors.js';
import type { Database } from '../db/client.js';
import type { Charge } from '../accounts/billing.js';
import type { OperationDoc } from './docs.js';

/** Where a REST parameter is read (spec: query and path parameters; the export's If-None-Match header). */
export type ParamLocation = 'query' | 'path' | 'header';

/**
 * Gathers every problem of one request's inputs (spec: 422 `validation_failed`, `details.errors` listing each
 * bad parameter with its location, REST name and message), then throws them at once.
 */
export class Problems {
  details: ValidationDetail[] = [];
  /** Records one problem. */
  add(location: ValidationDetail['location'], field: string, message: string): void {
    this.details.push({ location, field, message });
  }
  /** `value` checked by `schema`: the parsed value, or undefined with each issue recorded under `field`. */
  check<T>(location: ValidationDetail['location'], field: string, schema: z.ZodType<T>, value: unknown): T | undefined {
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    for (const issue of r.error.issues) {
      const at = [field, ...issue.path.map(String)].filter((x) => x !== '');
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys) this.add(location, [...at, key].join('.'), 'is not a known field');
      } else {
        this.add(location, at.join('.'), issue.message);
      }
    }
    return undefined;
  }
  /** Throws `validation_failed` (422) listing every recorded problem; returns when there is none. */
  done(): void {
    if (this.details.length > 0) throw validationError(this.details);
  }
}

/**
 * The named input types a GraphQL argument may have, with the value a resolver receives (the scalars, and the
 * enums and input types of src/graphql/arg-types.ts; HistoryInterval's values are DAY, WEEK, MONTH, received lower-case).
 */
export interface ArgTypes {
  String: string;
  Int: number;
  Float: number;
  Boolean: boolean;
  Date: string;
  SideFilter: 'ask' | 'bid' | 'mid' | 'all';
  ExportFormat: 'json' | 'ndjson';
  HistoryInterval: 'day' | 'week' | 'month';
  RouteFunding: 'cash' | 'balance';
  RoutePayout: 'cash' | 'balance';
  CallerFeeInput: { marketCode: string; deposit?: string | null; sale?: string | null; withdraw?: string | null };
  CreateAlertInput: {
    kind: string;
    marketHashName: string;
    appId?: string | null;
    marketCode?: string | null;
    side?: string | null;
    direction?: string | null;
    level?: string | null;
    buyMarket?: string | null;
    sellMarket?: string | null;
    margin?: string | null;
    fund?: string | null;
    payout?: string | null;
    url: string;
  };
}

/** A parameter's GraphQL argument as the schema declares it (src/graphql/args.ts builds it). */
export interface ArgSpec {
  type: keyof ArgTypes;
  /** A list of the type (its items never null). */
  list?: boolean;
  /** Non-null in the schema; with `defaultValue` an absent argument takes the default. */
  required: boolean;
  /** The schema's default (the enum's internal value for an enum). */
  defaultValue?: unknown;
  /** The argument's description in the schema (GraphQL names; the REST description is `openapi`'s). */
  description?: string;
  /**
   * The rule the argument's value must meet, the REST rule's typed twin: a metered field's arguments are checked by
   * the metering plugin before any charge (`argsRule`), another field's by plugin-validation (its `validate`).
   */
  rule?: z.ZodType;
}

/** The value a resolver receives for an argument of spec `G`. */
export type ArgShape<G> = G extends { type: infer T extends keyof ArgTypes }
  ? G extends { required: true }
    ? G extends { list: true }
      ? ArgTypes[T][]
      : ArgTypes[T]
    : (G extends { list: true } ? ArgTypes[T][] : ArgTypes[T]) | null | undefined
  : never;

/** The arguments (name -> value) the GraphQL parameters of `P` give a resolver. */
export type ArgsOf<P extends readonly Param[]> = {
  [K in P[number] as K extends { arg: infer A extends string; graphql: ArgSpec } ? A : never]: K extends { graphql: infer G } ? ArgShape<G> : never;
};

/** One input of an operation, declared once for both faces and the OpenAPI document. */
export interface Param {
  /** Where REST reads it. */
  in: ParamLocation;
  /** Its REST name (a query or path parameter, or a header name as the 422 detail names it). */
  name: string;
  /**
   * The GraphQL argument (and document variable) it feeds, on the operation's root field or a field of its `path`.
   * Absent: a REST-only input the operation's `check` folds into another (the stream's Last-Event-ID).
   */
  arg?: string;
  /**
   * Reads the REST text into the argument's value: `raw` is every value given (a query parameter may repeat; a
   * path or header value is one). Absent parameters get their default. Problems go to `p`; the value is then unused.
   */
  read(raw: readonly string[], p: Problems): unknown;
  /** The rule of the text for /openapi.json (JSON Schema via zod-openapi), optional unless required, with its description. */
  openapi: z.ZodType;
  /** An example value (a text the service accepts) for /openapi.json. */
  example?: unknown;
  /** The GraphQL argument `arg` as the schema declares it; absent when the field's own code declares it. */
  graphql?: ArgSpec;
}

/** A parameter that declares its GraphQL argument: argument name `A`, spec `G` (kept literal for `ArgsOf`). */
export type ArgParam<A extends string, G extends ArgSpec> = Param & { arg: A; graphql: G };

/** A JSON request body: its schema (named in /openapi.json) and how the parsed body becomes the document's variables. */
export interface BodySpec<T = unknown, B extends Record<string, ArgSpec> = Record<string, ArgSpec>> {
  schema: z.ZodType<T>;
  /** The GraphQL arguments the body feeds (the keys `variables` returns), as the schema declares them. */
  args: B;
  variables(parsed: T): Record<string, unknown>;
}

/** What a custom REST answer sees of its request (a part of src/graphql/context.ts `RequestState`). */
export interface RespondState {
  /** What of the answer leaves: `body` false for a HEAD (headers only). */
  delivery: { readonly body: boolean };
  /** What metering decided: billable, the credits charged and the balance left, the ledger row (for a refund). */
  billing: { billable: boolean; cost: bigint; remaining: bigint; charge?: Charge } | null;
}

/** A custom REST answer (a part of src/http/replies.ts `Reply`): status, headers, and a body or a byte stream. */
export interface RespondReply {
  status: number;
  headers: Record<string, string>;
  body: string | null;
  stream?: ReadableStream<Uint8Array>;
}

/** What an operation's own responder gets besides the payload (the export's file). */
export interface RespondContext {
  db: Database;
  state: RespondState;
  /** Aborts when the client leaves before the answer was sent whole. */
  signal: AbortSignal;
  logger?: Logger;
}

/** What a REST request gives an operation. */
export interface RestInput {
  path: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  headers: HeaderReader;
}

/** One documented operation (see the file comment); `P` keeps its parameters' literal types for `ArgsOf`. */
export interface Operation<P extends readonly Param[] = readonly Param[], B extends Record<string, ArgSpec> = Record<string, ArgSpec>> {
  /** The operation id: its catalogue row in data/endpoints.json (method, path, cost, limits, roles). */
  id: string;
  /** The GraphQL operation type of its document. */
  kind: 'query' | 'mutation' | 'subscription';
  /** The GraphQL fields from the root down to the answer: `['website', 'feeSchedule']`. */
  path: readonly string[];
  /** The selection under the last field, aliased to the REST names (empty for a scalar such as `status`). */
  selection: string;
  /** Query, path and header inputs, in the order their problems are reported. */
  params: P;
  /** The JSON body, for an operation that takes one. */
  body?: BodySpec<unknown, B>;
  /** Rules between inputs, after each was read (e.g. a search cursor belongs to its query); may adjust `vars`. */
  check?(vars: Record<string, unknown>, p: Problems): void;
  /** The same rules between the GraphQL arguments (`argsRule`), each problem an issue at the argument's name. */
  refineArgs?(args: Record<string, unknown>, ctx: z.RefinementCtx): void;
  /** The REST answer. */
  rest: {
    /** False for a bare answer (GET /health, spec general conventions 2; the export file; the event stream). */
    envelope: boolean;
    /** Extra response headers of a success. */
    headers?: Record<string, string>;
    /** Builds the whole answer instead of the JSON envelope (the export: headers, a 304, or the file as a stream). */
    respond?(payload: unknown, ctx: RespondContext): RespondReply;
    /** True when these variables make an answer with many quotes (src/rest/facade.ts runs few such at once). */
    heavy?(variables: Record<string, unknown>): boolean;
    /** The answer is the event stream of the subscription the document starts. */
    stream?: true;
  };
  /**
   * How its charge departs from the catalogue row's rule (src/plugins/metering.ts; absent: charged from the replica's
   * credit lease when its priced data is in the answer, and a HEAD counts towards the rate limit like its GET).
   */
  billing?: {
    /**
     * The charge is a named ledger row, never taken from a lease, so an answer not delivered whole (the client left
     * before the last byte) is refunded: for a large answer written as a stream (README, Billing: paid on delivery).
     */
    paidOnDelivery?: true;
    /**
     * A HEAD spends no rate-limit point: it answers headers kept in memory, as a 304 does, and is never billed
     * (issue 44, point 4: a client may ask whether a new export is out as often as it likes).
     */
    headOutsideLimit?: true;
  };
  /** The OpenAPI description of the answer and the text people read. */
  openapi: {
    /** The 200 payload (inside the envelope when `rest.envelope`). */
    payload: z.ZodType;
    mediaType?: string;
    description?: string;
    otherMedia?: Record<string, z.ZodType>;
    /** Statuses beyond those the catalogue row and the inputs imply (401/403, 402, 429, 422, 503). */
    statuses?: readonly number[];
    /** Tag, summary, description and examples (src/operations/docs.ts). */
    docs: OperationDoc;
  };
}

/** Declares a parameter written out in full (identity; keeps its argument's literal types for `ArgsOf`). */
export function param<const A extends string, const G extends ArgSpec>(p: Param & { arg: A; graphql: G }): ArgParam<A, G> {
  return p;
}

/** A body declaration typed by its schema where it is written, stored untyped in its `Operation`. */
export function jsonBody<T, const B extends Record<string, ArgSpec>>(spec: BodySpec<T, B>): BodySpec<unknown, B> {
  return spec as BodySpec<unknown, B>;
}

/** Declares an operation (identity; keeps its parameters' literal types, so its GraphQL field's arguments are typed). */
export function defineOperation<const P extends readonly Param[], const B extends Record<string, ArgSpec> = Record<never, ArgSpec>>(op: Operation<P, B>): Operation<P, B> {
  return op;
}

/**
 * The document variables of a REST request to `op` (GraphQL argument name -> value), reading every parameter
 * and the body. Throws `validation_failed` (422) listing every bad input, in the order of `op.params`.
 */
export function restVariables(op: Operation, input: RestInput): Record<string, unknown> {
  const p = new Problems();
  if (op.body) {
    const body = input.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      p.add('body', '', 'must be a JSON object');
      p.done();
    }
    const parsed = p.check('body', '', op.body.schema, body);
    p.done();
    return op.body.variables(parsed as never);
  }
  const vars: Record<string, unknown> = {};
  for (const param of op.params) {
    const raw =
      param.in === 'query' ? input.query.getAll(param.name) : param.in === 'path' ? [input.path[param.name] ?? ''] : headerValues(input.headers, param.name);
    vars[param.arg ?? param.name] = param.read(raw, p);
  }
  op.check?.(vars, p);
  p.done();
  for (const param of op.params) if (!param.arg) delete vars[param.name];
  return vars;
}

function headerValues(headers: HeaderReader, name: string): string[] {
  const v = headers.get(name.toLowerCase());
  return v === null ? [] : [v];
}

/**
 * The GraphQL document of `op`'s REST route, from the schema: each field of `op.path` with the arguments the
 * operation's inputs feed (variable types as the schema declares the arguments) and `op.selection` at the end.
 * Throws when a field of the path is not in the schema.
 */
export function documentText(op: Operation, schema: GraphQLSchema): string {
  const root = op.kind === 'query' ? schema.getQueryType() : op.kind === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  const fed = new Set<string>(op.body ? Object.keys(op.body.args) : op.params.flatMap((p) => (p.arg ? [p.arg] : [])));
  const variables: string[] = [];
  const level = (i: number, type: unknown): string => {
    if (i === op.path.length) return op.selection;
    const name = op.path[i]!;
    const field = (type as { getFields?: () => Record<string, GraphQLField<unknown, unknown>> } | null | undefined)?.getFields?.()[name];
    if (!field) throw new Error(`operation ${op.id}: no field ${name} in the schema`);
    const args = field.args.filter((a) => fed.has(a.name));
    for (const a of args) variables.push(`$${a.name}: ${String(a.type)}`);
    const inner = level(i + 1, getNamedType(field.type));
    return `${name}${args.length ? `(${args.map((a) => `${a.name}: $${a.name}`).join(', ')})` : ''}${inner ? ` { ${inner} }` : ''}`;
  };
  const body = level(0, root);
  const missing = [...fed].filter((a) => !variables.some((v) => v.startsWith(`$${a}:`)));
  if (missing.length > 0) throw new Error(`operation ${op.id}: no argument ${missing.join(', ')} on ${op.path.join('.')}`);
  return `${op.kind} ${op.id}${variables.length ? `(${variables.join(', ')})` : ''} { ${body} }`;
}

/**
 * The rule of a field's GraphQL arguments (name -> value) from the parameters that feed them, the body's arguments
 * and the operation's rules between them: each argument's `rule` (null or absent allowed when it is optional).
 */
export function argsRule(params: readonly Param[], body?: Record<string, ArgSpec>, refine?: Operation['refineArgs']): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  const add = (name: string, spec: ArgSpec) => {
    if (spec.rule) shape[name] = spec.required ? spec.rule : spec.rule.nullish();
  };
  for (const p of params) if (p.arg && p.graphql) add(p.arg, p.graphql);
  for (const [name, spec] of Object.entries(body ?? {})) add(name, spec);
  const rule = z.looseObject(shape);
  return refine ? rule.superRefine((args, ctx) => refine(args, ctx)) : rule;
}

/** The rule of `op`'s root field arguments (`argsRule` of its inputs and rules between them). */
export function operationArgsRule(op: Operation): z.ZodType {
  return argsRule(op.params, op.body?.args, op.refineArgs);
}

/** The payload of the REST answer: the value at the end of `op.path` in the result data. */
export function payloadOf(op: Operation, data: Record<string, unknown>): unknown {
  let v: unknown = data;
  for (const f of op.path) v = (v as Record<string, unknown> | null)?.[f];
  return v;
}
