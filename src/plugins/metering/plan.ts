/**
 * The metering plan of an operation about to run (src/plugins/metering.ts): its metered root fields and edges (catalogue
 * rows with a credit cost or a rate limit, via `graphqlFields`), their arguments checked by their operations' rules, and
 * the units each is priced by. Cached per document; a REST route's document (trusted variables) takes a shortcut.
 */
import {
  getNamedType,
  isAbstractType,
  isObjectType,
  Kind,
  visit,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { collectFields, collectSubfields } from 'graphql/execution/collectFields.js';
import { getArgumentValues } from 'graphql/execution/values.js';
import type { z } from 'zod';
import { coerceVariables } from '../variables.js';
import { ENDPOINTS, type EndpointInfo } from '../../catalogue/endpoints.js';
import { itemArgs, quotesPageSize } from '../../validation/params.js';
import { OPERATIONS } from '../../operations/index.js';
import { operationArgsRule } from '../../operations/operation.js';
import type { ValidationDetail } from '../../lib/errors.js';
import { operationCost } from '../../accounts/billing.js';


/** One metered root field of an operation. */
export interface MeteredField {
  /** Response key (alias or field name). */
  responseKey: string;
  row: EndpointInfo;
  /** Units counted by unit pricing (names of a batch); 1 otherwise. */
  units: number;
  /** Whole credits. */
  cost: bigint;
  /** A conditional request (`ifNoneMatch` given): free when answered "not modified", so no balance is required up front. */
  conditional: boolean;
  /** The field's arguments (a subscription's `since` is checked before its rate limit: live/live-billing.ts). */
  args: Record<string, unknown>;
}

/**
 * One occurrence of a metered edge in an operation (a nested field that reaches priced data from anywhere:
 * data/endpoints.json `graphql_fields` entries `Type.field`, see METERED_EDGES). Charged per delivered instance.
 */
export interface MeteredEdge {
  /** `Type.field`. */
  coordinate: string;
  row: EndpointInfo;
  /** Response keys from the root field down to the edge (lists are crossed without an index). */
  path: string[];
  /** Units of one delivered instance (unit-priced rows: the names it stands for); 1 otherwise. */
  units: number;
}

/** What the operation about to run needs from metering. */
export interface MeteringPlan {
  /** Catalogue rows of the metered root fields and edges, each once (for the credential and the rate limits). */
  rows: EndpointInfo[];
  /** Metered root fields whose arguments pass the shared rules. */
  fields: MeteredField[];
  /** Metered edges below the root fields (none in a REST route's document). */
  edges: MeteredEdge[];
  /** Argument problems of metered fields (422 after the credential check). */
  problems: ValidationDetail[];
  /** True for a mutation: every mutation root field needs a machine service token. */
  mutation: boolean;
}

/** Mutation root fields an API key may call (catalogue rows of role `user` that are not GETs: createAlert, deleteAlert). */
const USER_MUTATIONS = new Set(ENDPOINTS.filter((e) => e.method !== 'GET' && e.roles.includes('user')).flatMap((e) => e.graphqlFields.filter((f) => !f.includes('.'))));

/** Catalogue rows by the GraphQL root field tied to them; only rows with a cost or a rate limit meter. */
/**
 * Argument rules of the metered GraphQL root fields, checked by this plugin before rate limits and billing: each
 * REST operation's root field takes `argsRule` of its parameters (src/operations/, the typed twin of the rules a REST
 * route reads its parameters with, so metering then trusts a route's variables), and `item` (billed as GET /prices)
 * its own. The only check of those arguments: the fields carry no Pothos `validate` of their own, which could never
 * refuse anything metering had let through and, wrapping the resolver, cost a measurable share of a GET /prices's
 * CPU. `test/unit/metered-args.test.ts` holds every metered root field to having a rule here.
 */
export const meteredFieldArgs: Readonly<Record<string, z.ZodType>> = {
  item: itemArgs,
  ...Object.fromEntries(
    OPERATIONS.filter((op) => {
      const row = ENDPOINTS.find((e) => e.operationId === op.id);
      return op.path.length === 1 && row !== undefined && (row.creditCost > 0 || row.rateLimit !== null);
    }).map((op) => [op.path[0]!, operationArgsRule(op)]),
  ),
};

const METERED_BY_FIELD = new Map<string, EndpointInfo>(
  ENDPOINTS.filter((e) => e.creditCost > 0 || e.rateLimit !== null).flatMap((e) => e.graphqlFields.filter((f) => !f.includes('.')).map((f) => [f, e] as const)),
);

/**
 * Metered edges by schema coordinate (`Type.field`, the catalogue's `graphql_fields` entries with a dot): nested
 * fields that reach priced data wherever they are selected, free roots included (`website { quotes }`), so each
 * delivered instance is charged as its row, unless its parent object is the value of a metered root field, whose
 * charge covers the object it returns (`item { routes }` is billed with `item`, as before). docs/graphql.md, Billing.
 */
export const METERED_EDGES = new Map<string, EndpointInfo>(
  ENDPOINTS.filter((e) => e.creditCost > 0 || e.rateLimit !== null).flatMap((e) => e.graphqlFields.filter((f) => f.includes('.')).map((f) => [f, e] as const)),
);

/** Units one delivered instance of an edge stands for, from its arguments (default 1): a quote page, its size. */
const EDGE_UNITS: Record<string, (args: Record<string, unknown>) => number> = { 'Website.quotes': quotesPageSize };

/** Object types from which a metered edge can be selected (its parent type, and types with a path to one), per schema. */
const reachingTypes = new WeakMap<GraphQLSchema, Set<string>>();
function typesReachingEdges(schema: GraphQLSchema): Set<string> {
  let found = reachingTypes.get(schema);
  if (found) return found;
  found = new Set([...METERED_EDGES.keys()].map((c) => c.split('.')[0]!));
  const objects = Object.values(schema.getTypeMap()).filter(isObjectType).filter((t) => !t.name.startsWith('__'));
  for (let grew = true; grew; ) {
    grew = false;
    for (const t of objects) {
      if (found.has(t.name)) continue;
      const reaches = Object.values(t.getFields()).some((f) => {
        const named = getNamedType(f.type);
        return isAbstractType(named) ? schema.getPossibleTypes(named).some((p) => found!.has(p.name)) : found!.has(named.name);
      });
      if (reaches) {
        found.add(t.name);
        grew = true;
      }
    }
  }
  reachingTypes.set(schema, found);
  return found;
}

/** A metered edge found in a document, before its arguments are read (they may be variables). */
interface EdgeSite {
  coordinate: string;
  row: EndpointInfo;
  path: string[];
  node: FieldNode;
  def: GraphQLField<unknown, unknown>;
}

/**
 * The metered edges below `rootFields` (collected root fields of `rootType`): every selected field whose
 * coordinate is a metered edge, except directly on the value of a metered root field. Walks only the selections
 * whose types can reach an edge.
 */
function findEdgeSites(
  schema: GraphQLSchema,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  rootType: GraphQLObjectType,
  rootFields: ReturnType<typeof collectFields>,
): EdgeSite[] {
  const sites: EdgeSite[] = [];
  if (METERED_EDGES.size === 0) return sites;
  const reaching = typesReachingEdges(schema);
  const walk = (type: GraphQLObjectType, nodes: readonly FieldNode[], path: string[], coveredByRoot: boolean) => {
    for (const [key, subNodes] of collectSubfields(schema, fragments, variables, type, nodes)) {
      const name = subNodes[0]!.name.value;
      const def = type.getFields()[name];
      if (!def) continue; // __typename
      const coordinate = `${type.name}.${name}`;
      const row = METERED_EDGES.get(coordinate);
      const at = [...path, key];
      if (row && !coveredByRoot) sites.push({ coordinate, row, path: at, node: subNodes[0]!, def });
      const named = getNamedType(def.type);
      const runtime = isAbstractType(named) ? schema.getPossibleTypes(named) : isObjectType(named) ? [named] : [];
      for (const t of runtime) if (reaching.has(t.name)) walk(t, subNodes, at, false);
    }
  };
  for (const [key, nodes] of rootFields) {
    const def = rootType.getFields()[nodes[0]!.name.value];
    if (!def) continue;
    const named = getNamedType(def.type);
    const runtime = isAbstractType(named) ? schema.getPossibleTypes(named) : isObjectType(named) ? [named] : [];
    for (const t of runtime) if (reaching.has(t.name)) walk(t, nodes, [key], METERED_BY_FIELD.has(def.name));
  }
  return sites;
}

/** The edges of `sites` with their units read from their arguments (a bad argument counts 1: the field then fails and is not charged). */
function edgesOf(sites: readonly EdgeSite[], variables: Record<string, unknown>): MeteredEdge[] {
  return sites.map((s) => {
    const unitsOf = EDGE_UNITS[s.coordinate];
    let units = 1;
    if (unitsOf) {
      try {
        units = unitsOf(getArgumentValues(s.def, s.node, variables));
      } catch {
        units = 1;
      }
    }
    return { coordinate: s.coordinate, row: s.row, path: s.path, units };
  });
}

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** What metering derives from a document alone (see `lookUpOperation`). */
interface OperationLookup {
  operation: OperationDefinitionNode | undefined;
  fragments: Record<string, FragmentDefinitionNode>;
  /** The query's root fields when no `@skip`/`@include` can change them (then they do not depend on the variables). */
  fixedFields: ReturnType<typeof collectFields> | null;
  /** The metered edges of an operation without `@skip`/`@include` (their places do not depend on the variables). */
  fixedEdges: EdgeSite[] | null;
}

const lookups = new WeakMap<DocumentNode, Map<string, OperationLookup>>();

/**
 * The operation `operationName` of `document` (the first one without a name), its fragments and, when the
 * document has no `@skip`/`@include`, its collected root fields; computed once per document and name (a
 * REST route runs the same document object on every request).
 */
function lookUpOperation(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): OperationLookup {
  let byName = lookups.get(document);
  if (!byName) lookups.set(document, (byName = new Map()));
  const key = operationName ?? '';
  const hit = byName.get(key);
  if (hit) return hit;
  let operation: OperationDefinitionNode | undefined;
  const fragments: Record<string, FragmentDefinitionNode> = Object.create(null);
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments[def.name.value] = def;
    else if (def.kind === Kind.OPERATION_DEFINITION && (operationName ? def.name?.value === operationName : operation === undefined)) operation = def;
  }
  let conditional = false;
  visit(document, { Directive: (node) => void ((node.name.value === 'skip' || node.name.value === 'include') && (conditional = true)) });
  const queryType = schema.getQueryType();
  const fixedFields =
    operation && operation.operation === 'query' && queryType && !conditional
      ? collectFields(schema, fragments, Object.create(null), queryType, operation.selectionSet)
      : null;
  const fixedEdges = fixedFields && queryType ? findEdgeSites(schema, fragments, Object.create(null), queryType, fixedFields) : null;
  const found = { operation, fragments, fixedFields, fixedEdges };
  byName.set(key, found);
  return found;
}

