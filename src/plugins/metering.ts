/**
 * Metering, one envelop plugin for both faces (a REST route runs its document through the same
 * `execute`): before any resolver runs it finds the operation's metered root fields (catalogue rows
 * with a credit cost or a rate limit, via `graphqlFields`), checks their arguments, authenticates
 * the caller, consumes the account's rate limits (429 `rate_limited` with Retry-After) and checks the
 * balance (402 `credit_insufficient`); after execution it charges the fields whose data the answer carries.
 *
 * The billing rule (README, Billing; docs/reliability.md; issue 41 point 1): **a metered root field is charged
 * its full cost whenever any of its priced data leaves the service, and when it is not charged none of its data
 * is sent.** Decided in one place, `deliversField`, once per metered field (never a walk of the result):
 * - GraphQL: a field whose value in `data` is not null is charged, errors inside it included (a partial answer,
 *   such as quotes whose `converted(currency: "ZZZ")` failed, is data). A field whose value is null or absent (it
 *   failed at its root, or the item is unknown) is free. Errors elsewhere in the operation never waive a field,
 *   and one field's failure never makes another free or dearer.
 * - REST: a route's document (`isRouteDocument`, src/plugins/safety.ts) answers all or nothing: an execution with
 *   any error is answered with the error envelope, which carries no data (`restSendsData`, the same test `runRoute`
 *   of src/rest/facade.ts makes), so it is never charged; an answer that sends data always is.
 * - When the charge cannot be taken at the end (concurrent requests spent the balance), the answer is replaced
 *   by 402 `credit_insufficient` and none of the data is sent.
 * - Metered edges (nested fields that reach priced data from anywhere, free roots included: `Website.quotes`,
 *   `MarketQuote.item`, `Item.routes`/`Item.history` below a quote; docs/graphql.md) are charged per value the answer
 *   carries (`deliveredInstances`, `edgeCost`), except directly on a metered root field's value, which that root
 *   covers. Admission asks for one value's credits per edge and counts one rate-limit point per edge selection; a
 *   subscription may not select one (422).
 * Besides: 401/403/422/429 and 5xx refused before execution cost nothing; an export answered "not modified"
 * (`state.waived`, the 304 of GraphQL) costs nothing, whatever the balance, and needs no balance up front
 * (spec: a 304 is never billed); an active subscription makes non-premium operations free; an answer whose body is
 * not sent (`state.delivery.body` false: a HEAD) is never billed (it sends no data) and is rate limited, except a HEAD of the export (HEAD_FREE_OF_LIMIT: it only
 * reads the snapshot's headers, from memory, as a 304 does; issue 44, point 4); the charge of an answer written as it
 * is made (`state.delivery.deferred`) is refunded when the answer is not delivered whole (src/rest/facade.ts). Order of checks: credential (401/403, also for
 * machine-only mutations), arguments (422), rate limit (429), balance (402). A 402 still counts towards the
 * rate limit; a 422 or 401 does not (but a 422 of the account's own mutations, createAlert and deleteAlert, whose
 * resolvers check their input after metering: a REST body refused for its shape still costs nothing, as it is checked
 * before the operation runs). A subscription (live changes) is judged on its cursor (410/422) and the
 * account's concurrent slots (429 `too_many_subscriptions`) between the arguments and the rate limit, so those
 * refusals do not count either (live/live-billing.ts `reserve`).
 */
