/**
 * createApp(deps): the whole HTTP face as one fetch-style handler (tests call it in-process).
 * `/graphql` is Yoga (GraphiQL on GET in a browser); the documented REST paths are rows of the route
 * table, each run as its GraphQL document through Yoga's own envelop pipeline, so context, auth,
 * validation and error mapping exist once. Every response carries X-Request-ID.
 */
import crypto from 'node:crypto';
import type http from 'node:http';
import { createServerAdapter, type ServerAdapter } from '@whatwg-node/server';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { GraphQLError, parse, validate, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Logger } from 'pino';
import type { Database } from './db/client.js';
import { schema } from './graphql/schema.js';
import { createContext, newRequestState, type Context, type RequestState } from './graphql/context.js';
import { useMetering } from './plugins/metering.js';
import { useErrorCodes } from './plugins/error-codes.js';
import { registerRouteDocument, safetyPlugins } from './plugins/safety.js';
import { MAX_BATCH_NAMES } from './validation/params.js';
import { corsPlugins } from './plugins/cors.js';
import { createRateLimiter, type RateLimiter } from './plugins/rate-limiter.js';
import { endpoint } from './catalogue/endpoints.js';
import { httpDuration, httpRequests, registry } from './lib/metrics.js';
import { openApiDocument } from './openapi/document.js';
import { nodeHeaders, type HeaderReader } from './lib/headers.js';
import { stringifyWithRaw } from './lib/raw-json.js';
import { ROUTES, type Route } from './rest/routes.js';
import { DOCUMENTS, GRAPHIQL_EXAMPLE } from './rest/documents.js';
import { ServiceError, dependencyUnavailable, isDatabaseUnavailable, unauthorized, validationError, validationProblems } from './lib/errors.js';
import { credentialFromHeaders, sameSecret } from './services/accounts.js';
import { serviceErrorOf, toGraphQLError } from './graphql/errors.js';
import { CallerCache } from './services/caller-cache.js';
import { QuoteCache } from './services/quote-cache.js';
import { CreditLeases, type CreditLeaseOptions } from './services/credit-leases.js';
import { readBodyLimited, readNodeBodyLimited } from './lib/body.js';
import { graphqlBodyLimit } from './graphql/types/ingestion.js';
import { defaultStatusSettings, readStatus, type StatusSettings } from './services/status.js';
import { createPages } from './pages/index.js';
import { APP_CSP } from './pages/layout.js';

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
   * an account is signalled to all replicas at once (services/caller-cache.ts).
   */
  authCacheSeconds?: number;
  /** Origins whose pages may call the service (CORS): exact origins or `*` (default: any origin, no cookies). */
  corsOrigins?: string[];
  /**
   * Keep published quotes in this replica's memory (services/quote-cache.ts; default true): invalidated by
   * every writer's change signal, served at most 1 s after a change whatever fails. False = the database every time.
   */
  quoteCache?: boolean;
  /**
   * Charge large balances from per-replica credit leases (services/credit-leases.ts; default on): false =
   * one conditional statement per charge. The app's `close()` flushes and gives the leases back.
   */
  creditLeases?: boolean | CreditLeaseOptions;
}

/** Largest accepted request body in bytes (413 `payload_too_large` above it). */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

interface ServerContext {
  requestId: string;
  state: RequestState;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * An answer before it meets a transport: the fetch API's Response (the `@whatwg-node/server` face) or
 * node:http's response (the REST fast path). `body` is the whole text; null = none.
 */
interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | null;
}

function jsonReply(status: number, body: unknown, headers: Record<string, string>): Reply {
  return { status, headers: { 'Content-Type': JSON_TYPE, ...headers }, body: JSON.stringify(body) };
}

function toResponse(reply: Reply): Response {
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}

function json(status: number, body: unknown, headers: Record<string, string>): Response {
  return toResponse(jsonReply(status, body, headers));
}

/** The error envelope (spec: ErrorEnvelope) with X-Request-ID and any headers the error carries. */
function errorReply(requestId: string, error: ServiceError, metered = false): Reply {
  return jsonReply(error.status, errorEnvelope(requestId, error, metered), { 'X-Request-ID': requestId, ...error.headers });
}

