/**
 * Webhook alerts in GraphQL (issue 44, point 3; docs/alerts.md; src/alerts/alerts.ts): the mutations
 * `createAlert` and `deleteAlert` (an API key's own mutations: catalogue rows createAlert and deleteAlert) and the
 * queries `alerts` and `alertDeliveries`, which are POST /alerts, DELETE /alerts/{id}, GET /alerts and
 * GET /alerts/{id}/deliveries. Free (0 credits); each delivered event costs 1 credit (docs/alerts.md, Billing).
 */
import { builder, listComplexity } from '../builder.js';
import { bodyArgs, paramArgs } from '../args.js';
import listAlertDeliveriesOp from '../../operations/list-alert-deliveries.js';
import createAlertOp from '../../operations/create-alert.js';
import deleteAlertOp from '../../operations/delete-alert.js';
import { shapeFields } from '../shape-fields.js';
import { AlertCreatedOut, AlertDeliveriesOut, AlertDeliveryOut, AlertOut } from '../../shapes/alerts.js';
import {
  createAlert,
  deleteAlert,
  listAlerts,
  listDeliveries,
  MAX_ALERTS_PER_ACCOUNT,
  MAX_DELIVERIES_PAGE,
  type Alert,
  type AlertDelivery,
  type AlertDeliveryPage,
} from '../../alerts/alerts.js';
import { ServiceError, validationError, validationProblems } from '../../lib/errors.js';

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
const snake = (camelCase: string) => camelCase.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export const AlertRef = builder.objectRef<Alert>('Alert').implement({
  description: 'A webhook alert of the caller\'s account (REST: AlertOut). The signing secret is shown only by createAlert.',
  fields: (t) => shapeFields(t, AlertOut, { refs: { kind: { type: 'String' } } }),
});

const AlertCreatedRef = builder.objectRef<{ alert: Alert; secret: string }>('AlertCreated').implement({
  description: 'A new alert and its signing secret, shown this once (REST: AlertCreatedOut).',
  fields: (t) => shapeFields(t, AlertCreatedOut, { refs: { alert: { type: AlertRef } } }),
});

const AlertDeliveryRef = builder.objectRef<AlertDelivery>('AlertDelivery').implement({
  description: 'One event of an alert and its delivery (REST: AlertDeliveryOut).',
  fields: (t) => shapeFields(t, AlertDeliveryOut, { refs: { status: { type: 'String' } } }),
});

const AlertDeliveriesRef = builder.objectRef<AlertDeliveryPage>('AlertDeliveries').implement({
  description: "One page of an alert's delivery log, newest first (REST: AlertDeliveriesOut).",
  fields: (t) => {
    const fields = shapeFields(t, AlertDeliveriesOut, { refs: { deliveries: { type: [AlertDeliveryRef] } } });
    return { ...fields, deliveries: t.field({ type: [AlertDeliveryRef], extensions: listComplexity(MAX_DELIVERIES_PAGE), resolve: (p) => p.deliveries }) };
  },
});


/** A refusal about the input's REST keys, named as the GraphQL argument fields (camelCase; REST turns them back). */
function asArgumentError(e: unknown): unknown {
  if (!(e instanceof ServiceError) || e.code !== 'validation_failed') return e;
  return validationError(
    validationProblems(e).map((p) => ({ ...p, location: 'argument' as const, field: camel(p.field) })),
    e.message,
  );
}

builder.queryFields((t) => ({
  alerts: t.field({
    type: [AlertRef],
    description: `The caller's alerts, newest first (REST: GET /alerts; free; 60 a minute per account, both faces). At most ${MAX_ALERTS_PER_ACCOUNT} per account.`,
    extensions: listComplexity(MAX_ALERTS_PER_ACCOUNT),
    resolve: async (_r, _a, ctx) => {
      const caller = await ctx.requireUser('listAlerts');
      return listAlerts(ctx.db, caller.accountId);
    },
  }),
  alertDeliveries: t.field({
    type: AlertDeliveriesRef,
    description: "One page of an alert's delivery log, newest first (REST: GET /alerts/{id}/deliveries; free; 60 a minute per account, both faces). Error not_found for another account's alert.",
    args: paramArgs(t.arg, listAlertDeliveriesOp.params),
    resolve: async (_r, args, ctx) => {
      const caller = await ctx.requireUser('listAlertDeliveries');
      return listDeliveries(ctx.db, caller.accountId, args.id, { limit: args.limit, cursor: args.cursor ?? null }, 'argument');
    },
  }),
}));

builder.mutationFields((t) => ({
  createAlert: t.field({
    type: AlertCreatedRef,
    description:
      'Registers a webhook alert on the caller\'s account (REST: POST /alerts; an API key, not a service token; free; 30 a minute per account, both faces). The answer carries the signing secret, shown this once. Errors: validation_failed (422) for a bad input, an unknown item or market, a URL whose host is not public (the SSRF guard); conflict (409) beyond the alerts an account may hold; rate_limited (429).',
    args: bodyArgs(t.arg, createAlertOp.body!.args),
    resolve: async (_r, { input }, ctx) => {
      const caller = await ctx.requireUser('createAlert');
      const raw: Record<string, unknown> = {};
      for (const [k, value] of Object.entries(input)) if (value !== null && value !== undefined) raw[snake(k)] = value;
      try {
        return await createAlert(ctx.db, caller, raw, ctx.alerts, 'argument', ctx.now);
      } catch (e) {
        throw asArgumentError(e);
      }
    },
  }),
  deleteAlert: t.field({
    type: AlertRef,
    description: "Deletes one of the caller's alerts with its delivery log (REST: DELETE /alerts/{id}; free; 30 a minute per account, both faces); returns it as it was. Error not_found for another account's alert.",
    args: paramArgs(t.arg, deleteAlertOp.params),
    resolve: async (_r, args, ctx) => {
      const caller = await ctx.requireUser('deleteAlert');
      return deleteAlert(ctx.db, caller.accountId, args.id);
    },
  }),
}));
