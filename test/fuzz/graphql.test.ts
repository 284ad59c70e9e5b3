/**
 * Fuzzing of /graphql (`npm run test:fuzz`): documents generated from the schema (random fields,
 * aliases, fragments, directives, arguments and variables of right and wrong types), malformed
 * requests (random text, truncated documents, wrong bodies, methods, content types and Accept
 * headers), and the safety limits (depth, aliases, cost, list sizes, nesting). No answer may be a 5xx
 * or carry an internal error; every answer has an X-Request-ID; a refused operation has no data and
 * is not charged, and an answer that carries a metered field's data is a 200 charged exactly the cost of
 * the metered fields whose data it holds, metered edges included (README, Billing: the charge follows the data;
 * docs/graphql.md); and the limits hold: depth over MAX_DEPTH, more than MAX_ALIASES aliases, or a cost
 * over MAX_COMPLEXITY are always refused.
 */
import fc from 'fast-check';
import {
  Kind,
  getNamedType,
  getOperationAST,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isUnionType,
  parse,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type SelectionSetNode,
} from 'graphql';
import { collectFields, collectSubfields } from 'graphql/execution/collectFields.js';
import { getArgumentValues } from 'graphql/execution/values.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/graphql/schema.js';
import { ENDPOINTS, type EndpointInfo } from '../../src/catalogue/endpoints.js';
import { operationCost } from '../../src/accounts/billing.js';
import { MAX_BODY_BYTES } from '../../src/app.js';
import { MAX_ALIASES, MAX_COMPLEXITY, MAX_DEPTH } from '../../src/plugins/safety.js';
import { FUZZ_RUNS, FUZZ_SEED, QUOTED_NAMES, call, credentialHeaders, describeRequest, fuzzTarget, record, report, type CallerKind, type FuzzRequest, type FuzzTarget, type Received } from './harness.js';
import { anyText, encodeValue } from './generators.js';

let t: FuzzTarget;
const started = performance.now();

beforeAll(async () => {
  console.log(`fuzz (GraphQL): FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}`);
  t = await fuzzTarget();
});
afterAll(async () => {
  console.log(report('fuzz (GraphQL)', (performance.now() - started) / 1000));
  await t?.close();
});

// ---------------------------------------------------------------------------------------------
// Documents from the schema

/** A small deterministic PRNG (mulberry32): documents are built from one fast-check integer, so runs replay. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = [...QUOTED_NAMES, 'Arcana', 'Unknown', '', 'x'.repeat(256), 'a\u0000b', '\ud800'];
/** Date arguments: days in range, at its edges and beyond (years 0000-0099, 9999, 10000, 29 February), malformed. */
const DATES = ['2026-07-16', '2024-02-29', '1970-01-01', '9999-12-31', '0000-01-01', '0001-01-01', '0099-12-31', '1969-12-31', '10000-01-01', '2023-02-29', '1900-02-29', '2000-02-29', '2026-02-30', 'not a date', ''];
const STRINGS = ['', 'BUFF163', 'buff163', 'USD', '730', '570', 'x'.repeat(300), '\u0000', '😀', '"', '\\', '\n', 'qg_x', '2026-07-16T00:00:00Z', 'not a date'];

interface Built {
  text: string;
  variables: Record<string, unknown>;
  operationName?: string;
}

/**
 * Builds a random operation over the schema: see the module doc. Some of it is invalid on purpose. With `metered`,
 * a query of one to three metered root fields (valid root arguments) with generated selections below them.
 */
