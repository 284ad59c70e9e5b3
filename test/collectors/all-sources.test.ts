/**
 * Every collector source of the registry, end to end (issue 42): one local upstream per source (and the ECB's and
 * csgotrader's exchange-rate files) serving that source's recorded fixtures at the upstream's own request paths,
 * every source pointed at its upstream with COLLECTOR_<ID>_URL, the keyed sources given a credential and the per-item
 * sources a watch list (COLLECTOR_WATCHLIST_FILE) naming the fixtures' items, on a test app with the bundled
 * catalogue and no quotes. The whole registry runs once through the code of `quotegate collect --once`
 * (src/collectors/start.ts collectOnce, the environment read as the command reads it), then what a user sees is
 * checked: each run ok in collector_run, each market a source covers quoted through GET /prices (fresh at the run),
 * GraphQL's freshness (not stale), the recorded exchange rates on GET /currencies with the recordings' days (the
 * install's rates are dated before the ECB recording first), /status `datasource` `realtime`, and GET /prices/changes
 * carrying the new quotes. Then one bulk upstream answers HTML and the registry
 * runs again: that market keeps its quotes exactly and its run is failed, every other run is ok.
 * Real PGlite (or PostgreSQL with TEST_DATABASE_URL).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSGOTRADER_RATES, ECB_RATES } from '../../src/collectors/rates.js';
import { SOURCES } from '../../src/collectors/registry.js';
import type { RunResult } from '../../src/collectors/runner.js';
import { BUFF163_PAGE_SIZE } from '../../src/collectors/sources/buff163.js';
import { CS2CAP_BIDS_PATH, CS2CAP_PRICES_PATH } from '../../src/collectors/sources/cs2cap.js';
import { LISSKINS_FULL_PATH } from '../../src/collectors/sources/lisskins.js';
import { pricempireItemPath } from '../../src/collectors/sources/pricempire.js';
import { MARKETCSGO_CLASS_INSTANCE_PATH } from '../../src/collectors/sources/marketcsgo.js';
import { SKINPORT_ITEMS_PATH } from '../../src/collectors/sources/skinport.js';
import { STEAM_ITEM_NAMEIDS_FILE, readSteamItemNameIds, steamHistogramPath } from '../../src/collectors/sources/steam.js';
import { WAXPEER_PRICES_PATH } from '../../src/collectors/sources/waxpeer.js';
import { collectOnce } from '../../src/collectors/start.js';
import { collectorEnvName, loadEnv } from '../../src/env.js';
import { Money, formatDecimal, toMoney } from '../../src/lib/money.js';
import { dataDir, testApp, type TestApp } from '../helpers/app.js';
import { startUpstream, type LocalUpstream, type UpstreamRoute } from './upstream.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const fixture = (f: string) => path.join(FIXTURES, f);
const noQuery = (p: string) => p.split('?')[0]!;

// Per-item sources: the watch list names every item their fixtures answer for. Steam asks the order book of each
// (every one has an item_nameid in the bundled map): Horizon Case is its recorded USD answer.
const HORIZON = 'Horizon Case';
const POSEIDON = 'M4A4 | Poseidon (Factory New)';
const TEMUKAU = 'M4A4 | Temukau (Minimal Wear)';
const CYREX = 'StatTrak™ USP-S | Cyrex (Field-Tested)';
const WATCHLIST = [HORIZON, POSEIDON, TEMUKAU, CYREX];
const STEAM_IDS = readSteamItemNameIds(STEAM_ITEM_NAMEIDS_FILE);
const REDLINE = 'AK-47 | Redline (Field-Tested)';
const BUCKSHOT = "'Blueberries' Buckshot | NSWC SEAL";

const steamPath = (name: string) => steamHistogramPath(STEAM_IDS.get(name)!);
const csfloatPath = (name: string) => `/api/v1/listings?market_hash_name=${encodeURIComponent(name)}&type=buy_now&sort_by=lowest_price&limit=1`;
const buffPage = (n: number) => `/api/market/goods?game=csgo&page_num=${n}&page_size=${BUFF163_PAGE_SIZE}`;

/**
 * CS2Cap's documented stream lines are of other providers; as in cs2cap.test.ts, only their `provider` keys are changed
 * to the markets the source reports (fixtures/cs2cap/PROVENANCE.md). The DMarket bid is the documented GET /v1/bids row.
 */
