/**
 * GraphQL subscriptions at fan-out (issue: live, point 4; README, Extensions: live changes): one replica may
 * hold a thousand subscriptions that receive the same change. Two costs of the default path grow with
 * subscribers x events, and this plugin makes both grow with events instead:
 *
 * - Execution. graphql-js runs the subscription's selection once per event and subscriber. Here the result of
 *   an event (its selection compiled by graphql-jit, as the REST route documents are) is shared by every subscription with the same document, operation and selection variables: the
 *   root field's own arguments (`marketHashNames`, `markets`, `side`, `since`) only choose which events reach a
 *   subscription, never what an event's selection answers. The hub hands the same event object to every
 *   subscription (live/live.ts), so it keys the shared results. A result with errors is never shared (its
 *   error carries the request's identifiers): each subscription then executes the event itself.
 * - Server-sent events. Yoga's SSE processor writes two chunks per event through a web stream. Here the events
 *   a subscription has ready when the connection drains are written as one chunk, each result's bytes made
 *   once and shared, by the REST event stream's writer (`writeEvents`) straight to the node:http response.
 *   The events are Yoga's (graphql-sse "distinct connections": `event: next` / `data:` per result, `event:
 *   complete` at the end); the comments are the REST stream's (`: connected` at once, `: ping` after 15 s
 *   without a write).
 *
 * - Per-event iterators. Every event of the default path travels one by one through a chain of async
 *   iterators (the source, graphql-js's map to the execution, each plugin's result map, the SSE writer): at a
 *   thousand subscribers this chain was most of the CPU (bench:live, LIVE_FACE=graphql). An SSE subscription
 *   that started a live subscription (live/live.ts, `state.live`) is written straight from its queue: the
 *   changes queued when the connection drains are taken at once, each answered by its shared result, and
 *   written as one chunk. Whatever else the queue holds (a terminal error such as `slow_consumer` or
 *   `credit_insufficient`, a published valuation) and its end still go through the whole pipeline, one event
 *   at a time, so their answers are exactly the default path's. A change whose result has errors (not shared)
 *   is executed for the subscription itself and its errors masked with the app's `maskError`, as Yoga's
 *   masking would.
 *
 * Queries, mutations and subscriptions over WebSocket keep their transports; only the shared execution applies
 * to a WebSocket subscription.
 */
import { createSourceEventStream, execute, Kind, visit, type DocumentNode, type GraphQLError, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import { mapAsyncIterator } from 'graphql/execution/mapAsyncIterator.js';
import http from 'node:http';
import { Readable } from 'node:stream';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { isAsyncIterable } from '@envelop/core';
import type { Plugin } from 'graphql-yoga';
import type { LiveSubscription } from '../live/live.js';
import { writeEvents, type EventFeed } from '../http/replies.js';

/** Yoga's error masking function (`maskedErrors.maskError`): the app passes its own. */
export type MaskError = (error: unknown, message: string, isDev?: boolean) => Error;

/** Most events joined into one write. */
const MAX_EVENTS_PER_WRITE = 1024;

/** Variables the selection (below the root field) reads, by document and operation name; computed once. */
const selectionVariables = new WeakMap<DocumentNode, Map<string, string[]>>();

function variablesOfSelection(document: DocumentNode, operationName: string | null | undefined): string[] {
  let byName = selectionVariables.get(document);
  if (!byName) selectionVariables.set(document, (byName = new Map()));
  const key = operationName ?? '';
  const found = byName.get(key);
  if (found) return found;
  const names = new Set<string>();
  const operation = document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && (!operationName || d.name?.value === operationName),
  );
  const collect = (node: Parameters<typeof visit>[0]) =>
    visit(node, {
      Variable(v) {
        names.add(v.name.value);
      },
    });
  for (const selection of operation?.selectionSet.selections ?? []) {
    // The root field's arguments filter events; its directives and its selection shape the answer.
    if (selection.kind === Kind.FIELD) {
      for (const d of selection.directives ?? []) collect(d);
      if (selection.selectionSet) collect(selection.selectionSet);
    } else collect(selection);
  }
  // Fragments may be spread anywhere below: every variable they read counts.
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) collect(d);
  const list = [...names].sort();
  byName.set(key, list);
  return list;
}

