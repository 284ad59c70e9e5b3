/** GraphQL types and root fields for quotes (spec: MarketQuoteOut, ItemPricesOut, BatchPricesOut). */
import { Kind, type GraphQLResolveInfo } from 'graphql';
import { builder, listComplexity } from '../builder.js';
import { bodyArgs, paramArgs } from '../args.js';
import getPricesOp from '../../operations/get-prices.js';
import batchPricesOp from '../../operations/batch-prices.js';
import { SideFilterEnum } from '../arg-types.js';

/** Cost-limit bound of one item's quote list (markets x sides, with the valuation). */
const MAX_MARKETS_PER_ITEM = 48;
import * as v from '../../validation/params.js';
import { DeferredJson, RawJson, type DeferredJsonSource } from '../../lib/raw-json.js';
import { filterQuotes, quotesText, VALUATION_CURRENCY, VALUATION_MARKET, valuationBand, type MarketQuote, type QuoteFilter, type SideFilter, type Valuation } from '../../quotes/quotes.js';
import { roundToCurrency, type Money } from '../../lib/money.js';
import { ServiceError } from '../../lib/errors.js';
import { suggestNames } from '../../quotes/item-search.js';
import type { StoredText } from '../../quotes/quote-cache.js';
import type { Context } from '../context.js';
import { CS2_APP_ID } from '../../collectors/importers.js';
import { WebsiteRef } from './catalogue.js';
import { shapeFields } from '../shape-fields.js';
import { MarketQuoteOut, ValuationOut } from '../../shapes/quote.js';
import { ageSeconds, isStale, staleAfterSeconds } from '../../collectors/freshness.js';

const QuoteSide = builder.enumType('QuoteSide', {
  description: 'ask = sell listing, bid = buy order, mid = the CSCP valuation.',
  values: ['ask', 'bid', 'mid'] as const,
});


/** The band of a valuation (quotes/quotes.ts valuationBand), in the valuation's currency. */
interface Band {
  low: Money;
  high: Money;
}

const ValuationBandRef = builder.objectRef<Band>('ValuationBand').implement({
  description:
    'mid x e^(-uncertainty) to mid x e^(+uncertainty): about 68 % of the next day\'s quotes are meant to lie inside (docs/valuation.md). ' +
    '`low` and `high` are exact as published (4 decimals, the same figures as GET /prices/history `band_low`/`band_high`); the `Rounded` fields are at the currency\'s precision.',
  fields: (t) => ({
    low: t.field({ type: 'Decimal', resolve: (b) => b.low }),
    high: t.field({ type: 'Decimal', resolve: (b) => b.high }),
    lowRounded: t.field({ type: 'Decimal', description: '`low` at the currency\'s precision (ISO 4217 minor unit; half to even).', resolve: (b) => roundToCurrency(b.low, VALUATION_CURRENCY) }),
    highRounded: t.field({ type: 'Decimal', description: '`high` at the currency\'s precision (ISO 4217 minor unit; half to even).', resolve: (b) => roundToCurrency(b.high, VALUATION_CURRENCY) }),
  }),
});

const ValuationRef = builder.objectRef<Valuation>('Valuation').implement({
  description:
    'The CSCP consensus valuation (REST: ValuationOut, plus GraphQL-only fields); amounts in `currency` (CNY), fees included. Amount fields are exact; ' +
    'each has a `Rounded` sibling at the currency\'s precision (docs/graphql.md, amounts).',
  fields: (t) => ({
    ...shapeFields(t, ValuationOut, {
      descriptions: { credibility: 'e^(-uncertainty), between 0 and 1.', uncertainty: 'Standard uncertainty on a log scale.' },
    }),
    mid: t.field({
      type: 'Decimal',
      description: "The consensus mid, exact as published (6 decimals): the CSCP quote's marketPriceAmount. Not in the REST ValuationOut.",
      resolve: (v) => v.mid,
    }),
    midRounded: t.field({ type: 'Decimal', description: '`mid` at the currency\'s precision (ISO 4217 minor unit; half to even).', resolve: (v) => roundToCurrency(v.mid, VALUATION_CURRENCY) }),
    band: t.field({ type: ValuationBandRef, description: 'mid x e^(-/+uncertainty). Not in the REST ValuationOut.', resolve: (v) => valuationBand(v.mid, v.uncertainty) }),
    currency: t.string({ description: 'The currency of every amount of the valuation (ISO 4217 code; CNY). Not in the REST ValuationOut.', resolve: () => VALUATION_CURRENCY }),
    asOf: t.field({
      type: 'DateTime',
      description: "When the valuation was computed (the CSCP quote's changedAt and freshAt); `valuationDate` is the day it values. Not in the REST ValuationOut.",
      resolve: (v) => v.computedAt,
    }),
    askAmountRounded: t.field({ type: 'Decimal', description: '`askAmount` at the currency\'s precision.', resolve: (v) => roundToCurrency(v.askAmount, VALUATION_CURRENCY) }),
    bidAmountRounded: t.field({
      type: 'Decimal',
      nullable: true,
      description: '`bidAmount` at the currency\'s precision; null when one-sided.',
      resolve: (v) => (v.bidAmount === null ? null : roundToCurrency(v.bidAmount, VALUATION_CURRENCY)),
    }),
    askUncertainty: t.float({
      nullable: true,
      description:
        "Uncertainty of askAmount alone (log scale, calibrated on earlier days like `uncertainty`): about 68 % of the markets' next-day sell listings (cash cost, fees included) lie inside askAmount x e^(+-askUncertainty). Null on valuations published before it existed. Not in the REST ValuationOut.",
      resolve: (v) => v.askUncertainty,
    }),
    bidUncertainty: t.float({
      nullable: true,
      description:
        "Uncertainty of bidAmount alone (log scale): about 68 % of the markets' next-day buy orders (cash received) lie inside bidAmount x e^(+-bidUncertainty). Null when one-sided or published before it existed. Not in the REST ValuationOut.",
      resolve: (v) => v.bidUncertainty,
    }),
  }),
});

