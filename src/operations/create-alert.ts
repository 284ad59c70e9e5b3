/** POST /alerts (an extension; docs/alerts.md): registers a webhook alert. The body's shape is checked here; the item, the markets and the account's bound by the resolver (src/alerts/alerts.ts). */
import { defineOperation, jsonBody } from './operation.js';
import * as ex from './examples.js';
import { freeLimited } from './docs.js';
import { alertInput } from '../alerts/alerts.js';
import { selectionOf } from '../shapes/catalogue.js';
import { AlertCreatedOut, AlertOut } from '../shapes/alerts.js';

export default defineOperation({
  id: 'createAlert',
  kind: 'mutation',
  path: ['createAlert'],
  selection: `alert { ${selectionOf(AlertOut)} } secret`,
  params: [],
  body: jsonBody({
    schema: alertInput.meta({ id: 'AlertIn' }),
    args: { input: { type: 'CreateAlertInput', required: true } },
    variables: (body) => ({
      input: Object.fromEntries(Object.entries(body).map(([k, value]) => [k.replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase()), value])),
    }),
  }),
  rest: { envelope: true },
  openapi: {
    payload: AlertCreatedOut,
    statuses: [409, 413],
    docs: {
      tag: 'Alerts',
      summary: 'Register a webhook alert',
      description:
        "Registers a condition and the URL told when it starts to hold. `kind` price: `market_code`, `side` (ask or bid), `direction` (above or below) and `level`, a decimal string in the market's currency (`currency_code` of the answer). `kind` route_margin: `buy_market`, `sell_market` and `margin`, a decimal fraction (0.05 = 5 %), judged on the best route between the two markets after fees (cash in, cash out; as GET /prices/routes computes it). Events fire on crossing: when the condition turns from not holding to holding; an alert whose condition already holds at registration fires after it stops holding and crosses again.\n\n" +
        'The URL must use https (no user name or password, at most 2,048 characters) and point at a public host: an IP address in a private, loopback, link-local or other non-public range, or a name such as `localhost`, is refused (422 on `url`), and each delivery connects only to public addresses of the name (docs/alerts.md). The answer carries `secret` (whsec_...), which signs every delivery: it is shown this once. At most 50 alerts per account: 409 `conflict` beyond. 422 for a bad field, an unknown item or an unknown market. Free (30 a minute per account, with GraphQL createAlert); each event costs 1 credit, once, at its first attempt that reaches the receiver.',
      requestBody: ex.ALERT_REQUEST,
      response: freeLimited(ex.ALERT_CREATED),
    },
  },
});