/**
 * A shared execution of one event: `settled` resolves once it ran; then `result` holds it when it had no errors
 * (its SSE bytes are made from it once, on first use: see sseBytes), or `failed` is set (each subscription then
 * executes the event itself).
 */
interface Shared {
  /** The share key (document, operation, selection variables) this execution answers. */
  key: string;
  /** The event's execution for another share key (a short list: most events have one). */
  next: Shared | undefined;
  settled: Promise<void>;
  result?: ExecutionResult;
  bytes?: Buffer;
  failed?: boolean;
}

/** The SSE bytes of a successful shared execution (made on first use: WebSocket-only keys never need them). */
function sseBytes(entry: Shared): Buffer | undefined {
  if (entry.bytes === undefined && entry.result !== undefined) entry.bytes = eventBytes(entry.result);
  return entry.bytes;
}

/** Share keys walked in an event's list before the event's executions move to a Map. */
const SHARED_LIST_MAX = 8;

/**
 * Where an event object keeps its shared executions: a symbol-keyed slot on the hub's event itself, read once
 * per event and subscription (a WeakMap and a Map lookup there were a tenth of the delivery's CPU).
 */
const SHARED = Symbol('quotegate.sharedExecutions');
/** The `settled` of an execution that finished synchronously. */
const SETTLED = Promise.resolve();
/** The slot: a short list (most events have one share key), or a Map once an event has many. */
type EventWithShared = { [SHARED]?: Shared | Map<string, Shared> };

/** The event's shared execution for `key`, if any. */
function findShared(event: EventWithShared, key: string): Shared | undefined {
  const slot = event[SHARED];
  if (slot instanceof Map) return slot.get(key);
  let found = slot;
  while (found !== undefined && found.key !== key) found = found.next;
  return found;
}

/** Adds `entry` to the event's executions (a Map from SHARED_LIST_MAX keys on, so a lookup stays short). */
function addShared(event: EventWithShared, entry: Shared): void {
  const slot = event[SHARED];
  if (slot instanceof Map) {
    slot.set(entry.key, entry);
    return;
  }
  let count = 0;
  for (let e = slot; e !== undefined; e = e.next) count += 1;
  if (count < SHARED_LIST_MAX) {
    entry.next = slot;
    event[SHARED] = entry;
    return;
  }
  const map = new Map<string, Shared>();
  for (let e = slot; e !== undefined; e = e.next) map.set(e.key, e);
  map.set(entry.key, entry);
  event[SHARED] = map;
}

const documentIds = new WeakMap<DocumentNode, number>();
let nextDocumentId = 1;

function shareKey(args: ExecutionArgs): string {
  let id = documentIds.get(args.document);
  if (id === undefined) documentIds.set(args.document, (id = nextDocumentId++));
  const vars = (args.variableValues ?? {}) as Record<string, unknown>;
  const used = variablesOfSelection(args.document, args.operationName);
  return `${id}\u0000${args.operationName ?? ''}\u0000${JSON.stringify(used.map((n) => vars[n] ?? null))}`;
}

/**
 * The subscription's selection compiled by graphql-jit (as the REST route documents are), by document and
 * operation name, made when the first subscription of the document starts; null when it does not compile (graphql-js's execute then
 * runs it). graphql-jit's `query` of a subscription operation executes the selection on one event (the root value).
 */
const compiledSelections = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();

function compiledSelection(args: ExecutionArgs): CompiledQuery | null {
  let byName = compiledSelections.get(args.document);
  if (!byName) compiledSelections.set(args.document, (byName = new Map()));
  const key = args.operationName ?? '';
  let compiled = byName.get(key);
  if (compiled === undefined) {
    const c = compileQuery(args.schema, args.document, args.operationName ?? undefined);
    compiled = isCompiledQuery(c) ? c : null;
    byName.set(key, compiled);
  }
  return compiled;
}

