/**
 * createApp(deps): composition only. It wires the replica's caches (API keys, quotes), credit leases and rate
 * limiter into one Yoga instance whose plugins are the pipeline of both faces: the REST facade
 * (src/rest/facade.ts, mounted as a plugin), error codes, GraphQL safety, metering, compiled route execution
 * and error logging; then the HTTP face: the fetch adapter (CORS, pages, /metrics, /openapi.json, the
 * request id, rate-limit headers, HEAD, one metric and log line per request) and the node:http listener
 * whose hot JSON routes skip the fetch adaptation (same facade, same pipeline). Tests call `fetch` in-process.
 */
import { DEFAULT_ALERT_SETTINGS, type AlertSettings } from './alerts/alerts.js';
import crypto from 'node:crypto';
import type http from 'node:http';
import { createServerAdapter, type ServerAdapter } from '@whatwg-node/server';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer, type WebSocket } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import { GraphQLError } from 'graphql';
import type { Logger } from 'pino';
import type { Database } from './db/client.js';
import { schema } from './graphql/schema.js';
import { ANSWER_SENT, HEADERS_ONLY, createContext, newRequestState, type Context, type RequestState } from './graphql/context.js';
import { useMetering } from './plugins/metering.js';
import { useEventStreamAccept } from './plugins/event-stream-accept.js';
import { useErrorCodes } from './plugins/error-codes.js';
import { safetyPlugins } from './plugins/safety.js';
import { corsPlugins } from './plugins/cors.js';
import { createRateLimiter, type RateLimiter } from './limits/rate-limiter.js';
import { httpRequests, registry } from './lib/metrics.js';
import { openApiBody } from './openapi/document.js';
import type { HeaderReader } from './lib/headers.js';
import { GRAPHIQL_EXAMPLE } from './rest/documents.js';
import { createRestFacade, MAX_BODY_BYTES, type ServerContext } from './rest/facade.js';
import { useLiveResults } from './plugins/live-results.js';
import { JSON_TYPE, errorEnvelope, errorResponse, rateLimitHeaders, recordRequest, toServiceError } from './http/replies.js';
import { ServiceError, unauthorized } from './lib/errors.js';
import { credentialFromHeaders, sameSecret } from './accounts/accounts.js';
import { toGraphQLError } from './graphql/errors.js';
import { CallerCache } from './accounts/caller-cache.js';
import { QuoteCache } from './quotes/quote-cache.js';
import { ifNoneMatchHits, SnapshotCache } from './exports/exports.js';
import { CreditLeases, type CreditLeaseOptions } from './accounts/credit-leases.js';
import { readBodyLimited } from './lib/body.js';
import { graphqlBodyLimit } from './graphql/types/ingestion.js';
import { defaultStatusSettings, readStatus, type StatusSettings } from './status/status.js';
import { createPages } from './pages/index.js';
import { APP_CSP } from './pages/layout.js';
import { createPageLimit, DEFAULT_PAGE_RATE_LIMIT, type PageRateLimit, type TrustProxy } from './pages/page-limit.js';
import { LiveHub } from './live/live.js';
import { LiveMeter } from './live/live-billing.js';
import { KnownHosts, plainTarget, type RequestTarget } from './lib/target.js';