/** errorReply as a fetch Response. */
function errorResponse(requestId: string, error: ServiceError, metered = false): Response {
  return toResponse(errorReply(requestId, error, metered));
}

/** What running a REST route needs of its request, whatever the transport. */
interface RestRequest {
  searchParams: URLSearchParams;
  headers: HeaderReader;
  /** The fetch Request on the adapter face (bodies and the export's responder need it); null on the fast path. */
  request: Request | null;
  /** node:http's request on the fast path (its body is read from it). */
  incoming?: http.IncomingMessage;
}

/** The body of the error envelope (spec: ErrorEnvelope): `meta.billable` is false on metered operations. */
function errorEnvelope(requestId: string, error: ServiceError, metered = false): { error: Record<string, unknown>; meta: Record<string, unknown> } {
  const body: { code: string; message: string; details?: unknown } = { code: error.code, message: error.message };
  if (error.details !== undefined) body.details = error.details;
  return { error: body, meta: metered ? { request_id: requestId, billable: false } : { request_id: requestId } };
}

/** A string as an RFC 8941 sf-string (policy names are operation ids: plain ASCII). */
const sfString = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy` lists each
 * policy's quota `q` per window `w` seconds; `RateLimit` the remaining `r` and seconds to reset `t`.
 */
function rateLimitHeaders(state: RequestState): Record<string, string> {
  if (state.rateLimits.length === 0) return {};
  return {
    'RateLimit-Policy': state.rateLimits.map((p) => `${sfString(p.policy)};q=${p.limit};w=${p.windowSeconds}`).join(', '),
    RateLimit: state.rateLimits.map((p) => `${sfString(p.policy)};r=${p.remaining};t=${p.resetSeconds}`).join(', '),
  };
}

/** meta of a success (spec: Meta): billable and credit only on metered operations. */
function successMeta(state: RequestState, metered: boolean): Record<string, unknown> {
  if (!metered) return { request_id: state.requestId };
  const b = state.billing;
  if (b && b.billable) return { request_id: state.requestId, billable: true, credit: { cost: Number(b.cost), remaining: Number(b.remaining) } };
  return { request_id: state.requestId, billable: false };
}

/** Maps any thrown value to a ServiceError: expected ones pass, a lost database is 503, the rest 500. */
function toServiceError(error: unknown, logger?: Logger): ServiceError {
  const known = serviceErrorOf(error);
  if (known) return known;
  if (isDatabaseUnavailable(error)) return dependencyUnavailable('The database is unavailable; retry shortly.');
  logger?.error({ err: error }, 'unexpected error');
  return new ServiceError('internal_error', 500, 'Unexpected error.');
}

/** The first error of a GraphQL result as a ServiceError; several validation errors merge their details. */
function resultError(errors: readonly GraphQLError[], logger?: Logger): ServiceError {
  const mapped = errors.map((e) => {
    const code = e.extensions?.code;
    const known = serviceErrorOf(e);
    if (known) return known;
    if (typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && typeof (e.extensions?.http as { status?: number })?.status === 'number') {
      const http = e.extensions.http as { status: number; headers?: Record<string, string> };
      return new ServiceError(code, http.status, e.message, e.extensions.details, http.headers ?? {});
    }
    return toServiceError(e.originalError ?? e, logger);
  });
  const validation = mapped.filter((e) => e.code === 'validation_failed');
  if (validation.length > 1) {
    return validationError(validation.flatMap((e) => validationProblems(e)), validation[0]!.message);
  }
  return mapped.sort((a, b) => b.status - a.status).find((e) => e.status >= 500) ?? mapped[0]!;
}

interface CompiledRoute extends Route {
  /** The catalogue row has a credit cost or a rate limit: meta carries `billable`. */
  metered: boolean;
  /** The catalogue row needs an API key (role `user`): the credential is checked before the parameters. */
  userOnly: boolean;
  pattern: RegExp;
  names: string[];
  document: DocumentNode;
}

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const pattern = new RegExp(
    '^' + route.path.replace(/\{([a-z_]+)\}/g, (_m, name: string) => (names.push(name), '([^/]+)')) + '/?$',
  );
  const document = prepareDocument(route.operationId);
  const row = endpoint(route.operationId);
  return { ...route, metered: row.creditCost > 0 || row.rateLimit !== null, userOnly: row.roles.includes('user'), pattern, names, document };
}

/** The REST route documents compiled by graphql-jit (at app creation), by document object. */
const compiledRoutes = new WeakMap<DocumentNode, CompiledQuery>();

/** Route documents already prepared in this process, by operation id (the schema is one module-level object). */
const preparedDocuments = new Map<string, DocumentNode>();

/**
 * The document of a route, prepared once per process: parsed, validated, its worst-case cost checked
 * (a full batch; not estimated again per request) and compiled by graphql-jit. Throws when it does not
 * validate, exceeds the cost limit or does not compile.
 */
function prepareDocument(operationId: Route['operationId']): DocumentNode {
  const found = preparedDocuments.get(operationId);
  if (found) return found;
  const document = parse(DOCUMENTS[operationId]);
  const errors = validate(schema, document);
  if (errors.length > 0) throw new Error(`document ${operationId} is invalid: ${errors.map((e) => e.message).join('; ')}`);
  registerRouteDocument(schema, document, operationId, MAX_BATCH_NAMES);
  const compiled = compileQuery(schema, document, operationId);
  if (!isCompiledQuery(compiled)) throw new Error(`document ${operationId} does not compile: ${compiled.errors?.map((e) => e.message).join('; ')}`);
  compiledRoutes.set(document, compiled);
  preparedDocuments.set(operationId, document);
  return document;
}

/**
 * Runs a REST route's fixed document with its compiled form instead of graphql-js's interpreter; ad-hoc
 * `/graphql` documents are other objects and keep the usual executor. Only the final execute function is
 * replaced: every plugin's onExecute and onExecuteDone (error codes, cost limit, metering, error masking)
 * still runs around it, and the resolvers, context and loaders are the same.
 */
function useCompiledRoutes(): Plugin {
  return {
    onExecute({ args, setExecuteFn }) {
      const compiled = compiledRoutes.get(args.document);
      if (!compiled) return;
      setExecuteFn((a) => compiled.query(a.rootValue, a.contextValue, (a.variableValues ?? {}) as Record<string, unknown>));
    },
  };
}

/**
 * Logs every error of an execution that is not an expected refusal (a ServiceError, a GraphQL input
 * error, a lost database) with the request's logger, so the line carries its request id; the answer
 * itself is masked by Yoga's maskError. (Logging there instead would need the request's logger in an
 * AsyncLocalStorage, whose promise hooks cost every request of the hot path.)
 */
function useUnexpectedErrorLog(fallback?: Logger): Plugin<Context> {
  return {
    onExecute() {
      return {
        onExecuteDone({ args, result }) {
          const errors = (result as ExecutionResult).errors;
          if (!errors) return;
          for (const e of errors) {
            const original = e.originalError;
            if (!original || original instanceof ServiceError || original instanceof GraphQLError || isDatabaseUnavailable(original)) continue;
            ((args.contextValue as Context).state.log ?? fallback)?.error({ err: original }, 'unexpected error');
          }
        },
      };
    },
  };
}

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
   * Records every charge still pending in this replica's credit leases and gives them back, then stops the
   * caches' change listeners (graceful shutdown; requests after it are charged one statement each).
   */
  close(): Promise<void>;
}

/** Builds the request handler. Throws when a route document does not validate against the schema. */
export function createApp(deps: AppDeps): App {
  const { db, logger } = deps;
  const metricsToken = deps.metricsToken ?? null;
  // API-key lookups cached for at most authCacheSeconds, dropped at once on a change signal (services/caller-cache.ts).
  const authCacheSeconds = deps.authCacheSeconds ?? 30;
  const callers = authCacheSeconds > 0 ? new CallerCache(db, { maxAgeMs: authCacheSeconds * 1000 }) : null;
  const quotes = deps.quoteCache === false ? null : new QuoteCache(db);
  const leases = deps.creditLeases === false ? null : new CreditLeases(db, deps.creditLeases === true ? {} : deps.creditLeases);
  const limiter = deps.rateLimiter ?? createRateLimiter({ logger });
  // Pages (`/`, `/docs`, `/status/page`, `/assets/*`): HTML for people, not API operations.
  const statusSettings = deps.status ?? defaultStatusSettings();
  const pages = createPages({ loadStatus: (now) => readStatus(db, statusSettings, now), clock: deps.clock, logger: () => logger });
  const contextOptions = { clock: deps.clock, status: statusSettings, ...(callers ? { callers } : {}), ...(quotes ? { quotes } : {}), ...(leases ? { leases } : {}) };
  /** The resolvers' context of one request (both faces). */
  const makeContext = (state: RequestState, headers: HeaderReader) => createContext(db, state, headers, contextOptions);
  const yoga = createYoga<ServerContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    graphiql: { defaultQuery: GRAPHIQL_EXAMPLE, title: 'Quotegate GraphQL' },
    renderGraphiQL: pages.renderGraphiQL,
    logging: false,
    cors: false, // the server adapter's CORS plugin answers for every path (src/plugins/cors.ts)
    context: ({ request, state }) => makeContext(state, request.headers),
    maskedErrors: {
      maskError: (error) => {
        const e = error as GraphQLError;
        const original = e instanceof GraphQLError ? (e.originalError ?? e) : e;
        if (e instanceof GraphQLError && !e.originalError) return e; // parse/validation errors
        // graphql-js's own input errors (a variable that does not coerce) wrap another GraphQLError: the client's fault.
        if (e instanceof GraphQLError && e.originalError instanceof GraphQLError && !(e.originalError instanceof ServiceError)) return e;
        const mapped = toServiceError(original); // logged with its request id by useUnexpectedErrorLog
        return toGraphQLError(mapped, e instanceof GraphQLError ? { nodes: e.nodes, path: e.path } : {});
      },
    },
    plugins: [useErrorCodes(), ...safetyPlugins(), useMetering(limiter), useCompiledRoutes(), useUnexpectedErrorLog(logger)],
  });

  const routes = ROUTES.map(compile);

  /**
   * Runs one REST route for either transport: parameters to variables (a 422 waits for the credential),
   * the route's compiled document through the shared envelop pipeline, the result as the documented
   * payload in its envelope. A Reply, or the route's own Response (the export file).
   */
  async function runRoute(route: CompiledRoute, match: RegExpExecArray, input: RestRequest, state: RequestState): Promise<Reply | Response> {
    const { requestId } = state;
    // Parameters are judged after the credential (README, order of checks): a 422 found here waits for it.
    let invalid: ServiceError | null = null;
    let variableValues: Record<string, unknown> = {};
    try {
      const path: Record<string, string> = {};
      for (const [i, name] of route.names.entries()) {
        try {
          path[name] = decodeURIComponent(match[i + 1]!);
        } catch {
          throw validationError([{ location: 'path', field: name, message: 'is not valid percent-encoding' }]);
        }
      }
      let body: unknown = undefined;
      if (route.body) body = await readJsonBody(input.request ? () => readBodyLimited(input.request!, MAX_BODY_BYTES) : () => readNodeBodyLimited(input.incoming!, MAX_BODY_BYTES));
      variableValues = route.variables({ path, query: input.searchParams, body, headers: input.headers });
    } catch (e) {
      if (!(e instanceof ServiceError) || e.status !== 422) throw e;
      invalid = e;
    }
    // The envelop pipeline of Yoga (every plugin's onExecute and onExecuteDone); the resolvers' context is the
    // one Yoga's `context` option builds, made here directly (no context-building hooks are registered).
    const { execute } = yoga.getEnveloped({ requestId, state } as never);
    const contextValue = makeContext(state, input.headers);
    state.trustedVariables = invalid === null;
    if (invalid) {
      if (route.userOnly) await contextValue.requireUser(route.operationId);
      throw invalid;
    }
    const result = (await execute({ schema, document: route.document, variableValues, contextValue, operationName: route.operationId })) as ExecutionResult;
    if (result.errors && result.errors.length > 0) return errorReply(requestId, resultError(result.errors), route.metered);
    const payload = route.payload(result.data as Record<string, unknown>);
    if (route.respond) return route.respond(payload, { db, state, request: input.request!, logger: state.log ?? logger });
    const headers = { 'Content-Type': JSON_TYPE, 'X-Request-ID': requestId, ...route.headers };
    // Quotes arrive as JSON text made once per cached quote (RawJson): spliced, not serialized again.
    return { status: 200, headers, body: stringifyWithRaw(route.envelope ? { data: payload, meta: successMeta(state, route.metered) } : payload) };
  }

  async function handle(request: Request): Promise<Response> {
    const state = newRequestState(crypto.randomUUID());
    state.log = logger?.child({ request_id: state.requestId });
    state.head = request.method === 'HEAD';
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
      httpRequests.inc({ operation: 'openapi', method: request.method, status: '200' });
      return json(200, openApiDocument(), { 'X-Request-ID': state.requestId, 'Cache-Control': 'public, max-age=300' });
    }
    let response = await dispatch(request, state);
    if (state.head && response.body !== null) {
      // HEAD (README): the GET's status and headers, no body; never billed (metering), counted like a GET.
      void response.body.cancel().catch(() => undefined);
      response = new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    response.headers.set('X-Request-ID', state.requestId);
    for (const [name, value] of Object.entries(rateLimitHeaders(state))) response.headers.set(name, value);
    record(state, request.method, url.pathname, response.status, started);
    return response;
  }

  /** One metric and one log line per request (both transports). */
  function record(state: RequestState, method: string, pathname: string, status: number, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    const operation = state.operationId ?? 'unmatched';
    httpRequests.inc({ operation, method, status: String(status) });
    httpDuration.observe({ operation, status: String(status) }, seconds);
    // Never the query string's secrets (there are none by contract) nor any header: credentials live in headers only.
    state.log?.info({ operation, method, path: pathname, status, ms: Math.round(seconds * 1000) }, 'request');
  }

  async function dispatch(request: Request, state: RequestState): Promise<Response> {
    const { requestId } = state;
    let metered = false;
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
              ? new ServiceError('not_acceptable', 406, 'None of the media types in Accept can be served; accept application/graphql-response+json or application/json.')
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
        return await page(request);
      }
      let allowed: string[] = [];
      for (const route of routes) {
        const m = route.pattern.exec(url.pathname);
        if (!m) continue;
        if (route.method === request.method || (route.method === 'GET' && request.method === 'HEAD')) {
          metered = route.metered;
          state.operationId = route.operationId;
          const reply = await runRoute(route, m, { searchParams: url.searchParams, headers: request.headers, request }, state);
          return reply instanceof Response ? reply : toResponse(reply);
        }
        allowed.push(route.method);
      }
      if (allowed.length > 0) {
        allowed = [...new Set(allowed)];
        return errorResponse(
          requestId,
          new ServiceError('method_not_allowed', 405, `Method ${request.method} is not allowed here; use ${allowed.join(', ')}.`, undefined, { Allow: allowed.join(', ') }),
        );
      }
      return errorResponse(requestId, new ServiceError('route_not_found', 404, `No endpoint at ${request.method} ${url.pathname}.`));
    } catch (error) {
      return errorResponse(requestId, toServiceError(error, state.log), metered);
    }
  }

  const adapter = createServerAdapter(handle, { plugins: corsPlugins(deps.corsOrigins) });

  /**
   * The REST route a request may take on the fast path, or null: a route's own method (GET, HEAD of a GET,
   * POST with its JSON body) when it answers JSON (not the export file), without an Origin header (browsers'
   * requests go through the adapter, whose CORS plugin answers them). Everything else, 405s and 404s included, goes through
   * the adapter; both run `runRoute`, so there is one request pipeline.
   */
  function fastRoute(method: string | undefined, pathname: string, headers: http.IncomingHttpHeaders): { route: CompiledRoute; match: RegExpExecArray } | null {
    if ((method !== 'GET' && method !== 'HEAD' && method !== 'POST') || headers.origin !== undefined) return null;
    if (pathname === '/metrics' || pathname === '/openapi.json' || pages.match(pathname)) return null;
    for (const route of routes) {
      const match = route.pattern.exec(pathname);
      if (!match) continue;
      const sameMethod = route.method === method || (route.method === 'GET' && method === 'HEAD');
      return sameMethod && !route.respond ? { route, match } : null;
    }
    return null;
  }

  /**
   * Serves a fast-path request on node:http directly (issue: serving quotes at the machine's limit, step
   * "HTTP layer": the fetch-API adapter costs more than half of the machine's throughput on small answers).
   * Same state, route runner, headers, metrics and log line as `handle`; the answer is written in one go.
   */
  async function serveFast(req: http.IncomingMessage, res: http.ServerResponse, route: CompiledRoute, match: RegExpExecArray, url: URL): Promise<void> {
    const state = newRequestState(crypto.randomUUID());
    state.log = logger?.child({ request_id: state.requestId });
    state.head = req.method === 'HEAD';
    state.operationId = route.operationId;
    const started = performance.now();
    let reply: Reply;
    try {
      reply = (await runRoute(route, match, { searchParams: url.searchParams, headers: nodeHeaders(req.headers), request: null, incoming: req }, state)) as Reply;
    } catch (error) {
      reply = errorReply(state.requestId, toServiceError(error, state.log), route.metered);
    }
    // Encoded once: a spliced answer is a rope of many strings, and measuring it apart from writing it costs a second pass.
    const body = Buffer.from(reply.body ?? '', 'utf8');
    const headers: Record<string, string> = { ...reply.headers, 'X-Request-ID': state.requestId, ...rateLimitHeaders(state) };
    headers['Content-Length'] = String(body.length);
    if (!res.destroyed) {
      res.writeHead(reply.status, headers);
      // HEAD (README): the GET's status and headers, no body.
      res.end(state.head ? undefined : body);
    }
    record(state, req.method!, url.pathname, reply.status, started);
  }

  const listener: http.RequestListener = (req, res) => {
    // The adapter forms the request URL from the Host header and target; when that fails it would
    // answer 500 with a stack trace, so such requests are answered here (README, request limits).
    let url: URL;
    try {
      url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
    } catch {
      const requestId = crypto.randomUUID();
      const body = JSON.stringify(errorEnvelope(requestId, new ServiceError('bad_request', 400, 'The request target or Host header is malformed.')));
      res.writeHead(400, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body), 'X-Request-ID': requestId, Connection: 'close' });
      res.end(body);
      httpRequests.inc({ operation: 'unmatched', method: req.method ?? 'UNKNOWN', status: '400' });
      logger?.info({ request_id: requestId, operation: 'unmatched', method: req.method, status: 400, ms: 0 }, 'request');
      return;
    }
    const fast = fastRoute(req.method, url.pathname, req.headers);
    if (fast) {
      void serveFast(req, res, fast.route, fast.match, url);
      return;
    }
    (adapter as unknown as http.RequestListener)(req, res);
  };
  async function close(): Promise<void> {
    await leases?.close();
    quotes?.close();
    callers?.close();
  }
  return { adapter: adapter as never, listener, fetch: async (r: Request) => adapter.fetch(r), yoga, close };
}

/** Parses the body `read` returns (at most MAX_BODY_BYTES: 413 above it, see lib/body.ts) as JSON; 422 for bad UTF-8, an empty body or malformed JSON. */
async function readJsonBody(read: () => Promise<Uint8Array>): Promise<unknown> {
  const bytes = await read();
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw validationError([{ location: 'body', field: '', message: 'is not valid UTF-8' }]);
  }
  if (text.trim() === '') {
    throw validationError([{ location: 'body', field: '', message: 'is required (a JSON object)' }]);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw validationError([{ location: 'body', field: '', message: 'is not valid JSON' }]);
  }
}