/** What the direct SSE path needs of a subscription's shared execution (sharedSubscribe's runner). */
interface Runner {
  /** The event's result: the shared one when it has no errors, else the subscription's own execution. */
  run(payload: unknown): Promise<ExecutionResult>;
  /** The event's shared execution (running, done or failed), started if there is none (null for an event that is not an object). */
  shared(payload: unknown): Shared | null;
}

/** The shared-execution runner of each subscription request, by the request's state (the direct SSE path reads it). */
const runners = new WeakMap<object, Runner>();

/**
 * Subscribe as graphql-js does (the source stream from the root field's `subscribe`), executing each event's
 * selection once per share key (see the module doc), compiled by graphql-jit where it compiles.
 */
async function sharedSubscribe(args: ExecutionArgs): Promise<AsyncGenerator<ExecutionResult, void, void> | ExecutionResult> {
  const source = await createSourceEventStream(args);
  if (!isAsyncIterable(source)) return source as ExecutionResult;
  const key = shareKey(args);
  const own = (payload: unknown) => Promise.resolve(execute({ ...args, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>);
  // The shared execution gets only the variables the selection reads: the root field's filter arguments (a list
  // of up to 1,000 names) would otherwise be coerced and validated again for every event. A document whose
  // filter variables are required fails that execution; its subscriptions then execute with their own.
  const used = variablesOfSelection(args.document, args.operationName);
  const all = (args.variableValues ?? {}) as Record<string, unknown>;
  const sharedVariables = Object.fromEntries(used.filter((n) => n in all).map((n) => [n, all[n]]));
  const sharedArgs: ExecutionArgs = { ...args, variableValues: sharedVariables };
  // Compiled when the first subscription of a document starts, not on its first event (that is on the path of delivery).
  const compiled = compiledSelection(args);
  const shared = (payload: unknown): ExecutionResult | Promise<ExecutionResult> =>
    (compiled ? compiled.query(payload, args.contextValue, sharedVariables) : execute({ ...sharedArgs, rootValue: payload })) as ExecutionResult | Promise<ExecutionResult>;
  /** The event's shared execution: the running or finished one, else started now (finished at once when it ran synchronously). */
  const sharedOf = (payload: unknown): Shared | null => {
    if (typeof payload !== 'object' || payload === null) return null;
    const event = payload as EventWithShared;
    const found = findShared(event, key);
    if (found) return found;
    const entry: Shared = { key, next: undefined, settled: SETTLED };
    const finish = (r: ExecutionResult) => {
      if (r.errors) entry.failed = true;
      else entry.result = r;
    };
    let result: ExecutionResult | Promise<ExecutionResult>;
    try {
      result = shared(payload);
    } catch (error) {
      result = Promise.reject(error as Error);
    }
    if (result instanceof Promise) entry.settled = result.then(finish, () => void (entry.failed = true));
    else finish(result);
    addShared(event, entry);
    return entry;
  };
  const run = async (payload: unknown): Promise<ExecutionResult> => {
    const entry = sharedOf(payload);
    if (!entry) return own(payload);
    // The execution is shared while it runs (subscriptions receive an event at the same moment).
    await entry.settled;
    return entry.result ?? own(payload);
  };
  const state = (args.contextValue as { state?: object } | undefined)?.state;
  if (state) runners.set(state, { run, shared: sharedOf });
  return mapAsyncIterator(source as AsyncIterable<unknown> as AsyncGenerator<unknown, void, void>, run) as AsyncGenerator<ExecutionResult, void, void>;
}

/** The SSE bytes of one result, made once per result object (shared results are shared bytes). */
const resultBytes = new WeakMap<object, Buffer>();

/** A result as Yoga serializes it: errors' and the result's internal `http` (and `unexpected`) extensions left out. */
function withoutInternals(result: ExecutionResult): unknown {
  const extensions = result.extensions as Record<string, unknown> | undefined;
  if (!result.errors?.length && !extensions?.http) return result;
  const out: Record<string, unknown> = { ...result };
  if (result.errors) {
    out.errors = result.errors.map((e) => {
      const json = { ...(typeof e.toJSON === 'function' ? e.toJSON() : e) } as Record<string, unknown>;
      const { http: _http, unexpected: _unexpected, ...rest } = (json.extensions ?? {}) as Record<string, unknown>;
      if (Object.keys(rest).length > 0) json.extensions = rest;
      else delete json.extensions;
      return json;
    });
  }
  if (extensions) {
    const { http: _http, ...rest } = extensions;
    out.extensions = Object.keys(rest).length > 0 ? rest : undefined;
  }
  return out;
}

function eventBytes(result: ExecutionResult): Buffer {
  let bytes = resultBytes.get(result);
  if (bytes === undefined) {
    bytes = Buffer.from(`event: next\ndata: ${JSON.stringify(withoutInternals(result))}\n\n`, 'utf8');
    resultBytes.set(result, bytes);
  }
  return bytes;
}

/** Where the direct path reads a subscription's changes (see the module doc). */
interface DirectSource {
  live: LiveSubscription;
  runner: Runner;
  maskError: MaskError;
}

/** A result with its errors masked as Yoga's masking plugin would (the direct path bypasses that plugin). */
function masked(result: ExecutionResult, maskError: MaskError): ExecutionResult {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => maskError(e, 'Unexpected error.', false) as GraphQLError) };
}

