/** GET /prices/changes (an extension; docs/live.md): the quotes changed after a cursor, a page at a time. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import { DEFAULT_CHANGES_PAGE, MAX_CHANGES_PAGE } from '../quotes/changes.js';
import { PriceChangesOut } from '../shapes/changes.js';

export default defineOperation({
  id: 'getPriceChanges',
  kind: 'query',
  path: ['priceChanges'],
  selection:
    'app_id: appId since next_cursor: nextCursor has_more: hasMore changes { seq market_hash_name: marketHashName market_code: marketCode side quote: quoteJson }',
  params: [
    p.appId(),
    p.since(
      "The last change sequence number the client has: an export's change_seq (header X-Change-Sequence) or a page's next_cursor. Absent: an empty page whose next_cursor is the current sequence. Older than the kept 24 h: 410 `cursor_expired` (download the export again); beyond the current sequence: 422.",
      'The last sequence number the client has (decimal string); absent: an empty page with the current cursor.',
    ),
    p.markets('Comma-separated market codes (CSCP: the valuation); default every market.', 'Only these market codes (CSCP for the valuation).'),
    p.side('all', 'ask, bid, mid (the CSCP valuation) or all (default).'),
    p.count('limit', 'limit', {
      digits: 4,
      min: 1,
      max: MAX_CHANGES_PAGE,
      absent: DEFAULT_CHANGES_PAGE,
      description: `Changes per page, 1-${MAX_CHANGES_PAGE} (default ${DEFAULT_CHANGES_PAGE}).`,
      graphqlDescription: `At most ${MAX_CHANGES_PAGE} changes.`,
    }),
  ],
  rest: { envelope: true },
  openapi: {
    payload: PriceChangesOut,
    statuses: [410],
    docs: {
      tag: 'Change feed',
      summary: 'Quotes changed after a cursor',
      description:
        'The changes after `since`, in sequence order: each names the item, market and side that changed and carries the quote as GET /prices serves it now (null when none is served any more); a quote changed twice within a page appears once, at its last sequence number. Pass `next_cursor` as the next `since`; `has_more` says to ask again at once.\n\n' +
        "Start from an export's `change_seq`. Changes are kept 24 hours: an older cursor is 410 `cursor_expired` (download the export again). 1 credit per page, however many changes it holds.",
      response: billed(ex.PRICE_CHANGES),
      parameters: { since: { example: '316000' }, limit: { example: '2' } },
    },
  },
});
