/**
 * GraphQL safety limits, all applied before any resolver runs: bracket nesting (before parsing), query depth and alias count
 * (graphql-armor validation rules) and a cost limit that counts list sizes (graphql-query-complexity
 * with the `complexity` extension each list field declares, see `listComplexity`; introspection lists
 * by the schema's own sizes). The cost check fails closed: an operation whose cost cannot be estimated
 * is refused. After execution, the answer of an ad-hoc `/graphql` operation is bounded by its cost.
 * The REST documents stay far below every limit; the limits only bound what an ad-hoc GraphQL query can ask for.
 */
import type { Plugin } from 'graphql-yoga';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { fieldExtensionsEstimator, getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import {
  GraphQLError,
  Lexer,
  SchemaMetaFieldDef,
  Source,
  TokenKind,
  getOperationAST,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isUnionType,
  isInputType,
  typeFromAST,
  type DocumentNode,
  type GraphQLInputType,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import type { PromiseOrValue } from 'graphql/jsutils/PromiseOrValue.js';
import { ServiceError, type ValidationDetail } from '../lib/errors.js';
import { toGraphQLError } from '../graphql/errors.js';
import { coerceVariables } from './variables.js';

/** Deepest selection accepted (the full fee-schedule query of GraphiQL needs 9); inside `__schema` the cost limit applies instead. */
export const MAX_DEPTH = 12;
/** Most aliases in one operation (the REST documents use up to 22 for their snake_case names). */
export const MAX_ALIASES = 50;
/**
 * Largest estimated cost of one operation: each field costs 1, a list field multiplies its
 * children by its declared bound (batch names by the request's own count; introspection lists by the
 * schema's largest list of that kind), and a few fields declare what they produce (`status`). The REST
 * batch document (1000 names, every quote and valuation field) scores 1,013,001 and the full
 * fee-schedule listing 13,321; two full batches in one query are refused.
 */
export const MAX_COMPLEXITY = 1_200_000;
/**
 * Most fields the cost estimator visits in one operation, counting a fragment's fields each time it is
 * spread; past it the operation is refused (`query_too_complex`), never let through unestimated.
 */
export const MAX_QUERY_NODES = 10_000;
/** Most `__schema` fields in one operation (GraphiQL's introspection query has one). */
const MAX_SCHEMA_FIELDS = 1;
/**
 * Answer bound of an ad-hoc `/graphql` operation: at most RESULT_BASE_BYTES plus RESULT_BYTES_PER_COST
 * per unit of estimated cost (a full 1000-name batch at 21 units per quote averages about 25 bytes per
 * unit), else 422 `response_too_large` instead of the data, and nothing is charged. Only operations
 * whose estimated cost reaches RESULT_CHECK_COST are measured: below it the cost alone bounds the answer
 * (so small queries are not serialized twice).
 */
const RESULT_BASE_BYTES = 1024 * 1024;
/** See RESULT_BASE_BYTES. */
const RESULT_BYTES_PER_COST = 48;
/** See RESULT_BASE_BYTES. */
export const RESULT_CHECK_COST = 20_000;

/** The answer bound in bytes of an operation with estimated cost `cost` (see RESULT_BASE_BYTES). */
export function maxResultBytes(cost: number): number {
  return RESULT_BASE_BYTES + cost * RESULT_BYTES_PER_COST;
}

/**
 * Deepest nesting of brackets (`{`, `[`, `(`) in a document, checked before parsing: graphql-js parses
 * recursively, so a few thousand nested list values would overflow the stack. Real documents need
 * about 20 (selection depth is limited to MAX_DEPTH anyway).
 */
const MAX_NESTING = 64;

/** Throws a syntax error when `source` nests brackets deeper than `max` (one pass of graphql-js's own lexer). */
function assertNesting(source: string | Source, max: number): void {
  const lexer = new Lexer(typeof source === 'string' ? new Source(source) : source);
  let depth = 0;
  for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
    if (token.kind === TokenKind.BRACE_L || token.kind === TokenKind.BRACKET_L || token.kind === TokenKind.PAREN_L) {
      if (++depth > max) throw new GraphQLError(`Syntax Error: brackets nested deeper than ${max}.`, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
    } else if (token.kind === TokenKind.BRACE_R || token.kind === TokenKind.BRACKET_R || token.kind === TokenKind.PAREN_R) {
      depth--;
    }
  }
}

/**
 * Yoga parses the `variables` and `extensions` of GET and form requests with a bare JSON.parse: its
 * SyntaxError is the client's, so it becomes 400 `BAD_REQUEST` here instead of an unexpected 500.
 */
function useRequestJsonErrors(): Plugin {
  return {
    onRequestParse({ requestParser, setRequestParser }) {
      if (!requestParser) return;
      setRequestParser(async (request) => {
        try {
          return await requestParser(request);
        } catch (e) {
          if (!(e instanceof SyntaxError)) throw e;
          throw new GraphQLError('The variables or extensions parameter is not valid JSON.', { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
        }
      });
    },
  };
}

function useNestingLimit(max: number): Plugin {
  return {
    onParse({ parseFn, setParseFn }) {
      setParseFn((source, options) => {
        assertNesting(source, max);
        return parseFn(source, options);
      });
    },
  };
}

/** The largest list of each introspection list field in `schema` (what one `__schema` can answer). */
function introspectionBounds(schema: GraphQLSchema): Map<string, number> {
  const types = Object.values(schema.getTypeMap());
  const directives = schema.getDirectives();
  const max = (values: number[]) => Math.max(1, ...values);
  const fieldsOf = types.flatMap((t) => (isObjectType(t) || isInterfaceType(t) ? [Object.values(t.getFields())] : []));
  return new Map([
    ['__Schema.types', types.length],
    ['__Schema.directives', max([directives.length])],
    ['__Type.fields', max(fieldsOf.map((f) => f.length))],
    ['__Type.interfaces', max(types.map((t) => (isObjectType(t) || isInterfaceType(t) ? t.getInterfaces().length : 0)))],
    ['__Type.possibleTypes', max(types.map((t) => (isUnionType(t) || isInterfaceType(t) ? schema.getPossibleTypes(t).length : 0)))],
    ['__Type.enumValues', max(types.map((t) => (isEnumType(t) ? t.getValues().length : 0)))],
    ['__Type.inputFields', max(types.map((t) => (isInputObjectType(t) ? Object.keys(t.getFields()).length : 0)))],
    ['__Field.args', max(fieldsOf.flat().map((f) => f.args.length))],
    ['__Directive.args', max(directives.map((d) => d.args.length))],
    ['__Directive.locations', max(directives.map((d) => d.locations.length))],
  ]);
}

const boundsBySchema = new WeakMap<GraphQLSchema, Map<string, number>>();

/** Introspection list fields count as their largest possible list of children, like `listComplexity`. */
function introspectionEstimator(schema: GraphQLSchema): ComplexityEstimator {
  let bounds = boundsBySchema.get(schema);
  if (!bounds) boundsBySchema.set(schema, (bounds = introspectionBounds(schema)));
  const found = bounds;
  return ({ type, field, childComplexity }) => {
    if (!type.name.startsWith('__')) return undefined;
    const fieldType = isNonNullType(field.type) ? field.type.ofType : field.type;
    if (!isListType(fieldType)) return undefined;
    return 1 + (found.get(`${type.name}.${field.name}`) ?? 1) * childComplexity;
  };
}

/** An operation's estimated cost, and how many `__schema` fields it selects (fragments counted per spread). */
export interface CostEstimate {
  cost: number;
  schemaFields: number;
}

/**
 * The estimated cost of the operation `operationName` of `document` with these (raw) variables.
 * Throws when the cost cannot be estimated (more than MAX_QUERY_NODES fields visited, variables or
 * arguments that do not coerce): callers must refuse the operation then.
 */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): CostEstimate {
  const estimate: CostEstimate = { cost: 0, schemaFields: 0 };
  const counter: ComplexityEstimator = ({ field }) => {
    if (field === SchemaMetaFieldDef) estimate.schemaFields++;
    return undefined;
  };
  estimate.cost = getComplexity({
    schema,
    query: document,
    operationName: operationName ?? undefined,
    variables: variables ?? {},
    maxQueryNodes: MAX_QUERY_NODES,
    estimators: [counter, introspectionEstimator(schema), fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })],
  });
  return estimate;
}

/** How a prepared route document runs: its compiled form (graphql-jit), or null for the pipeline's own executor. */
export type PreparedExecute = ((args: ExecutionArgs) => PromiseOrValue<ExecutionResult>) | null;

/**
 * The fixed documents of the REST routes (see `registerRouteDocument`) and how each runs: their worst-case cost
 * was checked once at app creation, so the per-request cost limit skips them and runs their compiled form instead.
 * Ad-hoc `/graphql` documents are parsed by Yoga into other objects and are always estimated.
 */
const routeDocuments = new WeakMap<DocumentNode, PreparedExecute>();

/** A value of `type` for a worst-case estimate: every list holds `listLength` entries, every input field is given. */
function sampleValue(type: GraphQLInputType, listLength: number): unknown {
  if (isNonNullType(type)) return sampleValue(type.ofType, listLength);
  if (isListType(type)) return Array.from({ length: listLength }, () => sampleValue(type.ofType, listLength));
  if (isInputObjectType(type)) {
    return Object.fromEntries(Object.values(type.getFields()).map((f) => [f.name, sampleValue(f.type, listLength)]));
  }
  if (isEnumType(type)) return type.getValues()[0]?.name;
  switch (type.name) {
    case 'Int':
    case 'Float':
      return 1;
    case 'Boolean':
      return true;
    default:
      return 'x';
  }
}

/**
 * Registers the fixed document of a REST route: estimates its cost once, in its worst case (every
 * variable given, every list variable `maxListLength` entries long: the largest list a route accepts,
 * the batch names; the other list variables, market filters, do not change the cost), and throws when
 * that cost exceeds MAX_COMPLEXITY, cannot be estimated, or selects `__schema` more than MAX_SCHEMA_FIELDS
 * times. From then on the cost limit does not estimate this document per request, and it runs with `execute`
 * (its compiled form; null: the pipeline's executor, e.g. a subscription). Returns the estimate.
 */
export function registerRouteDocument(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string,
  maxListLength: number,
  execute: PreparedExecute = null,
): CostEstimate {
  const operation = getOperationAST(document, operationName);
  if (!operation) throw new Error(`route document has no operation ${operationName}`);
  const variables: Record<string, unknown> = {};
  for (const def of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, def.type);
    if (!type || !isInputType(type)) throw new Error(`route document ${operationName}: variable $${def.variable.name.value} has an unknown type`);
    variables[def.variable.name.value] = sampleValue(type, maxListLength);
  }
  const estimate = estimateCost(schema, document, operationName, variables);
  if (estimate.cost > MAX_COMPLEXITY || estimate.schemaFields > MAX_SCHEMA_FIELDS) {
    throw new Error(`route document ${operationName}: worst-case cost ${estimate.cost} (${estimate.schemaFields} __schema) exceeds the limits`);
  }
  routeDocuments.set(document, execute);
  return estimate;
}

