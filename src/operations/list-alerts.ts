/** GET /alerts (an extension; docs/alerts.md): the account's alerts. */
import { defineOperation } from './operation.js';
import * as ex from './examples.js';
import { freeLimited } from './docs.js';
import { z } from 'zod';
import { selectionOf } from '../shapes/catalogue.js';
import { AlertOut } from '../shapes/alerts.js';

export default defineOperation({
  id: 'listAlerts',
  kind: 'query',
  path: ['alerts'],
  selection: selectionOf(AlertOut),
  params: [],
  rest: { envelope: true },
  openapi: {
    payload: z.array(AlertOut),
    docs: {
      tag: 'Alerts',
      summary: 'Your alerts',
      description:
        "The account's alerts, newest first (all of them: at most 50). `holding` is the condition's state at the last evaluation; `disabled` is true once the receiver answered 410 Gone. The signing secret is never listed. Free (60 a minute per account).",
      response: freeLimited([ex.ALERT]),
    },
  },
});
