/**
 * The pages' rate limit per client address (issue 41, point 9): the item pages (`/items`, `/items/{name}`) show
 * what the API sells (every market's quotes, the valuation band, the history) without a key or a charge, so they
 * stay free for people but a client address gets at most PAGE_RATE_LIMIT of them (default 30 a minute, over any
 * 60 s: the API's sliding log, src/limits/rate-limiter.ts `consumeNamed`, in memory or in Redis when REDIS_URL is
 * set, so replicas share one count). The next one is a 429 page with `Retry-After` and the `RateLimit` fields.
 * `/valuation` and the status page are not limited: their data is the public, free API's (`GET
 * /valuation/accuracy`, `GET /status`), and a status page must answer during an incident.
 *
 * The client address is the connection's peer; `X-Forwarded-For` is read only when TRUST_PROXY says which peers
 * are proxies of this deployment (proxy-addr: a hop count, or addresses and subnets such as `loopback` or
 * `10.0.0.0/8`), so a client cannot choose its own address. An IPv6 client is counted by its /64 (one host's
 * usual allocation); an IPv4-mapped IPv6 peer as its IPv4 address.
 */
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';
import { rateLimitRejections } from '../lib/metrics.js';
import type { RateLimiter, NamedLimit, RateLimitOutcome } from '../limits/rate-limiter.js';
import { escapeHtml, htmlResponse, renderPage } from './layout.js';

/** Pages per window per client address: PAGE_RATE_LIMIT `<pages>/<seconds>`, or null (`off`) for none. */
export interface PageRateLimit {
  maxRequests: number;
  windowSeconds: number;
}

/** The documented default: 30 pages a minute per client address. */
export const DEFAULT_PAGE_RATE_LIMIT: PageRateLimit = { maxRequests: 30, windowSeconds: 60 };

/** The limit's policy name (the `RateLimit` fields, the Redis key, the rejection metric's operation). */
const PAGE_POLICY = 'pages';

/**
 * Parses PAGE_RATE_LIMIT: `<pages>/<seconds>` (1-100,000 pages in 1-86,400 s), or `off`. Throws a RangeError
 * naming the expected form otherwise.
 */
export function parsePageRateLimit(text: string): PageRateLimit | null {
  const t = text.trim();
  if (t === 'off') return null;
  const m = /^(\d{1,6})\/(\d{1,5})$/.exec(t);
  const maxRequests = m ? Number(m[1]) : NaN;
  const windowSeconds = m ? Number(m[2]) : NaN;
  if (!(maxRequests >= 1 && maxRequests <= 100_000 && windowSeconds >= 1 && windowSeconds <= 86_400)) {
    throw new RangeError(`must be <pages>/<seconds> (e.g. 30/60: 1-100000 pages in 1-86400 s) or off, got ${JSON.stringify(text)}`);
  }
  return { maxRequests, windowSeconds };
}

/** Which connection peers are this deployment's proxies (whose `X-Forwarded-For` is believed); null: none. */
export type TrustProxy = ((address: string, hop: number) => boolean) | null;

/**
 * Parses TRUST_PROXY: unset, empty, `false` or `0`: no proxy (X-Forwarded-For is ignored); a whole number n: the
 * n nearest hops are proxies (the peer and the n-1 entries nearest it in X-Forwarded-For); otherwise a
 * comma-separated list of addresses, subnets (`10.0.0.0/8`, `fd00::/8`) and proxy-addr's names `loopback`,
 * `linklocal`, `uniquelocal`. Throws a RangeError for anything else.
 */
export function parseTrustProxy(text: string | undefined): TrustProxy {
  const t = (text ?? '').trim();
  if (t === '' || t === 'false' || t === '0') return null;
  if (/^\d{1,3}$/.test(t)) {
    const hops = Number(t);
    return (_address, hop) => hop < hops;
  }
  try {
    return proxyaddr.compile(t.split(',').map((s) => s.trim()).filter((s) => s !== ''));
  } catch (e) {
    throw new RangeError(`must be a hop count, or addresses and subnets (e.g. loopback,10.0.0.0/8): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

/**
 * The address a page request is counted under: the peer `socketAddress`, or with `trust` the nearest address in
 * `X-Forwarded-For` that is not a trusted proxy. IPv6 is cut to its /64, IPv4-mapped IPv6 becomes IPv4. Null when
 * there is no peer: a request handled in process (`app.fetch`, the tests), which no client sent.
 */
export function clientAddress(socketAddress: string | undefined, forwardedFor: string | null, trust: TrustProxy): string | null {
  if (!socketAddress) return null;
  let address = socketAddress;
  if (trust && forwardedFor) {
    const req = { socket: { remoteAddress: socketAddress }, connection: { remoteAddress: socketAddress }, headers: { 'x-forwarded-for': forwardedFor } };
    const found = proxyaddr(req as never, trust);
    if (ipaddr.isValid(found)) address = found;
  }
  return addressKey(address);
}

/** `address` as a rate-limit key: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 as its /64 (`2001:db8:0:1::/64`). */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address.replace(/[\u0000-\u001f\u007f]/g, '?');
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/** The limit the app applies to page requests (see the module doc). */
export interface PageLimit {
  /**
   * Counts one page for the request's client; the outcome (also when allowed, for the `RateLimit` fields), and the
   * 429 page to answer with when refused. Null outcome when limits are off or the request has no peer address.
   */
  check(request: Request, socketAddress: string | undefined): Promise<{ outcome: RateLimitOutcome | null; refused: Response | null }>;
}

/** Builds the page limit over `limiter` (null `limit`: no limit). */
export function createPageLimit(opts: { limiter: RateLimiter; limit: PageRateLimit | null; trustProxy: TrustProxy }): PageLimit {
  const policy: NamedLimit | null = opts.limit ? { name: PAGE_POLICY, ...opts.limit } : null;
  return {
    async check(request, socketAddress) {
      if (!policy) return { outcome: null, refused: null };
      const key = clientAddress(socketAddress, request.headers.get('x-forwarded-for'), opts.trustProxy);
      if (key === null) return { outcome: null, refused: null };
      const outcome = await opts.limiter.consumeNamed(policy, key);
      if (!outcome || outcome.allowed) return { outcome, refused: null };
      rateLimitRejections.inc({ operation: PAGE_POLICY });
      return { outcome, refused: tooManyPages(request, outcome) };
    },
  };
}

/** The 429 page: how long to wait, and the API for more. */
function tooManyPages(request: Request, outcome: RateLimitOutcome): Response {
  const wait = outcome.resetSeconds;
  const body = `<div class="unavailable" role="alert">
<h1>Too many pages</h1>
<p>This address has loaded ${escapeHtml(outcome.limit)} item pages within ${escapeHtml(outcome.windowSeconds)} seconds, the most the pages allow. Please wait ${escapeHtml(wait)} second${wait === 1 ? '' : 's'} and reload.</p>
<p>For more, use the API with a key: <code>GET /prices</code>, <code>GET /prices/history</code> and the rest are in the <a href="/docs">API reference</a>.</p>
</div>`;
  return htmlResponse(renderPage({ title: 'Too many pages', path: '/items', body }), { status: 429, request, headers: { 'Retry-After': String(wait) } });
}
