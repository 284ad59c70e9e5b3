/** DELETE /alerts/{id} (an extension; docs/alerts.md): deletes one of the account's alerts. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { freeLimited } from './docs.js';
import { selectionOf } from '../shapes/catalogue.js';
import { AlertOut } from '../shapes/alerts.js';

export default defineOperation({
  id: 'deleteAlert',
  kind: 'mutation',
  path: ['deleteAlert'],
  selection: selectionOf(AlertOut),
  params: [p.alertId()],
  rest: { envelope: true },
  openapi: {
    payload: AlertOut,
    statuses: [404],
    docs: {
      tag: 'Alerts',
      summary: 'Delete an alert',
      description:
        "Deletes the alert and its delivery log; events not yet delivered are not sent. Answers the alert as it was. 404 for an id that is not one of the account's alerts. Free (30 a minute per account).",
      parameters: {
        id: {
          example: ex.ALERT.id,
          description: 'The alert id (GET /alerts).',
        },
      },
      response: freeLimited(ex.ALERT),
    },
  },
});