import type { Plugin } from 'graphql-yoga';
import {
  getNamedType,
  isAbstractType,
  isObjectType,
  Kind,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { collectFields, collectSubfields } from 'graphql/execution/collectFields.js';
import { getArgumentValues } from 'graphql/execution/values.js';
import { coerceVariables } from './variables.js';
import { ENDPOINTS, type EndpointInfo } from '../catalogue/endpoints.js';
import { itemArgs, quotesPageSize } from '../validation/params.js';
import { OPERATIONS } from '../operations/index.js';
import { operationArgsRule } from '../operations/operation.js';
import type { z } from 'zod';
import { ServiceError, validationError, type ValidationDetail } from '../lib/errors.js';
import { toGraphQLError } from '../graphql/errors.js';
import { isRouteDocument } from './safety.js';
import { availableCredits, chargeCredits, creditInsufficient, isBillable, operationCost, remainingCredits, type Charge } from '../accounts/billing.js';
import type { Context } from '../graphql/context.js';
import type { UserCaller } from '../accounts/accounts.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { creditsCharged, rateLimitRejections } from '../lib/metrics.js';

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

/**
 * Whether the REST face sends the data of an execution's result: any error makes the answer the error envelope
 * (src/rest/facade.ts `runRoute`), which carries none. The one test both the facade and the billing rule use.
 */
export function restSendsData(result: ExecutionResult): boolean {
  return result.errors === undefined || result.errors.length === 0;
}

/**
 * The billing rule (see the module doc): true when the answer made of `result` carries the data of the metered
 * root field `responseKey`, which is then charged. GraphQL: its value is in `data` and not null, whatever errors
 * the answer holds (errors inside the field included). An all-or-nothing answer (`allOrNothing`: a REST route's
 * document): the same, and the answer is not the error envelope (no error at all).
 * envelope. Constant time: the root value and, on REST, the error count; the result is never walked.
 */
export function deliversField(result: ExecutionResult, responseKey: string, allOrNothing: boolean): boolean {
  const data = result.data as Record<string, unknown> | null | undefined;
  if (data === null || data === undefined) return false;
  const value = data[responseKey];
  if (value === null || value === undefined) return false;
  return !allOrNothing || restSendsData(result);
}

/**
 * Instances of the value at `path` in `data` that are not null (lists on the way crossed: the edge's value under each
 * element counts once; the edge's own value counts once, a list too), the delivered instances of a metered edge. `allOrNothing` (a REST route's document): an answer with errors sends no data (restSendsData).
 */
export function deliveredInstances(result: ExecutionResult, path: readonly string[], allOrNothing: boolean): number {
  if (allOrNothing && !restSendsData(result)) return 0;
  const count = (value: unknown, i: number): number => {
    if (value === null || value === undefined) return 0;
    if (i === path.length) return 1; // the edge's own value (a list too: one instance)
    if (Array.isArray(value)) {
      let n = 0;
      for (const v of value) n += count(v, i);
      return n;
    }
    return typeof value === 'object' ? count((value as Record<string, unknown>)[path[i]!], i + 1) : 0;
  };
  return count(result.data, 0);
}

/**
 * The credits `instances` delivered instances of `edge` cost: a unit-priced row charges their units together (1 credit
 * per started block: 100 quotes' page and 100 items are one POST /prices/batch of 100 names each), any other row its
 * cost per instance. 0 for none.
 */
export function edgeCost(edge: MeteredEdge, instances: number): bigint {
  if (instances === 0) return 0n;
  return edge.row.unitPricing ? operationCost(edge.row, edge.units * instances) : operationCost(edge.row) * BigInt(instances);
}

/** What passed admission: the caller, its billable fields and edges and the balance it was judged against. */
interface Admitted {
  caller: UserCaller;
  billable: MeteredField[];
  billableEdges: MeteredEdge[];
  remaining: bigint;
}

/**
 * The checks before any resolver, in order (see the module doc): credential of every metered row, argument
 * rules (422), rate limits (429, one point per metered field: aliases count as separate requests), balance (402;
 * a conditional field is judged after it answered). Throws the refusal as a ServiceError.
 */
async function admit(ctx: Context, plan: MeteringPlan, limiter: RateLimiter): Promise<Admitted> {
  return admitLimits(ctx, plan, limiter, await admitCaller(ctx, plan));
}

/** The first checks of `admit`: the credential of every metered row (401/403), then the argument rules (422). */
async function admitCaller(ctx: Context, plan: MeteringPlan): Promise<UserCaller> {
  let caller!: UserCaller;
  for (const row of plan.rows) caller = ctx.userNow(row.operationId) ?? (await ctx.requireUser(row.operationId)); // a cached key: no promise
  if (plan.problems.length > 0) throw validationError(plan.problems);
  return caller;
}

/**
 * The operations whose HEAD requests spend no rate-limit point (issue 44, point 4): a HEAD of the export answers
 * the current snapshot's headers (ETag, Content-Length, X-Export-Generated-At) from the replica's snapshot cache,
 * sends no file and is never billed, so a client may ask whether a new file is out as often as it likes and keep
 * its 2 downloads a minute for the files. Every other HEAD costs the work of its GET and counts like it.
 */
export const HEAD_FREE_OF_LIMIT: ReadonlySet<string> = new Set(['exportPrices']);

/** The last checks of `admit`, for `caller`: rate limits (429; not for a HEAD of a HEAD_FREE_OF_LIMIT row), then the balance (402). */
async function admitLimits(ctx: Context, plan: MeteringPlan, limiter: RateLimiter, caller: UserCaller): Promise<Admitted> {
  for (const row of plan.rows) {
    if (!ctx.state.delivery.body && HEAD_FREE_OF_LIMIT.has(row.operationId)) continue;
    // One point per metered root field and per metered edge of the document (an alias counts as another request).
    const points = plan.fields.filter((f) => f.row === row).length + plan.edges.filter((e) => e.row === row).length;
    const outcome = await limiter.consume(caller.accountId, row, points);
    if (!outcome) continue;
    ctx.state.rateLimits.push({ policy: outcome.policy, limit: outcome.limit, windowSeconds: outcome.windowSeconds, remaining: outcome.remaining, resetSeconds: outcome.resetSeconds });
    if (!outcome.allowed) {
      rateLimitRejections.inc({ operation: row.operationId });
      throw new ServiceError(
        'rate_limited',
        429,
        `Too many ${row.method} ${row.path} requests: at most ${outcome.limit} per ${outcome.windowSeconds} s per account. Retry in ${outcome.resetSeconds} s.`,
        { limit: outcome.limit, window_seconds: outcome.windowSeconds, retry_after_seconds: outcome.resetSeconds },
        { 'Retry-After': String(outcome.resetSeconds) },
      );
    }
  }
  const sent = ctx.state.delivery.body;
  const billable = !sent ? [] : plan.fields.filter((f) => isBillable(caller, f.row, f.cost));
  // An edge needs the cost of one instance up front; what it delivers is charged after execution (402 then, and no data, when it is more than is left).
  const billableEdges = !sent ? [] : plan.edges.filter((e) => isBillable(caller, e.row, edgeCost(e, 1)));
  const required = billable.filter((f) => !f.conditional).reduce((sum, f) => sum + f.cost, 0n) + billableEdges.reduce((sum, e) => sum + edgeCost(e, 1), 0n);
  const remaining = remainingCredits(caller.creditsTotal, caller.creditsUsed);
  if (required > remaining) throw creditInsufficient(required, remaining);
  return { caller, billable, billableEdges, remaining };
}

/** The `since` argument of a subscription field (a change cursor the argument rules passed), or null. */
function sinceOf(field: MeteredField): bigint | null {
  const since = field.args.since;
  return typeof since === 'string' ? BigInt(since) : null;
}

/** What an envelop onExecute hook may return (its onExecuteDone). */
type ExecuteHookResult = Awaited<ReturnType<NonNullable<Plugin<Context>['onExecute']>>>;

/** The metering plugin; `limiter` is shared by every request of this replica. */
export function useMetering(limiter: RateLimiter): Plugin<Context> {
  return {
    // A subscription is admitted like a query; what it costs while open is charged by live/live-billing.ts.
    async onSubscribe({ args, setResultAndStopExecution }) {
      const ctx = args.contextValue as Context;
      const plan = planMeteredFields(args.schema, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined, isRouteDocument(args.document));
      if (!plan || plan.rows.length === 0) return;
      try {
        const caller = await admitCaller(ctx, plan);
        // A metered edge would send its priced data with every event, under the subscription's per-minute charge.
        if (plan.edges.length > 0) {
          throw validationError(
            plan.edges.map((e) => ({ location: 'body' as const, field: e.path.join('.'), message: `${e.coordinate} cannot be selected in a subscription (its data is charged per request): query it instead` })),
          );
        }
        // A subscription that will start (not a HEAD) is judged on its cursor and the account's concurrent slots
        // before its rate limit: a refusal there (410, 422, 429 too_many_subscriptions) spends no rate-limit point.
        const field = plan.fields[0];
        const reservation = ctx.live && ctx.state.delivery.body && field ? await ctx.live.meter.reserve(caller.accountId, sinceOf(field)) : undefined;
        try {
          await admitLimits(ctx, plan, limiter, caller);
        } catch (e) {
          if (reservation) await ctx.live!.meter.release(reservation);
          throw e;
        }
        // Its events would never be sent (a HEAD): admitted, counted, not started.
        if (!ctx.state.delivery.body) return setResultAndStopExecution({ data: null });
        ctx.state.liveReservation = reservation;
      } catch (e) {
        if (e instanceof ServiceError) return setResultAndStopExecution({ errors: [toGraphQLError(e)] });
        throw e;
      }
    },
    // Synchronous when there is nothing to meter: no promise, so envelop runs the hooks after it without a microtask each.
    onExecute({ args, setResultAndStopExecution }) {
      const ctx = args.contextValue as Context;
      const route = isRouteDocument(args.document);
      const plan = planMeteredFields(args.schema, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined, route);
      if (!plan || (!plan.mutation && plan.rows.length === 0)) return;
      return meter(ctx, plan, route, setResultAndStopExecution);
    },
  };

  /**
   * Metering of one operation with metered fields, or a mutation (its credential): see the module doc. `route`: the
   * operation is a REST route's document (all-or-nothing answer, billing reported in its `meta`, not `extensions`).
   */
  async function meter(ctx: Context, plan: MeteringPlan, route: boolean, setResultAndStopExecution: (result: ExecutionResult) => void): Promise<ExecuteHookResult> {
    const stop = (error: ServiceError) => setResultAndStopExecution({ errors: [toGraphQLError(error)] });
    try {
      // Credential first, on every operation: mutations need a service token before their arguments are judged.
      if (plan.mutation) {
        await ctx.requireMachine();
        return;
      }
      const { caller, billable, billableEdges, remaining } = await admit(ctx, plan, limiter);
      return {
        // Synchronous when nothing is charged (a subscription, a free answer): envelop then runs the hooks after it
        // without a promise; a charge returns the promise of chargeThenSettle.
        onExecuteDone({ result, setResult }) {
          if (!('data' in result) && !('errors' in result)) return; // streamed results are not metered here
          const r = result as ExecutionResult;
          const waived = ctx.state.waived;
          const charged: { row: EndpointInfo; cost: bigint }[] = billable.filter((f) => deliversField(r, f.responseKey, route) && waived?.has(f.responseKey) !== true);
          for (const e of billableEdges) {
            const cost = edgeCost(e, deliveredInstances(r, e.path, route));
            if (cost > 0n) charged.push({ row: e.row, cost });
          }
          const cost = charged.length === 1 ? charged[0]!.cost : charged.reduce((sum, f) => sum + f.cost, 0n);
          if (cost === 0n) return settle(ctx, route, r, setResult, 0n, remaining);
          const charge = chargeOf(ctx, caller, charged, cost);
          // From this replica's lease at once when it covers the charge: no promise, so envelop runs the hooks after
          // this one synchronously too. The export's charge and that of an answer written as it is made can be
          // refunded when not delivered whole (their ledger row is named), so they never come from a lease.
          const direct = ctx.state.delivery.deferred || charged.some((f) => f.row.operationId === 'exportPrices');
          const spent = ctx.leases && !direct ? ctx.leases.spendHeld(charge) : undefined;
          if (spent !== undefined) return settleCharged(ctx, route, caller, r, setResult, charge, spent);
          return chargeThenSettle(ctx, route, caller, remaining, r, setResult, charge, direct);
        },
      };
    } catch (e) {
      if (e instanceof ServiceError) return stop(e);
      throw e;
    }
  }
}

/**
 * The answer's billing in `state.billing` and, but for a REST route's document (`route`: its answer reports it in
 * `meta`, from state.billing), in `extensions`: `cost` credits charged (0: not billable), `after` left.
 */
function settle(ctx: Context, route: boolean, r: ExecutionResult, setResult: (result: ExecutionResult) => void, cost: bigint, after: bigint, charge?: Charge): void {
  ctx.state.billing = { billable: cost > 0n, cost, remaining: after, ...(charge ? { charge } : {}) };
  if (route) return;
  setResult({
    ...r,
    extensions: {
      ...r.extensions,
      billing: cost > 0n ? { billable: true, credit: { cost: Number(cost), remaining: Number(after) } } : { billable: false },
    },
  });
}

/** The ledger charge of `cost` credits for the `charged` fields and edges of `caller` (their operation ids joined by commas). */
function chargeOf(ctx: Context, caller: UserCaller, charged: readonly { row: EndpointInfo }[], cost: bigint): Charge {
  const operationId = charged.length === 1 ? charged[0]!.row.operationId : [...new Set(charged.map((f) => f.row.operationId))].join(',');
  return { accountId: caller.accountId, keyId: caller.keyId, operationId, requestId: ctx.requestId, cost };
}

/**
 * Takes `charge` (from a lease, or one statement when `direct` or none covers it) of `caller`, who had `remaining`
 * credits at admission, then settles. A refused charge (the cached balance was stale) answers 402
 * `credit_insufficient` with the balance read again.
 */
async function chargeThenSettle(
  ctx: Context,
  route: boolean,
  caller: UserCaller,
  remaining: bigint,
  r: ExecutionResult,
  setResult: (result: ExecutionResult) => void,
  charge: Charge,
  direct: boolean,
): Promise<void> {
  const left = ctx.leases ? await ctx.leases.charge(charge, remaining, direct) : await chargeCredits(ctx.db, charge);
  if (left === null) {
    ctx.callers?.forgetAccount(caller.accountId); // the cached balance was stale
    ctx.state.billing = null;
    setResult({ errors: [toGraphQLError(creditInsufficient(charge.cost, await availableCredits(ctx.db, caller.accountId)))] });
    return;
  }
  settleCharged(ctx, route, caller, r, setResult, charge, left);
}

/** After `charge` was taken, with `left` credits still available: the caller cache, the metric and the answer's billing. */
function settleCharged(ctx: Context, route: boolean, caller: UserCaller, r: ExecutionResult, setResult: (result: ExecutionResult) => void, charge: Charge, left: bigint): void {
  ctx.callers?.charged(caller.accountId, caller.creditsTotal - left);
  creditsCharged.inc({ operation: charge.operationId }, Number(charge.cost));
  settle(ctx, route, r, setResult, charge.cost, left, charge);
}
