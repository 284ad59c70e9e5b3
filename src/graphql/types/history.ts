/**
 * Price history in GraphQL (issue: price history, point 3; src/history/candles.ts): `Item.history` on the item
 * traversal (billed with `item`, as GET /prices), so one query fetches quotes, fee chains and a year of candles,
 * and the `priceHistory` root field, which is GET /prices/history (catalogue row `getPriceHistory`: billed and
 * rate limited like every row). Both are bounded by the cost limit: a series list counts as its worst case
 * (2 quote series per market plus the two imported kinds) and a candle list as the longest interval's buckets.
 */
import { builder, listComplexity } from '../builder.js';
import { only, paramArgs } from '../args.js';
import { argsRule } from '../../operations/operation.js';
import getPriceHistoryOp from '../../operations/get-price-history.js';
import { notFound } from '../../lib/errors.js';
import {
  historyRange,
  itemIdOf,
  loadItemHistory,
  MAX_SPAN_DAYS,
  type Candle,
  type CscpPoint,
  type HistoryInterval,
  type HistorySeriesKind,
  type HistorySeriesOut as Series,
  type ItemHistory,
} from '../../history/candles.js';
import type { Context } from '../context.js';
import { ItemRef } from './quotes.js';
import { shapeFields } from '../shape-fields.js';
import { CandleOut, CscpPointOut, HistorySeriesOut, ItemHistoryOut } from '../../shapes/history.js';


/** Cost-limit bound of one item's series list: ask and bid on up to 48 markets, plus the listing minimum and sales. */
const MAX_SERIES = 48 * 2 + 2;
/** Cost-limit bound of a candle list: the most buckets any interval allows (366 days). */
const MAX_CANDLES = Math.max(MAX_SPAN_DAYS.day, Math.ceil(MAX_SPAN_DAYS.week / 7) + 1, Math.ceil(MAX_SPAN_DAYS.month / 28) + 1);

const asDate = (d: string) => new Date(`${d}T00:00:00Z`);


const HistorySeriesEnum = builder.enumType('HistorySeriesKind', {
  description:
    'ask, bid: daily candles of the live quotes; listing_minimum: an imported listing-minimum statistic (an ask-side figure, never a quote); sales: imported daily sales with units sold.',
  values: ['ask', 'bid', 'listing_minimum', 'sales'] as const,
});
const HistorySideEnum = builder.enumType('HistorySide', { values: ['ask', 'bid'] as const });

const CandleRef = builder.objectRef<Candle>('Candle').implement({
  description: "One candle in the series' currency (REST: CandleOut).",
  fields: (t) =>
    shapeFields(t, CandleOut, {
      read: { date: (c) => asDate(c.date) },
      descriptions: {
        observations: 'Observations applied in its days (an imported point counts 1; 0: the day was only confirmed by a full scan).',
        quantity: 'Last quantity (listings) of its days; null for sales.',
        volume: 'Units sold in its days (sales only).',
        days: 'Days of the candle with data.',
      },
    }),
});

const HistorySeriesRef = builder.objectRef<Series>('HistorySeries').implement({
  description: "One market's series over the range (REST: HistorySeriesOut).",
  fields: (t) => {
    const fields = shapeFields(t, HistorySeriesOut, {
      read: { market_code: (s) => s.marketCode, series: (s) => s.series },
      refs: { series: { type: HistorySeriesEnum }, side: { type: HistorySideEnum }, candles: { type: [CandleRef] } },
    });
    return { ...fields, candles: t.field({ type: [CandleRef], extensions: listComplexity(MAX_CANDLES), resolve: (s) => s.candles }) };
  },
});

const CscpPointRef = builder.objectRef<CscpPoint>('CscpPoint').implement({
  description: 'One CSCP valuation (CNY) with its band mid x e^(-/+uncertainty) (REST: CscpPointOut).',
  fields: (t) => shapeFields(t, CscpPointOut, { read: { date: (p) => asDate(p.date) } }),
});