function buildDocument(seed: number, metered = false): Built {
  const r = prng(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const varDefs: string[] = [];
  const variables: Record<string, unknown> = {};
  const fragments: string[] = [];
  let aliasCount = 0;

  const wrongValue = (): unknown => pick([5, -1, 2 ** 31, 1.5, true, null, 'x', [], {}, [[['deep']]], { a: { b: 1 } }, 'ask', 1e308]);
  /** A JSON value for an input type (mostly right, sometimes wrong). */
  const jsonFor = (type: GraphQLInputType, depth = 0): unknown => {
    if (chance(0.06)) return wrongValue();
    if (isNonNullType(type)) return jsonFor(type.ofType, depth);
    if (chance(0.05)) return null;
    if (isListType(type)) {
      const n = pick([0, 1, 2, 3, 5, 100, 1000, 1001]);
      return Array.from({ length: n }, () => jsonFor(type.ofType, depth + 1));
    }
    if (isEnumType(type)) return chance(0.9) ? pick(type.getValues()).name : pick(['ASK', 'both', '', 'x']);
    if (isInputObjectType(type)) {
      const o: Record<string, unknown> = {};
      for (const f of Object.values(type.getFields())) if (isNonNullType(f.type) || chance(0.5)) o[f.name] = jsonFor(f.type, depth + 1);
      if (chance(0.1)) o.unknownField = 1;
      return o;
    }
    const name = (getNamedType(type) as GraphQLNamedType).name;
    if (name === 'Int' || name === 'Credits') return pick([0, 1, 7, 730, 2147483647, 2147483648, -1, 2 ** 53, 1.5]);
    if (name === 'Boolean') return chance(0.5);
    if (name === 'Float') return pick([0, 0.5, -1e308, 1e308]);
    if (name === 'Date') return pick(DATES);
    return chance(0.5) ? pick(NAMES) : pick(STRINGS);
  };
  /** A GraphQL literal for an input type. */
  const literalFor = (type: GraphQLInputType): string => {
    const v = jsonFor(type);
    return toLiteral(v, type);
  };
  const toLiteral = (v: unknown, type: GraphQLInputType): string => {
    const named = getNamedType(type);
    if (v === null) return 'null';
    if (Array.isArray(v)) return `[${v.map((x) => toLiteral(x, isListType(type) ? type.ofType : isNonNullType(type) && isListType(type.ofType) ? type.ofType.ofType : type)).join(', ')}]`;
    if (typeof v === 'object') return `{${Object.entries(v as object).map(([k, x]) => `${k}: ${toLiteral(x, type)}`).join(', ')}}`;
    if (typeof v === 'string' && isEnumType(named) && /^[_A-Za-z][_0-9A-Za-z]*$/.test(v) && !['true', 'false', 'null'].includes(v)) return v;
    if (typeof v === 'string') return JSON.stringify(v);
    return String(v);
  };
  const typeString = (type: GraphQLInputType): string => String(type);
  const args = (field: GraphQLField<unknown, unknown>): string => {
    const parts: string[] = [];
    for (const a of field.args) {
      if (!(isNonNullType(a.type) && a.defaultValue === undefined) && !chance(0.5)) continue;
      if (chance(0.03)) continue; // a required argument left out
      if (chance(0.35)) {
        const name = `v${varDefs.length}`;
        const declared = chance(0.08) ? pick(['Int', 'String', 'Boolean', '[String]', 'SideFilter', 'String!']) : typeString(a.type);
        varDefs.push(`$${name}: ${declared}`);
        if (!chance(0.05)) variables[name] = jsonFor(a.type);
        parts.push(`${a.name}: $${name}`);
      } else {
        parts.push(`${a.name}: ${literalFor(a.type)}`);
      }
    }
    if (chance(0.03)) parts.push(`unknownArg: 1`);
    return parts.length > 0 ? `(${parts.join(', ')})` : '';
  };
  /**
   * Valid arguments for a metered root field (its required ones only, the rest defaulted), so its resolvers run and
   * the generated nested arguments below it (mostly invalid) give partial answers: the billing oracle's cases.
   */
  const meteredArgs = (field: GraphQLField<unknown, unknown>): string => {
    const parts: string[] = [];
    for (const a of field.args) {
      if (a.name === 'marketHashName') parts.push(`marketHashName: ${JSON.stringify(pick(QUOTED_NAMES.slice(0, 4)))}`);
      else if (a.name === 'marketHashNames') parts.push(`marketHashNames: ${JSON.stringify(Array.from({ length: pick([1, 3, 101]) }, (_, i) => QUOTED_NAMES[i % 4]))}`);
      else if (a.name === 'currency') parts.push(`currency: ${pick(['"USD"', '"EUR"', '"CNY"'])}`);
      else if (a.name === 'since' && chance(0.5)) parts.push(`since: ${pick(['"0"', '"1"'])}`);
      else if (a.name === 'search') parts.push(`search: ${JSON.stringify(pick(['ak47 redline ft', 'karambit', 'case', 'st redline', 'no such thing']))}`);
    }
    return parts.length > 0 ? `(${parts.join(', ')})` : '';
  };
  const selection = (type: GraphQLNamedType, depth: number): string => {
    if (isScalarType(type) || isEnumType(type)) return chance(0.02) ? '{ x }' : '';
    if (depth > 14) return '{ __typename }';
    const out: string[] = [];
    if (isUnionType(type) || isInterfaceType(type)) {
      if (isInterfaceType(type)) for (const f of Object.values(type.getFields())) if (chance(0.5)) out.push(f.name);
      for (const impl of schema.getPossibleTypes(type)) if (chance(0.6)) out.push(`... on ${impl.name} ${selection(impl, depth + 1) || '{ __typename }'}`);
      if (out.length === 0) out.push('__typename');
      return `{ ${out.join(' ')} }`;
    }
    const object = type as GraphQLObjectType;
    const fields = Object.values(object.getFields());
    // Fields with arguments (converted, afterFees, feeSchedule, an item's quotes, history and routes) are picked more
    // often below the root: their arguments, mostly wrong, give partial answers (data with nested errors).
    const withArgs = depth > 1 ? fields.filter((f) => f.args.length > 0) : [];
    const n = 1 + Math.floor(r() * Math.min(fields.length, 6));
    for (let i = 0; i < n; i++) {
      const f = withArgs.length > 0 && chance(0.3) ? pick(withArgs) : pick(fields);
      let alias = '';
      if (chance(0.15)) {
        alias = `${chance(0.2) ? pick(fields).name : `a${aliasCount}`}: `;
        aliasCount++;
      }
      const sub = selection(getNamedType(f.type), depth + 1);
      const directive = chance(0.05) ? pick([' @include(if: true)', ' @skip(if: false)', ' @skip(if: true)', ' @deprecated', ' @unknown']) : '';
      const body = chance(0.02) ? '' : sub;
      const fieldArgs = depth === 1 && PRICED_BY_FIELD.has(f.name) && chance(0.6) ? meteredArgs(f) : args(f);
      out.push(`${alias}${f.name}${fieldArgs}${directive} ${body}`);
    }
    if (chance(0.1)) out.push('__typename');
    if (chance(0.02)) out.push('notAField');
    if (chance(0.1)) {
      const name = `F${fragments.length}`;
      fragments.push(`fragment ${name} on ${object.name} { ${pick(fields).name === '__typename' ? '__typename' : '__typename'} }`);
      out.push(`...${name}`);
    }
    return `{ ${out.join(' ')} }`;
  };
  const kind = r();
  const opType = metered ? 'query' : kind < 0.88 ? 'query' : kind < 0.97 ? 'mutation' : 'subscription';
  const root = (opType === 'mutation' ? schema.getMutationType() : schema.getQueryType())!;
  let body: string;
  if (metered) {
    const pricedFields = Object.values(schema.getQueryType()!.getFields()).filter((f) => PRICED_BY_FIELD.has(f.name));
    body = `{ ${Array.from({ length: 1 + Math.floor(r() * 3) }, (_, i) => {
      const f = pick(pricedFields);
      return `m${i}: ${f.name}${meteredArgs(f)} ${selection(getNamedType(f.type), 2) || ''}`;
    }).join(' ')} }`;
  } else {
    body = selection(root, 1);
  }
  const name = chance(0.3) ? `Op${seed % 1000}` : '';
  const header = varDefs.length > 0 || name ? `${opType} ${name}${varDefs.length ? `(${varDefs.join(', ')})` : ''}` : opType === 'query' && chance(0.5) ? '' : opType;
  if (chance(0.05)) variables.undeclared = 1;
  const text = [`${header} ${body}`, ...fragments].join('\n');
  return { text, variables, ...(name && chance(0.8) ? { operationName: chance(0.9) ? name : 'Other' } : {}) };
}

// ---------------------------------------------------------------------------------------------
// Sending and checking

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Sends a request to /graphql and applies the checks every answer must pass; returns the answer. */
async function sendGraphQL(request: FuzzRequest, label: string): Promise<Received> {
  t.errors.length = 0;
  const got = await call(t, request);
  record(label, got.status);
  const where = () => `${describeRequest(request)}\n  answer: ${got.status} ${got.headers.get('content-type')} ${got.text.slice(0, 1200)}${t.errors.length ? `\n  logged: ${t.errors.join('\n').slice(0, 3000)}` : ''}`;
  expect(got.status, `5xx\n${where()}`).toBeLessThan(500);
  expect(got.headers.get('x-request-id') ?? '', `X-Request-ID\n${where()}`).toMatch(UUID);
  expect(got.text, `internal error\n${where()}`).not.toMatch(/internal_error|INTERNAL_SERVER_ERROR|Unexpected error\./);
  const type = got.headers.get('content-type') ?? '';
  if (request.method === 'HEAD') {
    // HEAD answers carry the headers of the GET answer and never a body (README, HEAD).
    expect(got.text, `HEAD with a body\n${where()}`).toBe('');
    return got;
  }
  const envelopeCodes: Record<number, string> = { 413: 'payload_too_large', 406: 'not_acceptable', 415: 'unsupported_media_type' };
  if (envelopeCodes[got.status]) {
    // Transport refusals come in the error envelope with a code (README, error codes), never an empty body.
    expect(got.body?.error?.code, `${got.status} envelope\n${where()}`).toBe(envelopeCodes[got.status]);
    expect(got.body.meta.request_id, where()).toBe(got.headers.get('x-request-id'));
    return got;
  }
  if (/json/.test(type)) {
    const b = got.body;
    expect(b !== null && typeof b === 'object' && !Array.isArray(b), `JSON object\n${where()}`).toBe(true);
    expect(Object.keys(b).every((k) => ['data', 'errors', 'extensions'].includes(k)), `GraphQL response keys\n${where()}`).toBe(true);
    if (b.errors !== undefined) {
      expect(Array.isArray(b.errors) && b.errors.length > 0 && b.errors.every((e: any) => typeof e.message === 'string'), `errors list\n${where()}`).toBe(true);
      // A failed operation is never charged (README, GraphQL billing).
      if (b.data === null || b.data === undefined) expect(b.extensions?.billing?.billable, `charged for a failed operation\n${where()}`).not.toBe(true);
    } else {
      expect('data' in b, `neither data nor errors\n${where()}`).toBe(true);
    }
    if (b.data !== null && b.data !== undefined) {
      // An answer that delivers data (some root field not null) is a 200, errors or not (GraphQL over HTTP; one whose
      // root fields are all null keeps its errors' status: src/plugins/error-codes.ts), and the metered fields whose
      // data it carries are charged in full, nested errors or not (README, Billing: the charge follows the data).
      if (Object.values(b.data).some((v) => v !== null && v !== undefined)) expect(got.status, `data with a non-200 status\n${where()}`).toBe(200);
      const owed = chargeOwed(request, b.data);
      if (owed !== null && owed > 0) record(`  billing oracle: data owing credits${b.errors ? ', with errors' : ''}`, got.status);
      if (owed !== null && lastEdgesOwed > 0) record('  billing oracle: data owing credits for metered edges', got.status);
      if (owed !== null) {
        const billing = b.extensions?.billing;
        if (owed > 0) expect(billing, `data sent without its charge of ${owed}\n${where()}`).toMatchObject({ billable: true, credit: { cost: owed } });
        else expect(billing?.billable ?? false, `charged for data that costs nothing\n${where()}`).toBe(false);
      }
    }
  } else if (type.startsWith('text/html')) {
    expect(request.method, where()).toBe('GET');
  } else if (!type.startsWith('text/event-stream') && !type.startsWith('multipart/mixed')) {
    // Bodiless answers: CORS preflights only (406/415 come in the envelope above).
    expect(request.method === 'OPTIONS' ? [204, 405] : [405], `non-JSON answer\n${where()}`).toContain(got.status);
  }
  return got;
}

/** Catalogue rows with a credit cost, by the query root field tied to them (data/endpoints.json graphql_fields). */
const PRICED_BY_FIELD = new Map<string, EndpointInfo>(ENDPOINTS.filter((e) => e.creditCost > 0).flatMap((e) => e.graphqlFields.filter((f) => !f.includes('.')).map((f) => [f, e] as const)));
/** Catalogue rows with a credit cost, by the metered edge tied to them (graphql_fields entries `Type.field`; docs/graphql.md). */
const PRICED_BY_EDGE = new Map<string, EndpointInfo>(ENDPOINTS.filter((e) => e.creditCost > 0).flatMap((e) => e.graphqlFields.filter((f) => f.includes('.')).map((f) => [f, e] as const)));

/** The part of the last `chargeOwed` figure owed for metered edges (for the run's report). */
let lastEdgesOwed = 0;

/**
 * Credits owed for the metered edges an answer's `data` holds (docs/graphql.md, Billing): each selected edge not
 * directly on a metered root field's value costs, for its non-null values in `data`, its row's cost per value, or
 * for a unit-priced row (a batch) one block per started 100 units: a `Website.quotes` page counts the quotes it
 * asks for (`first`, else `last`, else 20), a `MarketQuote.item` one. Edges below interfaces and unions are not
 * looked for (none can be reached through one).
 */
function edgesOwed(
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  queryType: GraphQLObjectType,
  rootFields: Map<string, readonly FieldNode[]>,
  data: Record<string, unknown>,
): number {
  let owed = 0;
  const objects = (values: unknown[]): Record<string, unknown>[] =>
    values.flat(Infinity).filter((v): v is Record<string, unknown> => v !== null && typeof v === 'object');
  const visit = (type: GraphQLObjectType, nodes: readonly FieldNode[], values: Record<string, unknown>[], covered: boolean) => {
    if (values.length === 0) return;
    for (const [key, sub] of collectSubfields(schema, fragments, variables, type, nodes)) {
      const field = type.getFields()[sub[0]!.name.value];
      if (!field) continue;
      const present = values.map((v) => v[key]).filter((v) => v !== null && v !== undefined);
      const row = PRICED_BY_EDGE.get(`${type.name}.${field.name}`);
      if (row && !covered && present.length > 0) {
        const args = getArgumentValues(field, sub[0]!, variables);
        const units = type.name === 'Website' && field.name === 'quotes' ? Number(args.first ?? args.last ?? 20) : 1;
        owed += Number(row.unitPricing ? operationCost(row, units * present.length) : operationCost(row) * BigInt(present.length));
      }
      const named = getNamedType(field.type);
      if (isObjectType(named)) visit(named, sub, objects(present), false);
    }
  };
  for (const [key, nodes] of rootFields) {
    const field = queryType.getFields()[nodes[0]!.name.value];
    const named = field ? getNamedType(field.type) : undefined;
    if (field && named && isObjectType(named)) visit(named, nodes, objects([data[key]]), PRICED_BY_FIELD.has(field.name));
  }
  return owed;
}

/** The operation a request to /graphql carried (POST JSON or GET parameters), or null when it carried none readable. */
function operationOf(request: FuzzRequest): { query: string; variables: Record<string, unknown>; operationName?: string } | null {
  let params: Record<string, unknown> | null = null;
  try {
    if (request.method === 'POST' && typeof request.body === 'string' && request.headers.some(([k, v]) => k.toLowerCase() === 'content-type' && v.startsWith('application/json'))) {
      params = JSON.parse(request.body) as Record<string, unknown>;
    } else if (request.method === 'GET') {
      const q = new URL(`http://fuzz.test${request.target}`).searchParams;
      params = { query: q.get('query'), variables: q.get('variables') ? JSON.parse(q.get('variables')!) : {}, operationName: q.get('operationName') ?? undefined };
    }
  } catch {
    return null;
  }
  if (!params || Array.isArray(params) || typeof params.query !== 'string') return null;
  const variables = params.variables && typeof params.variables === 'object' && !Array.isArray(params.variables) ? (params.variables as Record<string, unknown>) : {};
  return { query: params.query, variables, ...(typeof params.operationName === 'string' ? { operationName: params.operationName } : {}) };
}

/**
 * Credits owed for an answer's `data` (the oracle of the billing rule, README: Billing): the sum, over the
 * operation's root fields with a credit cost whose value in `data` is not null, of each one's cost (a batch by its
 * names). An export answered "not modified" owes nothing; one whose answer does not say (`notModified` not
 * selected) makes the figure unknown. Null when unknown or when the request carried no operation readable here.
 */
function chargeOwed(request: FuzzRequest, data: Record<string, unknown>): number | null {
  lastEdgesOwed = 0;
  const op = operationOf(request);
  if (!op) return null;
  let owed = 0;
  try {
    const doc = parse(op.query);
    const operation = getOperationAST(doc, op.operationName);
    if (!operation || operation.operation !== 'query') return null;
    const fragments = Object.fromEntries(doc.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
    const queryType = schema.getQueryType()!;
    const rootFields = collectFields(schema, fragments, op.variables, queryType, operation.selectionSet);
    lastEdgesOwed = edgesOwed(fragments, op.variables, queryType, rootFields, data);
    owed += lastEdgesOwed;
    for (const [key, nodes] of rootFields) {
      const name = nodes[0]!.name.value;
      const row = PRICED_BY_FIELD.get(name);
      const value = data[key] as Record<string, unknown> | null | undefined;
      if (!row || value === null || value === undefined) continue;
      const args = getArgumentValues(queryType.getFields()[name]!, nodes[0]!, op.variables);
      if (name === 'priceExport' && args.ifNoneMatch !== null && args.ifNoneMatch !== undefined) {
        if (value.notModified === true) continue;
        if (value.notModified !== false) return null;
      }
      const units = row.unitPricing ? (args[row.unitPricing.unitsBodyField.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())] as unknown[]).length : 1;
      owed += Number(operationCost(row, units));
    }
  } catch {
    return null; // not an operation this oracle can read (the server answered it all the same)
  }
  return owed;
}

/** A refused operation: errors and no data, or refused before GraphQL ran (a 4xx error envelope, e.g. 406 for an Accept no answer can meet). */
function expectRefused(got: Received, request: FuzzRequest, why: string): void {
  const where = `${why}\n${describeRequest(request)}\n  answer: ${got.status} ${got.text.slice(0, 600)}`;
  if (got.body?.error !== undefined) {
    expect(got.status, where).toBeGreaterThanOrEqual(400);
    expect(got.status, where).toBeLessThan(500);
    expect(typeof got.body.error.code, where).toBe('string');
    expect(got.body.data, where).toBeUndefined();
    return;
  }
  expect(got.body?.errors?.length ?? 0, where).toBeGreaterThan(0);
  expect(got.body?.data ?? null, where).toBeNull();
}

const callerArb: fc.Arbitrary<CallerKind> = fc.oneof({ arbitrary: fc.constant<CallerKind>('rich'), weight: 12 }, { arbitrary: fc.constantFrom<CallerKind>('poor', 'machine', 'none', 'malformed', 'disabled', 'scoped'), weight: 3 });
const ACCEPTS = ['application/graphql-response+json, application/json', 'application/json', 'application/graphql-response+json', null, '*/*', 'text/event-stream', 'multipart/mixed', 'text/html', 'application/xml'];

function post(body: string | Uint8Array, headers: [string, string][], limited = false): FuzzRequest {
  return { method: 'POST', target: '/graphql', headers, body, limited };
}

// ---------------------------------------------------------------------------------------------
// Depth and alias counts as graphql-armor counts them (leaf fields included; spreads add nothing)

function depthOf(set: SelectionSetNode | undefined, fragments: Map<string, SelectionSetNode>, seen = new Set<string>()): number {
  if (!set) return 0;
  let max = 0;
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) max = Math.max(max, 1 + depthOf(s.selectionSet, fragments, seen));
    else if (s.kind === Kind.INLINE_FRAGMENT) max = Math.max(max, depthOf(s.selectionSet, fragments, seen));
    else if (!seen.has(s.name.value)) max = Math.max(max, depthOf(fragments.get(s.name.value), fragments, new Set([...seen, s.name.value])));
  }
  return max;
}

