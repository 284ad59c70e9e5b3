/**
 * What /openapi.json tells people about each operation, in one table: its tag, summary and description, the
 * example of its success response and the examples of its parameters (src/openapi/document.ts puts them in the
 * document). A new REST operation adds its entry to OPERATION_DOCS (and a tag to TAGS if none fits);
 * test/unit/openapi.test.ts fails while a routed operation has no entry, a parameter no example or description,
 * or an example does not match its schema. Examples are real answers of the service over the bundled data
 * (src/openapi/examples.ts), trimmed to a few entries.
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
  /** Examples (and descriptions where the parameter's schema gives none) of this operation's own parameters, by name; PARAMETERS gives the rest. */
  parameters?: Record<string, ParameterDoc>;
  /** The request body example, for an operation with a JSON body. */
  requestBody?: unknown;
}

/** A parameter's example (a value the service accepts) and the description used when its schema gives none. */
export interface ParameterDoc {
  example: unknown;
  description?: string;
}

/** Parameters shared by several operations, by name: the default example and description. */
export const PARAMETERS: Record<string, ParameterDoc> = {
  market_hash_name: { example: ex.ITEM, description: "The item's market hash name: exact and case-sensitive, 1-255 characters." },
  app_id: { example: '730', description: 'Game application id, 1-16 characters; default 730 (CS2).' },
  markets: { example: 'BUFF163,SKINPORT,CSCP', description: 'Comma-separated market codes (GET /websites); CSCP selects the valuation. Default: every market.' },
  side: { example: 'all', description: 'ask: sell listings; bid: buy orders; mid: the CSCP valuation; all (default): every side.' },
  code: { example: 'BUFF163', description: 'A marketplace code as GET /websites lists it.' },
  since: { example: '316000', description: 'A change sequence number: an export\'s change_seq or a page\'s next_cursor.' },
  from: { example: '2026-07-10' },
  to: { example: '2026-07-17' },
};

/** Meta of a free answer (no credit used). */
const free = (data: unknown) => ({ data, meta: ex.META_FREE });
/** Meta of a free answer of a rate-limited operation (metered, so its meta says `billable: false`): the alerts. */
const freeLimited = (data: unknown) => ({ data, meta: { ...ex.META_FREE, billable: false } });
/** Meta of a billed answer (1 credit): cost and the estimated balance after it. */
const billed = (data: unknown) => ({ data, meta: ex.META_BILLED });