/** What the app needs from the outside. */
export interface AppDeps {
  db: Database;
  logger?: Logger;
  /** Rate limits of this replica (default: in memory). */
  rateLimiter?: RateLimiter;
  /** The request clock (default: the system clock); tests fix it. */
  clock?: () => Date;
  /** Status settings for `/status` (default: no Redis, no proxy nodes). */
  status?: StatusSettings;
  /**
   * Bearer token for GET /metrics on this (the API) face; unset or null = /metrics is not served here
   * (404 route_not_found): operators read it on METRICS_PORT or with the token (README, Operations).
   */
  metricsToken?: string | null;
  /**
   * Seconds an API-key lookup may be reused by this replica while it hears change signals (default 30;
   * 0 = ask the database every request); at most 1 s while its LISTEN connection is down. Every change of
   * an account is signalled to all replicas at once (accounts/caller-cache.ts).
   */
  authCacheSeconds?: number;
  /** Origins whose pages may call the service (CORS): exact origins or `*` (default: any origin, no cookies). */
  corsOrigins?: string[];
  /**
   * Keep published quotes in this replica's memory (quotes/quote-cache.ts; default true): invalidated by
   * every writer's change signal, served at most 1 s after a change whatever fails. False = the database every time.
   */
  quoteCache?: boolean;
  /**
   * Charge large balances from per-replica credit leases (accounts/credit-leases.ts; default on): false =
   * one conditional statement per charge. The app's `close()` flushes and gives the leases back.
   */
  creditLeases?: boolean | CreditLeaseOptions;
  /**
   * Live subscriptions (live/live.ts; README, Extensions: live changes): the most one account may have open
   * at once on all replicas (default 10) and the undelivered changes one may hold before it is closed as a slow
   * consumer (default 10,000); `redisUrl`: replicas also announce commits to each other's hubs over Redis pub/sub;
   * `minuteMs`: milliseconds one charge of a subscription pays for (default 60,000; tests shorten it).
   */
  /**
   * Webhook alerts (docs/alerts.md): `allowHttp` accepts http:// webhook URLs (tests, local receivers; default https
   * only), `allowPrivateHosts` accepts URLs whose host is a non-public address or a local name (default refused: the
   * SSRF guard), `maxPerAccount` (default 50).
   */
  alerts?: Partial<AlertSettings>;
  live?: { maxConcurrent?: number; maxQueue?: number; pollMs?: number; redisUrl?: string; minuteMs?: number };
  /**
   * The item pages' limit per client address (src/pages/page-limit.ts): `rateLimit` pages per window (default 30 a
   * minute; null = none), counted by `rateLimiter` (so in Redis when it uses Redis); `trustProxy` says whose
   * X-Forwarded-For names the client (default: nobody's).
   */
  pages?: { rateLimit?: PageRateLimit | null; trustProxy?: TrustProxy };
  /** The service's public address for the pages' examples (pages/index.ts `PagesDeps.publicBaseUrl`). */
  publicBaseUrl?: () => string;
  /**
   * The `servers` URL /openapi.json states: PUBLIC_BASE_URL when it is set; unset: `/` (relative to the document,
   * so it is right behind any proxy), never the request's Host header.
   */
  apiServerUrl?: string;
}

/** Seconds between WebSocket pings; a connection that did not answer the previous one is closed. */
export const WS_PING_SECONDS = 12;

/** Largest accepted request body in bytes (413 `payload_too_large` above it; src/rest/facade.ts). */
export { MAX_BODY_BYTES };

/** GET /metrics: this replica's Prometheus text (prom-client). */
export async function metricsResponse(requestId: string = crypto.randomUUID()): Promise<Response> {
  const text = await registry.metrics();
  return new Response(text, { status: 200, headers: { 'Content-Type': registry.contentType, 'X-Request-ID': requestId } });
}

