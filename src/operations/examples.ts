/**
 * Examples of /openapi.json: what the service answers over the bundled data (data/), taken from its own answers
 * (the service started on the bundled data, the CSCP valuation of 2026-07-17 run, requests made at
 * 2026-07-17T08:00:00Z) and trimmed to a few entries per list. SCHEMA_EXAMPLES gives each named schema of the
 * document its example; the operation files (src/operations/) use the same values for whole answers and parameters.
 * test/unit/openapi.test.ts checks every example against its schema (and both linters do).
 *
 * Exceptions, said where they occur: the bundled fee data has no convert group (so its example is built from
 * the bundled CNY and USD currencies), and the status example is shaped like a running service's (the bundled
 * data holds no monitoring history).
 */

/** The item the examples follow. */
import { encodeSearchCursor, searchKey, searchWords } from '../search/query.js';

export const ITEM = 'AK-47 | Redline (Field-Tested)';

/** A request id (any UUID; equals header X-Request-ID). */
const REQUEST_ID = '5fedd70b-50e0-452c-b570-2b6baff38807';

/** Meta of a free answer. */
export const META_FREE = { request_id: REQUEST_ID };
/** Meta of a billed answer: 1 credit spent, 999 left. */
export const META_BILLED = { request_id: REQUEST_ID, billable: true, credit: { cost: 1, remaining: 999 } };

const aggregatorQuote = (market_code: string, side: 'ask' | 'bid', market_currency_code: string, market_price_amount: string) => ({
  market_code,
  provider_code: 'CSGOTRADER',
  side,
  market_currency_code,
  market_price_amount,
  quantity: null,
  is_quantity_minimum: null,
  is_all_items_same_price: null,
  changed_at: '2026-07-16T00:00:00.000Z',
  observed_at: '2026-07-16T00:00:00.000Z',
  delisted_at: null,
  fresh_at: '2026-07-16T00:00:00.000Z',
  valuation: null,
});

/** The CSCP valuation of the item on 2026-07-17 (docs/valuation.md). */
export const VALUATION = {
  valuation_date: '2026-07-17',
  credibility: 0.9205066997078198,
  uncertainty: 0.082831,
  is_two_sided: true,
  ask_amount: '212.125762',
  bid_amount: '191.302898',
  ask_quote_count: 5,
  bid_quote_count: 1,
};

/** The item's CSCP quote. */
export const CSCP_QUOTE = {
  market_code: 'CSCP',
  provider_code: 'CSCP',
  side: 'mid',
  market_currency_code: 'CNY',
  market_price_amount: '201.71433',
  quantity: null,
  is_quantity_minimum: null,
  is_all_items_same_price: null,
  changed_at: '2026-07-17T06:00:00.000Z',
  observed_at: null,
  delisted_at: null,
  fresh_at: '2026-07-17T06:00:00.000Z',
  valuation: VALUATION,
};

/** The item's BUFF163 ask (csgotrader feed of 2026-07-16: 29.82 USD x 6.768793219314014 = 201.85 CNY). */
export const BUFF163_ASK = aggregatorQuote('BUFF163', 'ask', 'CNY', '201.85');

/** GET /prices of the item with markets=BUFF163,SKINPORT,CSCP: sorted by market code then side. */
export const ITEM_PRICES = {
  app_id: '730',
  market_hash_name: ITEM,
  markets: [BUFF163_ASK, aggregatorQuote('BUFF163', 'bid', 'CNY', '198.19'), CSCP_QUOTE, aggregatorQuote('SKINPORT', 'ask', 'EUR', '27.14')],
};

/** A Buff163 quote taken from the marketplace itself (goods page of 2026-04-27), with its quantity. */
const buffDirect = (side: 'ask' | 'bid', market_price_amount: string, quantity: number) => ({
  market_code: 'BUFF163',
  provider_code: 'BUFF163',
  side,
  market_currency_code: 'CNY',
  market_price_amount,
  quantity,
  is_quantity_minimum: false,
  is_all_items_same_price: false,
  changed_at: '2026-04-27T11:09:00.000Z',
  observed_at: '2026-04-27T11:09:00.000Z',
  delisted_at: null,
  fresh_at: '2026-04-27T11:09:00.000Z',
  valuation: null,
});