const cs2capFixture = (f: string) => fs.readFileSync(fixture(`cs2cap/${f}`), 'utf8');
const asProvider = (text: string, from: string, to: string) => text.replace(`"provider":"${from}"`, `"provider":"${to}"`);
const CS2CAP_PRICES =
  asProvider(asProvider(asProvider(cs2capFixture('prices_stream_docs_example.ndjson'), 'avanmarket', 'haloskins'), 'buff163', 'dmarket'), 'c5', 'shadowpay') +
  asProvider(cs2capFixture('prices_stream_openapi_example.ndjson'), 'steam', 'whitemarket');
const CS2CAP_BIDS = `${JSON.stringify((JSON.parse(cs2capFixture('bids_list_docs_example.json')) as { items: { provider: string }[] }).items.find((r) => r.provider === 'dmarket'))}\n`;

/**
 * Pricempire's documented single-item answer (BitSkins' ask of CYREX): its prices are of 2022-12-01, older than the
 * adapter takes (two days), so their `createdAt` are dated to two minutes before this test (fixtures/pricempire/PROVENANCE.md).
 */
// Two minutes before the test: before any run (Pricempire's time is the quote's, not the run's), within the two days
// the adapter takes, and within /status's 10 realtime minutes, which count observations by their own minute.
const PRICEMPIRE_SEEN = new Date(Date.now() - 120_000);
const PRICEMPIRE_ITEM = fs.readFileSync(fixture('pricempire/item_docs_example.json'), 'utf8').replace(/2022-12-01T\d\d:\d\d:\d\d\.\d{3}Z/g, PRICEMPIRE_SEEN.toISOString());

/**
 * Each registry source's upstream routes: its recorded fixtures at its request paths. csgotrader's files other than
 * buff163.json have no recording (fixtures/csgotrader/PROVENANCE.md): their bodies are csgotrader.test.ts's inline
 * samples of each file's shape.
 */
