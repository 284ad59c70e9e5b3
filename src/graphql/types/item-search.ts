/**
 * The item catalogue search in GraphQL (issue 44, point 1; src/quotes/item-search.ts; docs/search.md): the root
 * field `items(search, first, after)`, which is GET /catalogue/items (catalogue row `searchItems`: 1 credit a page,
 * billed and rate limited like every row, since each hit carries its CSCP quote).
 */
import { builder, listComplexity } from '../builder.js';
import { paramArgs } from '../args.js';
import searchItemsOp from '../../operations/search-items.js';
import { validationError } from '../../lib/errors.js';
import { searchItems, type ItemHit, type ItemSearchPage } from '../../quotes/item-search.js';
import { ITEM_TYPES } from '../../search/item-type.js';
import { quoteText } from '../../quotes/quotes.js';
import { decodeSearchCursor, MAX_SEARCH_PAGE, searchWords } from '../../search/query.js';
import { RawJson } from '../../lib/raw-json.js';
import { MarketQuoteRef } from './quotes.js';

const ItemTypeEnum = builder.enumType('ItemType', {
  description: "An item's kind by its market hash name (the Steam market's naming): knife and gloves are the ★ items; container covers cases, capsules, packages, keys, passes and pins.",
  values: ITEM_TYPES,
});

const ItemHitRef = builder.objectRef<ItemHit>('ItemHit').implement({
  description: 'One item found by the search, with its kind and its current CSCP quote (REST: ItemHitOut).',
  fields: (t) => ({
    marketHashName: t.exposeString('marketHashName'),
    type: t.field({ type: ItemTypeEnum, resolve: (h) => h.type }),
    cscp: t.field({
      type: MarketQuoteRef,
      nullable: true,
      description: 'The CSCP quote (side mid, CNY; details in `valuation`) as `prices` serves it; null before the item was first valued.',
      resolve: (h) => h.cscp,
    }),
    cscpJson: t.field({
      type: 'QuotesJSON',
      nullable: true,
      description: 'The same quote in the REST shape (MarketQuoteOut), as one JSON value.',
      resolve: (h) => (h.cscp === null ? null : new RawJson(quoteText(h.cscp))),
    }),
  }),
});

const ItemSearchPageRef = builder.objectRef<ItemSearchPage & { search: string }>('ItemSearchPage').implement({
  description: 'One page of an item search (REST: ItemSearchOut).',
  fields: (t) => ({
    appId: t.exposeString('appId'),
    search: t.exposeString('search', { description: 'The query, echoed.' }),
    words: t.exposeStringList('words', {
      description: "The words every hit's name holds, as the search read the query: lower case, without punctuation, abbreviations spelled out (ft -> fieldtested, st -> stattrak, ★ -> star), longest first.",
    }),
    hits: t.field({
      type: [ItemHitRef],
      description: 'Shortest name (letters and digits) first, then by name (code point order).',
      extensions: listComplexity(MAX_SEARCH_PAGE),
      resolve: (p) => p.hits,
    }),
    nextCursor: t.string({ nullable: true, description: 'Pass as `after` (with the same search and appId) for the next page; null on the last page.', resolve: (p) => p.nextCursor }),
    hasMore: t.exposeBoolean('hasMore', { description: 'True when more hits follow nextCursor.' }),
  }),
});

builder.queryFields((t) => ({
  items: t.field({
    type: ItemSearchPageRef,
    description:
      "Search the item catalogue (REST: GET /catalogue/items; needs an API key; 1 credit a page, billed and rate limited as its catalogue row). Every word of `search` must appear in the item's name, in any order, ignoring case and punctuation; FN, MW, FT, WW, BS (exteriors), ST (StatTrak™), SV (Souvenir) and ★/star are understood. Each hit carries its kind and its CSCP quote.",
    args: paramArgs(t.arg, searchItemsOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs `items`, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('searchItems');
      const words = searchWords(args.search);
      const after = args.after === null || args.after === undefined ? null : decodeSearchCursor(args.after, args.appId, words);
      if (typeof after === 'string') throw validationError([{ location: 'argument', field: 'after', message: after }]);
      const page = await searchItems(ctx.db, { appId: args.appId, words, limit: args.first, after });
      return { ...page, search: args.search };
    },
  }),
}));