/** POST /prices/batch body: two items on two markets. */
export const BATCH_REQUEST = { market_hash_names: [ITEM, 'Recoil Case'], markets: ['BUFF163', 'SKINPORT'] };

/** One item of a batch answer. */
export const BATCH_ITEM = { market_hash_name: ITEM, markets: [BUFF163_ASK, aggregatorQuote('BUFF163', 'bid', 'CNY', '198.19'), aggregatorQuote('SKINPORT', 'ask', 'EUR', '27.14')] };

/** POST /prices/batch answer to BATCH_REQUEST. */
export const BATCH_PRICES = {
  app_id: '730',
  side: 'all',
  items: [BATCH_ITEM, { market_hash_name: 'Recoil Case', markets: [buffDirect('ask', '2.59', 17237), buffDirect('bid', '2.6', 12352), aggregatorQuote('SKINPORT', 'ask', 'EUR', '0.32')] }],
};

const cscpQuote = (market_price_amount: string, valuation: Record<string, unknown>) => ({ ...CSCP_QUOTE, market_price_amount, valuation });

/** The ETag of the export below (send it back as If-None-Match). */
export const EXPORT_ETAG = '"l8K_SKs_HIDpXAuB_I14VeXoo2xMUHuEdSy1kdlNjsA"';

/** GET /prices/export?side=mid: the first items of the file (30,207 in all). */
export const EXPORT = {
  app_id: '730',
  side: 'mid',
  generated_at: '2026-07-17T08:00:00.000Z',
  change_seq: '316007',
  items: [
    {
      market_hash_name: "'Blueberries' Buckshot | NSWC SEAL",
      markets: [
        cscpQuote('103.584052', { valuation_date: '2026-07-17', credibility: 0.9218313405304887, uncertainty: 0.081393, is_two_sided: true, ask_amount: '111.511829', bid_amount: '95.656275', ask_quote_count: 5, bid_quote_count: 1 }),
      ],
    },
    {
      market_hash_name: "'Medium Rare' Crasswater | Guerrilla Warfare",
      markets: [
        cscpQuote('182.077773', { valuation_date: '2026-07-17', credibility: 0.8985373538999801, uncertainty: 0.106987, is_two_sided: true, ask_amount: '192.128691', bid_amount: '172.026855', ask_quote_count: 5, bid_quote_count: 1 }),
      ],
    },
  ],
};

/** One change of the feed: a valuation published. */
export const CHANGE = {
  seq: '316001',
  market_hash_name: 'Sticker Slab | woxic (Gold) | Austin 2025',
  market_code: 'CSCP',
  side: 'mid',
  quote: cscpQuote('61.71795', { valuation_date: '2026-07-17', credibility: 0.7286928254780289, uncertainty: 0.316503, is_two_sided: false, ask_amount: '80.602041', bid_amount: null, ask_quote_count: 1, bid_quote_count: 0 }),
};

/** GET /prices/changes?since=316000&limit=2: two valuations published by the run of 2026-07-17. */
export const PRICE_CHANGES = {
  app_id: '730',
  since: '316000',
  next_cursor: '316002',
  has_more: true,
  changes: [
    CHANGE,
    {
      seq: '316002',
      market_hash_name: 'Sticker Slab | xerolte (Holo) | Budapest 2025',
      market_code: 'CSCP',
      side: 'mid',
      quote: cscpQuote('11.921515', { valuation_date: '2026-07-17', credibility: 0.7806424847144154, uncertainty: 0.247638, is_two_sided: false, ask_amount: '14.714286', bid_amount: null, ask_quote_count: 1, bid_quote_count: 0 }),
    },
  ],
};

/** One official rate a route leg used. */
export const RATE_USED = { currency_code: 'CNY', usd_rate: '0.1463665176', rate_date: '2026-04-13' };
const RATE_USD = { currency_code: 'USD', usd_rate: '1', rate_date: '2026-04-13' };