const UPSTREAMS: Record<string, UpstreamRoute[]> = {
  skinport: [{ path: noQuery(SKINPORT_ITEMS_PATH), body: zlib.brotliCompressSync(fs.readFileSync(fixture('skinport/items-docs-example.json'))), headers: { 'Content-Encoding': 'br' } }],
  waxpeer: [{ path: noQuery(WAXPEER_PRICES_PATH), file: fixture('waxpeer/prices.json') }],
  lisskins: [{ path: LISSKINS_FULL_PATH, file: fixture('lisskins/api_csgo_full.json') }],
  marketcsgo: [{ path: MARKETCSGO_CLASS_INSTANCE_PATH, file: fixture('marketcsgo/class_instance.json') }],
  buff163: [
    { path: buffPage(1), file: fixture('buff163/goods_page1.json') },
    { path: buffPage(2), file: fixture('buff163/goods_page2.json') },
  ],
  csfloat: [
    // An item without a listing: the documented empty answer (csfloat.test.ts).
    { path: '/api/v1/listings', body: '{"data": [], "cursor": null}' },
    { path: csfloatPath(POSEIDON), file: fixture('csfloat/listings_docs_example.json') },
  ],
  steam: [
    // The other items: an answer without an order book (success other than 1; what Steam sends for an id it does not
    // know is not recorded): skipped (steam.test.ts).
    { path: '/market/itemordershistogram', body: '{"success":false}' },
    { path: steamPath(HORIZON), file: fixture('steam/itemordershistogram_horizon_case_usd.json') },
  ],
  c5game: [{ path: '/merchant/product/price/batch', file: fixture('c5game/price_batch_docs_example.json') }],
  cs2cap: [
    { path: noQuery(CS2CAP_PRICES_PATH), body: CS2CAP_PRICES, contentType: 'application/x-ndjson', headers: { 'X-Snapshot-Currency': 'USD' } },
    { path: noQuery(CS2CAP_BIDS_PATH), body: CS2CAP_BIDS, contentType: 'application/x-ndjson', headers: { 'X-Snapshot-Currency': 'USD' } },
  ],
  // The other watched items: 404, "Item not found" (skipped).
  pricempire: [{ path: `/v2/items/${encodeURIComponent(CYREX)}`, body: PRICEMPIRE_ITEM }],
  csgotrader_buff163: [{ path: '/latest/buff163.json', file: fixture('csgotrader/buff163.json') }],
  csgotrader_youpin: [{ path: '/latest/youpin.json', body: `{${JSON.stringify(REDLINE)}: 212.50}` }],
  csgotrader_csfloat: [{ path: '/latest/csfloat.json', body: `{${JSON.stringify(REDLINE)}: {"price": 10.20}}` }],
  csgotrader_skinport: [{ path: '/latest/skinport.json', body: `{${JSON.stringify(REDLINE)}: {"suggested_price": 0.03, "starting_at": 0.02}}` }],
  csgotrader_csmoney: [{ path: '/latest/csmoney.json', body: `{${JSON.stringify(REDLINE)}: {"price": 7, "doppler": {"Phase 2": 9}}}` }],
  csgotrader_csgotm: [{ path: '/latest/csgotm.json', body: '{"Fever Case": "0.006"}' }],
  csgotrader_lisskins: [{ path: '/latest/lisskins.json', body: `{${JSON.stringify(REDLINE)}: {"price": 10.20}, "★ Butterfly Knife | Doppler (Factory New)": {"price": null, "doppler": {"Ruby": 900}}}` }],
};

/** The keyed sources' credentials, as a user sets them. */
const CREDENTIALS = { BUFF163_COOKIE: 'session=1-e2e; csrf_token=e2e', CSFLOAT_API_KEY: 'e2e-csfloat-key', C5GAME_APP_KEY: 'e2e-c5game-key', CS2CAP_API_KEY: 'e2e-cs2cap-key', PRICEMPIRE_API_KEY: 'e2e-pricempire-key' };

let t: TestApp;
const ups = new Map<string, LocalUpstream>();
let ecb: LocalUpstream;
let csgotraderRates: LocalUpstream;
let tmp: string;
const saved = new Map<string, string | undefined>();

/** Sets the process environment as a user would before `quotegate collect --once` (restored after the file). */
function setEnv(vars: Record<string, string>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (!saved.has(k)) saved.set(k, process.env[k]);
    process.env[k] = v;
  }
}

/** `quotegate collect --once` on the test database: the rates, then every source of the registry. */
async function collectAllOnce(): Promise<RunResult[]> {
  return collectOnce(t.db, pino({ level: 'silent' }), loadEnv());
}

beforeAll(async () => {
  t = await testApp();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-all-sources-'));
  const watchlist = path.join(tmp, 'watchlist.txt');
  fs.writeFileSync(watchlist, `# the fixtures' items\n${WATCHLIST.join('\n')}\n`);
  const vars: Record<string, string> = {
    COLLECTOR_WATCHLIST_FILE: watchlist,
    ...CREDENTIALS,
  };
  for (const s of SOURCES) {
    const routes = UPSTREAMS[s.id];
    if (!routes) continue; // the first test names it
    const up = await startUpstream(routes);
    ups.set(s.id, up);
    vars[`COLLECTOR_${collectorEnvName(s.id)}_URL`] = up.url;
  }
  ecb = await startUpstream([{ path: ECB_RATES.path, file: fixture('ecb/eurofxref-daily-2025-05-09.xml'), contentType: 'text/xml' }]);
  csgotraderRates = await startUpstream([{ path: CSGOTRADER_RATES.path, file: fixture('csgotrader/exchange_rates_2026-07-16.json'), headers: { 'Last-Modified': 'Thu, 16 Jul 2026 06:00:00 GMT' } }]);
  vars.COLLECTOR_ECB_URL = ecb.url;
  vars.COLLECTOR_CSGOTRADER_URL = csgotraderRates.url;
  setEnv(vars);
});