const ItemHistoryRef = builder.objectRef<ItemHistory>('ItemHistory').implement({
  description: "An item's candles per market and its CSCP series over a range (REST: ItemHistoryOut).",
  fields: (t) => {
    const fields = shapeFields(t, ItemHistoryOut, {
      read: { from: (h) => asDate(h.from), to: (h) => asDate(h.to) },
      descriptions: { interval: 'The candle width asked for: day, week or month (as REST names it).' },
      refs: { interval: { type: 'String' }, series: { type: [HistorySeriesRef] }, cscp: { type: [CscpPointRef] } },
    });
    return {
      ...fields,
      series: t.field({ type: [HistorySeriesRef], extensions: listComplexity(MAX_SERIES), resolve: (h) => h.series }),
      cscp: t.field({ type: [CscpPointRef], extensions: listComplexity(MAX_CANDLES), resolve: (h) => h.cscp }),
    };
  },
});

/** The stored series a side filter selects (`mid`: none, only the CSCP series). */
function seriesOf(side: 'ask' | 'bid' | 'mid' | 'all'): HistorySeriesKind[] | null {
  if (side === 'ask') return ['ask', 'listing_minimum'];
  if (side === 'bid') return ['bid'];
  if (side === 'mid') return [];
  return null;
}

interface HistoryArgs {
  markets?: string[] | null;
  side: 'ask' | 'bid' | 'mid' | 'all';
  from?: string | null;
  to?: string | null;
  interval: HistoryInterval;
}

/** Reads one item's history for the arguments (422 for a bad range, see historyRange). */
async function historyOf(ctx: Context, itemId: number, appId: string, marketHashName: string, args: HistoryArgs, range: { from: string; to: string }): Promise<ItemHistory> {
  const series = seriesOf(args.side);
  const read = await loadItemHistory(ctx.db, { itemId, markets: args.markets ?? null, series, ...range, interval: args.interval });
  return { appId, marketHashName, ...range, interval: args.interval, series: series?.length === 0 ? [] : read.series, cscp: args.side === 'all' || args.side === 'mid' ? read.cscp : [] };
}

/** The arguments `Item.history` shares with GET /prices/history (declared once, src/operations/get-price-history.ts). */
const ITEM_HISTORY_PARAMS = only(getPriceHistoryOp.params, 'markets', 'side', 'from', 'to', 'interval');

builder.objectFields(ItemRef, (t) => ({
  history: t.field({
    type: ItemHistoryRef,
    description: "This item's candles per market and its CSCP series over a range (billed with `item`; REST: GET /prices/history).",
    args: paramArgs(t.arg, ITEM_HISTORY_PARAMS),
    validate: argsRule(ITEM_HISTORY_PARAMS),
    resolve: async (item, args, ctx) => {
      const range = historyRange(args.from, args.to, args.interval, ctx.now);
      const id = await itemIdOf(ctx.db, item.appId, item.marketHashName);
      if (id === null) throw notFound(`No item ${JSON.stringify(item.marketHashName)} (app ${item.appId}).`);
      return historyOf(ctx, id, item.appId, item.marketHashName, args, range);
    },
  }),
}));

builder.queryFields((t) => ({
  priceHistory: t.field({
    type: ItemHistoryRef,
    description:
      "One item's price history (REST: GET /prices/history; needs an API key; billed and rate limited as its catalogue row). Error `not_found` when the service has never seen the item.",
    args: paramArgs(t.arg, getPriceHistoryOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('getPriceHistory');
      // The range first (422), then the item (404).
      const range = historyRange(args.from, args.to, args.interval, ctx.now);
      const id = await itemIdOf(ctx.db, args.appId, args.marketHashName);
      if (id === null) throw notFound(`No item ${JSON.stringify(args.marketHashName)} (app ${args.appId}).`);
      return historyOf(ctx, id, args.appId, args.marketHashName, args, range);
    },
  }),
}));