export const MarketQuoteRef = builder.objectRef<MarketQuote>('MarketQuote').implement({
  description: "A quote on one market and side, in the market's own currency (REST: MarketQuoteOut).",
  fields: (t) => ({
    // The REST shape's fields (shapes/quote.ts), in camelCase.
    ...shapeFields(t, MarketQuoteOut, {
      read: { market_currency_code: (q) => q.currencyCode, market_price_amount: (q) => q.price },
      refs: { side: { type: QuoteSide }, valuation: { type: ValuationRef } },
      descriptions: { provider_code: 'Equals marketCode for direct data, else the aggregator.' },
    }),
    // Freshness (issue 42 point 5; GraphQL only: the REST MarketQuoteOut is the spec's shape). collectors/freshness.ts.
    ageSeconds: t.int({
      description: 'Seconds from freshAt to the start of this request (whole seconds, never negative). Not in the REST MarketQuoteOut.',
      resolve: (q, _a, ctx) => ageSeconds(q.freshAt, ctx.now),
    }),
    staleAfterSeconds: t.int({
      description:
        "Age in seconds after which this quote is stale: 3 runs of the collector source that reports this market and provider (the most frequent one), 3 days for the daily CSCP valuation, 24 hours for a market and provider no source collects (e.g. the bundled snapshot's). Not in the REST MarketQuoteOut.",
      resolve: (q) => staleAfterSeconds(q.marketCode, q.providerCode),
    }),
    stale: t.boolean({
      description: 'True when ageSeconds exceeds staleAfterSeconds: its source has not confirmed this quote for more than 3 of its intervals. Not in the REST MarketQuoteOut.',
      resolve: (q, _a, ctx) => isStale(q.marketCode, q.providerCode, q.freshAt, ctx.now),
    }),
    // Edges a client traverses (GraphQL only).
    website: t.field({
      type: WebsiteRef,
      nullable: true,
      description:
        'The marketplace this quote is on, with its fee schedule (null for CSCP, the valuation, which is no marketplace). All quotes of a request share one lookup.',
      resolve: (q, _a, ctx) => (q.marketCode === 'CSCP' ? null : ctx.loaders.website.load(q.marketCode)),
    }),
  }),
});

interface ItemPrices {
  appId: string;
  marketHashName: string;
  /** The quotes, filtered; null when the answer was made from `text` alone (the field `markets` then loads them). */
  markets: readonly MarketQuote[] | null;
  /**
   * The unfiltered quotes as GET /prices' `markets` text (or its UTF-8 bytes: the quote cache's StoredText), when the
   * answer asked for nothing else (see `textOnly`).
   */
  text?: StoredText;
}

/** Fields of `prices` answered without quote objects: with `marketsJson`, the unfiltered answer is the cached text. */
const TEXT_FIELDS = new Set(['appId', 'marketHashName', 'marketsJson', '__typename']);

/**
 * Whether the field at `info` selects only TEXT_FIELDS, directly (a fragment counts as more): then its quotes are
 * taken as text (quote-cache.ts, the text store), and no quote object is made. What the REST route of GET /prices selects.
 */
