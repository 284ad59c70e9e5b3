/**
 * Freshness of quotes (issue 42, point 5: "freshness is visible"): a quote's age and whether it is stale,
 * judged against the interval of the source that collects it.
 *
 * - Age: seconds from the quote's `fresh_at` (the latest of its change, its last sighting and its market's last
 *   full scan) to now, floored, never negative.
 * - Stale: older than STALE_AFTER_INTERVALS (3) runs of its source: a source that runs every hour leaves its
 *   quotes stale after 3 hours without a successful sighting or scan, so one late or failed run does not flag
 *   them but a source that stopped does. The interval comes from the collector registry (SOURCES in
 *   registry.ts) by market code and provider code; when several sources report the pair, the most frequent one
 *   sets it. The CSCP valuation (market `CSCP`) is computed once a day (jobs/valuation.ts): 3 days.
 *   A pair no source collects (the bundled snapshot's quotes, a retired source, a collector file imported by
 *   hand) is stale after DEFAULT_STALE_AFTER_SECONDS (24 hours).
 *
 * Shown by GraphQL `MarketQuote` (`ageSeconds`, `staleAfterSeconds`, `stale`), the item page and the status
 * page; the REST shapes do not carry them (the spec's MarketQuoteOut is exact).
 */
import type { Database } from '../db/client.js';
import { VALUATION_MARKET } from '../quotes/quotes.js';
import { SOURCES } from './registry.js';
import type { CollectorSource } from './source.js';

/** A quote is stale when older than this many runs of its source. */
const STALE_AFTER_INTERVALS = 3;
/** Seconds after which a quote no collector source reports is stale (24 hours). */
export const DEFAULT_STALE_AFTER_SECONDS = 86_400;
/** Seconds between CSCP valuations (the valuation job runs once a day). */
const VALUATION_INTERVAL_SECONDS = 86_400;

const pairKey = (marketCode: string, providerCode: string) => `${marketCode}\u0000${providerCode}`;

/** Shortest interval (seconds) per market and provider pair of `sources`. */
function intervalsOf(sources: readonly CollectorSource[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const s of sources) {
    for (const market of s.markets) {
      const k = pairKey(market, s.providerCode);
      const prev = m.get(k);
      if (prev === undefined || s.intervalSeconds < prev) m.set(k, s.intervalSeconds);
    }
  }
  return m;
}

/** The registry's intervals, built once (SOURCES does not change while the process runs). */
let registryIntervals: Map<string, number> | null = null;

/**
 * Seconds after which a quote of `marketCode` collected by `providerCode` is stale: STALE_AFTER_INTERVALS times
 * the interval of the most frequent source reporting that pair, 3 days for the CSCP valuation, else
 * DEFAULT_STALE_AFTER_SECONDS. `sources` defaults to the registry (tests pass their own).
 */
export function staleAfterSeconds(marketCode: string, providerCode: string, sources: readonly CollectorSource[] = SOURCES): number {
  if (marketCode === VALUATION_MARKET) return STALE_AFTER_INTERVALS * VALUATION_INTERVAL_SECONDS;
  const intervals = sources === SOURCES ? (registryIntervals ??= intervalsOf(SOURCES)) : intervalsOf(sources);
  const interval = intervals.get(pairKey(marketCode, providerCode));
  return interval === undefined ? DEFAULT_STALE_AFTER_SECONDS : STALE_AFTER_INTERVALS * interval;
}

/** Whole seconds from `freshAt` to `now` (floored; 0 when `freshAt` is in the future). */
export function ageSeconds(freshAt: Date, now: Date): number {
  return Math.max(0, Math.floor((now.getTime() - freshAt.getTime()) / 1000));
}

/** True when a quote of the pair, fresh at `freshAt`, is older than its staleAfterSeconds at `now`. */
export function isStale(marketCode: string, providerCode: string, freshAt: Date, now: Date, sources: readonly CollectorSource[] = SOURCES): boolean {
  return ageSeconds(freshAt, now) > staleAfterSeconds(marketCode, providerCode, sources);
}