/** One applied fee step: BUFF163's sale fee. */
export const APPLIED_FEE_STEP = {
  purpose: 'sale',
  kind: 'fee',
  operator: 'mul',
  value: '0.975',
  value_currency_code: null,
  amount_before: '201.85',
  currency_before: 'CNY',
  amount: '196.80375',
  currency_code: 'CNY',
  note: null,
};

const usdToCny = (amount_before: string, amount: string) => ({
  purpose: 'conversion',
  kind: 'official_rate',
  operator: null,
  value: '6.832163642321978698221074571770777717813',
  value_currency_code: null,
  amount_before,
  currency_before: 'USD',
  amount,
  currency_code: 'CNY',
  note: 'USD to CNY at the official USD rates',
});

/** The buy leg of a route: the CSFLOAT ask paid from a balance held there, in CNY. */
export const BUY_LEG = {
  market_code: 'CSFLOAT',
  side: 'ask',
  market_currency_code: 'USD',
  market_price_amount: '28.18',
  observed_at: '2026-07-16T00:00:00.000Z',
  fresh_at: '2026-07-16T00:00:00.000Z',
  age_seconds: 115200,
  credibility: 0.3968502629920499,
  path: 'balance',
  priced: true,
  amount: '192.530371440633359715869881432500516088',
  unknown_purposes: [],
  reason: null,
  steps: [usdToCny('28.18', '192.530371440633359715869881432500516088')],
  rates: [RATE_USD, RATE_USED],
  quantity: null,
  caller_fees: [],
};

/** The sell leg of a route: the BUFF163 ask after its sale fee, proceeds kept on the BUFF balance, in CNY. */
export const SELL_LEG = {
  market_code: 'BUFF163',
  side: 'ask',
  market_currency_code: 'CNY',
  market_price_amount: '201.85',
  observed_at: '2026-07-16T00:00:00.000Z',
  fresh_at: '2026-07-16T00:00:00.000Z',
  age_seconds: 115200,
  credibility: 0.3968502629920499,
  path: 'sale',
  priced: true,
  amount: '196.80375',
  unknown_purposes: [],
  reason: null,
  steps: [
    APPLIED_FEE_STEP,
    { purpose: 'sale', kind: 'convert', operator: 'auto', value: '0.1463665176', value_currency_code: null, amount_before: '196.80375', currency_before: 'CNY', amount: '28.805479538121', currency_code: 'USD', note: null },
    usdToCny('28.805479538121', '196.80375'),
  ],
  rates: [RATE_USED, RATE_USD],
  quantity: null,
  caller_fees: [],
};

/** The best route: buy on CSFLOAT, sell on BUFF163 (2.2 % margin, before the legs' age is considered). */
export const ROUTE = {
  buy: BUY_LEG,
  sell: SELL_LEG,
  status: 'priced',
  net_amount: '4.273378559366640284130118567499483912',
  margin: '0.022196',
  credibility: 0.3968502629920499,
  fee_source: 'official',
  hold_days: 7,
  hold_source: "Valve, Counter-Strike 2 update 'Season Two: Episode One' (2025-07-16, https://www.counter-strike.net/news) and Steam Support FAQ 'Trade Protection': every CS2 item received in a Steam trade or bought on the Steam Community Market is Trade Protected for 7 days (it cannot be traded on, sold on the Community Market or modified).",
  hold_note: "The market delivers a purchase by a Steam trade, so Steam's 7-day Trade Protection applies before the item can be traded on; a longer hold of the market's own is not documented in our sources.",
  quantity_known: false,
};

/** GET /prices/routes of the item in CNY, buying on YOUPIN or CSFLOAT and selling on BUFF163, balances on both sides (the first of 4 routes). */
export const ITEM_ROUTES = { app_id: '730', market_hash_name: ITEM, currency_code: 'CNY', fund: 'balance', payout: 'balance', routes: [ROUTE], unpriced_left_out: 0, left_out_reason: null };

/** One route of the market-wide scan. */
export const TOP_ROUTE = { app_id: '730', market_hash_name: ITEM, route: ROUTE };

