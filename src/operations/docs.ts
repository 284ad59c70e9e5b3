/**
 * The vocabulary of what /openapi.json tells people about each operation: the reference's sections (TAGS) and the
 * shape of an operation's documentation (`OperationDoc`: tag, summary, description, the example of its success
 * response and of its parameters), which each operation file of src/operations/ fills in. test/unit/openapi.test.ts
 * fails while an operation has no tag, a parameter no example or description, or an example does not match its
 * schema. Examples are real answers of the service over the bundled data (src/operations/examples.ts), trimmed.
 */
import * as ex from './examples.js';

/** The reference's sections, in the order it shows them; each operation names one. */
export const TAGS = [
  {
    name: 'Prices',
    description:
      'Current quotes of CS2 items per marketplace, each in the marketplace\'s own currency (never converted), and the CSCP valuation: one `mid` quote per item with market code `CSCP`, a weighted consensus in CNY refreshed daily. Needs an API key; metered in credits.',
  },
  { name: 'Items', description: 'Find items by the words of their market hash name: each hit with its kind and current CSCP quote. Needs an API key; metered in credits.' },
  {
    name: 'Change feed',
    description:
      'Every change of a published quote gets a sequence number. Download the export once, then follow the changes after its `change_seq`, by pages or as a live server-sent event stream: nothing missed, nothing twice.',
  },
  { name: 'Trade routes', description: 'Buy on one marketplace, sell on another: what each leg costs or pays after both markets\' official fees, in one currency, ranked by margin.' },
  {
    name: 'History',
    description: 'Daily, weekly or monthly candles of an item per marketplace, the imported Buff163 listing minimum and Steam sales, and the CSCP valuation series with its band.',
  },
  { name: 'Valuation', description: 'How accurate the CSCP valuation has been: each valuation day scored against the closes that followed it.' },
  { name: 'Catalogue', description: 'The marketplaces, their official fee schedules (calculation chains per purpose) and the official currencies with USD rates. Public and free.' },
  { name: 'Account', description: 'The caller\'s own account: profile, active subscription and credit counters.' },
  {
    name: 'Alerts',
    description:
      'Webhooks: register a condition on an item (a price crossing a level on a market, or a route\'s margin rising above a threshold) and an HTTPS URL; when the condition starts to hold the service POSTs a signed event there. Registration and listings are free; each event costs 1 credit, once (docs/alerts.md).',
  },
  { name: 'Service', description: 'Service health history, liveness, public configuration and the access and cost metadata of every operation. Public and free.' },
] as const;

/** A tag of TAGS. */
export type TagName = (typeof TAGS)[number]['name'];

/** One operation's documentation. */
export interface OperationDoc {
  /** Its section of the reference. */
  tag: TagName;
  /** A short title (no final period), shown in navigation. */
  summary: string;
  /** What it does for the caller (CommonMark): behaviour, defaults, billing, notable errors. */
  description: string;
  /** The 200 body as the service sends it (envelope included): a real answer, valid against the response schema. Omitted only for a non-JSON body (the event stream). */
  response?: unknown;
  /** Examples (and descriptions where the parameter's schema gives none) of this operation's own parameters, by name; the parameter's own declaration gives the rest. */
  parameters?: Record<string, ParameterDoc>;
  /** The request body example, for an operation with a JSON body. */
  requestBody?: unknown;
}

/** A parameter's example (a value the service accepts) and the description used when its schema gives none. */
export interface ParameterDoc {
  example: unknown;
  description?: string;
}

/** Meta of a free answer (no credit used). */
export const free = (data: unknown) => ({ data, meta: ex.META_FREE });
/** Meta of a free answer of a rate-limited operation (metered, so its meta says `billable: false`): the alerts. */
export const freeLimited = (data: unknown) => ({ data, meta: { ...ex.META_FREE, billable: false } });
/** Meta of a billed answer (1 credit): cost and the estimated balance after it. */
export const billed = (data: unknown) => ({ data, meta: ex.META_BILLED });
