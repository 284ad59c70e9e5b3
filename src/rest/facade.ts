/**
 * The REST facade (spec paths; issue: serving quotes at the machine's limit, "REST inside the GraphQL
 * pipeline"): every documented path is a route (src/rest/routes.ts) whose fixed GraphQL document runs
 * through Yoga's own envelop pipeline, so context, auth, validation, metering, rate limits, error codes and
 * masking exist once for both faces. Mounted as a Yoga plugin (`plugin`, the way Yoga's SOFA plugin mounts
 * REST): on the fetch-adapter face its onRequest hook answers every path but `/graphql` (a route, a 405 with
 * Allow, or a 404 `route_not_found`); on the node:http face `fastRoute`/`serveFast` answer the hot JSON
 * routes with the same `runRoute`, without the fetch adaptation.
 */
import crypto from 'node:crypto';
import type http from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Plugin, YogaServerInstance } from 'graphql-yoga';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { Kind, parse, validate, type DocumentNode, type ExecutionResult } from 'graphql';
import { isAsyncIterable } from '@envelop/core';
import type { Logger } from 'pino';
import pLimit from 'p-limit';
import type { Database } from '../db/client.js';
import { schema } from '../graphql/schema.js';
import { ANSWER_SENT, ANSWER_STREAMED, HEADERS_ONLY, newRequestState, type Context, type RequestState } from '../graphql/context.js';
import { registerRouteDocument } from '../plugins/safety.js';
import { restSendsData } from '../plugins/metering/billing-rule.js';
import { MAX_BATCH_NAMES } from '../validation/params.js';
import { endpoint } from '../catalogue/endpoints.js';
import { nodeHeaders, type HeaderReader } from '../lib/headers.js';
import type { RequestTarget } from '../lib/target.js';
import { encodeWithRaw, streamWithRaw } from '../lib/raw-json.js';
import { deliveryStream, type UndeliveredReason } from '../lib/delivery.js';
import { refundCredits } from '../accounts/billing.js';
import { ROUTES, type Route } from './routes.js';
import { compileExecuteHooks, type CompiledExecute, type HookedPlugin } from './execute-hooks.js';
import type { LiveSubscription } from '../live/live.js';
import { changeEvent } from '../quotes/changes.js';
import { DOCUMENTS } from './documents.js';
import { ServiceError, validationError, validationProblems } from '../lib/errors.js';
import { readBodyLimited, readNodeBodyLimited } from '../lib/body.js';
import { JSON_TYPE, SSE_HEADERS, errorEnvelope, errorReply, writeEvents, type EventFeed, errorResponse, rateLimitHeaders, recordRequest, resultError, successMeta, toResponse, toServiceError, type Reply } from '../http/replies.js';

/** Largest accepted request body in bytes (413 `payload_too_large` above it). */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** What the HTTP face passes to Yoga for each request. */
export interface ServerContext {
  requestId: string;
  state: RequestState;
}

/** What running a REST route needs of its request, whatever the transport. */
export interface RestRequest {
  searchParams: URLSearchParams;
  headers: HeaderReader;
  /** The fetch Request on the adapter face (its body is read from it); null on the fast path. */
  request: Request | null;
  /** node:http's request on the fast path (its body is read from it). */
  incoming?: http.IncomingMessage;
  /** Aborts when the client leaves before the answer was sent whole (the export's paid delivery reads it). */
  signal: AbortSignal;
}

/** The signal of a request whose answer has no delivery to watch (never aborts). */
const NEVER = new AbortController().signal;

const snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A refusal raised while the route's document ran, in REST terms: a 422 detail about a GraphQL argument
 * (`location: argument`, `buyOn`) names the request parameter the route built it from (`query`/`path`/`body`,
 * `buy_on`), so REST clients read the names they sent.
 */
function asRestError(route: CompiledRoute, error: ServiceError): ServiceError {
  const problems = error.code === 'validation_failed' ? validationProblems(error) : [];
  if (!problems.some((p) => p.location === 'argument')) return error;
  const details = problems.map((p) => {
    if (p.location !== 'argument') return p;
    const param = route.operation.params.find((x) => x.arg === p.field);
    if (param) return { ...p, location: param.in, field: param.name };
    const field = snake(p.field);
    return { ...p, location: route.names.includes(field) ? ('path' as const) : route.body ? ('body' as const) : ('query' as const), field };
  });
  return validationError(details, error.message);
}

