/**
 * The HTTP edge's replies, shared by both transports (the fetch adapter and the node:http fast path) and
 * both faces: the JSON answer before it meets a transport (`Reply`), the spec's error envelope, success
 * meta, the IETF rate-limit headers, the mapping of anything thrown to a ServiceError, and the one metric
 * and log line per request.
 */
import type { GraphQLError } from 'graphql';
import type { Logger } from 'pino';
import type { RequestState } from '../graphql/context.js';
import { serviceErrorOf } from '../graphql/errors.js';
import { ServiceError, dependencyUnavailable, isDatabaseUnavailable, validationError, validationProblems } from '../lib/errors.js';
import { httpDuration, httpRequests } from '../lib/metrics.js';
import { joinParts, type JsonParts } from '../lib/raw-json.js';

/** The media type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * An answer before it meets a transport: the fetch API's Response (the `@whatwg-node/server` face) or
 * node:http's response (the REST fast path). `body` is the whole text, or its pieces of text and bytes (JsonParts:
 * an answer around the quote cache's stored bytes); null = none. `stream` (the export file) is a body of bytes sent as
 * it is read, with its Content-Length in `headers`; `body` is then null.
 */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | JsonParts | null;
  stream?: ReadableStream<Uint8Array>;
  /** A server-sent event stream (the live REST route): written as it comes, with heartbeats (see writeEvents). */
  events?: EventFeed;
}

/**
 * The bytes of a server-sent event stream, pulled as the connection drains: `next()` resolves with the next
 * chunks to write (one or more whole events, often shared with other streams) or null when the stream ended;
 * `close()` ends it (the client left).
 */
export interface EventFeed {
  next(): Promise<Uint8Array[] | null>;
  close(): void;
}

/** Seconds between heartbeat comments (`: ping`) on an idle event stream. */
const SSE_HEARTBEAT_SECONDS = 15;
/** Headers of an event stream. */
export const SSE_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' };

/** Bytes of the slab that joined writes are cut from (see joinChunks). */
const SLAB_BYTES = 256 * 1024;
/** Joins larger than this get their own buffer. */
const SLAB_MAX_JOIN = 64 * 1024;
/** Joins smaller than this come from Buffer.concat (node's own 8 KiB pool), so a few bytes never pin a slab. */
const SLAB_MIN_JOIN = 4 * 1024;
let slab = Buffer.allocUnsafeSlow(0);
let slabUsed = 0;

/**
 * The chunks as one buffer (one write, one HTTP chunk). A join of 4 to 64 KiB is cut from a shared
 * 256 KiB slab (as Buffer.allocUnsafe cuts small buffers from its 8 KiB pool); a slab is never written twice and
 * is freed once no socket holds a write cut from it. Measured (bench:live, 1,000 streams, a 10,000-row
 * batch): a buffer of its own per write (thousands of tens of KiB per hand-over) cost more than the copy, and the
 * GraphQL stream's server CPU fell with the slab (figures: docs/benchmarks.md). The bound: a socket that stops
 * reading keeps the writes it has not taken (writeEvents stops at the first write past node's high-water mark,
 * 16 KiB), so it pins one or two slabs (up to 512 KiB) where it held up to 80 KiB of its own buffers.
 */
function joinChunks(chunks: readonly Uint8Array[]): Buffer {
  let length = 0;
  for (let i = 0; i < chunks.length; i++) length += chunks[i]!.length;
  if (length > SLAB_MAX_JOIN || length < SLAB_MIN_JOIN) return Buffer.concat(chunks, length);
  if (slabUsed + length > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    slabUsed = 0;
  }
  const out = slab.subarray(slabUsed, slabUsed + length);
  slabUsed += (length + 7) & ~7;
  let at = 0;
  for (let i = 0; i < chunks.length; i++) {
    out.set(chunks[i]!, at);
    at += chunks[i]!.length;
  }
  return out;
}

/**
 * Writes an event stream on node:http (the fast path): a comment at once, then each text as the socket drains
 * (backpressure: the next text is pulled only once the last was taken), a heartbeat comment whenever
 * SSE_HEARTBEAT_SECONDS pass without a write; the connection closing ends the feed. Headers must be written.
 */
export function writeEvents(res: import('node:http').ServerResponse, feed: EventFeed): void {
  let open = true;
  let wrote = Date.now();
  const write = (chunk: string | Uint8Array): boolean => {
    wrote = Date.now();
    return res.write(chunk);
  };
  const heartbeat = setInterval(() => {
    if (Date.now() - wrote >= SSE_HEARTBEAT_SECONDS * 1000 && res.writableLength === 0) write(': ping\n\n');
  }, 1000);
  heartbeat.unref();
  const closed = new Promise<void>((resolve) =>
    res.once('close', () => {
      open = false;
      clearInterval(heartbeat);
      feed.close();
      resolve();
    }),
  );
  write(': connected\n\n');
  void (async () => {
    while (open) {
      const chunks = await feed.next();
      if (chunks === null || !open) break;
      if (chunks.length === 0) continue;
      // One write (one HTTP chunk, one syscall) per batch: the events' shared bytes are copied once into it, which
      // costs far less than a write per event (chunk framing and a buffered request each; bench:live).
      const more = write(chunks.length === 1 ? chunks[0]! : joinChunks(chunks));
      // node:http corks the socket on a write and uncorks it on the next tick, which comes only once every stream
      // woken by the same hand-over has built its chunk: sent now, the first clients read while the server builds
      // the next streams' chunks.
      if (res.socket?.writableCorked) res.socket.uncork();
      if (!more || res.writableNeedDrain) await Promise.race([new Promise((r) => res.once('drain', r)), closed]);
    }
    clearInterval(heartbeat);
    if (open) res.end();
  })().catch(() => res.destroy());
}

