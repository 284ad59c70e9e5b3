/**
 * The alert shapes (issue 44, point 3; docs/alerts.md), defined once: the OpenAPI document serves them, the REST
 * documents select their fields from them, the GraphQL types are derived from them and the tests read their keys.
 */
import { z } from 'zod';
import { decimal, timestamp } from './quote.js';

/** A registered alert as GET /alerts lists it (the signing secret is never part of it). */
export const AlertOut = z
  .strictObject({
    id: z.string().meta({ description: 'The alert id (a UUID).' }),
    kind: z.enum(['price', 'route_margin']).meta({ description: "price: an item's quote crossing a level on a market; route_margin: the best route between two markets above a margin." }),
    app_id: z.string(),
    market_hash_name: z.string(),
    market_code: z.string().nullable().meta({ description: 'price: the market whose quote is watched.' }),
    side: z.string().nullable().meta({ description: 'price: ask or bid.' }),
    direction: z.string().nullable().meta({ description: 'price: above (fires when the price rises above the level) or below.' }),
    level: decimal.nullable().meta({ description: "price: the level, in the market's currency (currency_code)." }),
    currency_code: z.string().nullable().meta({ description: "price: the market's currency, the level's unit." }),
    buy_market: z.string().nullable().meta({ description: 'route_margin: the market bought on (at its ask).' }),
    sell_market: z.string().nullable().meta({ description: 'route_margin: the market sold on (its ask or bid, whichever route is better).' }),
    margin: decimal.nullable().meta({ description: 'route_margin: the threshold, a fraction (0.05 = 5 %); fires when the margin rises above it.' }),
    fund: z.string().nullable().meta({ description: 'route_margin: cash (the buy pays the deposit fees) or balance, as GET /prices/routes `fund`.' }),
    payout: z.string().nullable().meta({ description: 'route_margin: cash (sale then withdraw fees) or balance (sale fees only), as GET /prices/routes `payout`.' }),
    url: z.string().meta({ description: 'The webhook URL.' }),
    holding: z.boolean().meta({ description: 'Whether the condition held at the last evaluation (an event fires when it turns true).' }),
    disabled: z.boolean().meta({ description: 'True once the receiver answered 410 Gone: the alert is no longer evaluated (delete it and register again).' }),
    created_at: timestamp,
  })
  .meta({ id: 'AlertOut' });

/** POST /alerts: the alert and its signing secret, shown this once. */
export const AlertCreatedOut = z
  .strictObject({
    alert: AlertOut,
    secret: z.string().meta({ description: 'The signing secret (whsec_...): shown once, never again. Verify each delivery with it (docs/alerts.md).' }),
  })
  .meta({ id: 'AlertCreatedOut' });

/** One event of an alert and its delivery (the delivery log). */
export const AlertDeliveryOut = z
  .strictObject({
    id: z.string().meta({ description: 'The delivery id, sent as the Quotegate-Delivery header (a UUID).' }),
    status: z.enum(['pending', 'delivered', 'failed']).meta({ description: 'pending: an attempt is due at next_attempt_at; delivered: a 2xx answered; failed: given up (see error).' }),
    attempts: z.number().int().meta({ description: 'Attempts made so far (those that never reached the receiver included).' }),
    status_code: z.number().int().nullable().meta({ description: "The last attempt's HTTP status; null when none answered." }),
    error: z.string().nullable().meta({ description: 'Why the last attempt failed: http_<status>, timeout, connection_error, dns_error, address not allowed: <address> (the SSRF guard refused the host\'s address), gone (410: the alert was disabled), insufficient_credits, alert_disabled; null after a success.' }),
    response_excerpt: z.string().nullable().meta({ description: "The start of the last answer's body (at most 256 characters)." }),
    charged: z.boolean().meta({ description: 'True once the event was charged (1 credit, once, at its first attempt that reached the receiver; attempts that never connected are free).' }),
    created_at: timestamp,
    last_attempt_at: timestamp.nullable(),
    next_attempt_at: timestamp.nullable().meta({ description: 'When the next attempt is due; null when no more will be made.' }),
    delivered_at: timestamp.nullable(),
  })
  .meta({ id: 'AlertDeliveryOut' });

/** GET /alerts/{id}/deliveries: one page of the delivery log, newest first. */
export const AlertDeliveriesOut = z
  .strictObject({
    alert_id: z.string(),
    deliveries: z.array(AlertDeliveryOut),
    next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next (older) page; null on the last page.' }),
    has_more: z.boolean(),
  })
  .meta({ id: 'AlertDeliveriesOut' });
