/**
 * Live changes in GraphQL (issue: live, point 3; src/live/live.ts): the subscriptions `quoteChanged` and
 * `valuationPublished`, over SSE (Yoga's built-in: `Accept: text/event-stream`, graphql-sse distinct
 * connections) and WebSocket (graphql-ws, the app's `/graphql` upgrade). Metered as catalogue row
 * `subscribePriceChanges` (live/live-billing.ts): credential, arguments, rate limit and balance first
 * (plugins/metering.ts), then a concurrent slot and one charge per started minute.
 */
import { builder } from '../builder.js';
import { paramArgs } from '../args.js';
import subscribePriceChangesOp from '../../operations/subscribe-price-changes.js';
import { endpoint } from '../../catalogue/endpoints.js';
import type { LiveEvent, LiveFilter, ValuationPublished } from '../../live/live.js';
import type { Change } from '../../quotes/changes.js';
import { ServiceError } from '../../lib/errors.js';
import type { Context } from '../context.js';
import type { UserCaller } from '../../accounts/accounts.js';
import { ChangeRef } from './changes.js';

const ROW = 'subscribePriceChanges';

const ValuationPublishedRef = builder.objectRef<ValuationPublished>('ValuationPublished').implement({
  description: 'A CSCP valuation run was published: every valued item has a `mid` change in the sequence.',
  fields: (t) => ({
    valuationDate: t.string({ description: 'The valuation date, YYYY-MM-DD.', resolve: (r) => r.valuationDate }),
    computedAt: t.field({ type: 'DateTime', resolve: (r) => r.computedAt }),
    itemCount: t.exposeInt('itemCount'),
    twoSidedCount: t.exposeInt('twoSidedCount'),
    changeSeq: t.string({ description: "The change sequence once the run's changes were read (decimal string).", resolve: (r) => r.changeSeq.toString() }),
  }),
});

/** The event a subscription delivers, or its terminal error thrown as the field's error. */
function unwrap<K extends LiveEvent['kind']>(event: LiveEvent, kind: K): Extract<LiveEvent, { kind: K }> {
  if (event.kind === 'error') throw event.error;
  if (event.kind !== kind) throw new ServiceError('internal', 500, `unexpected live event ${event.kind}`);
  return event as Extract<LiveEvent, { kind: K }>;
}

/** Starts a metered subscription for the caller of `ctx` (see live/live-billing.ts). */
async function start(ctx: Context, filter: LiveFilter | null, since: bigint | null, valuations: boolean): Promise<AsyncIterable<LiveEvent>> {
  if (!ctx.live) throw new ServiceError('dependency_unavailable', 503, 'Live subscriptions are not served by this process.');
  let caller: UserCaller;
  try {
    caller = await ctx.requireUser(ROW);
  } catch (e) {
    // Admitted by the metering plugin, so this does not happen; if it did, the reserved slot goes back.
    if (ctx.state.liveReservation) await ctx.live.meter.release(ctx.state.liveReservation);
    ctx.state.liveReservation = undefined;
    throw e;
  }
  // The slot the metering plugin reserved before the rate limit (live/live-billing.ts `reserve`).
  const reservation = ctx.state.liveReservation;
  ctx.state.liveReservation = undefined;
  const sub = await ctx.live.meter.open({ caller, row: endpoint(ROW), requestId: ctx.requestId, filter, since, valuations }, reservation);
  ctx.state.live = sub; // the REST event stream reads it directly (src/rest/facade.ts)
  return sub;
}

builder.subscriptionType({
  description: 'Live changes (SSE: POST /graphql with Accept: text/event-stream; WebSocket: graphql-ws on /graphql). Metered as subscribePriceChanges.',
});

builder.subscriptionFields((t) => ({
  quoteChanged: t.field({
    type: ChangeRef,
    description:
      'Each change of a quote (price, quantity, listed state; CSCP `mid` when a valuation is published) as it commits, in sequence order, with the quote as served now. With `since` (an export\'s changeSeq or a feed cursor) the changes after it come first, then live ones: none missed, none twice. Ends with error `slow_consumer` when more than 10,000 changes wait undelivered, `credit_insufficient` when a minute can no longer be paid.',
    args: paramArgs(t.arg, subscribePriceChangesOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    subscribe: (_root, args, ctx) =>
      start(
        ctx,
        {
          appId: args.appId,
          names: args.marketHashNames ? new Set(args.marketHashNames) : null,
          markets: args.markets ? new Set(args.markets) : null,
          side: args.side,
        },
        args.since === null || args.since === undefined ? null : BigInt(args.since),
        false,
      ),
    resolve: (event): Change => unwrap(event as LiveEvent, 'change').change,
  }),
  valuationPublished: t.field({
    type: ValuationPublishedRef,
    description: 'Each published CSCP valuation run (about once a day). Metered as subscribePriceChanges.',
    subscribe: (_root, _args, ctx) => start(ctx, null, null, true),
    resolve: (event): ValuationPublished => unwrap(event as LiveEvent, 'valuation').valuation,
  }),
}));