function measure(doc: DocumentNode): { depth: number; aliases: number } {
  const fragments = new Map<string, SelectionSetNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d.selectionSet);
  let depth = 0;
  for (const d of doc.definitions) if (d.kind === Kind.OPERATION_DEFINITION) depth = Math.max(depth, depthOf(d.selectionSet, fragments));
  let aliases = 0;
  const count = (set: SelectionSetNode | undefined) =>
    set?.selections.forEach((s) => {
      if (s.kind === Kind.FIELD && s.alias) aliases++;
      if (s.kind !== Kind.FRAGMENT_SPREAD) count(s.selectionSet);
    });
  for (const d of doc.definitions) if (d.kind === Kind.OPERATION_DEFINITION) count(d.selectionSet);
  return { depth, aliases };
}

const QUOTE = 'marketCode providerCode side marketCurrencyCode marketPriceAmount quantity isQuantityMinimum isAllItemsSamePrice changedAt observedAt delistedAt freshAt valuation { valuationDate credibility uncertainty isTwoSided askAmount bidAmount askQuoteCount bidQuoteCount }';

describe('GraphQL fuzzing', () => {
  it(`${FUZZ_RUNS} documents generated from the schema: never 5xx, refused operations are not charged, depth and aliases hold`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), callerArb, fc.nat(), fc.constantFrom(...ACCEPTS), fc.integer({ min: 0, max: 9 }), async (seed, caller, spelling, accept, limited) => {
        const built = buildDocument(seed);
        const headers: [string, string][] = [['Content-Type', 'application/json'], ...credentialHeaders(t, caller, spelling)];
        if (accept && accept !== 'text/html') headers.push(['Accept', accept]);
        const request = post(JSON.stringify({ query: built.text, variables: built.variables, ...(built.operationName ? { operationName: built.operationName } : {}) }), headers, limited === 0);
        const got = await sendGraphQL(request, 'POST /graphql (schema-generated documents)');
        let doc: DocumentNode | null = null;
        try {
          doc = parse(built.text);
        } catch {
          // not a document: the parser's error is the answer
        }
        if (doc && got.body && typeof got.body === 'object') {
          const m = measure(doc);
          if (m.depth > MAX_DEPTH) expectRefused(got, request, `depth ${m.depth} > ${MAX_DEPTH}`);
          if (m.aliases > MAX_ALIASES) expectRefused(got, request, `${m.aliases} aliases > ${MAX_ALIASES}`);
        }
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });

  it(`${FUZZ_RUNS} operations of metered fields with generated nested arguments: an answer with a field's data is a 200 charged its full cost`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.constantFrom<CallerKind>('rich', 'rich', 'rich', 'poor'), fc.nat(), fc.constantFrom(...ACCEPTS.slice(0, 5)), async (seed, caller, spelling, accept) => {
        const built = buildDocument(seed, true);
        const headers: [string, string][] = [['Content-Type', 'application/json'], ...credentialHeaders(t, caller, spelling)];
        if (accept) headers.push(['Accept', accept]);
        // sendGraphQL holds the oracle: data owing credits is charged them (extensions.billing), no data is never charged.
        await sendGraphQL(post(JSON.stringify({ query: built.text, variables: built.variables }), headers), 'POST /graphql (metered fields, nested arguments)');
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });

  it(`${FUZZ_RUNS} malformed requests (text, bodies, methods, content types, Accept): never 5xx, never an internal error`, async () => {
    const valid = fc.nat().map((s) => buildDocument(s).text);
    const queryText = fc.oneof(
      { arbitrary: anyText, weight: 3 },
      { arbitrary: fc.tuple(valid, fc.nat()).map(([q, n]) => q.slice(0, n % (q.length + 1))), weight: 3 },
      { arbitrary: fc.tuple(valid, fc.nat(), anyText).map(([q, n, x]) => q.slice(0, n % (q.length + 1)) + x + q.slice(n % (q.length + 1))), weight: 3 },
      {
        arbitrary: fc.constantFrom(
          '{', '}', '{ health }', '{ health { status } ', 'query { health { status } } query { health { status } }', 'query A { health { status } } query A { health { status } }',
          '{ health { status } } fragment F on Query { ...F }', '{ ...F } fragment F on Query { ...G } fragment G on Query { ...F }', '{ health(x: 1) { status } }', '{ __schema { types { name } } }',
          '{ __type(name: "Query") { name } }', '{ "string" }', '{ health { status @include } }', '# only a comment', '\ufeff{ health { status } }', '{ health { status } } \u0000',
          '{ prices(marketHashName: "\\ud800") { appId } }', '{ prices(marketHashName: """block "" string""") { appId } }', `{ health { ${'status '.repeat(5000)} } }`,
          `{ ${'a: health { status } '.repeat(10)} }`, `{ prices(marketHashName: "x", markets: ${'['.repeat(3000)}${']'.repeat(3000)}) { appId } }`, '{'.repeat(20_000) + '}'.repeat(20_000),
          `{ batchPrices(marketHashNames: [${Array.from({ length: 20_000 }, () => '"x"').join(',')}]) { appId } }`, 'x'.repeat(500_000),
        ),
        weight: 2,
      },
    );
    const form = fc.oneof(
      { arbitrary: fc.constant('json'), weight: 6 },
      { arbitrary: fc.constantFrom('get', 'get-dup', 'get-mutation', 'graphql-type', 'bad-json', 'array', 'query-type', 'variables-type', 'no-query', 'text-plain', 'form', 'method', 'empty', 'huge', 'badutf8', 'opname'), weight: 6 },
    );
    await fc.assert(
      fc.asyncProperty(queryText, form, fc.nat(), callerArb, fc.constantFrom(...ACCEPTS), async (text, how, n, caller, accept) => {
        const auth = credentialHeaders(t, caller, n);
        const acceptHeader: [string, string][] = accept ? [['Accept', accept]] : [];
        const json: [string, string][] = [['Content-Type', 'application/json'], ...auth, ...acceptHeader];
        let request: FuzzRequest;
        switch (how) {
          case 'get':
            request = { method: 'GET', target: `/graphql?query=${encodeValue(text, 'component')}&variables=${encodeValue(n % 2 ? '{}' : '{"x":', 'component')}`, headers: [...auth, ...acceptHeader] };
            break;
          case 'get-dup':
            request = { method: 'GET', target: `/graphql?query=${encodeValue(text, 'component')}&query=%7Bhealth%7Bstatus%7D%7D&operationName=a&operationName=b`, headers: [...auth, ...acceptHeader] };
            break;
          case 'get-mutation':
            request = { method: 'GET', target: `/graphql?query=${encodeValue('mutation { syncSetCreditTotal(total: 1, userId: "x") { userId } }', 'component')}`, headers: [...auth, ...acceptHeader] };
            break;
          case 'graphql-type':
            request = post(text, [['Content-Type', 'application/graphql'], ...auth, ...acceptHeader]);
            break;
          case 'bad-json':
            request = post(JSON.stringify({ query: text }).slice(0, -1 - (n % 5)), json);
            break;
          case 'array':
            request = post(JSON.stringify([{ query: text }, { query: text }]), json);
            break;
          case 'query-type':
            request = post(JSON.stringify({ query: [1, null, true, { a: 1 }, ['{ health { status } }'], 1e308][n % 6] }), json);
            break;
          case 'variables-type':
            request = post(JSON.stringify({ query: text, variables: ['x', 1, [1], true, { a: [[[[[]]]]] }][n % 5] }), json);
            break;
          case 'no-query':
            request = post(JSON.stringify({ variables: {}, extensions: { persistedQuery: { version: 1, sha256Hash: 'x' } } }), json);
            break;
          case 'text-plain':
            request = post(JSON.stringify({ query: text }), [['Content-Type', 'text/plain'], ...auth, ...acceptHeader]);
            break;
          case 'form':
            request = post(`query=${encodeValue(text, 'plus')}`, [['Content-Type', 'application/x-www-form-urlencoded'], ...auth, ...acceptHeader]);
            break;
          case 'method':
            request = { method: ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'][n % 5]!, target: '/graphql', headers: json };
            if (n % 5 < 3) request.body = JSON.stringify({ query: text });
            break;
          case 'empty':
            request = post('', json);
            break;
          case 'huge':
            request = post(JSON.stringify({ query: `{ health { status } } #${'x'.repeat(MAX_BODY_BYTES)}` }), json);
            break;
          case 'badutf8':
            request = post(new Uint8Array(Buffer.concat([Buffer.from('{"query":"{ health { status } }", "x": "'), Buffer.from([0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from('"}')])), json);
            break;
          case 'opname':
            request = post(JSON.stringify({ query: text, operationName: ['', 'nope', 1, null, 'x'.repeat(10_000)][n % 5] }), json);
            break;
          default:
            request = post(JSON.stringify({ query: text, variables: {} }), json);
        }
        const got = await sendGraphQL(request, `${request.method} /graphql (malformed)`);
        // Service tokens (the collectors' ingestion) may have a larger limit of their own.
        if (how === 'huge' && caller !== 'machine') expect(got.status, describeRequest(request)).toBe(413);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });

  it(`${FUZZ_RUNS} operations at and over the limits: depth, aliases, cost, list sizes`, async () => {
    const kind = fc.constantFrom('depth', 'aliases', 'cost', 'names', 'markets');
    await fc.assert(
      fc.asyncProperty(kind, fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 120 }), fc.boolean(), fc.integer({ min: 0, max: 9 }), async (k, small, large, viaVariables, limited) => {
        const headers: [string, string][] = [['Content-Type', 'application/json'], ['Authorization', `Bearer ${t.secrets.rich}`]];
        let query: string;
        let variables: Record<string, unknown> = {};
        switch (k) {
          case 'depth': // __type(1) fields(2) type(3), `small` ofType levels, name: depth small + 4
            query = `{ __type(name: "Query") { fields { type { ${'ofType { '.repeat(small)} name ${'} '.repeat(small)} } } } }`;
            break;
          case 'aliases':
            query = `{ ${Array.from({ length: large }, (_, i) => `a${i}: health { status }`).join(' ')} ${large === 0 ? 'health { status }' : ''} }`;
            break;
          case 'cost': {
            // `small % 4` full batches of 1000 names (each 1,013,001 by the README) plus a single price.
            const batches = small % 4;
            const fields = Array.from({ length: batches }, (_, i) => `b${i}: batchPrices(marketHashNames: $names) { appId side items { marketHashName markets { ${QUOTE} } } }`);
            query = `query($names: [String!]!) { p: prices(marketHashName: "Recoil Case") { appId } ${fields.join(' ')} }`;
            variables = { names: Array.from({ length: 1000 }, (_, i) => QUOTED_NAMES[i % QUOTED_NAMES.length]) };
            break;
          }
          case 'names': {
            const count = [0, 1, 999, 1000, 1001, 10_000, 60_000][small % 7]!;
            const names = Array.from({ length: count }, (_, i) => `n${i}`);
            query = viaVariables
              ? `query($n: [String!]!) { batchPrices(marketHashNames: $n) { items { marketHashName } } }`
              : `{ batchPrices(marketHashNames: ${JSON.stringify(names)}) { items { marketHashName } } }`;
            if (viaVariables) variables = { n: names };
            break;
          }
          default: {
            const count = [1, 100, 10_000, 100_000][small % 4]!;
            const markets = Array.from({ length: count }, (_, i) => ['BUFF163', 'STEAM', 'CSCP', `M${i}`][i % 4]);
            query = `query($m: [String!]) { prices(marketHashName: "Recoil Case", markets: $m) { markets { marketCode } } }`;
            variables = { m: markets };
          }
        }
        const request = post(JSON.stringify({ query, variables }), headers, limited === 0);
        const got = await sendGraphQL(request, 'POST /graphql (limits)');
        if (got.status === 413) return;
        const doc = parse(query);
        const m = measure(doc);
        if (m.depth > MAX_DEPTH) expectRefused(got, request, `depth ${m.depth}`);
        if (m.aliases > MAX_ALIASES) expectRefused(got, request, `${m.aliases} aliases`);
        if (k === 'depth' && m.depth <= MAX_DEPTH) expect(got.body.errors, describeRequest(request)).toBeUndefined();
        if (k === 'aliases' && m.aliases <= MAX_ALIASES) expect(got.body.errors, describeRequest(request)).toBeUndefined();
        if (k === 'cost' && small % 4 >= 2) {
          expectRefused(got, request, 'two full batches');
          expect(got.body.errors[0].extensions.code, describeRequest(request)).toBe('query_too_complex');
          expect(got.body.errors[0].extensions.details.complexity).toBeGreaterThan(MAX_COMPLEXITY);
        }
        if (k === 'names') {
          const count = [0, 1, 999, 1000, 1001, 10_000, 60_000][small % 7]!;
          if (count === 0 || count > 1000) expectRefused(got, request, `${count} names`);
          else if (limited !== 0) expect(got.body.data?.batchPrices?.items?.length, describeRequest(request)).toBe(count);
        }
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });
});
