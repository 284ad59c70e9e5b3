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
 *
 * Its parts: `metering/plan.ts` finds what an operation meters, `metering/admission.ts` judges it before any resolver,
 * `metering/billing-rule.ts` says what of the answer is charged; this plugin runs them and takes the charge.
 */
import type { Plugin } from 'graphql-yoga';
import type { ExecutionResult } from 'graphql';
import type { EndpointInfo } from '../catalogue/endpoints.js';
import { ServiceError, validationError } from '../lib/errors.js';
import { toGraphQLError } from '../graphql/errors.js';
import { isRouteDocument } from './safety.js';
import { availableCredits, chargeCredits, creditInsufficient, type Charge } from '../accounts/billing.js';
import type { Context } from '../graphql/context.js';
import type { UserCaller } from '../accounts/accounts.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { creditsCharged } from '../lib/metrics.js';
import { planMeteredFields, type MeteringPlan } from './metering/plan.js';
import { deliveredInstances, deliversField, edgeCost, PAID_ON_DELIVERY } from './metering/billing-rule.js';
import { admit, admitCaller, admitLimits, sinceOf } from './metering/admission.js';

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
          // this one synchronously too. A paid-on-delivery operation's charge (the export's) and that of an answer written as it is made can be
          // refunded when not delivered whole (their ledger row is named), so they never come from a lease.
          const direct = ctx.state.delivery.deferred || charged.some((f) => PAID_ON_DELIVERY.has(f.row.operationId));
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
