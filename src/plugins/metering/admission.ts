/**
 * Admission of a metered operation, before any resolver (src/plugins/metering.ts): credential, argument rules, rate
 * limits, balance, in that order.
 */
import { ServiceError, validationError } from '../../lib/errors.js';
import { creditInsufficient, isBillable, remainingCredits } from '../../accounts/billing.js';
import type { Context } from '../../graphql/context.js';
import type { UserCaller } from '../../accounts/accounts.js';
import type { RateLimiter } from '../../limits/rate-limiter.js';
import { rateLimitRejections } from '../../lib/metrics.js';
import type { MeteredEdge, MeteredField, MeteringPlan } from './plan.js';
import { edgeCost, HEAD_FREE_OF_LIMIT } from './billing-rule.js';


/** What passed admission: the caller, its billable fields and edges and the balance it was judged against. */
export interface Admitted {
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
export async function admit(ctx: Context, plan: MeteringPlan, limiter: RateLimiter): Promise<Admitted> {
  return admitLimits(ctx, plan, limiter, await admitCaller(ctx, plan));
}

/** The first checks of `admit`: the credential of every metered row (401/403), then the argument rules (422). */
export async function admitCaller(ctx: Context, plan: MeteringPlan): Promise<UserCaller> {
  let caller!: UserCaller;
  for (const row of plan.rows) caller = ctx.userNow(row.operationId) ?? (await ctx.requireUser(row.operationId)); // a cached key: no promise
  if (plan.problems.length > 0) throw validationError(plan.problems);
  return caller;
}

/** The last checks of `admit`, for `caller`: rate limits (429; not for a HEAD of a HEAD_FREE_OF_LIMIT row), then the balance (402). */
export async function admitLimits(ctx: Context, plan: MeteringPlan, limiter: RateLimiter, caller: UserCaller): Promise<Admitted> {
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
export function sinceOf(field: MeteredField): bigint | null {
  const since = field.args.since;
  return typeof since === 'string' ? BigInt(since) : null;
}
