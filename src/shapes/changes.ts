/**
 * The change-feed shapes (issue: live, point 2; README, Extensions: GET /prices/changes), defined once: the
 * OpenAPI document serves them and the tests take their key lists from them. The quote of a change is the
 * spec's MarketQuoteOut, as GET /prices serves it now.
 */
import { z } from 'zod';
import { MarketQuoteOut } from './quote.js';

/** A change sequence number or cursor: a decimal string (it may exceed 2^53). */
export const sequence = z.string().regex(/^\d+$/).meta({ description: 'A change sequence number, decimal string.' });

/** One change: the (item, market, side) that changed and its quote as served now. */
export const ChangeOut = z
  .strictObject({
    seq: sequence,
    market_hash_name: z.string(),
    market_code: z.string(),
    side: z.enum(['ask', 'bid', 'mid']).meta({ description: 'mid: the CSCP valuation was published.' }),
    quote: MarketQuoteOut.nullable().meta({ description: 'The quote as GET /prices serves it now; null when none is served any more.' }),
  })
  .meta({ id: 'ChangeOut' });

/** GET /prices/changes: one page of the change feed. */
export const PriceChangesOut = z
  .strictObject({
    app_id: z.string(),
    since: sequence,
    next_cursor: sequence.meta({ description: 'Pass as `since` for the next page.' }),
    has_more: z.boolean().meta({
      description: 'True when more changes follow next_cursor, or may: a page reads at most 100,000 changes of the sequence, so far behind with a narrow filter it can hold fewer than `limit` (even none). Ask again at once.',
    }),
    changes: z.array(ChangeOut),
  })
  .meta({ id: 'PriceChangesOut' });