/** GET /prices/routes/top in CNY with balances on both sides, the first of the routes found. */
export const TOP_ROUTES = { app_id: '730', currency_code: 'CNY', fund: 'balance', payout: 'balance', candidate_items: 100, routes: [TOP_ROUTE], unpriced_buy_markets: [], unpriced_sell_markets: ['CSMONEY', 'SKINPORT', 'YOUPIN'], left_out_reason: 'unknown official fee for selling (sale) on CSMONEY, SKINPORT, YOUPIN; give your own rates with fee_profile (GraphQL feeProfile)' };

const candle = (date: string, price: string) => ({ date, open: price, high: price, low: price, close: price, observations: 1, quantity: null, volume: null, delisted: false, days: 1 });

/** One daily candle of the BUFF163 ask. */
export const CANDLE = candle('2026-07-16', '201.85');

/** The BUFF163 ask series over the range. */
export const HISTORY_SERIES = {
  market_code: 'BUFF163',
  series: 'ask',
  side: 'ask',
  currency_code: 'CNY',
  candles: [candle('2026-07-11', '200.33'), candle('2026-07-12', '203.31'), candle('2026-07-13', '203.48'), candle('2026-07-14', '200.28'), CANDLE],
};

/** The CSCP point of 2026-07-17 with its band. */
export const CSCP_POINT = {
  date: '2026-07-17',
  mid: '201.71433',
  ask_amount: '212.125762',
  bid_amount: '191.302898',
  uncertainty: 0.082831,
  band_low: '185.6794',
  band_high: '219.134',
  is_two_sided: true,
};

/** GET /prices/history of the item, BUFF163 ask and bid and CSCP, 2026-07-10 to 07-17, by day. */
export const ITEM_HISTORY = {
  app_id: '730',
  market_hash_name: ITEM,
  from: '2026-07-10',
  to: '2026-07-17',
  interval: 'day',
  series: [
    HISTORY_SERIES,
    {
      market_code: 'BUFF163',
      series: 'bid',
      side: 'bid',
      currency_code: 'CNY',
      candles: [candle('2026-07-11', '201.28'), candle('2026-07-12', '200.33'), candle('2026-07-13', '197.44'), candle('2026-07-14', '196.28'), candle('2026-07-16', '198.19')],
    },
  ],
  cscp: [CSCP_POINT],
};

/** One segment of a scored day: every item. */
export const ACCURACY_SEGMENT = { segment: 'all', value: 'all', items: 29430, targets: 144833, median_error: 0.054774, p90_error: 0.478113, calibration: 0.714188 };

/** The scored day 2026-07-16 (recomputed: before the service published valuations), some of its segments. */
export const ACCURACY_DAY = {
  date: '2026-07-16',
  source: 'recomputed',
  segments: [
    ACCURACY_SEGMENT,
    { segment: 'target', value: 'ask', items: 29425, targets: 120843, median_error: 0.066049, p90_error: 0.556183, calibration: 0.740664 },
    { segment: 'target', value: 'bid', items: 23990, targets: 23990, median_error: 0.005247, p90_error: 0.136577, calibration: 0.515006 },
    { segment: 'band', value: 'over_100', items: 7719, targets: 38123, median_error: 0.040418, p90_error: 0.195159, calibration: 0.831939 },
  ],
};

/** GET /valuation/accuracy?from=2026-07-10&to=2026-07-17 (the last day scored; trimmed). */
export const VALUATION_ACCURACY = { from: '2026-07-10', to: '2026-07-17', calibration_target: 0.6827, days: [ACCURACY_DAY] };

/** WebsiteOut of BUFF163. */
export const WEBSITE = { code: 'BUFF163', name: 'BUFF', url: 'https://buff.163.com', category: 'marketplace', subCategory: 'p2p', is_deprecated: false };