const CONNECTED = Buffer.from(': connected\n\n');
const COMPLETE = Buffer.from('event: complete\ndata:\n\n');

/**
 * The bytes of the changes taken from a live subscription's queue: the shared bytes of each; the executions
 * still running are awaited together (one wait per drain, not per event); an event whose shared execution
 * failed is executed for this subscription and its errors masked.
 */
async function changesBytes(changes: unknown[], { runner, maskError }: DirectSource): Promise<Buffer[]> {
  const parts: Buffer[] = new Array(changes.length);
  let running: Set<Promise<void>> | null = null;
  let holes = false;
  for (let i = 0; i < changes.length; i++) {
    const entry = runner.shared(changes[i]);
    const bytes = entry ? sseBytes(entry) : undefined;
    if (bytes) parts[i] = bytes;
    else {
      holes = true;
      if (entry && !entry.failed) (running ??= new Set()).add(entry.settled);
    }
  }
  if (holes) {
    if (running) await Promise.all(running);
    for (let i = 0; i < changes.length; i++) {
      if (parts[i] !== undefined) continue;
      const entry = runner.shared(changes[i]);
      parts[i] = (entry ? sseBytes(entry) : undefined) ?? eventBytes(masked(await runner.run(changes[i]), maskError));
    }
  }
  return parts;
}

/**
 * A stream of results as SSE bytes (an EventFeed): each `next()` gives every result already available (up to
 * MAX_EVENTS_PER_WRITE), awaiting the first, as the parts of one write; the last chunk ends with `event: complete`. With
 * `direct`, the changes are read from the live subscription's queue instead (module doc); `results` then
 * carries the other events, the end, and the cleanup when the client leaves (`close()`).
 */