/**
 * The metered root fields of the operation about to run, with their units and costs, and the
 * argument problems of those whose arguments break the shared rules (never thrown here: the
 * credential is checked first). Returns null when the variables do not coerce (execution reports
 * that itself, before any resolver).
 */
export function planMeteredFields(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  rawVariables: Record<string, unknown> | null | undefined,
  trusted = false,
): MeteringPlan | null {
  const { operation, fragments, fixedFields, fixedEdges } = lookUpOperation(schema, document, operationName);
  const empty: MeteringPlan = { rows: [], fields: [], edges: [], problems: [], mutation: false };
  if (!operation) return empty;
  // A mutation needs a machine service token, but for the account's own mutations (catalogue rows of role `user`:
  // createAlert, deleteAlert), which are metered as queries are: their rows' credential and rate limits (one point
  // per field, the REST face's POST /alerts and DELETE /alerts/{id} run the same documents); their resolvers check
  // their input (no argument rule here), so a 422 of theirs comes after the rate limit and counts towards it.
  if (operation.operation === 'mutation' && !operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && USER_MUTATIONS.has(s.name.value))) return { ...empty, mutation: true };
  // Queries, subscriptions (live changes: catalogue row subscribePriceChanges) and the account's own mutations meter their root fields alike.
  const rootType = operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!rootType) return empty;
  // A REST route's document (trusted variables) has no metered edge; one that had would take the full path.
  if (trusted && fixedFields && fixedEdges?.length === 0) return trustedPlan(fixedFields, rawVariables ?? {});
  const coerced = coerceVariables(schema, operation, rawVariables);
  if (coerced.errors) return null;
  const fields = fixedFields ?? collectFields(schema, fragments, coerced.coerced, rootType, operation.selectionSet);
  const sites = fixedEdges ?? findEdgeSites(schema, fragments, coerced.coerced, rootType, fields);
  const plan: MeteringPlan = { ...empty, fields: [], edges: edgesOf(sites, coerced.coerced), problems: [] };
  const rows = new Set<EndpointInfo>();
  for (const [responseKey, nodes] of fields) {
    const name = nodes[0]!.name.value;
    const row = METERED_BY_FIELD.get(name);
    if (!row) continue;
    rows.add(row);
    const def = rootType.getFields()[name]!;
    let args: Record<string, unknown>;
    try {
      args = getArgumentValues(def, nodes[0]!, coerced.coerced);
    } catch {
      return null; // a bad literal or missing argument: execution reports it before resolvers run
    }
    const rule = meteredFieldArgs[name];
    const checked = rule?.safeParse(args);
    if (checked && !checked.success) {
      for (const issue of checked.error.issues) {
        plan.problems.push({ location: 'argument', field: issue.path.map(String).join('.'), message: issue.message });
      }
      continue;
    }
    plan.fields.push(meteredField(responseKey, row, args));
  }
  for (const e of plan.edges) rows.add(e.row);
  plan.rows = [...rows];
  return plan;
}