/** GET /websites (the first entries). */
export const WEBSITES = [
  { code: 'BITSKINS', name: 'BitSkins', url: 'https://bitskins.com', category: 'marketplace', subCategory: 'p2p', is_deprecated: false },
  WEBSITE,
  { code: 'C5GAME', name: 'C5GAME', url: 'https://www.c5game.com', category: 'marketplace', subCategory: 'p2p', is_deprecated: false },
  { code: 'CSFLOAT', name: 'CSFloat', url: 'https://csfloat.com', category: 'marketplace', subCategory: 'p2p', is_deprecated: false },
];

/** The CNY and USD currencies as fee chains show them. */
export const PUBLIC_CNY = { id: 8, code: 'CNY', name: 'Chinese yuan renminbi', kind: 'fiat', usd_rate: '0.1463665176' };
const PUBLIC_USD = { id: 43, code: 'USD', name: 'US dollar', kind: 'fiat', usd_rate: '1' };

/** BUFF163's sale fee step. */
export const FEE_STEP = { kind: 'fee', id: 2, name: 'BUFF (buff.163.com) trade fee, CS2 (mul 0.975)', operator: 'mul', value: '0.975', currency_code: null };
/** The conversion step of BUFF163's chains. */
export const CONVERT_STEP = { kind: 'convert', id: 1, name: 'CNY to USD at official rates', from: PUBLIC_CNY, to: PUBLIC_USD, mode: 'auto', rate: null };
/**
 * A convert group: the bundled fee data has none, so this one is built from its CNY and USD currencies: the lower
 * of the official conversion and a fixed rate.
 */
export const CONVERT_GROUP_STEP = {
  kind: 'convert_operator_group',
  id: null,
  name: 'CNY to USD, the lower of the official and a fixed rate',
  rule: 'min',
  members: [CONVERT_STEP, { kind: 'convert', id: null, name: 'CNY to USD at 0.14', from: PUBLIC_CNY, to: PUBLIC_USD, mode: 'fixed', rate: '0.14' }],
};

/** BUFF163's sale chain. */
export const SALE_CHAIN = { id: 2, name: 'BUFF (buff.163.com) trade fee, CS2', start_currency: 'CNY', steps: [FEE_STEP, CONVERT_STEP] };
/** BUFF163's sale slot. */
export const SALE_SLOT = { purpose: 'sale', calculation_chain: SALE_CHAIN };

/** GET /websites/BUFF163/fee-schedule: no official deposit chain, a sale and a withdrawal fee. */
export const FEE_SCHEDULE = {
  website_code: 'BUFF163',
  slots: {
    deposit: null,
    sale: SALE_SLOT,
    withdraw: {
      purpose: 'withdraw',
      calculation_chain: {
        id: 3,
        name: 'BUFF withdrawal (cash-out) fee',
        start_currency: 'CNY',
        steps: [{ kind: 'fee', id: 3, name: 'BUFF withdrawal (cash-out) fee (mul 0.99)', operator: 'mul', value: '0.99', currency_code: null }, CONVERT_STEP],
      },
    },
  },
};

/** CurrencyOut of CNY. */
export const CURRENCY = { id: 8, code: 'CNY', name: 'Chinese yuan renminbi', kind: 'fiat', usd_rate: '0.1463665176', owner_user_id: null, is_official: true, ref_count: 1, is_deleted: false };

/** GET /currencies?search=CN. */
export const CURRENCIES = [CURRENCY];

/** GET /me of an account made with `quotegate account create --credits 1000` (nothing synced from the dashboard yet), after one GET /prices. */
export const ME = {
  user: { id: 'a5b6150f-bcea-413c-ba2e-aa6bedf54253', name: null, email: null, email_verified: null, image: null, steam_id: null, created_at: null, base_currency: null },
  subscription: null,
  credit: { total: 1000, used: 1, remaining: 999 },
};

/**
 * GET /status of a running service (shaped like one: the bundled data has no monitoring history): the hour
 * 2026-07-17 07:00 UTC scored, a 15-minute probe bucket, quotes received per market, checks passed.
 */