/** A route ready to run: its match pattern, path parameter names and prepared document. */
export interface CompiledRoute extends Route {
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
  const document = parse(DOCUMENTS[operationId]!);
  const errors = validate(schema, document);
  if (errors.length > 0) throw new Error(`document ${operationId} is invalid: ${errors.map((e) => e.message).join('; ')}`);
  // A subscription (the REST event stream) keeps the pipeline's subscribe: its events are few and long-lived.
  if (document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === 'subscription')) {
    registerRouteDocument(schema, document, operationId, MAX_BATCH_NAMES);
    preparedDocuments.set(operationId, document);
    return document;
  }
  const compiled = compileQuery(schema, document, operationId);
  if (!isCompiledQuery(compiled)) throw new Error(`document ${operationId} does not compile: ${compiled.errors?.map((e) => e.message).join('; ')}`);
  // Only the final execute function is replaced (by the cost limit's hook, src/plugins/safety.ts): every plugin's
  // onExecute and onExecuteDone (error codes, metering, error masking) still runs around it, with the same
  // resolvers, context and loaders.
  registerRouteDocument(schema, document, operationId, MAX_BATCH_NAMES, (a) => compiled.query(a.rootValue, a.contextValue, (a.variableValues ?? {}) as Record<string, unknown>));
  preparedDocuments.set(operationId, document);
  return document;
}

/** What the facade needs from the app. */
export interface RestFacadeDeps {
  db: Database;
  logger?: Logger;
  /** The resolvers' context of one request (the same function Yoga's `context` option uses). */
  makeContext(state: RequestState, headers: HeaderReader): Context;
  /** True for paths the app answers outside the REST facade and GraphQL (pages, /metrics, /openapi.json). */
  isOtherFace(pathname: string): boolean;
}

/** The REST facade of one app (see the module doc). */
export interface RestFacade {
  /** The Yoga plugin that mounts the facade (put it in the app's Yoga plugins). */
  plugin: Plugin<Context, ServerContext>;
  /** The route a node:http request may take on the fast path, or null (see fastRoute). */
  fastRoute(method: string | undefined, pathname: string, headers: http.IncomingHttpHeaders): { route: CompiledRoute; match: RegExpExecArray } | null;
  /** Serves a fast-path request on node:http directly. */
  serveFast(req: http.IncomingMessage, res: http.ServerResponse, route: CompiledRoute, match: RegExpExecArray, url: RequestTarget): Promise<void>;
}

/** Answers shorter than this (UTF-16 code units) are written as strings, longer ones encoded first (see serveFast). */
const SMALL_ANSWER_CHARS = 64 * 1024;

/** Heavy answers made at once per replica (see `heavyAnswers` in createRestFacade). */
const HEAVY_AT_ONCE = 2;

/** What the facade runs of the envelop pipeline. */
type Enveloped = Pick<ReturnType<YogaServerInstance<ServerContext, Context>['getEnveloped']>, 'execute' | 'subscribe'>;