function textOnly(info: GraphQLResolveInfo): boolean {
  return info.fieldNodes.every((node) => node.selectionSet?.selections.every((sel) => sel.kind === Kind.FIELD && TEXT_FIELDS.has(sel.name.value)) ?? false);
}
interface BatchPrices {
  appId: string;
  side: SideFilter;
  /** `deferred`: the item's quotes text made when a streamed answer writes it (then `markets` is empty). */
  items: { marketHashName: string; markets: readonly MarketQuote[]; deferred?: DeferredJson }[];
}

/**
 * Names whose quotes a streamed batch loads and writes at once (lib/raw-json.ts, streamWithRaw): at full scale
 * about 1,600 quotes, some 560 KB of text (2.4 MB of objects when filtered), held per streamed answer at a time. 50
 * had held 1.4 MB per answer, and 50 concurrent full-scale batches took the process to 516-523 MiB against 506 with
 * 20, at the same throughput (`npm run bench`, BENCH_SCALE=full; issue 45).
 */
const STREAM_BLOCK_NAMES = 20;

const ItemPricesRef = builder.objectRef<ItemPrices>('ItemPrices').implement({
  fields: (t) => ({
    appId: t.exposeString('appId'),
    marketHashName: t.exposeString('marketHashName'),
    markets: t.field({
      type: [MarketQuoteRef],
      extensions: listComplexity(MAX_MARKETS_PER_ITEM),
      // Made from the text alone only when `markets` was not selected (textOnly); kept for a resolver that asks anyway.
      resolve: async (x, _a, ctx) => x.markets ?? (await ctx.loaders.quotesOf(x.appId, x.marketHashName)) ?? [],
    }),
    marketsJson: t.field({
      type: 'QuotesJSON',
      description: 'The same quotes in the REST shape (what GET /prices answers in `markets`), as one JSON value.',
      resolve: (x) => new RawJson(x.text ?? quotesText(x.markets ?? [])),
    }),
  }),
});

const BatchItemRef = builder.objectRef<BatchPrices['items'][number]>('BatchItem').implement({
  fields: (t) => ({
    marketHashName: t.exposeString('marketHashName'),
    markets: t.field({ type: [MarketQuoteRef], extensions: listComplexity(MAX_MARKETS_PER_ITEM), resolve: (x) => x.markets }),
    marketsJson: t.field({
      type: 'QuotesJSON',
      description: 'The same quotes in the REST shape (what POST /prices/batch answers in `markets`), as one JSON value.',
      resolve: (x) => x.deferred ?? new RawJson(quotesText(x.markets)),
    }),
  }),
});

const BatchPricesRef = builder.objectRef<BatchPrices>('BatchPrices').implement({
  fields: (t) => ({
    appId: t.exposeString('appId'),
    side: t.field({ type: SideFilterEnum, resolve: (x) => x.side }),
    items: t.field({ type: [BatchItemRef], resolve: (x) => x.items }),
  }),
});

/** One item as GraphQL traverses it (the `item` root): its published quotes, loaded once. */
export interface ItemView {
  appId: string;
  marketHashName: string;
  quotes: readonly MarketQuote[];
}

export const ItemRef = builder.objectRef<ItemView>('Item').implement({
  description: 'One item with its quotes on every market and its CSCP valuation (root field `item`).',
  fields: (t) => ({
    appId: t.exposeString('appId'),
    marketHashName: t.exposeString('marketHashName'),
    quotes: t.field({
      type: [MarketQuoteRef],
      description: 'Quotes by market code then side, filtered like GET /prices (`markets`, `side`); each reaches its marketplace and fee schedule through `website`.',
      extensions: listComplexity(MAX_MARKETS_PER_ITEM),
      args: {
        markets: t.arg.stringList({ required: false }),
        side: t.arg({ type: SideFilterEnum, required: true, defaultValue: 'all' }),
      },
      validate: v.quoteFilterArgs,
      resolve: (x, args) => [...filterQuotes(x.quotes, { markets: args.markets ?? null, side: args.side })],
    }),
    valuation: t.field({
      type: ValuationRef,
      nullable: true,
      description: 'The CSCP consensus valuation (the `mid` quote of market CSCP, in CNY); null before the item was first valued.',
      resolve: (x) => x.quotes.find((q) => q.marketCode === VALUATION_MARKET)?.valuation ?? null,
    }),
  }),
});

/**
 * The 404 of `prices` (spec: GET /prices behaviour 5, an item without quotes), with the nearest names of the catalogue
 * in `details.suggestions` (docs/search.md; quotes/item-search.ts `suggestNames`): a rejected promise. When the
 * suggestions cannot be read the 404 goes without them (logged), never a 5xx in its place.
 */