afterAll(async () => {
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await Promise.all([...ups.values(), ecb, csgotraderRates].filter(Boolean).map((u) => u.close()));
  await t?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** One quote a source's fixture gives, as the upstream reports it (price in `currency`). */
interface Seen {
  name: string;
  market: string;
  side: 'ask' | 'bid';
  price: string;
  currency: string;
}

/** For each source, a quote of its fixture that GET /prices serves after its run (the item's only quote of that market and side). */
const SEEN: Record<string, Seen[]> = {
  skinport: [{ name: 'AK-47 | Aquamarine Revenge (Battle-Scarred)', market: 'SKINPORT', side: 'ask', price: '11.33', currency: 'EUR' }],
  waxpeer: [{ name: '★ Hand Wraps | Cobalt Skulls (Minimal Wear)', market: 'WAXPEER', side: 'ask', price: '937.999', currency: 'USD' }],
  lisskins: [{ name: 'AK-47 | Phantom Disruptor (Field-Tested)', market: 'LISSKINS', side: 'ask', price: '4.26', currency: 'USD' }],
  // The documented example answers in RUB: converted to MARKETCSGO's USD with the official rates.
  marketcsgo: [{ name: 'Arcane Defiance Loading Screen', market: 'MARKETCSGO', side: 'ask', price: '0.50', currency: 'RUB' }],
  buff163: [
    { name: 'Recoil Case', market: 'BUFF163', side: 'ask', price: '2.59', currency: 'CNY' },
    { name: 'Recoil Case', market: 'BUFF163', side: 'bid', price: '2.6', currency: 'CNY' },
  ],
  csfloat: [{ name: POSEIDON, market: 'CSFLOAT', side: 'ask', price: '2600', currency: 'USD' }],
  steam: [
    { name: HORIZON, market: 'STEAM', side: 'ask', price: '2.41', currency: 'USD' },
    { name: HORIZON, market: 'STEAM', side: 'bid', price: '2.32', currency: 'USD' },
  ],
  c5game: [{ name: TEMUKAU, market: 'C5GAME', side: 'ask', price: '391', currency: 'CNY' }],
  cs2cap: [
    { name: BUCKSHOT, market: 'HALOSKINS', side: 'ask', price: '34.60', currency: 'USD' },
    { name: BUCKSHOT, market: 'DMARKET', side: 'ask', price: '31.87', currency: 'USD' },
    { name: BUCKSHOT, market: 'SHADOWPAY', side: 'ask', price: '31.56', currency: 'USD' },
    { name: REDLINE, market: 'WHITEMARKET', side: 'ask', price: '25.50', currency: 'USD' },
    { name: REDLINE, market: 'DMARKET', side: 'bid', price: '30.81', currency: 'USD' },
  ],
  pricempire: [{ name: CYREX, market: 'BITSKINS', side: 'ask', price: '2.69', currency: 'USD' }],
  csgotrader_buff163: [
    { name: REDLINE, market: 'BUFF163', side: 'ask', price: '14.06', currency: 'USD' },
    { name: REDLINE, market: 'BUFF163', side: 'bid', price: '13.43', currency: 'USD' },
  ],
  csgotrader_youpin: [{ name: REDLINE, market: 'YOUPIN', side: 'ask', price: '212.50', currency: 'USD' }],
  csgotrader_csfloat: [{ name: REDLINE, market: 'CSFLOAT', side: 'ask', price: '10.20', currency: 'USD' }],
  csgotrader_skinport: [{ name: REDLINE, market: 'SKINPORT', side: 'ask', price: '0.02', currency: 'USD' }],
  csgotrader_csmoney: [{ name: REDLINE, market: 'CSMONEY', side: 'ask', price: '7', currency: 'USD' }],
  csgotrader_csgotm: [{ name: 'Fever Case', market: 'MARKETCSGO', side: 'ask', price: '0.006', currency: 'USD' }],
  csgotrader_lisskins: [{ name: REDLINE, market: 'LISSKINS', side: 'ask', price: '10.20', currency: 'USD' }],
};

/** Each market's own currency, from the bundled catalogue the test app loaded (data/websites.json). */
const MARKET_CURRENCY = new Map<string, string>(
  (JSON.parse(fs.readFileSync(path.join(dataDir, 'websites.json'), 'utf8')) as { websites: { code: string; currency: string }[] }).websites.map((w) => [w.code, w.currency]),
);

/** The official USD rates as a client reads them (GET /currencies), and each market's currency. */
async function catalogue(): Promise<{ marketCurrency: Map<string, string>; usdRate: Map<string, string> }> {
  const r = await t.get('/currencies');
  expect(r.status).toBe(200);
  const usdRate = new Map<string, string>(r.body.data.map((c: { code: string; usd_rate: string }) => [c.code, c.usd_rate]));
  return { marketCurrency: MARKET_CURRENCY, usdRate };
}

/** What GET /prices shows for `s`: the upstream's price, in the market's currency (official rates, half-even to 2 places). */
function shown(s: Seen, cat: Awaited<ReturnType<typeof catalogue>>): { currency: string; amount: string } {
  const to = cat.marketCurrency.get(s.market)!;
  if (to === s.currency) return { currency: to, amount: formatDecimal(toMoney(s.price)) };
  const amount = toMoney(s.price).times(toMoney(cat.usdRate.get(s.currency)!)).div(toMoney(cat.usdRate.get(to)!)).toDecimalPlaces(2, Money.ROUND_HALF_EVEN);
  return { currency: to, amount: formatDecimal(amount) };
}

/** The quote GET /prices serves for the item on that market and side (with an API key), or undefined. */
async function served(name: string, market: string, side: string): Promise<Record<string, any> | undefined> {
  const r = await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}`, t.auth());
  expect(r.status, `GET /prices ${name}`).toBe(200);
  return r.body.data.markets.find((q: { market_code: string; side: string }) => q.market_code === market && q.side === side);
}

/** Every change of GET /prices/changes after `since`, following its pages; and the cursor at its end. */
async function changesSince(since: string): Promise<{ changes: { market_hash_name: string; market_code: string; side: string; quote: Record<string, any> | null }[]; cursor: string }> {
  const out = [];
  let cursor = since;
  for (;;) {
    const r = await t.get(`/prices/changes?since=${cursor}&limit=1000`, t.auth());
    expect(r.status).toBe(200);
    out.push(...r.body.data.changes);
    cursor = r.body.data.next_cursor;
    if (!r.body.data.has_more) return { changes: out, cursor };
  }
}

/** Observations per market in /status `datasource.realtime` (the last minutes). */
async function realtime(): Promise<Map<string, number>> {
  const r = await t.get('/status');
  expect(r.status).toBe(200);
  const rt = r.body.data.datasource.realtime as Record<string, Record<string, number>>;
  return new Map(Object.entries(rt).map(([m, counts]) => [m, Object.values(counts).reduce((a, b) => a + b, 0)]));
}

/** A source's run of this pass (collect --once prints one per source, and `rates`). */
const runOf = (runs: RunResult[], id: string) => runs.find((r) => r.sourceId === id)!;
/** Seconds precision: fresh_at may be served without milliseconds. */
const floorSecond = (d: Date) => Math.floor(d.getTime() / 1000) * 1000;
const MARKETS = [...new Set(SOURCES.flatMap((s) => s.markets))].sort();

/**
 * Checks each source's fixture quotes as GET /prices serves them after the pass `runs`: the source's provider, the
 * market's currency, the upstream's price (converted with the rates `cat`: those of the pass, collected first), listed, and fresh at
 * the source's run or later. Sources in `except` are skipped.
 */
async function expectServed(runs: RunResult[], cat: Awaited<ReturnType<typeof catalogue>>, except: string[] = []): Promise<void> {
  for (const s of SOURCES.filter((x) => !except.includes(x.id))) {
    const run = runOf(runs, s.id);
    for (const seen of SEEN[s.id]!) {
      const q = await served(seen.name, seen.market, seen.side);
      const what = `${s.id}: ${seen.name} ${seen.market} ${seen.side}`;
      expect(q, what).toBeDefined();
      const want = shown(seen, cat);
      expect(q, what).toMatchObject({ provider_code: s.providerCode, market_currency_code: want.currency, market_price_amount: want.amount, delisted_at: null });
      // Pricempire says when it saw each price (createdAt): that is the quote's time, not the run's.
      if (s.id === 'pricempire') expect(Math.abs(Date.parse(q!.fresh_at) - PRICEMPIRE_SEEN.getTime()), what).toBeLessThan(1000);
      else expect(Date.parse(q!.fresh_at), what).toBeGreaterThanOrEqual(floorSecond(run.startedAt));
      expect(Date.parse(q!.fresh_at), what).toBeLessThanOrEqual(Date.now());
    }
  }
}

describe('every registry source, once, as `quotegate collect --once` runs it', () => {
  let first: RunResult[];
  let cursor: string;

  it('has a recorded upstream and an expected quote for every source of the registry', () => {
    expect(SOURCES.map((s) => s.id).filter((id) => !UPSTREAMS[id] || !SEEN[id])).toEqual([]);
    expect(MARKETS).toEqual(['BITSKINS', 'BUFF163', 'C5GAME', 'CSFLOAT', 'CSMONEY', 'DMARKET', 'HALOSKINS', 'LISSKINS', 'MARKETCSGO', 'SHADOWPAY', 'SKINPORT', 'STEAM', 'WAXPEER', 'WHITEMARKET', 'YOUPIN']);
    expect([...new Set(Object.values(SEEN).flatMap((l) => l.map((s) => s.market)))].sort()).toEqual(MARKETS);
  });

  it('runs every source ok and each market it covers is quoted through GET /prices, fresh at its run', async () => {
    // This install's rates are older than the recorded ECB day (the bundled catalogue's are of 2026-04-13 and a rate
    // never goes back to an older day; the recording is of 2025-05-09), so the run takes the recording's rates.
    await t.db.query(`UPDATE currency SET rate_date = '2025-01-01'`);
    const feed = await t.get('/prices/changes', t.auth());
    expect(feed.status).toBe(200);
    cursor = feed.body.data.next_cursor;
    expect(await realtime()).toEqual(new Map());

    first = await collectAllOnce();

    // collect --once: the rates, then one run per source; every one ok and recorded so.
    expect(first.map((r) => [r.sourceId, r.outcome, r.errorKind])).toEqual([['rates', 'ok', null], ...SOURCES.map((s) => [s.id, 'ok', null])]);
    for (const r of first) expect(r.rowsAccepted, `${r.sourceId} wrote rows`).toBeGreaterThan(0);
    const recorded = await t.db.query<{ source_id: string; outcome: string; rows_accepted: number }>(`SELECT source_id, outcome, rows_accepted FROM collector_run ORDER BY id`);
    expect(recorded).toEqual(first.map((r) => ({ source_id: r.sourceId, outcome: 'ok', rows_accepted: r.rowsAccepted })));

    // The keyed upstreams got their credential, the per-item ones the watch list.
    const requests = (id: string) => ups.get(id)!.requests;
    expect(requests('buff163').map((r) => [r.path, r.headers.cookie])).toEqual([1, 2].map((n) => [buffPage(n), CREDENTIALS.BUFF163_COOKIE]));
    expect(requests('csfloat').map((r) => [r.path, r.headers.authorization])).toEqual(WATCHLIST.map((n) => [csfloatPath(n), CREDENTIALS.CSFLOAT_API_KEY]));
    expect(requests('c5game').map((r) => r.headers['app-key'])).toEqual([CREDENTIALS.C5GAME_APP_KEY]);
    expect(requests('cs2cap').map((r) => [r.path, r.headers.authorization])).toEqual([CS2CAP_PRICES_PATH, CS2CAP_BIDS_PATH].map((p) => [p, `Bearer ${CREDENTIALS.CS2CAP_API_KEY}`]));
    expect(requests('steam').map((r) => r.path)).toEqual(WATCHLIST.map(steamPath));
    expect(requests('pricempire').map((r) => r.path)).toEqual(WATCHLIST.map((n) => pricempireItemPath(n, CREDENTIALS.PRICEMPIRE_API_KEY)));

    // Each source's fixture quote, as a client sees it: provider, currency, amount (converted with the rates the pass
    // collected before its sources ran), fresh at the run.
    await expectServed(first, await catalogue());
  });

  it('GraphQL shows the new quotes as fresh (not stale)', async () => {
    const r = await t.gql(`query ($n: String!) { item(marketHashName: $n) { quotes { marketCode side providerCode ageSeconds stale } } }`, { n: REDLINE }, t.auth());
    expect(r.status).toBe(200);
    expect(r.body.errors).toBeUndefined();
    const quotes = r.body.data.item.quotes as { marketCode: string; side: string; providerCode: string; ageSeconds: number; stale: boolean }[];
    // csgotrader's files' quotes, and CS2Cap's: white.market's ask (the openapi.json line) and DMarket's documented bid.
    const since = (id: string) => Math.ceil((Date.now() - runOf(first, id).startedAt.getTime()) / 1000) + 1;
    const byProvider = { CSGOTRADER: 'csgotrader_buff163', CS2CAP: 'cs2cap' } as Record<string, string>;
    expect(quotes.map((q) => `${q.providerCode} ${q.marketCode} ${q.side}`).sort()).toEqual([
      'CS2CAP DMARKET bid', 'CS2CAP WHITEMARKET ask',
      'CSGOTRADER BUFF163 ask', 'CSGOTRADER BUFF163 bid', 'CSGOTRADER CSFLOAT ask', 'CSGOTRADER CSMONEY ask', 'CSGOTRADER LISSKINS ask', 'CSGOTRADER SKINPORT ask', 'CSGOTRADER YOUPIN ask',
    ]);
    for (const q of quotes) {
      expect(q, q.marketCode).toMatchObject({ stale: false });
      expect(q.ageSeconds, q.marketCode).toBeLessThanOrEqual(since(byProvider[q.providerCode]!));
    }
  });

  it('the rates got the recordings\' days: the ECB\'s for its currencies, csgotrader\'s for the others', async () => {
    const rates = runOf(first, 'rates');
    expect(rates.outcome).toBe('ok');
    const dates = new Map((await t.db.query<{ code: string; d: string }>(`SELECT code, to_char(rate_date, 'YYYY-MM-DD') AS d FROM currency WHERE is_official AND NOT is_deleted`)).map((r) => [r.code, r.d]));
    const cat = await catalogue();
    expect(cat.usdRate.get('EUR')).toBe('1.1252'); // the recorded USD per EUR
    expect(dates.get('EUR')).toBe('2025-05-09');
    expect(dates.get('CNY')).toBe('2025-05-09');
    expect(cat.usdRate.get('CNY')).toBe(formatDecimal(new Money('1.1252').div('8.1470').toDecimalPlaces(18, Money.ROUND_HALF_EVEN)));
    // RUB is not an ECB currency: csgotrader's units per USD, of its Last-Modified day.
    expect(dates.get('RUB')).toBe('2026-07-16');
    expect(cat.usdRate.get('RUB')).toBe(formatDecimal(new Money(1).div('78.09728753334981').toDecimalPlaces(18, Money.ROUND_HALF_EVEN)));
    expect(rates.rowsAccepted).toBe([...dates.values()].filter((d) => d === '2025-05-09' || d === '2026-07-16').length);
  });

  it('/status datasource.realtime counts every market\'s observations of the run', async () => {
    const counts = await realtime();
    const expected = new Map<string, number>();
    for (const r of first) for (const [m, n] of Object.entries(r.markets)) expected.set(m, (expected.get(m) ?? 0) + n);
    expect([...counts.keys()].sort()).toEqual(MARKETS);
    expect(counts).toEqual(expected);
  });

  it('GET /prices/changes carries the new quotes as GET /prices serves them', async () => {
    const { changes, cursor: end } = await changesSince(cursor);
    cursor = end;
    const byKey = new Map(changes.map((c) => [`${c.market_hash_name}/${c.market_code}/${c.side}`, c.quote]));
    for (const [id, list] of Object.entries(SEEN)) {
      for (const s of list) {
        const quote = byKey.get(`${s.name}/${s.market}/${s.side}`);
        expect(quote, `${id}: ${s.name} ${s.market} ${s.side}`).toEqual(await served(s.name, s.market, s.side));
      }
    }
  });

  it('HTML on one bulk upstream, then the registry again: that market keeps its quotes exactly, its run failed, the rest ok', async () => {
    const WAX = SEEN.waxpeer![0]!;
    const waxQuotes = () =>
      t.db.query<{ line: string }>(
        `SELECT concat_ws('|', i.market_hash_name, q.provider_code, q.side, q.currency_code, q.price::text, q.quantity, q.observed_at, q.changed_at, q.fresh_at, q.delisted_at) AS line
           FROM source_quote q JOIN item i ON i.id = q.item_id WHERE q.market_code = 'WAXPEER' ORDER BY 1`,
      );
    const before = await waxQuotes();
    expect(before.length).toBeGreaterThan(0);
    const servedBefore = await served(WAX.name, WAX.market, WAX.side);
    const countsBefore = await realtime();
    const cat = await catalogue(); // the rates the first pass collected: this pass converts with them (its rates run finds the same days)

    // A login wall or CDN page instead of the price list (a 200 with text/html).
    ups.get('waxpeer')!.play(noQuery(WAXPEER_PRICES_PATH), 'html');
    const second = await collectAllOnce();

    expect(second.map((r) => [r.sourceId, r.outcome])).toEqual([['rates', 'ok'], ...SOURCES.map((s) => [s.id, s.id === 'waxpeer' ? 'failed' : 'ok'])]);
    const failed = runOf(second, 'waxpeer');
    expect(failed).toMatchObject({ errorKind: 'format', rowsAccepted: 0, complete: false, delisted: 0 });
    expect(failed.errorMessage).toMatch(/HTML/);
    const [last] = await t.db.query<{ outcome: string; error_kind: string; rows_accepted: number }>(
      `SELECT outcome, error_kind, rows_accepted FROM collector_run WHERE source_id = 'waxpeer' ORDER BY id DESC LIMIT 1`,
    );
    expect(last).toEqual({ outcome: 'failed', error_kind: 'format', rows_accepted: 0 });

    // WAXPEER: exactly as before, for the API and in the store; nothing counted, nothing in the change feed.
    expect(await waxQuotes()).toEqual(before);
    expect(await served(WAX.name, WAX.market, WAX.side)).toEqual(servedBefore);
    const counts = await realtime();
    expect(counts.get('WAXPEER')).toBe(countsBefore.get('WAXPEER'));
    for (const m of MARKETS.filter((x) => x !== 'WAXPEER')) {
      const added = second.reduce((n, r) => n + (r.markets[m] ?? 0), 0);
      expect(counts.get(m), m).toBe(countsBefore.get(m)! + added);
    }
    const { changes } = await changesSince(cursor);
    expect(changes.filter((c) => c.market_code === 'WAXPEER')).toEqual([]);

    // Every other source confirmed its quotes at this pass, converted with the rates the first pass collected.
    await expectServed(second, cat, ['waxpeer']);
  });
});