/** The app: a fetch handler plus the Yoga instance (for tests and tooling). */
export interface App {
  /** Usable as a node:http request listener (`http.createServer(app.adapter)`). */
  adapter: ServerAdapter<Record<string, never>, { handle(request: Request): Promise<Response> }>;
  /**
   * The node:http request listener to serve with (`http.createServer(app.listener)`): the adapter,
   * behind a guard that answers requests no URL can be formed from (a malformed Host header) with
   * 400 `bad_request` in the error envelope, a request id, a log line and a metric.
   */
  listener: http.RequestListener;
  /** Handles one request in-process. */
  fetch(request: Request): Promise<Response>;
  yoga: YogaServerInstance<ServerContext, Context>;
  /**
   * Serves GraphQL over WebSocket (graphql-ws) on `server`'s `/graphql` upgrades, through the same envelop
   * pipeline as HTTP; the credential comes from the upgrade request's headers or the connection_init payload
   * (`{ "apiKey": "<key>" }`, or `Authorization` / `X-API-Key`). Returns the function that closes them all.
   */
  attachWebSockets(server: http.Server): () => Promise<void>;
  /** The replica's live hub (tests). */
  live: LiveHub;
  /**
   * Lookups of the replica's quote cache since start (`hits`: names answered from memory, `misses`: names loaded from
   * the database) and the estimated bytes it holds now; null when the app runs without it (`quoteCache: false`).
   * Read by `npm run bench` for hit rates.
   */
  quoteCacheStats(): { hits: number; misses: number; bytes: number } | null;
  /**
   * Ends the live subscriptions, records every charge still pending in this replica's credit leases and gives
   * them back, then stops the caches' change listeners (graceful shutdown; requests after it are charged one
   * statement each).
   */
  close(): Promise<void>;
}

/**
 * Yoga's `maskedErrors.maskError` for both faces: parse, validation and input-coercion errors are the client's
 * and pass as they are; a ServiceError keeps its code; anything else becomes `internal` (services' errors mapped
 * by lib/errors.ts `toServiceError`, logged with the request id by useErrorCodes).
 */
function maskError(error: unknown): Error {
  const e = error as GraphQLError;
  const original = e instanceof GraphQLError ? (e.originalError ?? e) : e;
  if (e instanceof GraphQLError && !e.originalError) return e; // parse/validation errors
  // graphql-js's own input errors (a variable that does not coerce) wrap another GraphQLError: the client's fault.
  if (e instanceof GraphQLError && e.originalError instanceof GraphQLError && !(e.originalError instanceof ServiceError)) return e;
  const mapped = toServiceError(original);
  return toGraphQLError(mapped, e instanceof GraphQLError ? { nodes: e.nodes, path: e.path } : {});
}

