/**
 * The collector source interface (issue 42): one adapter per upstream, behind one small interface.
 *
 * An adapter knows one upstream's request paths and format, nothing else: it asks `ctx.fetch` for the
 * upstream's responses (the runner gives it the base URL, credential, rate limit, retries with backoff that
 * honour Retry-After, the circuit breaker, proxies and timeouts) and turns each response into raw quote rows.
 * The runner (src/collectors/runner.ts) validates every row (a bad row is counted and skipped, never ingested),
 * judges the run as a whole (a response that fails as a whole fails the run, and the market's quotes stay as
 * they were), writes through the bulk ingestion (quotes/ingestion.ts) and completes the market's scan only
 * when the run was a complete listing.
 *
 * Money stays a decimal string from the byte read (`price`): an adapter never turns a price into a JS number.
 * Where an upstream sends a JSON number, the adapter passes its source text: stream-json's tokens (large bodies)
 * and lossless-json (small ones) both keep it.
 */

/** One quote as an upstream reports it, before validation. `price` is a decimal string in `currencyCode`. */
export interface RawQuote {
  /** Steam market hash name, exactly as the upstream spells it (the runner rejects empty or over-long names). */
  marketHashName: string;
  /** Catalogue market code (data/websites.json), e.g. `SKINPORT`. */
  marketCode: string;
  side: 'ask' | 'bid';
  /** ISO 4217 code of `price`; the runner converts to the market's own currency when they differ (official USD rates). */
  currencyCode: string;
  /**
   * Best price on this side as a decimal string (`"12.34"`, the JSON number's source text); null when the upstream
   * reports none. Prices in minor units or thousandths are scaled by the adapter with decimal.js before they get here.
   */
  price: string | null;
  /** Listings (ask) or buy orders (bid) at any price; null when the upstream does not say. */
  quantity?: number | null;
  /** True when `quantity` is a lower bound (the upstream caps its counts). */
  isQuantityMinimum?: boolean | null;
  /** True when every listing on this side has the same price. */
  isAllItemsSamePrice?: boolean | null;
  /** True when the upstream reports the item no longer listed on this side. */
  delisted?: boolean;
  /**
   * When the upstream saw this row, where it says so per row (an aggregator's own time: Pricempire's `createdAt`);
   * absent: the run's start. A time after the run's start counts as the run's start; an invalid Date skips the row
   * (`observed_at`). It is the quote's `observed_at` and `fresh_at` (an observation older than the quote's is ignored
   * by the ingestion, as from any source).
   */
  observedAt?: Date;
}

/** What an adapter may ask the runner for while it collects. */
export interface SourceContext {
  /** The source's base URL (its default, or `COLLECTOR_<SOURCE>_URL`), without a trailing slash. */
  baseUrl: string;
  /**
   * Requests `pathAndQuery` (GET unless `init.method` says POST with a `body`; relative to `baseUrl`, starting with `/`) with the source's limits, retries, breaker,
   * proxy and timeout. Resolves with the response once its status is 2xx; throws `UpstreamError` otherwise.
   * The body is a web ReadableStream: parse large bodies as streams.
   */
  fetch(pathAndQuery: string, init?: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }): Promise<Response>;
  /** The source's credential (API key, session cookie) when configured; never logged, never served. */
  credential: string | null;
  /** Market hash names to collect, for per-item sources (the watch list); bulk sources ignore it. */
  watchlist: readonly string[];
  /** Aborts when the run is cancelled (shutdown, timeout of the whole run). */
  signal: AbortSignal;
  /** The run's clock: observations are stamped with it. */
  now: Date;
}

/** A failure of an upstream, as the runner reports it on /status and in the log. */
export class UpstreamError extends Error {
  /**
   * `kind`: `unreachable` (DNS, refused, reset, timeout), `http` (a non-2xx status), `format` (the body is not what the
   * adapter expects: HTML instead of JSON, truncated, a 200 with an error object, a renamed field), `shrunk` (the
   * listing shrank by more than half against the last complete run), `not_configured` (no credential).
   */
  constructor(
    readonly kind: 'unreachable' | 'http' | 'format' | 'shrunk' | 'not_configured',
    message: string,
    readonly status?: number,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** Documented limits of one upstream (docs/collectors.md cites where each number comes from). */
export interface SourceLimits {
  /** Most requests a minute to this upstream (its documented budget, or a polite default). */
  requestsPerMinute: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Milliseconds before one request is abandoned (headers and body). */
  timeoutMs: number;
  /** Attempts after the first on a retryable failure (network, 429, 5xx). */
  retries: number;
}

/** One upstream: what it covers, how often, within which limits, and how to read it. */
export interface CollectorSource {
  /** Lower-case identifier, e.g. `skinport`; `COLLECTOR_SKINPORT_URL` overrides its base URL. */
  id: string;
  /** Provider code written on every quote: the market itself for direct data, else the aggregator (`CSGOTRADER`). */
  providerCode: string;
  /** Catalogue markets this source reports. */
  markets: readonly string[];
  /** Base URL of the upstream (no trailing slash). */
  defaultBaseUrl: string;
  /** Seconds between runs; also the staleness yardstick of its quotes. */
  intervalSeconds: number;
  limits: SourceLimits;
  /** The environment variable holding its credential, when it needs one; without it the source is "not configured". */
  credentialEnv?: string;
  /** True when a successful run lists the whole market (completes the market's scan, delisting what it did not see). */
  completeListing: boolean;
  /**
   * True for a per-item source, which collects the watch list (`SourceContext.watchlist`); the runner computes the
   * watch list only for these (others get an empty one).
   */
  perItem?: boolean;
  /** Fetches and parses one run's quotes. Throws `UpstreamError` when a response fails as a whole. */
  collect(ctx: SourceContext): AsyncIterable<RawQuote>;
}
