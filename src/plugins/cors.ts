/**
 * CORS for both faces (REST, pages and `/graphql`): @whatwg-node/server's `useCORS` as a server-adapter
 * plugin, so a preflight (`OPTIONS`) is answered 204 before the app's handler runs (never metered, billed
 * or rate limited). Credentials travel in headers (`Authorization`, `X-API-Key`), never in cookies, so
 * no origin is ever allowed credentials; the default allows every origin (`CORS_ORIGINS`).
 */
import crypto from 'node:crypto';
import { useCORS, type CORSOptions, type ServerAdapterPlugin } from '@whatwg-node/server';

/** Request headers a cross-origin page may send. */
const CORS_ALLOWED_HEADERS = ['Authorization', 'X-API-Key', 'Content-Type', 'If-None-Match'];
/** Methods a cross-origin page may use. */
const CORS_METHODS = ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'];
/** Response headers a cross-origin page may read (besides the CORS-safelisted ones). */
const CORS_EXPOSED_HEADERS = [
  'X-Request-ID',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'ETag',
  'X-Export-Generated-At',
  'X-Change-Sequence',
  'X-Billable',
  'X-Credit-Cost',
  'X-Credit-Remaining',
];
/** Seconds a browser may cache a preflight answer. */
const CORS_MAX_AGE_SECONDS = 600;

/**
 * The CORS options of one request: `origins` are exact origins (`https://dash.example.com`) or `*`
 * (any origin). An allowed origin is echoed in `Access-Control-Allow-Origin`; any other origin gets no
 * CORS headers at all, so the browser refuses the answer.
 */
function corsOptionsFor(origins: readonly string[]): (request: Request) => CORSOptions {
  const any = origins.length === 0 || origins.includes('*');
  const allowed = new Set(origins);
  return (request) => {
    const origin = request.headers.get('origin');
    if (origin === null || (!any && !allowed.has(origin))) return false;
    return {
      // One exact origin: echoed as is (Vary: Origin is added by useCorsExtras).
      origin: [origin],
      methods: CORS_METHODS,
      allowedHeaders: CORS_ALLOWED_HEADERS,
      exposedHeaders: CORS_EXPOSED_HEADERS,
      credentials: false,
      maxAge: CORS_MAX_AGE_SECONDS,
    };
  };
}

/**
 * What `useCORS` leaves out: `Vary: Origin` appended to every answer (it depends on the Origin header,
 * and appending keeps `Vary: Accept-Encoding`), and an `X-Request-ID` on the preflights it answered
 * itself (every response carries one).
 */
function useCorsExtras(): ServerAdapterPlugin {
  return {
    onResponse({ response }) {
      response.headers.append('Vary', 'Origin');
      if (!response.headers.has('X-Request-ID')) response.headers.set('X-Request-ID', crypto.randomUUID());
    },
  };
}

/** The server-adapter plugins for `createServerAdapter(handle, { plugins })`; `origins` default to any (`*`). */
export function corsPlugins(origins: readonly string[] = ['*']): ServerAdapterPlugin[] {
  return [useCORS(corsOptionsFor(origins)), useCorsExtras()];
}