async function notFoundWithSuggestions(ctx: Context, appId: string, marketHashName: string): Promise<never> {
  let suggestions: string[] = [];
  try {
    suggestions = await suggestNames(ctx.db, appId, marketHashName);
  } catch (err) {
    ctx.state.log?.warn({ err }, 'prices: the suggestions of a 404 could not be read');
  }
  throw new ServiceError('not_found', 404, `No quotes for ${JSON.stringify(marketHashName)} (app ${appId}).`, { suggestions });
}

builder.queryFields((t) => ({
  item: t.field({
    type: ItemRef,
    nullable: true,
    description:
      'One item, to traverse: its quotes (each with its marketplace and fee schedule) and its valuation. Billed and rate limited as GET /prices (needs an API key); null, and not billed, when the item has no quotes.',
    args: {
      marketHashName: t.arg.string({ required: true }),
      appId: t.arg.string({ required: true, defaultValue: CS2_APP_ID }),
    },
    // Arguments: the metering plugin's rule (meteredFieldArgs `item`: validation/params.ts itemArgs), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('getPrices');
      const quotes = await ctx.loaders.quotesOf(args.appId, args.marketHashName);
      return quotes ? { appId: args.appId, marketHashName: args.marketHashName, quotes } : null;
    },
  }),
  prices: t.field({
    type: ItemPricesRef,
    description:
      'Current quotes of one item across marketplaces (REST: GET /prices; needs an API key). Error `not_found` when the item has no quotes for the app id.',
    args: paramArgs(t.arg, getPricesOp.params),
    // Arguments (all at once, same rules as REST): the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    // Without a promise when the caller and the item are cached (the hot path: the compiled route then answers at once).
    resolve: (_r, args, ctx, info) => {
      const { appId, marketHashName } = args;
      // The item's quotes by `load` (null: none, the 404), made into the answer by `make`; without a promise when the
      // caller and the item are cached.
      const respond = <T,>(load: () => T | null | Promise<T | null>, make: (found: T) => ItemPrices): ItemPrices | Promise<ItemPrices> => {
        const answer = (found: T | null) => (found === null ? notFoundWithSuggestions(ctx, appId, marketHashName) : make(found));
        if (!ctx.userNow('getPrices')) return ctx.requireUser('getPrices').then(async () => answer(await load()));
        const found = load();
        return found instanceof Promise ? found.then(answer) : answer(found);
      };
      if (args.markets == null && args.side === 'all' && textOnly(info)) {
        // The unfiltered answer is the item's cached text: no quote object is made (the REST route's case).
        return respond(() => ctx.loaders.quoteTextOf(appId, marketHashName), (text) => ({ appId, marketHashName, markets: null, text }));
      }
      const filter: QuoteFilter = { markets: args.markets ?? null, side: args.side };
      return respond(() => ctx.loaders.quotesOf(appId, marketHashName), (quotes) => ({ appId, marketHashName, markets: filterQuotes(quotes, filter) }));
    },
  }),
  batchPrices: t.field({
    type: BatchPricesRef,
    description:
      'Current quotes of up to 1000 items, one entry per requested name in request order (REST: POST /prices/batch; needs an API key). Unknown names give empty markets.',
    extensions: listComplexity((a) => (Array.isArray(a.marketHashNames) ? a.marketHashNames.length : 1)),
    args: bodyArgs(t.arg, batchPricesOp.body!.args),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('batchPrices');
      const filter: QuoteFilter = { markets: args.markets ?? null, side: args.side };
      if (ctx.state.delivery.deferred) {
        // The answer is written as it is made: each item's quotes are loaded and written a block at a time.
        const source: DeferredJsonSource = {
          blockSize: STREAM_BLOCK_NAMES,
          texts: async (names) => {
            if (filter.markets === null && filter.side === 'all') {
              // Unfiltered: the items' cached texts, no quote object made (as GET /prices).
              const found = await ctx.loaders.quoteTextsNow(args.appId, names);
              return names.map((n) => found.get(n) ?? '[]');
            }
            const found = await ctx.loaders.quotesNow(args.appId, names);
            return names.map((n) => quotesText(filterQuotes(found.get(n) ?? [], filter)));
          },
        };
        return { appId: args.appId, side: args.side, items: args.marketHashNames.map((name) => ({ marketHashName: name, markets: [], deferred: new DeferredJson(source, name) })) };
      }
      const all = await ctx.loaders.quotes.loadMany(args.marketHashNames.map((n) => `${args.appId}\u0000${n}`));
      return {
        appId: args.appId,
        side: args.side,
        items: args.marketHashNames.map((name, i) => {
          const quotes = all[i];
          if (quotes instanceof Error) throw quotes;
          return { marketHashName: name, markets: quotes ? filterQuotes(quotes, filter) : [] };
        }),
      };
    },
  }),
}));