export const STATUS = {
  summary: { service: { '1784271600': '100.00' }, infrastructure: { '1784271600': '87.50' }, datasource: { '1784271600': '50.00' } },
  service: { web: { '1784274300': { ok: 3, total: 3, availability: '100.00', latency_ms: 41 } }, api: { '1784274300': { ok: 2, total: 3, availability: '66.67', latency_ms: 58 } }, api_cn: {}, monitor: {} },
  datasource: { realtime: { SKINPORT: { '1784275140': 212 } }, result: { BUFF163: { '1784271600': 3840 }, SKINPORT: { '1784271600': 12960 } } },
  infrastructure: { database: { '1784274900': { latency_ms: 2 } }, export: { '1784274900': { latency_ms: 9 } }, valuation: {}, ingestion: { '1784274900': { latency_ms: 4 } } },
  distribution: { '52.52,13.40': { node_count: 3, datacenter_count: 1 } },
};

/** GET /health. */
export const HEALTH = { status: 'ok' };
/** GET /config. */
export const CONFIG = { home_currency: 'USD' };

/** Two rows of GET /endpoints: a flat price and a price per block of names. */
export const ENDPOINTS = [
  { method: 'GET', path: '/prices', premium: false, credit_cost: 1, recommended_interval_seconds: 60, rate_limit: { max_requests: 120, window_seconds: 60 }, unit_pricing: null, roles: ['user'] },
  {
    method: 'POST',
    path: '/prices/batch',
    premium: false,
    credit_cost: 1,
    recommended_interval_seconds: 60,
    rate_limit: { max_requests: 20, window_seconds: 60 },
    unit_pricing: { unit_size: 100, units_body_field: 'market_hash_names', max_units: 1000 },
    roles: ['user'],
  },
];

/** A 422's problem. */
export const VALIDATION_DETAIL = { location: 'query', field: 'market_hash_name', message: 'must be 1-255 characters long' };
/** GET /prices?market_hash_name= (empty). */
export const VALIDATION_ERROR = {
  error: { code: 'validation_failed', message: 'The request has invalid parameters.', details: { errors: [VALIDATION_DETAIL] } },
  meta: { request_id: '9020f4ef-9729-4df2-aba4-2079681672b0', billable: false },
};
/** 402: the export costs 10 credits, 3 remain. */
export const CREDIT_ERROR = {
  error: { code: 'credit_insufficient', message: 'This request costs 10 credits; 3 remain.', details: { required: 10, remaining: 3 } },
  meta: { request_id: 'b704a5dc-d8a1-455b-95bc-e6b7386d4603', billable: false },
};

/**
 * GET /catalogue/items?q=ak47 redline ft&limit=1: the shortest name holding the three words in the bundled catalogue
 * (Souvenir and StatTrak™ ones follow), with its CSCP quote of 2026-07-17; the cursor as the service makes it.
 */
const SEARCH_WORDS = searchWords('ak47 redline ft');
export const SEARCH_HIT = { market_hash_name: ITEM, type: 'weapon', cscp: CSCP_QUOTE };
export const ITEM_SEARCH = {
  app_id: '730',
  q: 'ak47 redline ft',
  words: SEARCH_WORDS,
  items: [SEARCH_HIT],
  next_cursor: encodeSearchCursor('730', SEARCH_WORDS, { keyLength: searchKey(ITEM).length, name: ITEM }),
  has_more: true,
};


/** A price alert as GET /alerts lists it (POST /alerts answers it with its secret). */
export const ALERT = {
  id: '3f0c1f4e-8a57-4a4e-9d0b-6f1f6a2f9a10',
  kind: 'price',
  app_id: '730',
  market_hash_name: ITEM,
  market_code: 'BUFF163',
  side: 'ask',
  direction: 'below',
  level: '95.5',
  currency_code: 'CNY',
  buy_market: null,
  sell_market: null,
  margin: null,
  fund: null,
  payout: null,
  url: 'https://example.com/hooks/quotegate',
  holding: false,
  disabled: false,
  created_at: '2026-07-17T08:00:00.000Z',
};

/** POST /alerts: the body registering ALERT. */
export const ALERT_REQUEST = { kind: 'price', market_hash_name: ITEM, market_code: 'BUFF163', side: 'ask', direction: 'below', level: '95.5', url: 'https://example.com/hooks/quotegate' };

