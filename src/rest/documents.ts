/**
 * The GraphQL documents behind the REST routes. Aliases give each field its REST name, so a
 * document's result is already the documented JSON shape (spec field names are exact). Quotes are
 * selected as `marketsJson`: the text `quoteJson` (services/quotes.ts) wrote once per cached quote.
 */
import { CurrencyOut, FeeScheduleOut, selectionOf, WebsiteOut } from '../shapes/catalogue.js';
import { ItemRoutesOut, TopRoutesOut } from '../shapes/routes.js';
import { ItemHistoryOut } from '../shapes/history.js';
import { ValuationAccuracyOut } from '../shapes/valuation-accuracy.js';
import { AlertDeliveriesOut, AlertOut } from '../shapes/alerts.js';

const WEBSITE_FIELDS = selectionOf(WebsiteOut);

const CURRENCY_FIELDS = selectionOf(CurrencyOut);

const ALERT_FIELDS = selectionOf(AlertOut);

/** Document text per operation id of the endpoint catalogue. */
export const DOCUMENTS = {
  getHealth: `query getHealth { health { status } }`,
  getConfig: `query getConfig { config { home_currency: homeCurrency } }`,
  getStatus: `query getStatus { status }`,
  listEndpoints: `query listEndpoints { endpoints {
    method path premium credit_cost: creditCost recommended_interval_seconds: recommendedIntervalSeconds
    rate_limit: rateLimit { max_requests: maxRequests window_seconds: windowSeconds }
    unit_pricing: unitPricing { unit_size: unitSize units_body_field: unitsBodyField max_units: maxUnits }
    roles } }`,
  listWebsites: `query listWebsites($includeDeprecated: Boolean!) { websites(includeDeprecated: $includeDeprecated) { ${WEBSITE_FIELDS} } }`,
  getWebsite: `query getWebsite($code: String!) { website(code: $code) { ${WEBSITE_FIELDS} } }`,
  getFeeSchedule: `query getFeeSchedule($code: String!, $asOf: Date) { website(code: $code) { feeSchedule(asOf: $asOf) { ${selectionOf(FeeScheduleOut)} } } }`,
  listCurrencies: `query listCurrencies($search: String) { currencies(search: $search) { ${CURRENCY_FIELDS} } }`,
  getCurrency: `query getCurrency($id: Int!) { currency(id: $id) { ${CURRENCY_FIELDS} } }`,
  getPrices: `query getPrices($marketHashName: String!, $appId: String!, $markets: [String!], $side: SideFilter!) {
    prices(marketHashName: $marketHashName, appId: $appId, markets: $markets, side: $side) {
      app_id: appId market_hash_name: marketHashName markets: marketsJson } }`,
  batchPrices: `query batchPrices($marketHashNames: [String!]!, $appId: String!, $markets: [String!], $side: SideFilter!) {
    batchPrices(marketHashNames: $marketHashNames, appId: $appId, markets: $markets, side: $side) {
      app_id: appId side items { market_hash_name: marketHashName markets: marketsJson } } }`,
  getRoutes: `query getRoutes($marketHashName: String!, $appId: String!, $currency: String!, $buyOn: [String!], $sellOn: [String!], $fund: RouteFunding!, $payout: RoutePayout!, $minCredibility: Float!, $minQuantity: Int, $feeProfile: [CallerFeeInput!], $includeUnpriced: Boolean!) {
    routes(marketHashName: $marketHashName, appId: $appId, currency: $currency, buyOn: $buyOn, sellOn: $sellOn, fund: $fund, payout: $payout, minCredibility: $minCredibility, minQuantity: $minQuantity, feeProfile: $feeProfile, includeUnpriced: $includeUnpriced) {
      ${selectionOf(ItemRoutesOut)} } }`,
  getTopRoutes: `query getTopRoutes($appId: String!, $currency: String!, $buyOn: [String!], $sellOn: [String!], $fund: RouteFunding!, $payout: RoutePayout!, $minCredibility: Float!, $minQuantity: Int, $feeProfile: [CallerFeeInput!], $minMargin: String, $limit: Int!) {
    topRoutes(appId: $appId, currency: $currency, buyOn: $buyOn, sellOn: $sellOn, fund: $fund, payout: $payout, minCredibility: $minCredibility, minQuantity: $minQuantity, feeProfile: $feeProfile, minMargin: $minMargin, limit: $limit) {
      ${selectionOf(TopRoutesOut)} } }`,
  getPriceHistory: `query getPriceHistory($marketHashName: String!, $appId: String!, $markets: [String!], $side: SideFilter!, $from: Date, $to: Date, $interval: HistoryInterval!) {
    priceHistory(marketHashName: $marketHashName, appId: $appId, markets: $markets, side: $side, from: $from, to: $to, interval: $interval) {
      ${selectionOf(ItemHistoryOut)} } }`,
  getPriceChanges: `query getPriceChanges($appId: String!, $since: String, $markets: [String!], $side: SideFilter!, $limit: Int!) {
    priceChanges(appId: $appId, since: $since, markets: $markets, side: $side, limit: $limit) {
      app_id: appId since next_cursor: nextCursor has_more: hasMore
      changes { seq market_hash_name: marketHashName market_code: marketCode side quote: quoteJson } } }`,
  subscribePriceChanges: `subscription subscribePriceChanges($appId: String!, $names: [String!], $markets: [String!], $side: SideFilter!, $since: String) {
    quoteChanged(appId: $appId, marketHashNames: $names, markets: $markets, side: $side, since: $since) {
      seq market_hash_name: marketHashName market_code: marketCode side quote: quoteJson } }`,
  searchItems: `query searchItems($search: String!, $first: Int!, $after: String, $appId: String!) {
    items(search: $search, first: $first, after: $after, appId: $appId) {
      app_id: appId q: search words items: hits { market_hash_name: marketHashName type cscp: cscpJson } next_cursor: nextCursor has_more: hasMore } }`,
  getValuationAccuracy: `query getValuationAccuracy($from: Date, $to: Date) { valuationAccuracy(from: $from, to: $to) { ${selectionOf(ValuationAccuracyOut)} } }`,
  exportPrices: `query exportPrices($appId: String!, $side: SideFilter!, $format: ExportFormat!, $ifNoneMatch: String) {
    priceExport(appId: $appId, side: $side, format: $format, ifNoneMatch: $ifNoneMatch) {
      snapshotId format etag generatedAt changeSeq byteSize notModified } }`,
  getMe: `query getMe { me {
    user { id name email email_verified: emailVerified image steam_id: steamId created_at: createdAt base_currency: baseCurrency }
    subscription { category plan_id: planId expires_at: expiresAt }
    credit { total used remaining } } }`,
  createAlert: `mutation createAlert($input: CreateAlertInput!) { createAlert(input: $input) { alert { ${ALERT_FIELDS} } secret } }`,
  listAlerts: `query listAlerts { alerts { ${ALERT_FIELDS} } }`,
  deleteAlert: `mutation deleteAlert($alertId: String!) { deleteAlert(id: $alertId) { ${ALERT_FIELDS} } }`,
  listAlertDeliveries: `query listAlertDeliveries($alertId: String!, $limit: Int!, $cursor: String) {
    alertDeliveries(id: $alertId, limit: $limit, cursor: $cursor) { ${selectionOf(AlertDeliveriesOut)} } }`,
} as const;

/** The GraphiQL example: every website with its full fee schedule in one request. */
export const GRAPHIQL_EXAMPLE = `# Every marketplace with its full official fee schedule, in one request.
# Prices need an API key: add the header {"Authorization": "Bearer qg_..."} below.
query WebsitesWithFeeSchedules {
  websites(includeDeprecated: true) {
    code
    name
    isDeprecated
    feeSchedule {
      slots {
        deposit { ...Slot }
        sale { ...Slot }
        withdraw { ...Slot }
      }
    }
  }
}

fragment Slot on FeeScheduleSlot {
  purpose
  calculationChain {
    id
    name
    startCurrency
    steps {
      kind
      id
      name
      ... on FeeOperatorStep { operator value currencyCode }
      ... on ConvertOperatorStep { mode rate from { code usdRate } to { code usdRate } }
      ... on ConvertOperatorGroupStep { rule members { mode rate from { code } to { code } } }
    }
  }
}
`;