/** The newest quote of one market, as the status page lists it. */
export interface MarketFreshness {
  marketCode: string;
  /** The provider of the market's newest quote (staleness is judged against its source). */
  providerCode: string;
  /** The newest `fresh_at` of the market's quotes, any item, any side, any provider. */
  freshAt: Date;
  ageSeconds: number;
  staleAfterSeconds: number;
  stale: boolean;
}

/** The newest quote of one market: its provider and `fresh_at`. */
export interface NewestQuote {
  marketCode: string;
  providerCode: string;
  freshAt: Date;
}

/**
 * The newest quote of every market that has quotes, by market code: one statement, an aggregate over the whole
 * `source_quote` table grouped by market and provider (its cost on PGlite with the bundled data:
 * docs/benchmarks.md), then the freshest provider per market (ties: the lower provider code).
 */
async function loadNewestQuotes(db: Pick<Database, 'query'>): Promise<NewestQuote[]> {
  const rows = await db.query<{ market_code: string; provider_code: string; fresh_at: number }>(
    `SELECT market_code, provider_code, floor(extract(epoch FROM max(fresh_at)) * 1000)::float8 AS fresh_at
       FROM source_quote GROUP BY market_code, provider_code`,
  );
  const newest = new Map<string, { providerCode: string; freshAt: number }>();
  for (const r of rows) {
    const prev = newest.get(r.market_code);
    if (!prev || r.fresh_at > prev.freshAt || (r.fresh_at === prev.freshAt && r.provider_code < prev.providerCode)) {
      newest.set(r.market_code, { providerCode: r.provider_code, freshAt: r.fresh_at });
    }
  }
  return [...newest.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([marketCode, n]) => ({ marketCode, providerCode: n.providerCode, freshAt: new Date(n.freshAt) }));
}

/** Ages the newest quotes at `now` and judges each against its provider's source (staleAfterSeconds). */
export function judgeFreshness(newest: readonly NewestQuote[], now: Date, sources: readonly CollectorSource[] = SOURCES): MarketFreshness[] {
  return newest.map((n) => {
    const after = staleAfterSeconds(n.marketCode, n.providerCode, sources);
    const age = ageSeconds(n.freshAt, now);
    return { ...n, ageSeconds: age, staleAfterSeconds: after, stale: age > after };
  });
}

/** `loadNewestQuotes` judged at `now`. */
export async function loadMarketFreshness(db: Pick<Database, 'query'>, now: Date, sources: readonly CollectorSource[] = SOURCES): Promise<MarketFreshness[]> {
  return judgeFreshness(await loadNewestQuotes(db), now, sources);
}

/** Seconds the status page reuses one read of the newest quotes (its aggregate scans every quote). */
const FRESHNESS_CACHE_SECONDS = 30;

/**
 * A reader of the markets' freshness for the status page: the newest quotes are read at most once per
 * `ttlSeconds` of wall time per process (concurrent callers share the read in progress; a failed read is not
 * kept), and judged at each caller's `now`. Throws what the read throws.
 */
export function createFreshnessReader(db: Pick<Database, 'query'>, ttlSeconds = FRESHNESS_CACHE_SECONDS): (now: Date) => Promise<MarketFreshness[]> {
  let cached: { at: number; read: Promise<NewestQuote[]> } | null = null;
  return async (now) => {
    const t = Date.now();
    if (!cached || t - cached.at >= ttlSeconds * 1000) {
      const read = loadNewestQuotes(db);
      cached = { at: t, read };
      read.catch(() => {
        if (cached?.read === read) cached = null;
      });
    }
    return judgeFreshness(await cached.read, now);
  };
}

/** An age for reading: `45 s`, `12 min`, `5 h 3 min`, `134 d 2 h`. */
export function formatAge(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
  const days = Math.floor(hours / 24);
  return `${days} d${hours % 24 ? ` ${hours % 24} h` : ''}`;
}
