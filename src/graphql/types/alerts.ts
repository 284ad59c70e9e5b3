/**
 * Webhook alerts in GraphQL (issue 44, point 3; docs/alerts.md; src/services/alerts.ts): the mutations
 * `createAlert` and `deleteAlert` (an API key's own mutations: catalogue rows createAlert and deleteAlert) and the
 * queries `alerts` and `alertDeliveries`, which are POST /alerts, DELETE /alerts/{id}, GET /alerts and
 * GET /alerts/{id}/deliveries. Free (0 credits); each delivered event costs 1 credit (docs/alerts.md, Billing).
 */
import { builder, listComplexity } from '../builder.js';
import { shapeFields } from '../shape-fields.js';
import { AlertCreatedOut, AlertDeliveriesOut, AlertDeliveryOut, AlertOut } from '../../shapes/alerts.js';
import {
  createAlert,
  DEFAULT_DELIVERIES_PAGE,
  deleteAlert,
  listAlerts,
  listDeliveries,
  MAX_ALERTS_PER_ACCOUNT,
  MAX_DELIVERIES_PAGE,
  type Alert,
  type AlertDelivery,
  type AlertDeliveryPage,
} from '../../services/alerts.js';
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

const CreateAlertInput = builder.inputType('CreateAlertInput', {
  description:
    'A registration (REST: the POST /alerts body, in snake_case). kind price: marketCode, side (ask|bid), direction (above|below), level (decimal string in the market\'s currency). kind route_margin: buyMarket, sellMarket, margin (decimal fraction string).',
  fields: (t) => ({
    kind: t.string({ required: true, description: 'price or route_margin.' }),
    marketHashName: t.string({ required: true }),
    appId: t.string({ required: false, description: 'Default 730.' }),
    marketCode: t.string({ required: false }),
    side: t.string({ required: false }),
    direction: t.string({ required: false }),
    level: t.string({ required: false }),
    buyMarket: t.string({ required: false }),
    sellMarket: t.string({ required: false }),
    margin: t.string({ required: false }),
    fund: t.string({ required: false, description: 'route_margin: cash (default) or balance.' }),
    payout: t.string({ required: false, description: 'route_margin: cash (default) or balance.' }),
    url: t.string({ required: true, description: 'The webhook URL (https; no credentials; at most 2,048 characters; a public host: no private, loopback or link-local address, no local name such as localhost).' }),
  }),
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
    args: {
      id: t.arg.string({ required: true }),
      limit: t.arg.int({ required: true, defaultValue: DEFAULT_DELIVERIES_PAGE, description: `At most ${MAX_DELIVERIES_PAGE}.` }),
      cursor: t.arg.string({ required: false, description: 'The previous page\'s nextCursor.' }),
    },
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
    args: { input: t.arg({ type: CreateAlertInput, required: true }) },
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
    args: { id: t.arg.string({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const caller = await ctx.requireUser('deleteAlert');
      return deleteAlert(ctx.db, caller.accountId, args.id);
    },
  }),
}));