/**
 * The plan of a REST route's fixed document, whose variables the route built and checked with the same
 * rules (src/rest/routes.ts, validation/params.ts): no coercion and no second check; each metered field's
 * arguments are read from the variables its argument nodes name.
 */
function trustedPlan(fields: NonNullable<OperationLookup['fixedFields']>, variables: Record<string, unknown>): MeteringPlan {
  const plan: MeteringPlan = { rows: [], fields: [], edges: [], problems: [], mutation: false };
  for (const [responseKey, nodes] of fields) {
    const row = METERED_BY_FIELD.get(nodes[0]!.name.value);
    if (!row) continue;
    const args: Record<string, unknown> = {};
    for (const a of nodes[0]!.arguments ?? []) if (a.value.kind === Kind.VARIABLE) args[a.name.value] = variables[a.value.name.value];
    if (!plan.rows.includes(row)) plan.rows.push(row);
    plan.fields.push(meteredField(responseKey, row, args));
  }
  return plan;
}

/** A metered field with its units (names of a batch, else 1), cost and whether it is conditional (`ifNoneMatch` given). */
function meteredField(responseKey: string, row: EndpointInfo, args: Record<string, unknown>): MeteredField {
  const list = row.unitPricing ? args[camel(row.unitPricing.unitsBodyField)] : undefined;
  const units = Array.isArray(list) ? list.length : 1;
  const conditional = args.ifNoneMatch !== null && args.ifNoneMatch !== undefined;
  return { responseKey, row, units, cost: operationCost(row, units), conditional, args };
}

