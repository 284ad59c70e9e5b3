/**
 * The catalogue as a graph (issue 44 point 2; docs/graphql.md): a marketplace's quotes as a Relay cursor
 * connection (`Website.quotes`), and from any quote the item it belongs to (`MarketQuote.item`, with the quote's
 * `appId` and `marketHashName`). GraphQL only: the REST shapes do not change.
 *
 * Both edges reach priced data from anywhere in an operation, free roots (`website`, `websites`) included, so both
 * are metered edges of the catalogue (data/endpoints.json `graphql_fields` "Website.quotes", "MarketQuote.item"; the
 * metering plugin charges each delivered instance, src/plugins/metering.ts). Both read through per-request loaders:
 * every page asked in one tick is one SQL statement, every item one statement per app id (or none, from the
 * replica's quote cache).
 */
import { resolveCursorConnection, type ResolveCursorConnectionArgs } from '@pothos/plugin-relay';
import { builder } from '../builder.js';
import { SideFilterEnum } from '../arg-types.js';
import * as v from '../../validation/params.js';
import { CS2_APP_ID } from '../../collectors/importers.js';
import type { MarketQuote } from '../../quotes/quotes.js';
import { WebsiteRef } from './catalogue.js';
import { ItemRef, MarketQuoteRef, type ItemView } from './quotes.js';

builder.objectFields(WebsiteRef, (t) => ({
  quotes: t.connection(
    {
      type: MarketQuoteRef,
      nullable: true,
      description:
        `The quotes published on this marketplace, one per item and side (the quote GET /prices gives for the item on this market), ` +
        `ordered by item name then side (ask before bid): a Relay cursor connection. Pages of \`first\` (or \`last\`) 1-${v.MAX_QUOTES_PAGE} quotes, default ${v.DEFAULT_QUOTES_PAGE}; ` +
        '`after`/`before` take cursors of this connection. Needs an API key; each page delivered is charged as a POST /prices/batch of as many names as ' +
        'the page asks for (1 credit per started 100) and the field counts one request towards that row\'s rate limit. Null with an error for a bad argument (then not charged).',
      args: {
        side: t.arg({ type: SideFilterEnum, required: true, defaultValue: 'all', description: 'ask, bid, or all (mid: none; the valuation is no marketplace).' }),
        appId: t.arg.string({ required: true, defaultValue: CS2_APP_ID }),
      },
      validate: v.websiteQuotesArgs,
      // The cost limit (src/plugins/safety.ts): the page counts as its size's worth of its children.
      extensions: {
        complexity: ({ args, childComplexity }: { args: Record<string, unknown>; childComplexity: number }) => 1 + v.quotesPageSize(args) * childComplexity,
      },
      resolve: (w, args, ctx) =>
        resolveCursorConnection(
          { args, toCursor: (q: MarketQuote) => v.encodeQuoteCursor({ marketHashName: q.marketHashName, side: q.side as 'ask' | 'bid' }), defaultSize: v.DEFAULT_QUOTES_PAGE, maxSize: v.MAX_QUOTES_PAGE },
          ({ before, after, limit, inverted }: ResolveCursorConnectionArgs) =>
            ctx.loaders.marketQuotePages.load({
              appId: args.appId,
              marketCode: w.code,
              side: args.side,
              // Checked by websiteQuotesArgs (validate) before the resolver runs.
              after: after === undefined ? null : v.decodeQuoteCursor(after),
              before: before === undefined ? null : v.decodeQuoteCursor(before),
              inverted,
              limit,
            }),
        ),
    },
    { name: 'MarketQuoteConnection', description: 'A page of a marketplace\'s quotes (Relay cursor connection).' },
    { name: 'MarketQuoteEdge', description: 'One quote of a page, with its cursor.' },
  ),
}));

builder.objectFields(MarketQuoteRef, (t) => ({
  appId: t.exposeString('appId', { description: "The app id of the quote's item. Not in the REST MarketQuoteOut (which lists quotes under their item)." }),
  marketHashName: t.exposeString('marketHashName', { description: "The market hash name of the quote's item. Not in the REST MarketQuoteOut." }),
  item: t.field({
    type: ItemRef,
    nullable: true,
    description:
      "The item this quote is for, with all its quotes and its valuation (what `item(marketHashName:)` gives). Needs an API key; the items " +
      'delivered through one `item` selection are charged as a POST /prices/batch of that many names (1 credit per started 100); ' +
      "below it, `routes` and `history` are charged per item as GET /prices/routes and GET /prices/history. Null when the item has no quotes any more.",
    resolve: (q, _a, ctx) => {
      const view = (quotes: MarketQuote[] | null): ItemView | null => (quotes ? { appId: q.appId, marketHashName: q.marketHashName, quotes } : null);
      const quotes = ctx.loaders.quotesOf(q.appId, q.marketHashName);
      return quotes instanceof Promise ? quotes.then(view) : view(quotes);
    },
  }),
}));