/**
 * True for the fixed document of a REST route (registered by `registerRouteDocument`; clients cannot send one: their
 * documents are parsed into other objects). Such a document runs only with variables its route built and checked with
 * its operation's own rules (src/operations/, `restVariables`), and its answer is all or nothing: an execution with
 * any error is answered with the error envelope alone (src/rest/facade.ts).
 */
export function isRouteDocument(document: DocumentNode): boolean {
  return routeDocuments.has(document);
}

/** Where the client put its query: the query string of a GET, else the body. */
function queryLocation(context: unknown): ValidationDetail['location'] {
  const request = (context as { request?: Request } | undefined)?.request;
  return request?.method === 'GET' ? 'query' : 'body';
}

/** A 422 refusal of the query (`query_too_complex`, `response_too_large`): `details.errors` names the query, the figures sit beside it. */
function queryRefusal(code: string, context: unknown, message: string, figures: Record<string, number>): ServiceError {
  return new ServiceError(code, 422, message, { errors: [{ location: queryLocation(context), field: 'query', message }], ...figures });
}

/** 422 `query_too_complex` (see queryRefusal). */
function queryTooComplex(context: unknown, message: string, figures: Record<string, number>): ServiceError {
  return queryRefusal('query_too_complex', context, message, figures);
}

/** Whether the operation came to `/graphql` (a REST route runs its own fixed document on its own path). */
function isAdHoc(context: unknown): boolean {
  const request = (context as { request?: Request } | undefined)?.request;
  if (!request) return false;
  const path = new URL(request.url).pathname;
  return path === '/graphql' || path === '/graphql/';
}