/** Builds the request handler. Throws when a route document does not validate against the schema. */
export function createApp(deps: AppDeps): App {
  const { db, logger } = deps;
  const metricsToken = deps.metricsToken ?? null;
  // API-key lookups cached for at most authCacheSeconds, dropped at once on a change signal (accounts/caller-cache.ts).
  const authCacheSeconds = deps.authCacheSeconds ?? 30;
  const callers = authCacheSeconds > 0 ? new CallerCache(db, { maxAgeMs: authCacheSeconds * 1000 }) : null;
  const quotes = deps.quoteCache === false ? null : new QuoteCache(db);
  const snapshots = new SnapshotCache(db);
  const leases = deps.creditLeases === false ? null : new CreditLeases(db, deps.creditLeases === true ? {} : deps.creditLeases);
  const limiter = deps.rateLimiter ?? createRateLimiter({ logger });
  const hub = new LiveHub(db, { ...(quotes ? { quotes } : {}), maxQueue: deps.live?.maxQueue, pollMs: deps.live?.pollMs, redisUrl: deps.live?.redisUrl });
  const meter = new LiveMeter(hub, { db, ...(leases ? { leases } : {}), ...(callers ? { callers } : {}), maxConcurrent: deps.live?.maxConcurrent ?? 10, minuteMs: deps.live?.minuteMs });
  const live = { hub, meter };
  // Pages (`/`, `/docs`, `/status/page`, `/items`, `/assets/*`): HTML for people, not API operations.
  const statusSettings = deps.status ?? defaultStatusSettings();
  const pageLimit = createPageLimit({ limiter, limit: deps.pages?.rateLimit === undefined ? DEFAULT_PAGE_RATE_LIMIT : deps.pages.rateLimit, trustProxy: deps.pages?.trustProxy ?? null });
  const pages = createPages({ db, quoteCache: quotes, loadStatus: (now) => readStatus(db, statusSettings, now), clock: deps.clock, logger: () => logger, publicBaseUrl: deps.publicBaseUrl });
  const contextOptions = { clock: deps.clock, status: statusSettings, ...(callers ? { callers } : {}), ...(quotes ? { quotes } : {}), ...(leases ? { leases } : {}), snapshots, live, alerts: { ...DEFAULT_ALERT_SETTINGS, ...deps.alerts } };
  /** The resolvers' context of one request (both faces). */
  const makeContext = (state: RequestState, headers: HeaderReader) => createContext(db, state, headers, contextOptions);
  // The documented REST paths: a Yoga plugin over the same pipeline, plus the node:http fast path (src/rest/facade.ts).
  const rest = createRestFacade({
    db,
    logger,
    makeContext,
    isOtherFace: (pathname) => pathname === '/metrics' || pathname === '/openapi.json' || pages.match(pathname) !== null,
  });
  const yoga = createYoga<ServerContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // Yoga's own health check answers any URL ending with this; GET /health is the spec's operation (a REST
    // route), so it is set to a text no request URL can end with (a serialized URL never holds a raw space).
    healthCheckEndpoint: ' ',
    graphiql: { defaultQuery: GRAPHIQL_EXAMPLE, title: 'Quotegate GraphQL' },
    renderGraphiQL: pages.renderGraphiQL,
    logging: false,
    cors: false, // the server adapter's CORS plugin answers for every path (src/plugins/cors.ts)
    context: ({ request, state }) => makeContext(state, request.headers),
    maskedErrors: { maskError },
    // Metering is the last of the plugins with an onExecute hook (before Yoga's error masking): its hook waits on the
    // rate limiter, and envelop runs every hook after a promise through promises too.
    plugins: [rest.plugin, useErrorCodes(logger), ...safetyPlugins(), useEventStreamAccept(), useMetering(limiter), useLiveResults({ maskError })],
  });


  // The node adapter's server context carries the request's `req` (absent for `app.fetch`: no peer).
  async function handle(request: Request, serverContext?: object): Promise<Response> {
    const state = newRequestState(crypto.randomUUID(), request.method === 'HEAD' ? HEADERS_ONLY : ANSWER_SENT);
    state.log = logger?.child({ request_id: state.requestId });
    const started = performance.now();
    const url = new URL(request.url);
    if (url.pathname === '/metrics' && (request.method === 'GET' || request.method === 'HEAD') && metricsToken) {
      const credential = credentialFromHeaders(request.headers);
      if (credential === null || !sameSecret(credential, metricsToken)) {
        httpRequests.inc({ operation: 'metrics', method: request.method, status: '401' });
        return errorResponse(state.requestId, unauthorized('GET /metrics needs the operator token: Authorization: Bearer <METRICS_TOKEN>.'));
      }
      httpRequests.inc({ operation: 'metrics', method: request.method, status: '200' });
      return metricsResponse(state.requestId);
    }
    if (url.pathname === '/openapi.json' && (request.method === 'GET' || request.method === 'HEAD')) {
      const { body, etag } = openApiBody(deps.apiServerUrl);
      const headers = { 'X-Request-ID': state.requestId, 'Cache-Control': 'public, max-age=300', ETag: etag };
      if (ifNoneMatchHits(request.headers.get('if-none-match'), etag)) {
        httpRequests.inc({ operation: 'openapi', method: request.method, status: '304' });
        return new Response(null, { status: 304, headers });
      }
      httpRequests.inc({ operation: 'openapi', method: request.method, status: '200' });
      return new Response(state.delivery.body ? body : null, { status: 200, headers: { 'Content-Type': JSON_TYPE, ...headers } });
    }
    let response = await dispatch(request, state, (serverContext as { req?: http.IncomingMessage } | undefined)?.req?.socket?.remoteAddress);
    if (!state.delivery.body && response.body !== null) {
      // HEAD (README): the GET's status and headers, no body; never billed (metering), counted like a GET.
      void response.body.cancel().catch(() => undefined);
      response = new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    response.headers.set('X-Request-ID', state.requestId);
    for (const [name, value] of Object.entries(rateLimitHeaders(state))) response.headers.set(name, value);
    recordRequest(state, request.method, url.pathname, response.status, started);
    return response;
  }

  async function dispatch(request: Request, state: RequestState, peer: string | undefined): Promise<Response> {
    const { requestId } = state;
    try {
      const url = new URL(request.url);
      if (url.pathname === '/graphql' || url.pathname === '/graphql/') {
        state.operationId = 'graphql';
        // Yoga reads bodies whole: hand it one already read within MAX_BODY_BYTES (413 above it, before parsing).
        const bounded =
          request.body === null || request.method === 'GET' || request.method === 'HEAD'
            ? request
            : new Request(request.url, {
                method: request.method,
                headers: request.headers,
                // Collectors' ingestQuotes batches need more than the public limit (machine tokens only).
                body: await readBodyLimited(request, await graphqlBodyLimit(db, request.headers, MAX_BODY_BYTES)),
                signal: request.signal,
              });
        const response = await yoga.handleRequest(bounded, { requestId, state });
        if ((response.status === 406 || response.status === 415) && response.headers.get('content-type') === null) {
          // Yoga refuses these with an empty body: the error envelope with a code instead, like every other refusal.
          return errorResponse(
            requestId,
            response.status === 406
              ? new ServiceError(
                  'not_acceptable',
                  406,
                  'None of the media types in Accept can be served: a query or mutation answers application/graphql-response+json or application/json; a subscription streams text/event-stream (or use graphql-ws on this path).',
                )
              : new ServiceError('unsupported_media_type', 415, 'The request body must be application/json (a GraphQL request: query, variables, operationName).'),
          );
        }
        if (response.headers.get('content-type')?.startsWith('text/html')) {
          response.headers.delete('Content-Type');
          response.headers.set('Content-Type', 'text/html; charset=utf-8');
          response.headers.set('Content-Security-Policy', APP_CSP);
        }
        return response;
      }
      const page = pages.match(url.pathname);
      if (page) {
        state.operationId = 'page';
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          return errorResponse(requestId, new ServiceError('method_not_allowed', 405, `Method ${request.method} is not allowed here; use GET.`, undefined, { Allow: 'GET, HEAD' }));
        }
        if (pages.isLimited(url.pathname)) {
          // The item pages show what the API sells: limited per client address (src/pages/page-limit.ts).
          const { outcome, refused } = await pageLimit.check(request, peer);
          if (outcome) state.rateLimits.push({ policy: outcome.policy, limit: outcome.limit, windowSeconds: outcome.windowSeconds, remaining: outcome.remaining, resetSeconds: outcome.resetSeconds });
          if (refused) return refused;
        }
        return await page(request);
      }
      // Every other path is the REST facade's, mounted in Yoga as a plugin (src/rest/facade.ts).
      return await yoga.handleRequest(request, { requestId, state });
    } catch (error) {
      return errorResponse(requestId, toServiceError(error, state.log));
    }
  }

  const adapter = createServerAdapter(handle, { plugins: corsPlugins(deps.corsOrigins) });
  const hosts = new KnownHosts();

  const listener: http.RequestListener = (req, res) => {
    // The adapter forms the request URL from the Host header and target; when that fails it would
    // answer 500 with a stack trace, so such requests are answered here (README, request limits).
    // A plain target with a Host seen before skips the URL parser (lib/target.ts); it parses alike.
    let url: RequestTarget | null = plainTarget(req.url, req.headers.host, hosts);
    if (!url) {
      try {
        url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
      } catch {
        url = null;
      }
    }
    if (!url) {
      const requestId = crypto.randomUUID();
      const body = JSON.stringify(errorEnvelope(requestId, new ServiceError('bad_request', 400, 'The request target or Host header is malformed.')));
      res.writeHead(400, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body), 'X-Request-ID': requestId, Connection: 'close' });
      res.end(body);
      httpRequests.inc({ operation: 'unmatched', method: req.method ?? 'UNKNOWN', status: '400' });
      logger?.info({ request_id: requestId, operation: 'unmatched', method: req.method, status: 400, ms: 0 }, 'request');
      return;
    }
    const fast = rest.fastRoute(req.method, url.pathname, req.headers);
    if (fast) {
      void rest.serveFast(req, res, fast.route, fast.match, url);
      return;
    }
    (adapter as unknown as http.RequestListener)(req, res);
  };
  function attachWebSockets(server: http.Server): () => Promise<void> {
    const wss = new WebSocketServer({ server, path: '/graphql' });
    const alive = new WeakMap<WebSocket, boolean>();
    wss.on('connection', (socket) => {
      alive.set(socket, true);
      socket.on('pong', () => alive.set(socket, true));
    });
    // Heartbeat: a ping every WS_PING_SECONDS; a socket that missed the previous pong is closed.
    const ping = setInterval(() => {
      for (const socket of wss.clients) {
        if (!alive.get(socket)) {
          socket.terminate();
          continue;
        }
        alive.set(socket, false);
        socket.ping();
      }
    }, WS_PING_SECONDS * 1000);
    ping.unref();
    useServer<Record<string, unknown> | undefined, { request: http.IncomingMessage }>(
      {
        execute: (args) => (args.rootValue as { execute: (a: unknown) => unknown }).execute(args) as never,
        subscribe: (args) => (args.rootValue as { subscribe: (a: unknown) => unknown }).subscribe(args) as never,
        onSubscribe: async (ctx, _id, payload) => {
          const state = newRequestState(crypto.randomUUID());
          state.log = logger?.child({ request_id: state.requestId });
          state.operationId = 'graphql-ws';
          const upgrade = ctx.extra.request.headers;
          const params = ctx.connectionParams ?? {};
          const fromParams = (name: string) => {
            const v = params[name];
            return typeof v === 'string' ? v : null;
          };
          // The credential of the upgrade request, else of connection_init (browsers cannot set upgrade headers).
          const headers: HeaderReader = {
            get(name) {
              const key = name.toLowerCase();
              const h = upgrade[key];
              if (typeof h === 'string') return h;
              if (key === 'x-api-key') return fromParams('apiKey') ?? fromParams('X-API-Key') ?? fromParams('x-api-key');
              if (key === 'authorization') return fromParams('Authorization') ?? fromParams('authorization');
              return null;
            },
          };
          const { schema: s, execute, subscribe, parse, validate } = yoga.getEnveloped({ requestId: state.requestId, state } as never);
          let document;
          try {
            document = parse(payload.query);
          } catch (e) {
            return [e instanceof GraphQLError ? e : new GraphQLError(String(e))];
          }
          const errors = validate(s, document);
          if (errors.length > 0) return errors;
          return { schema: s, document, operationName: payload.operationName, variableValues: payload.variables, contextValue: makeContext(state, headers), rootValue: { execute, subscribe } };
        },
      },
      wss,
    );
    return async () => {
      clearInterval(ping);
      for (const socket of wss.clients) socket.close(1001, 'server shutting down');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    };
  }

  async function close(): Promise<void> {
    meter.close();
    await hub.close();
    await leases?.close();
    quotes?.close();
    snapshots.close();
    callers?.close();
  }
  return { adapter: adapter as never, listener, fetch: async (r: Request) => adapter.fetch(r), yoga, close, attachWebSockets, live: hub, quoteCacheStats: () => (quotes ? { ...quotes.stats, bytes: quotes.bytes } : null) };
}
