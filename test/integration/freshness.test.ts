/**
 * Freshness is visible (issue 42 point 5): GraphQL `MarketQuote` has `ageSeconds`, `staleAfterSeconds` and
 * `stale` (judged against the quote's source interval, collectors/freshness.ts), the item page marks stale
 * quotes, the status page lists each market's newest quote and whether it is stale, and the REST quote keeps
 * exactly the spec's MarketQuoteOut keys. On PGlite and (with TEST_DATABASE_URL) PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, obs, ingestQuotes, type TestApp } from '../helpers/app.js';
import { MarketQuoteOut } from '../../src/shapes/quote.js';
import {
  DEFAULT_STALE_AFTER_SECONDS,
  ageSeconds,
  formatAge,
  isStale,
  judgeFreshness,
  loadMarketFreshness,
  staleAfterSeconds,
} from '../../src/collectors/freshness.js';
import { SOURCES } from '../../src/collectors/registry.js';
import { CSGOTRADER_SOURCES } from '../../src/collectors/sources/csgotrader.js';
import { skinportSource } from '../../src/collectors/sources/skinport.js';

const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
const ITEM = 'AK-47 | Redline (Field-Tested)';
const OTHER = 'AWP | Asiimov (Field-Tested)';
const H = 3600;

let t: TestApp;

beforeAll(async () => {
  t = await testApp({ clock: () => NOW });
  await ingestQuotes(t.db, [
    // BUFF163 direct: 6 hours old (no collector source reports it here: stale after 24 h) -> fresh.
    obs(ITEM, { observedAt: ago(6 * H), price: '95.5' }),
    // YOUPIN through csgotrader: 60 hours old -> stale.
    obs(ITEM, { marketCode: 'YOUPIN', providerCode: 'CSGOTRADER', currencyCode: 'CNY', observedAt: ago(60 * H), price: '94' }),
    // SKINPORT: exactly 24 hours old -> not stale yet (stale is strictly older).
    obs(ITEM, { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: ago(24 * H), price: '11.33' }),
    // Another item keeps YOUPIN's newest quote stale too (3 days), and makes BUFF163's newest 1 hour old.
    obs(OTHER, { marketCode: 'YOUPIN', providerCode: 'CSGOTRADER', currencyCode: 'CNY', observedAt: ago(72 * H), price: '120' }),
    obs(OTHER, { observedAt: ago(H), price: '130' }),
  ]);
});

afterAll(async () => {
  await t?.close();
});

describe('freshness rules (collectors/freshness.ts)', () => {
  it('3 intervals of the reporting source, the valuation 3 days, 24 hours without a source', () => {
    // The registry is the lead's to fill: whatever it holds, a pair it does not report gets the default.
    expect(staleAfterSeconds('NOSUCH', 'NOSUCH')).toBe(DEFAULT_STALE_AFTER_SECONDS);
    expect(DEFAULT_STALE_AFTER_SECONDS).toBe(86_400);
    expect(staleAfterSeconds('CSCP', 'CSCP')).toBe(3 * 86_400);
    const sources = [...CSGOTRADER_SOURCES, skinportSource];
    expect(staleAfterSeconds('SKINPORT', 'SKINPORT', sources)).toBe(3 * 300);
    expect(staleAfterSeconds('SKINPORT', 'CSGOTRADER', sources)).toBe(3 * 3600);
    expect(staleAfterSeconds('BUFF163', 'CSGOTRADER', sources)).toBe(3 * 3600);
    expect(staleAfterSeconds('BUFF163', 'BUFF163', sources)).toBe(DEFAULT_STALE_AFTER_SECONDS);
    // The most frequent of two sources of one pair sets the yardstick.
    expect(staleAfterSeconds('SKINPORT', 'SKINPORT', [{ ...skinportSource, intervalSeconds: 60 }, skinportSource])).toBe(180);
    expect(isStale('SKINPORT', 'SKINPORT', ago(901), NOW, sources)).toBe(true);
    expect(isStale('SKINPORT', 'SKINPORT', ago(900), NOW, sources)).toBe(false);
    expect(ageSeconds(new Date(NOW.getTime() + 5000), NOW)).toBe(0);
    expect(ageSeconds(new Date(NOW.getTime() - 1999), NOW)).toBe(1);
    expect([45, 720, 5 * H + 180, 134 * 86_400 + 2 * H].map(formatAge)).toEqual(['45 s', '12 min', '5 h 3 min', '134 d 2 h']);
  });

  it('the newest quote per market, judged against its provider', async () => {
    const markets = await loadMarketFreshness(t.db, NOW, SOURCES);
    expect(markets.map((m) => [m.marketCode, m.providerCode, m.ageSeconds, m.stale])).toEqual([
      ['BUFF163', 'BUFF163', H, false],
      ['SKINPORT', 'SKINPORT', 24 * H, staleAfterSeconds('SKINPORT', 'SKINPORT') < 24 * H],
      ['YOUPIN', 'CSGOTRADER', 60 * H, true],
    ]);
    // With the adapters' intervals, Skinport's 24-hour-old newest quote is stale (15 minutes).
    const judged = judgeFreshness(markets, NOW, [skinportSource]);
    expect(judged.find((m) => m.marketCode === 'SKINPORT')).toMatchObject({ staleAfterSeconds: 900, stale: true });
  });
});

describe('GraphQL MarketQuote freshness', () => {
  const Q = `query ($n: String!) { item(marketHashName: $n) { quotes { marketCode side providerCode freshAt ageSeconds staleAfterSeconds stale } } }`;

  it('ageSeconds from freshAt at the request clock, stale against the source interval', async () => {
    const r = await t.gql(Q, { n: ITEM }, t.auth());
    expect(r.status).toBe(200);
    expect(r.body.errors).toBeUndefined();
    const quotes = r.body.data.item.quotes as Array<Record<string, unknown>>;
    const by = (m: string) => quotes.find((q) => q.marketCode === m)!;
    expect(by('BUFF163')).toMatchObject({ ageSeconds: 6 * H, staleAfterSeconds: staleAfterSeconds('BUFF163', 'BUFF163'), stale: 6 * H > staleAfterSeconds('BUFF163', 'BUFF163') });
    expect(by('YOUPIN')).toMatchObject({ providerCode: 'CSGOTRADER', ageSeconds: 60 * H, stale: true });
    expect(by('SKINPORT')).toMatchObject({ ageSeconds: 24 * H, stale: 24 * H > staleAfterSeconds('SKINPORT', 'SKINPORT') });
    for (const q of quotes) expect(q.ageSeconds).toBe(Math.floor((NOW.getTime() - Date.parse(q.freshAt as string)) / 1000));
  });

  it('the prices root gives the same fields; REST keeps exactly the spec MarketQuoteOut keys', async () => {
    const r = await t.gql(`query ($n: String!) { prices(marketHashName: $n) { markets { marketCode stale ageSeconds } } }`, { n: ITEM }, t.auth());
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data.prices.markets.find((q: { marketCode: string }) => q.marketCode === 'YOUPIN')).toMatchObject({ stale: true, ageSeconds: 60 * H });
    const rest = await t.get(`/prices?market_hash_name=${encodeURIComponent(ITEM)}`, t.auth());
    expect(rest.status).toBe(200);
    for (const q of rest.body.data.markets) expect(Object.keys(q).sort()).toEqual(Object.keys(MarketQuoteOut.shape).sort());
    expect(rest.text).not.toMatch(/stale|age_seconds|ageSeconds/);
  });
});

describe('pages', () => {
  it('the item page marks the stale quotes and names them', async () => {
    const r = await t.get(`/items/${encodeURIComponent(ITEM)}`);
    expect(r.status).toBe(200);
    const row = (m: string) => r.text.match(new RegExp(`<tr data-market="${m}" data-side="ask" data-stale="(true|false)"[^>]*>[\\s\\S]*?</tr>`))!;
    expect(row('YOUPIN')[1]).toBe('true');
    expect(row('YOUPIN')[0]).toContain('data-age-seconds="216000"');
    expect(row('YOUPIN')[0]).toContain('2 d 12 h');
    expect(row('YOUPIN')[0]).toContain('stale</strong>');
    // Buff163's own source runs hourly (stale after 3 h), Skinport's every 5 minutes: both judged by the registry.
    const staleBuff = 6 * H > staleAfterSeconds('BUFF163', 'BUFF163');
    expect(row('BUFF163')[1]).toBe(String(staleBuff));
    expect(row('BUFF163')[0]).toContain('6 h');
    if (!staleBuff) expect(row('BUFF163')[0]).not.toContain('stale</strong>');
    const staleSkinport = 24 * H > staleAfterSeconds('SKINPORT', 'SKINPORT');
    expect(row('SKINPORT')[1]).toBe(String(staleSkinport));
    const staleMarkets = [staleBuff && 'BUFF163 ask', staleSkinport && 'SKINPORT ask', 'YOUPIN ask'].filter(Boolean).join(',');
    expect(r.text).toContain(`data-stale-markets="${staleMarkets}"`);
  });

  it('the status page lists each market\'s newest quote, its age and whether it is stale', async () => {
    const r = await t.get('/status/page');
    expect(r.status).toBe(200);
    expect(r.text).toContain('<h3 id="freshness">Freshness per market</h3>');
    const row = (m: string) => r.text.match(new RegExp(`<tr data-market="${m}" data-stale="(true|false)"[^>]*>[\\s\\S]*?</tr>`))!;
    expect(row('BUFF163')[1]).toBe('false');
    expect(row('BUFF163')[0]).toContain(`data-age-seconds="${H}"`);
    expect(row('YOUPIN')[1]).toBe('true');
    expect(row('YOUPIN')[0]).toContain('<td class="small">CSGOTRADER</td>');
    expect(row('YOUPIN')[0]).toContain(`${ago(60 * H).toISOString().slice(0, 10)} ${ago(60 * H).toISOString().slice(11, 16)}`);
    expect(row('YOUPIN')[0]).toContain('2 d 12 h');
    expect(row('YOUPIN')[0]).toContain('>stale<');
    expect(r.text).toMatch(/data-stale-markets="(SKINPORT,)?YOUPIN"/);
    // GET /status is the spec's shape: no freshness there.
    const s = await t.get('/status');
    expect(s.status).toBe(200);
    expect(s.text).not.toMatch(/stale|fresh_at/);
  });
});