/** Builds the facade; throws when a route document does not validate, exceeds the cost limit or does not compile. */
export function createRestFacade(deps: RestFacadeDeps): RestFacade {
  const { db, logger, makeContext } = deps;
  const routes = ROUTES.map(compile);
  let yoga: YogaServerInstance<ServerContext, Context> | null = null;
  /**
   * Heavy answers (RouteSpec.heavy) being started at once on this replica: execution and the first streamed piece
   * (its first 50 names' quotes). The rest of each answer is made as its connection drains (streamedReply), so what
   * a heavy answer holds no longer grows with its length. Before answers were streamed, a full-scale batch held
   * every quote of its 1,000 names and its whole text at once, and the replica's peak memory followed the number of
   * such answers in flight (figures: docs/benchmarks.md, Figures behind choices in the code).
   */
  const heavyAnswers = pLimit(HEAVY_AT_ONCE);
  let shared: Enveloped | null = null;
  /** Every plugin of the pipeline, Yoga's own included (envelop's onPluginInit hands the live list over). */
  let allPlugins: readonly { onEnveloped?: unknown }[] | null = null;
  /**
   * The pipeline's `execute` and `subscribe` (every plugin's hooks around graphql-js or the compiled route). They
   * hold no per-request state: envelop passes the request's context to them, and `getEnveloped`'s own argument only
   * reaches `onEnveloped` hooks, which no plugin of the app has. So they are taken once, not per request (each
   * `getEnveloped` call built wrappers for parse, validate and context too); a plugin with `onEnveloped` would make
   * every request take its own, as Yoga does.
   */
  const envelopedFor = (requestId: string, state: RequestState): Enveloped => {
    if (!yoga) throw new Error('the REST facade plugin is not mounted on a Yoga instance');
    if (shared) return shared;
    const enveloped = yoga.getEnveloped({ requestId, state } as never);
    if (allPlugins?.every((p) => p.onEnveloped === undefined)) {
      shared = enveloped;
      compiledExecute = compileExecuteHooks(allPlugins as readonly HookedPlugin[]);
    }
    return enveloped;
  };
  /**
   * The same plugins' onExecute hooks around a route document, compiled once (src/rest/execute-hooks.ts): envelop's
   * orchestrator without its per-hook promise helpers. Null until the shared pipeline is taken, or when a plugin has
   * hooks only envelop can run (then envelop's `execute` runs every route).
   */
  let compiledExecute: CompiledExecute | null = null;

  /**
   * Runs one REST route for either transport: parameters to variables (a 422 waits for the credential),
   * the route's compiled document through the shared envelop pipeline, the result as the documented
   * payload in its envelope, or the route's own answer (the export file: a 304, headers, or the file as a stream).
   */
  async function runRoute(route: CompiledRoute, match: RegExpExecArray, input: RestRequest, state: RequestState): Promise<Reply> {
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
    const { execute, subscribe } = envelopedFor(requestId, state);
    const contextValue = makeContext(state, input.headers);
    if (invalid) {
      if (route.userOnly) await contextValue.requireUser(route.operationId);
      throw invalid;
    }
    if (route.stream) {
      // A subscription document (the REST event stream): admitted and started by the same pipeline (the metering
      // plugin's onSubscribe, the resolver's subscribe); then its live subscription is read directly, without a
      // GraphQL execution per event (each change's ChangeOut text is made once for every stream that sends it).
      const subscribed = await subscribe({ schema, document: route.document, variableValues, contextValue, operationName: route.operationId });
      if (!isAsyncIterable(subscribed)) {
        const { errors } = subscribed as ExecutionResult;
        if (errors && errors.length > 0) return errorReply(requestId, asRestError(route, resultError(errors, state.log)), route.metered);
        // Admitted and not started: its events would not be sent (a HEAD; metering's onSubscribe).
        return { status: 200, headers: { ...SSE_HEADERS, 'X-Request-ID': requestId }, body: null };
      }
      const live = state.live;
      if (!live) throw new Error(`route ${route.operationId} started no live subscription`);
      state.live = undefined;
      // The client may have left while the subscription started: then it ends at once (its replay stops reading).
      if (input.signal.aborted) void live.return();
      else input.signal.addEventListener('abort', () => void live.return(), { once: true });
      return { status: 200, headers: { ...SSE_HEADERS, 'X-Request-ID': requestId }, body: null, events: eventFeed(live, requestId) };
    }
    // A heavy answer (a batch of 100 names or more) is streamed: its quotes are loaded and written a block at a time.
    const heavy = route.heavy?.(variableValues) === true;
    if (heavy && state.delivery.body) state.delivery = ANSWER_STREAMED;
    const answer = async (): Promise<Reply> => {
      const args = { schema, document: route.document, variableValues, contextValue, operationName: route.operationId };
      let result: ExecutionResult;
      if (compiledExecute) {
        const executed = compiledExecute(args); // a native promise only when a hook or the execution waited
        result = executed instanceof Promise ? await executed : executed;
      } else {
        result = (await execute(args)) as ExecutionResult;
      }
      // Any error: the error envelope, no data, and so no charge (the billing rule, restSendsData in plugins/metering/billing-rule.ts).
      if (!restSendsData(result)) return errorReply(requestId, asRestError(route, resultError(result.errors!)), route.metered);
      const payload = route.payload(result.data as Record<string, unknown>);
      if (route.respond) return route.respond(payload, { db, state, signal: input.signal, logger: state.log ?? logger });
      const headers = { 'Content-Type': JSON_TYPE, 'X-Request-ID': requestId, ...route.headers };
      const value = route.envelope ? { data: payload, meta: successMeta(state, route.metered) } : payload;
      if (heavy) return streamedReply(value, headers, input.signal, state);
      // Quotes arrive as JSON text made once per cached quote (RawJson): spliced, not serialized again.
      return { status: 200, headers, body: encodeWithRaw(value) };
    };
    return heavy ? heavyAnswers(answer) : answer();
  }

  /**
   * A 200 answer written as it is made (`streamWithRaw`: DeferredJson quotes loaded a block at a time), without a
   * Content-Length. Its first piece is made before the answer starts, so a database that fails before then is
   * answered with its error (503) and the charge refunded; one that fails later cuts the answer short (the
   * connection is closed before its end, so no client takes it for whole), and that, or a client that leaves
   * before the last byte, refunds the charge too (README, Billing: paid on delivery).
   */
  async function streamedReply(value: unknown, headers: Record<string, string>, signal: AbortSignal, state: RequestState): Promise<Reply> {
    const charge = state.billing?.charge;
    const log = state.log ?? logger;
    const refund = async (reason: UndeliveredReason) => {
      if (!charge) return;
      const refunded = await refundCredits(db, charge).catch((e: unknown) => {
        log?.error({ err: e, credits: charge.cost.toString() }, 'streamed answer not delivered: the refund failed');
        return false;
      });
      log?.warn({ reason, refunded, credits: charge.cost.toString() }, 'streamed answer not delivered: charge refunded');
    };
    const pieces = streamWithRaw(value);
    let first: IteratorResult<Uint8Array>;
    try {
      first = await pieces.next();
    } catch (e) {
      await refund('read_error');
      throw e;
    }
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        if (first.done) controller.close();
        else controller.enqueue(first.value);
      },
      async pull(controller) {
        const next = await pieces.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await pieces.return(undefined);
      },
    });
    return { status: 200, headers, body: null, stream: charge ? deliveryStream(body, signal, refund) : body };
  }

  /**
   * The REST route a request may take on the fast path, or null: a route's own method (GET, HEAD of a GET,
   * POST with its JSON body), without an Origin header (browsers' requests go through the adapter, whose CORS
   * plugin answers them). The export file is served here too, streamed with its delivery watched. Everything else, 405s and 404s included, goes through
   * the adapter; both run `runRoute`, so there is one request pipeline.
   */
  function fastRoute(method: string | undefined, pathname: string, headers: http.IncomingHttpHeaders): { route: CompiledRoute; match: RegExpExecArray } | null {
    if ((method !== 'GET' && method !== 'HEAD' && method !== 'POST') || headers.origin !== undefined) return null;
    if (deps.isOtherFace(pathname)) return null;
    for (const route of routes) {
      const match = route.pattern.exec(pathname);
      if (!match) continue;
      // A path may have routes of several methods (GET and POST /alerts): the one of this method, if any.
      if (route.method === method || (route.method === 'GET' && method === 'HEAD')) return { route, match };
    }
    return null;
  }

  /**
   * Serves a fast-path request on node:http directly (issue: serving quotes at the machine's limit, step
   * "HTTP layer": the fetch-API adapter costs more than half of the machine's throughput on small answers).
   * Same state, route runner, headers, metrics and log line as `handle`; the answer is written in one go.
   */
  async function serveFast(req: http.IncomingMessage, res: http.ServerResponse, route: CompiledRoute, match: RegExpExecArray, url: RequestTarget): Promise<void> {
    const head = req.method === 'HEAD';
    const state = newRequestState(crypto.randomUUID(), head ? HEADERS_ONLY : ANSWER_SENT);
    state.log = logger?.child({ request_id: state.requestId });
    state.operationId = route.operationId;
    const started = performance.now();
    // Aborted when the connection closes before the answer was written whole (the export's refund on
    // non-delivery); only a route with its own responder reads it, so the JSON routes skip the listener.
    let signal = NEVER;
    if (route.respond || route.stream || route.heavy) {
      const gone = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) gone.abort();
      });
      signal = gone.signal;
    }
    let reply: Reply;
    try {
      reply = await runRoute(route, match, { searchParams: url.searchParams, headers: nodeHeaders(req.headers), request: null, incoming: req, signal }, state);
    } catch (error) {
      reply = errorReply(state.requestId, toServiceError(error, state.log), route.metered);
    }
    const headers: Record<string, string> = { ...reply.headers, 'X-Request-ID': state.requestId, ...rateLimitHeaders(state) };
    // A large JSON answer is encoded once (a spliced answer is a rope of many strings, and measuring it apart from
    // writing it costs a second pass). A small one stays a string: node:http then sends it in one write with the
    // header block instead of a writev of two buffers. The export file is a stream with the Content-Length its route set.
    const stream = reply.stream;
    // An answer around stored bytes (JsonParts) is written piece by piece, corked into one write: the bytes not copied.
    const text = reply.body ?? '';
    const body = stream || reply.events ? null : typeof text !== 'string' || text.length < SMALL_ANSWER_CHARS ? text : Buffer.from(text, 'utf8');
    if (body !== null && reply.status !== 304 && !(head && reply.headers['Content-Length'] !== undefined)) {
      headers['Content-Length'] = String(typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : Buffer.isBuffer(body) ? body.length : body.bytes);
    }
    if (!res.destroyed) res.writeHead(reply.status, headers);
    if (reply.events) {
      if (res.destroyed) reply.events.close(); // the client left before the stream began
      else writeEvents(res, reply.events); // the live REST stream: written as it comes, until either side ends it
    } else if (stream && !head && !res.destroyed) {
      Readable.fromWeb(stream as NodeReadableStream<Uint8Array>)
        .on('error', (e) => {
          state.log?.warn({ err: e }, 'streamed answer failed');
          res.destroy(e);
        })
        .pipe(res);
    } else {
      void stream?.cancel().catch(() => undefined);
      // HEAD (README): the GET's status and headers, no body.
      if (res.destroyed) {
        // the client left
      } else if (head || body === null || typeof body === 'string' || Buffer.isBuffer(body)) {
        res.end(head ? undefined : (body ?? undefined));
      } else {
        res.cork();
        for (const part of body.parts) res.write(part);
        res.end();
        res.uncork();
      }
    }
    recordRequest(state, req.method!, url.pathname, reply.status, started);
  }

  /**
   * A fetch-adapter request to a REST path (anything but `/graphql`): its route, a 405 with `Allow` when the
   * path has routes for other methods, else 404 `route_not_found`; every refusal in the error envelope.
   */
  async function answer(request: Request, url: URL, state: RequestState): Promise<Response> {
    const { requestId } = state;
    let metered = false;
    try {
      let allowed: string[] = [];
      for (const route of routes) {
        const m = route.pattern.exec(url.pathname);
        if (!m) continue;
        if (route.method === request.method || (route.method === 'GET' && request.method === 'HEAD')) {
          metered = route.metered;
          state.operationId = route.operationId;
          return toResponse(await runRoute(route, m, { searchParams: url.searchParams, headers: request.headers, request, signal: request.signal }, state));
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

  const plugin: Plugin<Context, ServerContext> = {
    onPluginInit({ plugins }) {
      allPlugins = plugins;
    },
    onYogaInit({ yoga: instance }) {
      yoga = instance as unknown as YogaServerInstance<ServerContext, Context>;
    },
    async onRequest({ url, request, serverContext, endResponse }) {
      if (url.pathname === '/graphql' || url.pathname === '/graphql/') return;
      endResponse(await answer(request, url, serverContext.state));
    },
  };

  return { plugin, fastRoute, serveFast };
}

/**
 * A live subscription as event texts (README, Extensions: live changes): one `event` per change (`id` its seq,
 * `data` its ChangeOut text, made once per change for every stream), the changes queued by the time the
 * connection drains in one text (at most 1,024), and a terminal `error` event with the error envelope when the
 * subscription ends with one (slow_consumer, credit_insufficient, shutdown). Closing it ends the subscription.
 */
function eventFeed(sub: LiveSubscription, requestId: string): EventFeed {
  let done = false;
  return {
    async next() {
      if (done) return null;
      let events = sub.drain(1024);
      if (events.length === 0) {
        const r = await sub.next();
        if (r.done) {
          done = true;
          return null;
        }
        events = [r.value, ...sub.drain(1023)];
      }
      const chunks: Uint8Array[] = [];
      for (const e of events) {
        if (e.kind === 'change') chunks.push(changeEvent(e.change));
        else if (e.kind === 'error') {
          done = true;
          void sub.return();
          chunks.push(Buffer.from(`event: error\ndata: ${JSON.stringify(errorEnvelope(requestId, e.error, true))}\n\n`, 'utf8'));
          return chunks;
        }
      }
      return chunks;
    },
    close() {
      done = true;
      void sub.return();
    },
  };
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
