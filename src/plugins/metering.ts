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
 * - REST: an execution with any error is answered with the error envelope, which carries no data
 *   (`restSendsData`, the same test `runRoute` of src/rest/facade.ts makes), so it is never charged; an answer
 *   that sends data always is.
 * - When the charge cannot be taken at the end (concurrent requests spent the balance), the answer is replaced
 *   by 402 `credit_insufficient` and none of the data is sent.
 * Besides: 401/403/422/429 and 5xx refused before execution cost nothing; an export answered "not modified"
 * (`state.waived`, the 304 of GraphQL) costs nothing, whatever the balance, and needs no balance up front
 * (spec: a 304 is never billed); an active subscription makes non-premium operations free; a HEAD request is
 * never billed (it sends no data) and is rate limited, except a HEAD of the export (HEAD_FREE_OF_LIMIT: it only
 * reads the snapshot's headers, from memory, as a 304 does; issue 44, point 4); a streamed REST answer's charge is refunded when the
 * answer is not delivered whole (src/rest/facade.ts). Order of checks: credential (401/403, also for
 * machine-only mutations), arguments (422), rate limit (429), balance (402). A 402 still counts towards the
 * rate limit; a 422 or 401 does not. A subscription (live changes) is judged on its cursor (410/422) and the
 * account's concurrent slots (429 `too_many_subscriptions`) between the arguments and the rate limit, so those
 * refusals do not count either (services/live-billing.ts `reserve`).
 */
import type { Plugin } from 'graphql-yoga';
import { Kind, visit, type DocumentNode, type ExecutionResult, type FragmentDefinitionNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { collectFields } from 'graphql/execution/collectFields.js';
import { getArgumentValues } from 'graphql/execution/values.js';
import { coerceVariables } from './variables.js';
import { ENDPOINTS, type EndpointInfo } from '../catalogue/endpoints.js';
import { meteredFieldArgs } from '../validation/params.js';
import { ServiceError, validationError, type ValidationDetail } from '../lib/errors.js';
import { toGraphQLError } from '../graphql/errors.js';
import { availableCredits, chargeCredits, creditInsufficient, isBillable, operationCost, remainingCredits, type Charge } from '../services/billing.js';
import type { Context } from '../graphql/context.js';
import type { UserCaller } from '../services/accounts.js';
import type { RateLimiter } from './rate-limiter.js';
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
  /** The field's arguments (a subscription's `since` is checked before its rate limit: services/live-billing.ts). */
  args: Record<string, unknown>;
}

/** What the operation about to run needs from metering. */
export interface MeteringPlan {
  /** Catalogue rows of the metered root fields, each once (for the credential and the rate limits). */
  rows: EndpointInfo[];
  /** Metered root fields whose arguments pass the shared rules. */
  fields: MeteredField[];
  /** Argument problems of metered fields (422 after the credential check). */
  problems: ValidationDetail[];
  /** True for a mutation: every mutation root field needs a machine service token. */
  mutation: boolean;
}

/** Catalogue rows by the GraphQL root field tied to them; only rows with a cost or a rate limit meter. */
const METERED_BY_FIELD = new Map<string, EndpointInfo>(
  ENDPOINTS.filter((e) => e.creditCost > 0 || e.rateLimit !== null).flatMap((e) => e.graphqlFields.map((f) => [f, e] as const)),
);

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** What metering derives from a document alone (see `lookUpOperation`). */
interface OperationLookup {
  operation: OperationDefinitionNode | undefined;
  fragments: Record<string, FragmentDefinitionNode>;
  /** The query's root fields when no `@skip`/`@include` can change them (then they do not depend on the variables). */
  fixedFields: ReturnType<typeof collectFields> | null;
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
  const found = { operation, fragments, fixedFields };
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
  const { operation, fragments, fixedFields } = lookUpOperation(schema, document, operationName);
  const empty: MeteringPlan = { rows: [], fields: [], problems: [], mutation: false };
  if (!operation) return empty;
  if (operation.operation === 'mutation') return { ...empty, mutation: true };
  // Queries and subscriptions (live changes: catalogue row subscribePriceChanges) meter their root fields alike.
  const rootType = operation.operation === 'query' ? schema.getQueryType() : schema.getSubscriptionType();
  if (!rootType) return empty;
  if (trusted && fixedFields) return trustedPlan(fixedFields, rawVariables ?? {});
  const coerced = coerceVariables(schema, operation, rawVariables);
  if (coerced.errors) return null;
  const fields = fixedFields ?? collectFields(schema, fragments, coerced.coerced, rootType, operation.selectionSet);
  const plan: MeteringPlan = { ...empty, fields: [], problems: [] };
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
  plan.rows = [...rows];
  return plan;
}

/**
 * The plan of a REST route's fixed document, whose variables the route built and checked with the same
 * rules (src/rest/routes.ts, validation/params.ts): no coercion and no second check; each metered field's
 * arguments are read from the variables its argument nodes name.
 */
function trustedPlan(fields: NonNullable<OperationLookup['fixedFields']>, variables: Record<string, unknown>): MeteringPlan {
  const plan: MeteringPlan = { rows: [], fields: [], problems: [], mutation: false };
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
 * the answer holds (errors inside the field included). REST (`rest`): the same, and the answer is not the error
 * envelope. Constant time: the root value and, on REST, the error count; the result is never walked.
 */
export function deliversField(result: ExecutionResult, responseKey: string, rest: boolean): boolean {
  const data = result.data as Record<string, unknown> | null | undefined;
  if (data === null || data === undefined) return false;
  const value = data[responseKey];
  if (value === null || value === undefined) return false;
  return !rest || restSendsData(result);
}

/** What passed admission: the caller, its billable fields and the balance it was judged against. */
interface Admitted {
  caller: UserCaller;
  billable: MeteredField[];
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
    if (ctx.state.head && HEAD_FREE_OF_LIMIT.has(row.operationId)) continue;
    const points = plan.fields.filter((f) => f.row === row).length;
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
  const billable = ctx.state.head ? [] : plan.fields.filter((f) => isBillable(caller, f.row, f.cost));
  const required = billable.filter((f) => !f.conditional).reduce((sum, f) => sum + f.cost, 0n);
  const remaining = remainingCredits(caller.creditsTotal, caller.creditsUsed);
  if (required > remaining) throw creditInsufficient(required, remaining);
  return { caller, billable, remaining };
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
    // A subscription is admitted like a query; what it costs while open is charged by services/live-billing.ts.
    async onSubscribe({ args, setResultAndStopExecution }) {
      const ctx = args.contextValue as Context;
      if (ctx.state.eventStream !== true) {
        // Nothing could carry its events (a JSON request): refused before anything starts or is charged.
        return setResultAndStopExecution({
          errors: [
            toGraphQLError(
              new ServiceError('not_acceptable', 406, 'A subscription streams its events: send Accept: text/event-stream (or use graphql-ws on /graphql, or GET /prices/changes/stream).'),
            ),
          ],
        });
      }
      const plan = planMeteredFields(args.schema, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined, ctx.state.trustedVariables === true);
      if (!plan || plan.rows.length === 0) return;
      try {
        const caller = await admitCaller(ctx, plan);
        // A subscription that will start (not a HEAD) is judged on its cursor and the account's concurrent slots
        // before its rate limit: a refusal there (410, 422, 429 too_many_subscriptions) spends no rate-limit point.
        const field = plan.fields[0];
        const reservation = ctx.live && !ctx.state.head && field ? await ctx.live.meter.reserve(caller.accountId, sinceOf(field)) : undefined;
        try {
          await admitLimits(ctx, plan, limiter, caller);
        } catch (e) {
          if (reservation) await ctx.live!.meter.release(reservation);
          throw e;
        }
        ctx.state.liveReservation = reservation;
      } catch (e) {
        if (e instanceof ServiceError) return setResultAndStopExecution({ errors: [toGraphQLError(e)] });
        throw e;
      }
    },
    // Synchronous when there is nothing to meter: no promise, so envelop runs the hooks after it without a microtask each.
    onExecute({ args, setResultAndStopExecution }) {
      const ctx = args.contextValue as Context;
      const plan = planMeteredFields(args.schema, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined, ctx.state.trustedVariables === true);
      if (!plan || (!plan.mutation && plan.rows.length === 0)) return;
      return meter(ctx, plan, setResultAndStopExecution);
    },
  };

  /** Metering of one operation with metered fields, or a mutation (its credential): see the module doc. */
  async function meter(ctx: Context, plan: MeteringPlan, setResultAndStopExecution: (result: ExecutionResult) => void): Promise<ExecuteHookResult> {
    const stop = (error: ServiceError) => setResultAndStopExecution({ errors: [toGraphQLError(error)] });
    try {
      // Credential first, on every operation: mutations need a service token before their arguments are judged.
      if (plan.mutation) {
        await ctx.requireMachine();
        return;
      }
      const { caller, billable, remaining } = await admit(ctx, plan, limiter);
      return {
        // Synchronous when nothing is charged (a subscription, a free answer): envelop then runs the hooks after it
        // without a promise; a charge returns the promise of chargeThenSettle.
        onExecuteDone({ result, setResult }) {
          if (!('data' in result) && !('errors' in result)) return; // streamed results are not metered here
          const r = result as ExecutionResult;
          const rest = ctx.state.restRoute === true;
          const waived = ctx.state.waived;
          const charged = billable.filter((f) => deliversField(r, f.responseKey, rest) && waived?.has(f.responseKey) !== true);
          const cost = charged.length === 1 ? charged[0]!.cost : charged.reduce((sum, f) => sum + f.cost, 0n);
          if (cost === 0n) return settle(ctx, r, setResult, 0n, remaining);
          const charge = chargeOf(ctx, caller, charged, cost);
          // From this replica's lease at once when it covers the charge: no promise, so envelop runs the hooks after
          // this one synchronously too. The export's charge and a streamed answer's (a heavy REST batch) can be
          // refunded when not delivered whole (their ledger row is named), so they never come from a lease.
          const direct = ctx.state.streamedAnswer === true || charged.some((f) => f.row.operationId === 'exportPrices');
          const spent = ctx.leases && !direct ? ctx.leases.spendHeld(charge) : undefined;
          if (spent !== undefined) return settleCharged(ctx, caller, r, setResult, charge, spent);
          return chargeThenSettle(ctx, caller, remaining, r, setResult, charge, direct);
        },
      };
    } catch (e) {
      if (e instanceof ServiceError) return stop(e);
      throw e;
    }
  }
}

/** The answer's billing in `state.billing` and, for /graphql, in `extensions`: `cost` credits charged (0: not billable), `after` left. */
function settle(ctx: Context, r: ExecutionResult, setResult: (result: ExecutionResult) => void, cost: bigint, after: bigint, charge?: Charge): void {
  ctx.state.billing = { billable: cost > 0n, cost, remaining: after, ...(charge ? { charge } : {}) };
  if (ctx.state.restRoute === true) return; // a REST answer reports its billing in meta, from state.billing
  setResult({
    ...r,
    extensions: {
      ...r.extensions,
      billing: cost > 0n ? { billable: true, credit: { cost: Number(cost), remaining: Number(after) } } : { billable: false },
    },
  });
}

/** The ledger charge of `cost` credits for the `charged` fields of `caller` (their operation ids joined by commas). */
function chargeOf(ctx: Context, caller: UserCaller, charged: MeteredField[], cost: bigint): Charge {
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
  settleCharged(ctx, caller, r, setResult, charge, left);
}

/** After `charge` was taken, with `left` credits still available: the caller cache, the metric and the answer's billing. */
function settleCharged(ctx: Context, caller: UserCaller, r: ExecutionResult, setResult: (result: ExecutionResult) => void, charge: Charge, left: bigint): void {
  ctx.callers?.charged(caller.accountId, caller.creditsTotal - left);
  creditsCharged.inc({ operation: charge.operationId }, Number(charge.cost));
  settle(ctx, r, setResult, charge.cost, left, charge);
}
