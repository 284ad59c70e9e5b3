/** GET /alerts/{id}/deliveries (an extension; docs/alerts.md): an alert's delivery log, newest first. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as v from '../validation/params.js';
import * as ex from './examples.js';
import { freeLimited } from './docs.js';
import { z } from 'zod';
import { DEFAULT_DELIVERIES_PAGE, MAX_DELIVERIES_PAGE } from '../alerts/alerts.js';
import { selectionOf } from '../shapes/catalogue.js';
import { AlertDeliveriesOut } from '../shapes/alerts.js';

export default defineOperation({
  id: 'listAlertDeliveries',
  kind: 'query',
  path: ['alertDeliveries'],
  selection: selectionOf(AlertDeliveriesOut),
  params: [
    p.alertId(),
    p.count('limit', 'limit', {
      digits: 3,
      min: 1,
      max: MAX_DELIVERIES_PAGE,
      absent: DEFAULT_DELIVERIES_PAGE,
      description: `Rows per page, 1-${MAX_DELIVERIES_PAGE} (default ${DEFAULT_DELIVERIES_PAGE}).`,
      graphqlDescription: `At most ${MAX_DELIVERIES_PAGE}.`,
    }),
    p.single({
      name: 'cursor',
      arg: 'cursor',
      openapi: z
        .string()
        .regex(/^\d{1,19}$/)
        .optional()
        .meta({ description: "The previous page's next_cursor." }),
      absent: null,
      read: (raw, problems) => {
        if (v.DELIVERY_CURSOR.test(raw)) return raw;
        problems.add('query', 'cursor', 'must be a next_cursor this listing returned');
        return undefined;
      },
      graphql: {
        type: 'String',
        required: false,
        description: "The previous page's nextCursor.",
        rule: z.string().regex(v.DELIVERY_CURSOR, { message: 'must be a next_cursor this listing returned' }),
      },
    }),
  ],
  rest: { envelope: true },
  openapi: {
    payload: AlertDeliveriesOut,
    statuses: [404],
    docs: {
      tag: 'Alerts',
      summary: "An alert's delivery log",
      description:
        "The events of the alert and their deliveries, newest first: status (pending, delivered, failed), attempts, the last status code and error, the start of the last answer (at most 256 characters), whether the event was charged (an attempt that never reached the receiver, such as a refused connection or an address the SSRF guard refused, is not). Failed attempts are retried after 1 min, 5 min, 30 min, 2 h and 6 h; then the event fails. 404 for another account's alert. Free (60 a minute per account).",
      parameters: {
        id: {
          example: ex.ALERT.id,
          description: 'The alert id (GET /alerts).',
        },
        limit: {
          example: '20',
          description: 'Rows per page, 1-100 (default 20).',
        },
        cursor: {
          example: '41',
          description: "The previous page's next_cursor.",
        },
      },
      response: freeLimited(ex.ALERT_DELIVERIES),
    },
  },
});