/** POST /alerts: the alert and its signing secret (shown once). */
export const ALERT_CREATED = { alert: ALERT, secret: 'whsec_q2VnT1n8aXb0Zl3oC4yR7uJmD6eK9wHs5tPfLgAiQzE' };

/** One row of an alert's delivery log: delivered at the second attempt after a 500. */
export const ALERT_DELIVERY = {
  id: '9b2d7c64-1e55-4f0b-8b43-2a9c4e7d1f08',
  status: 'delivered',
  attempts: 2,
  status_code: 200,
  error: null,
  response_excerpt: 'ok',
  charged: true,
  created_at: '2026-07-17T08:03:12.000Z',
  last_attempt_at: '2026-07-17T08:04:12.000Z',
  next_attempt_at: null,
  delivered_at: '2026-07-17T08:04:12.000Z',
};

/** GET /alerts/{id}/deliveries: one page of the log. */
export const ALERT_DELIVERIES = { alert_id: ALERT.id, deliveries: [ALERT_DELIVERY], next_cursor: '41', has_more: true };

/** The example of each named schema of /openapi.json, by its id. */
export const SCHEMA_EXAMPLES: Record<string, unknown> = {
  AlertOut: ALERT,
  AlertIn: ALERT_REQUEST,
  AlertCreatedOut: ALERT_CREATED,
  AlertDeliveryOut: ALERT_DELIVERY,
  AlertDeliveriesOut: ALERT_DELIVERIES,
  Meta: META_BILLED,
  CreditMeta: META_BILLED.credit,
  ErrorEnvelope: CREDIT_ERROR,
  ErrorDetails: CREDIT_ERROR.error.details,
  ValidationDetail: VALIDATION_DETAIL,
  ValidationDetails: VALIDATION_ERROR.error.details,
  ValidationErrorEnvelope: VALIDATION_ERROR,
  BatchPricesIn: BATCH_REQUEST,
  ConfigOut: CONFIG,
  HealthOut: HEALTH,
  CurrencyOut: CURRENCY,
  PublicCurrencyOut: PUBLIC_CNY,
  EndpointInfoOut: ENDPOINTS[0],
  SyncUserView: ME,
  ItemPricesOut: ITEM_PRICES,
  ExportQuoteLine: { market_hash_name: EXPORT.items[0]!.market_hash_name, ...EXPORT.items[0]!.markets[0]! },
  ItemSearchOut: ITEM_SEARCH,
  ItemHitOut: SEARCH_HIT,
  MarketQuoteOut: BUFF163_ASK,
  ValuationOut: VALUATION,
  BatchPricesOut: BATCH_PRICES,
  BatchItemOut: BATCH_ITEM,
  PriceChangesOut: PRICE_CHANGES,
  ChangeOut: CHANGE,
  ExportOut: EXPORT,
  ItemHistoryOut: ITEM_HISTORY,
  HistorySeriesOut: HISTORY_SERIES,
  CandleOut: CANDLE,
  CscpPointOut: CSCP_POINT,
  ItemRoutesOut: ITEM_ROUTES,
  TopRouteOut: TOP_ROUTE,
  TopRoutesOut: TOP_ROUTES,
  RouteOut: ROUTE,
  RouteLegOut: SELL_LEG,
  AppliedFeeStepOut: APPLIED_FEE_STEP,
  RateUsedOut: RATE_USED,
  StatusOut: STATUS,
  ValuationAccuracyOut: VALUATION_ACCURACY,
  AccuracyDayOut: ACCURACY_DAY,
  AccuracySegmentOut: ACCURACY_SEGMENT,
  WebsiteOut: WEBSITE,
  FeeScheduleOut: FEE_SCHEDULE,
  FeeScheduleSlotOut: SALE_SLOT,
  PublicCalculationChainOut: SALE_CHAIN,
  PublicFeeOperatorOut: FEE_STEP,
  PublicConvertOperatorOut: CONVERT_STEP,
  PublicConvertOperatorGroupOut: CONVERT_GROUP_STEP,
};