/** Every REST operation's documentation, by operation id (data/endpoints.json). */
export const OPERATION_DOCS: Record<string, OperationDoc> = {
  getPrices: {
    tag: 'Prices',
    summary: 'Quotes of one item',
    description:
      'The current quotes of one item on every marketplace: at most one per market and side, sorted by market code then side, each in the market\'s own currency. When several sources report a market, a listed quote wins over a delisted one, then data taken from the marketplace itself over an aggregator, then the most recently confirmed. An item with enough market data also has its CSCP valuation (market `CSCP`, side `mid`, CNY) with the `valuation` object.\n\n' +
      '1 credit per answer (`meta.credit`); 404 when the item has no quote at all for `app_id` (not charged); when `markets` or `side` exclude every quote, 200 with empty `markets`.',
    response: billed(ex.ITEM_PRICES),
  },
  batchPrices: {
    tag: 'Prices',
    summary: 'Quotes of up to 1,000 items',
    description:
      'The quotes of many items in one request: one `items` entry per requested name, in request order (duplicates keep their own entries), each with the same quotes GET /prices gives. An unknown name is not an error: its `markets` is empty (this operation never answers 404). `markets` and `side` filter every item alike.\n\n' +
      '1 credit per started block of 100 names, counted over the whole list; checked before the lookup (402 when the balance is too low) and charged only on success.',
    requestBody: ex.BATCH_REQUEST,
    response: billed(ex.BATCH_PRICES),
  },
  exportPrices: {
    tag: 'Prices',
    summary: 'Download every quote of a game',
    description:
      'One file with every item that has a quote on the requested side (default `ask`; `mid` exports only the valuations), ordered by market hash name: a snapshot rebuilt every few minutes, sent gzip-compressed and not enveloped. Billing travels in headers (`X-Billable`, `X-Credit-Cost`, `X-Credit-Remaining`).\n\n' +
      'Send the received `ETag` back as `If-None-Match`: while the snapshot is unchanged the answer is 304 without a body, never billed. Every 200 costs 10 credits. `change_seq` (also header `X-Change-Sequence`) is where to start following GET /prices/changes. 503 `dependency_unavailable`: the first snapshot is not built yet; retry in a minute.\n\n' +
      'Extension: `format=ndjson` sends the same quotes one per line (ExportQuoteLine), with its own ETag. A HEAD answers the headers only: never billed and not counted towards the rate limit.',
    response: ex.EXPORT,
    parameters: {
      side: { example: 'mid', description: 'ask (default), bid, mid (only the valuations: a much smaller file) or all.' },
      format: { example: 'ndjson' },
      'if-none-match': { example: ex.EXPORT_ETAG, description: 'The ETag of the file received last: 304 (not billed) while the snapshot is unchanged.' },
    },
  },
  getPriceChanges: {
    tag: 'Change feed',
    summary: 'Quotes changed after a cursor',
    description:
      'The changes after `since`, in sequence order: each names the item, market and side that changed and carries the quote as GET /prices serves it now (null when none is served any more); a quote changed twice within a page appears once, at its last sequence number. Pass `next_cursor` as the next `since`; `has_more` says to ask again at once.\n\n' +
      'Start from an export\'s `change_seq`. Changes are kept 24 hours: an older cursor is 410 `cursor_expired` (download the export again). 1 credit per page, however many changes it holds.',
    response: billed(ex.PRICE_CHANGES),
    parameters: { since: { example: '316000' }, limit: { example: '2' } },
  },
  subscribePriceChanges: {
    tag: 'Change feed',
    summary: 'Live stream of quote changes',
    description:
      'The change sequence pushed as it commits, as server-sent events: event `change` with `id` = its sequence number and `data` = a ChangeOut. With `since` (or `Last-Event-ID`) the changes after it are replayed first, so a reconnecting `EventSource` misses nothing. A `: ping` comment follows 15 s without an event.\n\n' +
      'Refusals come before the stream starts, in the error envelope (401, 402, 403, 410, 422, 429 `rate_limited` or `too_many_subscriptions`). Once streaming, a terminal event `error` carries the envelope (`slow_consumer`, `credit_insufficient`, `dependency_unavailable`) before the stream closes. 1 credit per started minute connected, the first up front.',
    parameters: { since: { example: '316000' }, market_hash_name: { example: [ex.ITEM, 'Recoil Case'] }, 'last-event-id': { example: '316002' } },
  },
  getRoutes: {
    tag: 'Trade routes',
    summary: 'Buy-here-sell-there routes of one item',
    description:
      'Every pair of a market to buy on (its ask) and a market to sell on (its ask or bid) for one item, with what the purchase costs and the sale pays after each market\'s official fees, every amount converted at official rates into `currency`. Each leg lists its fee steps with the running amount and the rates it used. Routes are ranked by margin; a route with an unknown fee is `unpriced` (an unknown fee is never free): it is left out and counted in `unpriced_left_out` unless `include_unpriced=true`, and `fee_profile` prices it with your own rates (`fee_source: caller`). Each route gives its trade hold (`hold_days`, days before the item bought can be sold on the sell market, with its source); `min_quantity` drops routes whose quotes report fewer items.\n\n' +
      '`fund` and `payout` say whether money moves through the markets\' deposit and withdrawal fees (cash) or stays on a balance there. 1 credit per answer; 404 when the item has no quotes.',
    response: billed(ex.ITEM_ROUTES),
    parameters: {
      currency: { example: 'CNY' },
      buy_on: { example: 'YOUPIN,CSFLOAT' },
      sell_on: { example: 'BUFF163' },
      fund: { example: 'balance' },
      payout: { example: 'balance' },
      min_credibility: { example: '0.25' },
      min_quantity: { example: '2' },
      fee_profile: { example: 'C5GAME:sale=0.025,withdraw=0.01;YOUPIN:sale=0.01' },
      include_unpriced: { example: 'false' },
    },
  },
  getTopRoutes: {
    tag: 'Trade routes',
    summary: 'The best routes across the catalogue',
    description:
      'The best priced route of each item, across every item of the app, ranked by margin (then net), at most `limit` (1-100). The options are those of GET /prices/routes plus `min_margin`; only priced routes are ranked (give `fee_profile` to price markets whose official fees are unknown). Method (docs/fees.md, The market-wide scan): PostgreSQL pre-selects the candidate items by an estimate of their margin (cheapest ask and best sale in USD, each market\'s fees as a factor), then the candidates\' routes are priced exactly; `candidate_items` says how many. 5 credits per answer; 422 for each bad parameter (never billed).',
    response: billed(ex.TOP_ROUTES),
    parameters: {
      currency: { example: 'CNY' },
      fund: { example: 'balance' },
      payout: { example: 'balance' },
      min_credibility: { example: '0.25' },
      buy_on: { example: 'YOUPIN,CSFLOAT' },
      sell_on: { example: 'BUFF163' },
      min_margin: { example: '0.02' },
      min_quantity: { example: '2' },
      limit: { example: '20' },
      fee_profile: { example: 'C5GAME:sale=0.025,withdraw=0.01' },
    },
  },
  getPriceHistory: {
    tag: 'History',
    summary: 'Price history of one item',
    description:
      'An item\'s candles per market (open, high, low, close, observations, last quantity) and its CSCP valuation series with the band mid x e^(-u) to mid x e^(+u), per day, ISO week (dated by its Monday) or month (dated by its first day). Imported series are labelled: `listing_minimum` (Buff163 archive 2021-07 to 2024-02, a minimum listing price, never an ask) and `sales` (Steam daily sales, USD, with units sold in `volume`).\n\n' +
      'Range: `to` defaults to today, `from` to the longest span the interval allows (366 days by day, 1,830 by week, 3,660 by month). A bad date, a reversed or too long range is 422; an item never seen is 404. 1 credit per answer.',
    response: billed(ex.ITEM_HISTORY),
    parameters: { markets: { example: 'BUFF163,CSCP' }, from: { example: '2026-07-10' }, to: { example: '2026-07-17' }, interval: { example: 'day' } },
  },
  searchItems: {
    tag: 'Items',
    summary: 'Search the item catalogue',
    description:
      'Items whose market hash name holds every word of `q`, in any order, ignoring case, punctuation and spacing; the usual abbreviations are spelled out (FT, MW, FN, WW, BS; ST for StatTrak; souvenir; the star). Shortest names first, then by name. Each hit has its kind and its current CSCP quote (null before its first valuation).\n\n' +
      'Page with `limit` and `cursor` (the previous page\'s `next_cursor`, with the same `q` and `app_id`; another search\'s cursor is 422). 1 credit per page, an empty one included. docs/search.md has the rules.',
    response: billed(ex.ITEM_SEARCH),
    parameters: {
      q: { example: 'ak47 redline ft' },
      limit: { example: '1' },
      cursor: { example: ex.ITEM_SEARCH.next_cursor },
    },
  },
  getValuationAccuracy: {
    tag: 'Valuation',
    summary: 'Accuracy of the CSCP valuation',
    description:
      'Each valuation day, scored once it has passed against that day\'s closes (fees included), per segment: all items; by target side; one- or two-sided; by price band; by item type. For each: the items and targets scored, the median and 90th-percentile error |ln(target / valuation)| and the calibration, the share of targets inside valuation x e^(+-uncertainty), which the uncertainty promises to be 0.6827.\n\n' +
      'A target scored against its side\'s only input (a side valued from one market, scored against that market\'s own close) measures that market\'s move over a day, not the consensus: such targets have their own segments, target `ask_only_input` and `bid_only_input`, and are left out of every other figure.\n\n' +
      '`source` says whether the day\'s published valuations were scored or, before the service published any, the valuations it would have published from the closes before that day. Default range (neither `from` nor `to`): the 90 days ending at the last scored day; at most 366 days. Public and free.',
    response: free(ex.VALUATION_ACCURACY),
  },
  listWebsites: {
    tag: 'Catalogue',
    summary: 'List marketplaces',
    description: 'Every supported marketplace, ordered by code. Deprecated marketplaces are hidden unless `include_deprecated=true`; then they appear with `is_deprecated: true`.',
    response: free(ex.WEBSITES),
    parameters: { include_deprecated: { example: 'false', description: 'true: deprecated marketplaces too. Default false.' } },
  },
  getWebsite: {
    tag: 'Catalogue',
    summary: 'One marketplace',
    description: 'The marketplace with this code, deprecated ones included. 404 when no marketplace has the code.',
    response: free(ex.WEBSITE),
  },
  getFeeSchedule: {
    tag: 'Catalogue',
    summary: "A marketplace's fee schedule",
    description:
      'The official fees of a marketplace as calculation chains, one slot per purpose: `deposit` (paying money in), `sale` (what a sale pays) and `withdraw` (cashing out). A slot is null when no official chain is published for it: the fee is unknown or the purpose not offered, never free. Each chain lists its steps in order: fees (add, sub, mul, div) and conversions at official rates.\n\n' +
      '`as_of` gives the schedule in force that day: a fee change makes a new version and older days keep theirs. 404 when no marketplace has the code.',
    response: free(ex.FEE_SCHEDULE),
    parameters: { as_of: { example: '2026-07-17' } },
  },
  listCurrencies: {
    tag: 'Catalogue',
    summary: 'List official currencies',
    description: 'The official currencies with their USD rates (`usd_rate`: US dollars per unit), ordered by code. `search` keeps the codes containing it, case-insensitively.',
    response: free(ex.CURRENCIES),
    parameters: { search: { example: 'CN', description: 'Case-insensitive substring of the currency code; omitted: every currency.' } },
  },
  getCurrency: {
    tag: 'Catalogue',
    summary: 'One currency',
    description: 'The currency with this id (the `id` field GET /currencies gives). 404 when the id does not exist, was deleted or is not an official currency.',
    response: free(ex.CURRENCY),
    parameters: { currency_id: { example: ex.CURRENCY.id, description: 'The currency\'s `id`, a whole number.' } },
  },
  getMe: {
    tag: 'Account',
    summary: 'Your account',
    description:
      'The account of the API key: profile, the subscription active now (null when none) and the credit counters billing is applied against. Changes made in the dashboard show within about a minute. 404: the account has not reached the API yet; retry shortly. Free.',
    response: free(ex.ME),
  },
  createAlert: {
    tag: 'Alerts',
    summary: 'Register a webhook alert',
    description:
      "Registers a condition and the URL told when it starts to hold. `kind` price: `market_code`, `side` (ask or bid), `direction` (above or below) and `level`, a decimal string in the market's currency (`currency_code` of the answer). `kind` route_margin: `buy_market`, `sell_market` and `margin`, a decimal fraction (0.05 = 5 %), judged on the best route between the two markets after fees (cash in, cash out; as GET /prices/routes computes it). Events fire on crossing: when the condition turns from not holding to holding; an alert whose condition already holds at registration fires after it stops holding and crosses again.\n\n" +
      'The URL must use https (no user name or password, at most 2,048 characters) and point at a public host: an IP address in a private, loopback, link-local or other non-public range, or a name such as `localhost`, is refused (422 on `url`), and each delivery connects only to public addresses of the name (docs/alerts.md). The answer carries `secret` (whsec_...), which signs every delivery: it is shown this once. At most 50 alerts per account: 409 `conflict` beyond. 422 for a bad field, an unknown item or an unknown market. Free (30 a minute per account, with GraphQL createAlert); each event costs 1 credit, once, at its first attempt that reaches the receiver.',
    requestBody: ex.ALERT_REQUEST,
    response: freeLimited(ex.ALERT_CREATED),
  },
  listAlerts: {
    tag: 'Alerts',
    summary: 'Your alerts',
    description: "The account's alerts, newest first (all of them: at most 50). `holding` is the condition's state at the last evaluation; `disabled` is true once the receiver answered 410 Gone. The signing secret is never listed. Free (60 a minute per account).",
    response: freeLimited([ex.ALERT]),
  },
  deleteAlert: {
    tag: 'Alerts',
    summary: 'Delete an alert',
    description: "Deletes the alert and its delivery log; events not yet delivered are not sent. Answers the alert as it was. 404 for an id that is not one of the account's alerts. Free (30 a minute per account).",
    parameters: { id: { example: ex.ALERT.id, description: 'The alert id (GET /alerts).' } },
    response: freeLimited(ex.ALERT),
  },
  listAlertDeliveries: {
    tag: 'Alerts',
    summary: "An alert's delivery log",
    description:
      'The events of the alert and their deliveries, newest first: status (pending, delivered, failed), attempts, the last status code and error, the start of the last answer (at most 256 characters), whether the event was charged (an attempt that never reached the receiver, such as a refused connection or an address the SSRF guard refused, is not). Failed attempts are retried after 1 min, 5 min, 30 min, 2 h and 6 h; then the event fails. 404 for another account\'s alert. Free (60 a minute per account).',
    parameters: {
      id: { example: ex.ALERT.id, description: 'The alert id (GET /alerts).' },
      limit: { example: '20', description: 'Rows per page, 1-100 (default 20).' },
      cursor: { example: '41', description: "The previous page's next_cursor." },
    },
    response: freeLimited(ex.ALERT_DELIVERIES),
  },
  getStatus: {
    tag: 'Service',
    summary: 'Service health history',
    description:
      'Recorded monitoring data (a history view, not a live probe): hourly scores per area, 15-minute service probes, quotes received per market, infrastructure checks and where the collectors\' proxies are. Components or buckets without data are empty or absent, never zero. 503 when the monitoring data cannot be read: partial results are never returned.',
    response: free(ex.STATUS),
  },
  getHealth: {
    tag: 'Service',
    summary: 'Liveness',
    description: 'Answers while the process serves requests. It checks no database or other dependency, so a 200 does not promise that the data operations work (see GET /status). A bare object, without the envelope.',
    response: ex.HEALTH,
  },
  getConfig: {
    tag: 'Service',
    summary: 'Public configuration',
    description: "The service's public settings: the home currency. The caller's own base currency is an account setting (GET /me). Sent with `Cache-Control: no-store`.",
    response: free(ex.CONFIG),
  },
  listEndpoints: {
    tag: 'Service',
    summary: 'Access and cost of every operation',
    description:
      'One entry per method and path of every documented operation, sorted by path then method: who may call it, what it costs in credits (per request or per block of units), its rate limit and the recommended polling interval. The same data is each operation\'s `x-quotegate` extension in this document.',
    response: free(ex.ENDPOINTS),
  },
};
