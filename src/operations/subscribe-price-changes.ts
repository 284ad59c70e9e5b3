/** GET /prices/changes/stream (an extension; docs/live.md): the change feed as a server-sent event stream, the GraphQL subscription `quoteChanged`. `Last-Event-ID` resumes like `since`; the parameter wins when both are given. */
import { defineOperation, param } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { z } from 'zod';
import * as v from '../validation/params.js';
import { ChangeOut } from '../shapes/changes.js';

export default defineOperation({
  id: 'subscribePriceChanges',
  kind: 'subscription',
  path: ['quoteChanged'],
  selection: 'seq market_hash_name: marketHashName market_code: marketCode side quote: quoteJson',
  params: [
    p.appId(),
    p.single({
      in: 'header',
      name: 'last-event-id',
      openapi: z
        .string()
        .regex(/^\d{1,19}$/)
        .optional()
        .meta({
          description: 'The id of the last event received (a reconnecting EventSource sends it): resumes like `since`.',
        }),
      absent: null,
      read: (raw, problems) => problems.check('header', 'last-event-id', v.changeCursor, raw) ?? null,
    }),
    p.since(
      "Start after this change sequence number (an export's change_seq or a feed cursor); the changes after it come first. Absent: from now (or the Last-Event-ID header). Older than the kept 24 h: 410; beyond the current sequence: 422.",
      'Start after this change sequence number (decimal string); absent: from now.',
    ),
    param({
      in: 'query',
      name: 'market_hash_name',
      arg: 'marketHashNames',
      openapi: z.array(v.marketHashName).max(v.MAX_BATCH_NAMES).optional().meta({
        description: 'Only these items (exact names, 1-255 characters each): repeat the parameter, up to 1,000 times. Absent: every item.',
      }),
      read: (raw, problems) => {
        if (raw.length > v.MAX_BATCH_NAMES) problems.add('query', 'market_hash_name', `must be given at most ${v.MAX_BATCH_NAMES} times`);
        return raw.length === 0 ? null : raw.map((n) => problems.check('query', 'market_hash_name', v.marketHashName, n)).filter((n) => n !== undefined);
      },
      graphql: { type: 'String', list: true, required: false, description: 'Only these items (1-1000 exact names); absent: every item.', rule: v.marketHashNames },
    }),
    p.markets('Comma-separated market codes (CSCP: the valuation); default every market.', 'Only these market codes (CSCP for the valuation).'),
    p.side('all', 'ask, bid, mid (the CSCP valuation) or all (default).'),
  ],
  check: (vars) => {
    if (vars.since === null) vars.since = vars['last-event-id'];
  },
  rest: { envelope: false, stream: true },
  openapi: {
    payload: ChangeOut,
    mediaType: 'text/event-stream',
    description:
      'A server-sent event stream: each change is an event `change` whose `id` is its seq and whose `data` is a ChangeOut; `: ping` comments every 15 s; a terminal event `error` carries the error envelope (slow_consumer, credit_insufficient, dependency_unavailable) before the stream closes. Charged per started minute connected (credit_cost each minute, the first up front).',
    statuses: [410],
    docs: {
      tag: 'Change feed',
      summary: 'Live stream of quote changes',
      description:
        'The change sequence pushed as it commits, as server-sent events: event `change` with `id` = its sequence number and `data` = a ChangeOut. With `since` (or `Last-Event-ID`) the changes after it are replayed first, so a reconnecting `EventSource` misses nothing. A `: ping` comment follows 15 s without an event.\n\n' +
        'Refusals come before the stream starts, in the error envelope (401, 402, 403, 410, 422, 429 `rate_limited` or `too_many_subscriptions`). Once streaming, a terminal event `error` carries the envelope (`slow_consumer`, `credit_insufficient`, `dependency_unavailable`) before the stream closes. 1 credit per started minute connected, the first up front.',
      parameters: {
        since: { example: '316000' },
        market_hash_name: { example: [ex.ITEM, 'Recoil Case'] },
        'last-event-id': { example: '316002' },
      },
    },
  },
});
