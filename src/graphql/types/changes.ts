/**
 * The change feed in GraphQL (issue: live, point 2; src/quotes/changes.ts): the root field `priceChanges`,
 * which is GET /prices/changes (catalogue row `getPriceChanges`: billed and rate limited like every row).
 */
import { builder, listComplexity } from '../builder.js';
import { paramArgs } from '../args.js';
import getPriceChangesOp from '../../operations/get-price-changes.js';
import { MAX_CHANGES_PAGE, readChanges, type Change, type ChangePage } from '../../quotes/changes.js';
import { quoteText } from '../../quotes/quotes.js';
import { RawJson } from '../../lib/raw-json.js';
import { MarketQuoteRef } from './quotes.js';

interface PageShape extends ChangePage {
  appId: string;
}

export const ChangeRef = builder.objectRef<Change>('PriceChange').implement({
  description: 'One changed (item, market, side) with its quote as served now (REST: ChangeOut).',
  fields: (t) => ({
    seq: t.string({ description: 'Its change sequence number (decimal string).', resolve: (c) => c.seq.toString() }),
    marketHashName: t.exposeString('marketHashName'),
    marketCode: t.exposeString('marketCode'),
    side: t.exposeString('side', { description: 'ask, bid, or mid (the CSCP valuation was published).' }),
    quote: t.expose('quote', { type: MarketQuoteRef, nullable: true, description: 'The quote as served now; null when none is served any more.' }),
    quoteJson: t.field({
      type: 'QuotesJSON',
      nullable: true,
      description: 'The same quote in the REST shape (MarketQuoteOut), as one JSON value.',
      resolve: (c) => (c.quote === null ? null : new RawJson(quoteText(c.quote))),
    }),
  }),
});

const ChangePageRef = builder.objectRef<PageShape>('PriceChanges').implement({
  description: 'One page of the change feed (REST: PriceChangesOut).',
  fields: (t) => ({
    appId: t.exposeString('appId'),
    since: t.string({ resolve: (p) => p.since.toString() }),
    nextCursor: t.string({ description: 'Pass as `since` for the next page.', resolve: (p) => p.nextCursor.toString() }),
    hasMore: t.exposeBoolean('hasMore', {
      description: 'True when more changes follow nextCursor, or may: a page reads at most 100,000 changes of the sequence, so it can hold fewer than `limit` (even none). Ask again at once.',
    }),
    changes: t.field({ type: [ChangeRef], extensions: listComplexity(MAX_CHANGES_PAGE), resolve: (p) => p.changes }),
  }),
});

builder.queryFields((t) => ({
  priceChanges: t.field({
    type: ChangePageRef,
    description:
      "The quotes that changed after a cursor, in order (REST: GET /prices/changes; needs an API key; billed and rate limited as its catalogue row). Start from an export's changeSeq, or without `since` to get the current cursor. Error `cursor_expired` (410) for a cursor older than the kept 24 h: download the export again.",
    args: paramArgs(t.arg, getPriceChangesOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('getPriceChanges');
      const page = await readChanges(ctx.db, {
        appId: args.appId,
        since: args.since === null || args.since === undefined ? null : BigInt(args.since),
        markets: args.markets ?? null,
        side: args.side,
        limit: args.limit,
      });
      return { ...page, appId: args.appId };
    },
  }),
}));