function resultsFeed(results: AsyncIterable<ExecutionResult>, direct: DirectSource | null): EventFeed {
  const iterator = results[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<ExecutionResult>> | null = null;
  let done = false;
  const nextDirect = async (source: DirectSource): Promise<Buffer[]> => {
    const { live } = source;
    for (;;) {
      const changes = live.drainChanges(MAX_EVENTS_PER_WRITE);
      if (changes.length > 0) return changesBytes(changes, source);
      if (live.pending > 0 || live.isEnded) {
        const r = await iterator.next();
        if (!r.done) return [eventBytes(r.value)];
        done = true;
        return [COMPLETE];
      }
      await live.ready();
    }
  };
  const nextResults = async (): Promise<Buffer[]> => {
    const parts: Buffer[] = [];
    for (;;) {
      const next = pending ?? iterator.next();
      pending = null;
      // The first result is awaited; after it, only results that are ready by the next turn of the loop.
      const r = parts.length === 0 ? await next : await Promise.race([next, new Promise<null>((resolve) => setImmediate(() => resolve(null)))]);
      if (r === null) {
        pending = next;
        break;
      }
      if (r.done) {
        done = true;
        parts.push(COMPLETE);
        break;
      }
      parts.push(eventBytes(r.value));
      if (parts.length >= MAX_EVENTS_PER_WRITE) break;
    }
    return parts;
  };
  return {
    async next() {
      if (done) return null;
      return direct ? nextDirect(direct) : nextResults();
    },
    close() {
      if (done && pending === null) return;
      done = true;
      pending = null;
      try {
        Promise.resolve(iterator.return?.()).catch(() => undefined);
      } catch {
        // the client left: nothing to report it to
      }
    },
  };
}

/**
 * The body of an SSE response: a Readable the server adapter pipes to the node:http response. Piped there, it
 * hands its feed to `writeEvents` (src/http/replies.ts, the REST event stream's writer: a comment at once,
 * each chunk as the socket drains, a heartbeat comment after SSE_HEARTBEAT_SECONDS without a write), so no
 * stream sits between the events and the socket. Read any other way (a fetch `Response` read by
 * `app.fetch`'s callers), it is an ordinary byte stream of the same chunks.
 */
class SseBody extends Readable {
  private reading = false;
  private piped = false;
  private started = false;

  constructor(private readonly feed: EventFeed) {
    super();
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    // Only a body nothing has read yet hands its feed over (what was read is not written twice).
    if (!(destination instanceof http.ServerResponse) || this.piped || this.started) return super.pipe(destination, options);
    this.piped = true;
    writeEvents(destination, this.feed);
    return destination;
  }

  override _read(): void {
    if (this.reading || this.piped) return; // piped: writeEvents reads the feed
    this.reading = true;
    if (!this.started) {
      this.started = true;
      this.push(CONNECTED);
    }
    void (async () => {
      try {
        for (;;) {
          const chunks = await this.feed.next();
          if (chunks === null) {
            this.push(null);
            return;
          }
          if (this.destroyed) return;
          for (const c of chunks) this.push(c);
          if (this.readableLength >= this.readableHighWaterMark) return;
        }
      } catch (error) {
        this.destroy(error as Error);
      } finally {
        this.reading = false;
      }
    })();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.feed.close();
    callback(error);
  }
}

/** An SSE response for a stream of results (see resultsFeed and SseBody). */
function sseResponse(
  results: AsyncIterable<ExecutionResult>,
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream },
  direct: DirectSource | null,
): Response {
  const body = new SseBody(resultsFeed(results, direct));
  return new fetchAPI.Response(new fetchAPI.ReadableStream(body as never), {
    status: 200,
    headers: { 'Content-Type': 'text/event-stream', Connection: 'keep-alive', 'Cache-Control': 'no-cache', 'Content-Encoding': 'none' },
  });
}

/**
 * The plugin (see the module doc); mount it after Yoga's own result processors (any place in `plugins`).
 * `maskError` is the app's `maskedErrors.maskError`, applied to the errors of changes written directly.
 */
export function useLiveResults(opts: { maskError: MaskError }): Plugin {
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(sharedSubscribe as never);
    },
    onResultProcess({ result, acceptableMediaTypes, request, setResultProcessor, serverContext }) {
      if (!isAsyncIterable(result)) return;
      if (!(request.headers.get('accept') ?? '').includes('text/event-stream')) return;
      acceptableMediaTypes.push('text/event-stream');
      const state = (serverContext as { state?: { live?: LiveSubscription } }).state;
      const runner = state ? runners.get(state) : undefined;
      const direct = state?.live && runner ? { live: state.live, runner, maskError: opts.maskError } : null;
      setResultProcessor(
        ((r: AsyncIterable<ExecutionResult>, fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream }) => sseResponse(r, fetchAPI, direct)) as never,
        'text/event-stream',
      );
    },
  };
}