/** An event stream as a fetch ReadableStream (the adapter face): the same texts and heartbeats as writeEvents. */
function eventsBody(feed: EventFeed): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let heartbeat: NodeJS.Timeout | null = null;
  const stop = () => {
    if (heartbeat) clearInterval(heartbeat);
    heartbeat = null;
    feed.close();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(': connected\n\n'));
      heartbeat = setInterval(() => {
        if ((controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(': ping\n\n'));
      }, SSE_HEARTBEAT_SECONDS * 1000);
      heartbeat.unref();
    },
    async pull(controller) {
      const chunks = await feed.next();
      if (chunks === null) {
        stop();
        controller.close();
      } else if (chunks.length > 0) controller.enqueue(Buffer.concat(chunks));
    },
    cancel() {
      stop();
    },
  });
}

function jsonReply(status: number, body: unknown, headers: Record<string, string>): Reply {
  return { status, headers: { 'Content-Type': JSON_TYPE, ...headers }, body: JSON.stringify(body) };
}

export function toResponse(reply: Reply): Response {
  const body = typeof reply.body === 'string' || reply.body === null ? reply.body : (joinParts(reply.body) as Uint8Array<ArrayBuffer>);
  return new Response(reply.events ? eventsBody(reply.events) : (reply.stream ?? body), { status: reply.status, headers: reply.headers });
}

/** The error envelope (spec: ErrorEnvelope) with X-Request-ID and any headers the error carries. */
export function errorReply(requestId: string, error: ServiceError, metered = false): Reply {
  return jsonReply(error.status, errorEnvelope(requestId, error, metered), { 'X-Request-ID': requestId, ...error.headers });
}

/** errorReply as a fetch Response. */
export function errorResponse(requestId: string, error: ServiceError, metered = false): Response {
  return toResponse(errorReply(requestId, error, metered));
}

/** The body of the error envelope (spec: ErrorEnvelope): `meta.billable` is false on metered operations. */
export function errorEnvelope(requestId: string, error: ServiceError, metered = false): { error: Record<string, unknown>; meta: Record<string, unknown> } {
  const body: { code: string; message: string; details?: unknown } = { code: error.code, message: error.message };
  if (error.details !== undefined) body.details = error.details;
  return { error: body, meta: metered ? { request_id: requestId, billable: false } : { request_id: requestId } };
}

/** A string as an RFC 8941 sf-string (policy names are operation ids: plain ASCII). */
const sfString = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** A policy's name as an sf-string and its `RateLimit-Policy` item, made once per policy (catalogue rows: a bounded set). */
const policyTexts = new Map<string, { limit: number; windowSeconds: number; name: string; item: string }>();

function policyText(p: RequestState['rateLimits'][number]): { name: string; item: string } {
  const kept = policyTexts.get(p.policy);
  if (kept && kept.limit === p.limit && kept.windowSeconds === p.windowSeconds) return kept;
  const name = sfString(p.policy);
  const made = { limit: p.limit, windowSeconds: p.windowSeconds, name, item: `${name};q=${p.limit};w=${p.windowSeconds}` };
  policyTexts.set(p.policy, made);
  return made;
}

/**
 * The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy` lists each
 * policy's quota `q` per window `w` seconds; `RateLimit` the remaining `r` and seconds to reset `t`.
 */
export function rateLimitHeaders(state: RequestState): Record<string, string> {
  const limits = state.rateLimits;
  if (limits.length === 0) return {};
  let policy = '';
  let now = '';
  for (let i = 0; i < limits.length; i++) {
    const p = limits[i]!;
    const text = policyText(p);
    policy += (i === 0 ? '' : ', ') + text.item;
    now += (i === 0 ? '' : ', ') + `${text.name};r=${p.remaining};t=${p.resetSeconds}`;
  }
  return { 'RateLimit-Policy': policy, RateLimit: now };
}

/** meta of a success (spec: Meta): billable and credit only on metered operations. */
export function successMeta(state: RequestState, metered: boolean): Record<string, unknown> {
  if (!metered) return { request_id: state.requestId };
  const b = state.billing;
  if (b && b.billable) return { request_id: state.requestId, billable: true, credit: { cost: Number(b.cost), remaining: Number(b.remaining) } };
  return { request_id: state.requestId, billable: false };
}

/** Maps any thrown value to a ServiceError: expected ones pass, a lost database is 503, the rest 500. */
export function toServiceError(error: unknown, logger?: Logger): ServiceError {
  const known = serviceErrorOf(error);
  if (known) return known;
  if (isDatabaseUnavailable(error)) return dependencyUnavailable('The database is unavailable; retry shortly.');
  logger?.error({ err: error }, 'unexpected error');
  return new ServiceError('internal_error', 500, 'Unexpected error.');
}

/** The first error of a GraphQL result as a ServiceError; several validation errors merge their details. */
export function resultError(errors: readonly GraphQLError[], logger?: Logger): ServiceError {
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

/** One metric and one log line per request (both transports). */
export function recordRequest(state: RequestState, method: string, pathname: string, status: number, started: number): void {
  const seconds = (performance.now() - started) / 1000;
  const operation = state.operationId ?? 'unmatched';
  httpRequests.inc({ operation, method, status: String(status) });
  httpDuration.observe({ operation, status: String(status) }, seconds);
  // Never the query string's secrets (there are none by contract) nor any header: credentials live in headers only.
  state.log?.info({ operation, method, path: pathname, status, ms: Math.round(seconds * 1000) }, 'request');
}