/**
 * The cost limit of ad-hoc documents (and the answer-size bound of large ones). A REST route's fixed document was
 * priced at start (registerRouteDocument): it skips the estimate and runs its compiled form. One hook for both,
 * not a plugin of its own for the compiled form: every onExecute hook costs each request envelop's iteration of it
 * (closures and promise-like objects; about a quarter of a GET's allocations were envelop's, BENCH_PROFILE=heap).
 */
function useComplexityLimit(max: number): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution, setExecuteFn }) {
      const prepared = routeDocuments.get(args.document);
      if (prepared !== undefined) {
        if (prepared) setExecuteFn(prepared);
        return;
      }
      const stop = (error: ServiceError) => setResultAndStopExecution({ errors: [toGraphQLError(error)] });
      const operation = getOperationAST(args.document, args.operationName);
      // No operation to run (several without operationName, or an unknown name): execution refuses it before any resolver.
      if (!operation) return;
      const raw = (args.variableValues ?? {}) as Record<string, unknown>;
      // Variables that do not coerce: execution reports them (with their own messages) before any resolver.
      if (coerceVariables(args.schema, operation, raw).errors) return;
      let estimate: CostEstimate;
      try {
        estimate = estimateCost(args.schema, args.document, operation.name?.value, raw);
      } catch (e) {
        // Fail closed: an operation whose cost cannot be estimated never runs.
        const reason =
          e instanceof GraphQLError && /maximum allowed number of nodes/.test(e.message)
            ? `it selects more than ${MAX_QUERY_NODES} fields once its fragments are expanded`
            : `its cost cannot be estimated (${e instanceof Error ? e.message : String(e)})`;
        return stop(
          queryTooComplex(args.contextValue, `The query is refused: ${reason}; split it into smaller queries.`, { max_query_nodes: MAX_QUERY_NODES, max_complexity: max }),
        );
      }
      if (estimate.schemaFields > MAX_SCHEMA_FIELDS) {
        return stop(
          queryTooComplex(args.contextValue, `The query selects __schema ${estimate.schemaFields} times; at most ${MAX_SCHEMA_FIELDS} per operation.`, {
            schema_fields: estimate.schemaFields,
            max_schema_fields: MAX_SCHEMA_FIELDS,
          }),
        );
      }
      const complexity = estimate.cost;
      if (complexity > max) {
        return stop(
          queryTooComplex(args.contextValue, `The query's estimated cost ${complexity} exceeds the limit of ${max}; split it into smaller queries.`, {
            complexity,
            max_complexity: max,
          }),
        );
      }
      if (complexity < RESULT_CHECK_COST || !isAdHoc(args.contextValue)) return;
      const maxBytes = maxResultBytes(complexity);
      return {
        onExecuteDone({ result, setResult }) {
          if (!('data' in result) && !('errors' in result)) return; // streamed results are not measured
          const bytes = Buffer.byteLength(JSON.stringify(result as ExecutionResult));
          if (bytes <= maxBytes) return;
          const message = `The answer would be ${bytes} bytes, over the limit of ${maxBytes} bytes for the query's estimated cost ${complexity}; ask for fewer fields or split the query.`;
          // Runs before metering's own onExecuteDone: with no data, nothing is charged.
          setResult({
            errors: [toGraphQLError(queryRefusal('response_too_large', args.contextValue, message, { bytes, max_bytes: maxBytes, complexity }))],
          });
        },
      };
    },
  };
}

/** The safety plugins, in the order they must run (before metering): request JSON errors, nesting, depth, aliases, cost and answer size. */
export function safetyPlugins(): Plugin[] {
  return [
    useRequestJsonErrors(),
    useNestingLimit(MAX_NESTING),
    maxDepthPlugin({ n: MAX_DEPTH, exposeLimits: true }) as Plugin,
    maxAliasesPlugin({ n: MAX_ALIASES, exposeLimits: true }) as Plugin,
    useComplexityLimit(MAX_COMPLEXITY),
  ];
}
