/**
 * GraphQL subscriptions at fan-out (issue: live, point 4; README, Extensions: live changes): one replica may
 * hold a thousand subscriptions that receive the same change. Two costs of the default path grow with
 * subscribers x events, and this plugin makes both grow with events instead:
 *
 * - Execution. graphql-js runs the subscription's selection once per event and subscriber. Here the result of
 *   an event is shared by every subscription with the same document, operation and selection variables: the
 *   root field's own arguments (`marketHashNames`, `markets`, `side`, `since`) only choose which events reach a
 *   subscription, never what an event's selection answers. The hub hands the same event object to every
 *   subscription (services/live.ts), so it keys the shared results. A result with errors is never shared (its
 *   error carries the request's identifiers): each subscription then executes the event itself.
 * - Server-sent events. Yoga's SSE processor writes two chunks per event. Here the events a subscription has
 *   ready when the connection drains are written as one chunk, each result's text made once and shared. The
 *   wire format is Yoga's (graphql-sse "distinct connections": `event: next` / `data:` per result, `event:
 *   complete` at the end, a `:` comment at once and every 12 s).
 *
 * - Per-event iterators. Every event of the default path travels one by one through a chain of async
 *   iterators (the source, graphql-js's map to the execution, each plugin's result map, the SSE writer): at a
 *   thousand subscribers this chain was most of the CPU (bench:live, LIVE_FACE=graphql). An SSE subscription
 *   that started a live subscription (services/live.ts, `state.live`) is written straight from its queue: the
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
import { isAsyncIterable } from '@envelop/core';
import type { Plugin } from 'graphql-yoga';
import type { LiveSubscription } from '../services/live.js';

/** Yoga's error masking function (`maskedErrors.maskError`): the app passes its own. */
export type MaskError = (error: unknown, message: string, isDev?: boolean) => Error;

/** Seconds between SSE keep-alive comments (as Yoga's own processor). */
const SSE_PING_SECONDS = 12;
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

/** Shared results by event object, then by document+operation+selection variables. */
const sharedResults = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
const documentIds = new WeakMap<DocumentNode, number>();
let nextDocumentId = 1;

function shareKey(args: ExecutionArgs): string {
  let id = documentIds.get(args.document);
  if (id === undefined) documentIds.set(args.document, (id = nextDocumentId++));
  const vars = (args.variableValues ?? {}) as Record<string, unknown>;
  const used = variablesOfSelection(args.document, args.operationName);
  return `${id}\u0000${args.operationName ?? ''}\u0000${JSON.stringify(used.map((n) => vars[n] ?? null))}`;
}

/** The shared-execution runner of each subscription request, by the request's state (the direct SSE path reads it). */
const runners = new WeakMap<object, (payload: unknown) => Promise<ExecutionResult>>();

/**
 * Subscribe as graphql-js does (the source stream from the root field's `subscribe`), executing each event's
 * selection once per share key (see the module doc).
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
  const sharedArgs: ExecutionArgs = { ...args, variableValues: Object.fromEntries(used.filter((n) => n in all).map((n) => [n, all[n]])) };
  const shared = (payload: unknown) => Promise.resolve(execute({ ...sharedArgs, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>);
  const run = async (payload: unknown): Promise<ExecutionResult> => {
    const event = typeof payload === 'object' && payload !== null ? payload : null;
    if (!event) return own(payload);
    let byKey = sharedResults.get(event);
    const running = byKey?.get(key);
    if (running) {
      // The execution is shared while it runs (subscriptions receive an event at the same moment).
      const r = await running;
      return r.errors ? own(payload) : r;
    }
    const p = shared(payload);
    if (!byKey) sharedResults.set(event, (byKey = new Map()));
    byKey.set(key, p);
    const r = await p;
    if (!r.errors) return r;
    byKey.delete(key);
    return own(payload);
  };
  const state = (args.contextValue as { state?: object } | undefined)?.state;
  if (state) runners.set(state, run);
  return mapAsyncIterator(source as AsyncIterable<unknown> as AsyncGenerator<unknown, void, void>, run) as AsyncGenerator<ExecutionResult, void, void>;
}

/** The SSE text of one result, made once per result object (shared results are shared texts). */
const resultTexts = new WeakMap<object, string>();

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

function eventText(result: ExecutionResult): string {
  let text = resultTexts.get(result);
  if (text === undefined) {
    text = `event: next\ndata: ${JSON.stringify(withoutInternals(result))}\n\n`;
    resultTexts.set(result, text);
  }
  return text;
}

/** Where the direct path reads a subscription's changes (see the module doc). */
interface DirectSource {
  live: LiveSubscription;
  /** The shared execution of one event (sharedSubscribe's runner). */
  run: (payload: unknown) => Promise<ExecutionResult>;
  maskError: MaskError;
}

/** A result with its errors masked as Yoga's masking plugin would (the direct path bypasses that plugin). */
function masked(result: ExecutionResult, maskError: MaskError): ExecutionResult {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => maskError(e, 'Unexpected error.', false) as GraphQLError) };
}

/**
 * An SSE response for a stream of results: each pull writes every result already available (up to
 * MAX_EVENTS_PER_WRITE) as one chunk; a result not yet available is awaited by the next pull. With `direct`,
 * the changes are read from the live subscription's queue instead (module doc); `results` then carries the
 * other events, the end, and the cleanup when the client leaves.
 */
function sseResponse(
  results: AsyncIterable<ExecutionResult>,
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream },
  direct: DirectSource | null,
): Response {
  const iterator = results[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  let pending: Promise<IteratorResult<ExecutionResult>> | null = null;
  let ping: NodeJS.Timeout | null = null;
  const stop = () => {
    if (ping) clearInterval(ping);
    ping = null;
  };
  const complete = (controller: ReadableStreamDefaultController<Uint8Array>, text: string) => {
    controller.enqueue(encoder.encode(text + 'event: complete\ndata:\n\n'));
    stop();
    controller.close();
  };
  /** The direct path's pull: queued changes at once, anything else through the pipeline. */
  const pullDirect = async (controller: ReadableStreamDefaultController<Uint8Array>, { live, run, maskError }: DirectSource) => {
    for (;;) {
      const changes = live.drainChanges(MAX_EVENTS_PER_WRITE);
      if (changes.length > 0) {
        // Shared results are shared objects, so their texts are made once (eventText).
        let text = '';
        for (const r of await Promise.all(changes.map(run))) text += eventText(masked(r, maskError));
        controller.enqueue(encoder.encode(text));
        return;
      }
      if (live.pending > 0 || live.isEnded) {
        const r = await iterator.next();
        if (r.done) return complete(controller, '');
        controller.enqueue(encoder.encode(eventText(r.value)));
        return;
      }
      await live.ready();
    }
  };
  const stream = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(':\n\n'));
      ping = setInterval(() => {
        if (controller.desiredSize === null) return stop();
        if (controller.desiredSize > 0) controller.enqueue(encoder.encode(':\n\n'));
      }, SSE_PING_SECONDS * 1000);
      ping.unref();
    },
    async pull(controller) {
      if (direct) return pullDirect(controller, direct);
      let text = '';
      let count = 0;
      for (;;) {
        const next = pending ?? iterator.next();
        pending = null;
        // The first result is awaited; after it, only results that are ready by the next turn of the loop.
        const r = count === 0 ? await next : await Promise.race([next, new Promise<null>((resolve) => setImmediate(() => resolve(null)))]);
        if (r === null) {
          pending = next;
          break;
        }
        if (r.done) return complete(controller, text);
        text += eventText(r.value);
        count += 1;
        if (count >= MAX_EVENTS_PER_WRITE) break;
      }
      controller.enqueue(encoder.encode(text));
    },
    async cancel() {
      stop();
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(stream, {
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
      const run = state ? runners.get(state) : undefined;
      const direct = state?.live && run ? { live: state.live, run, maskError: opts.maskError } : null;
      setResultProcessor(
        ((r: AsyncIterable<ExecutionResult>, fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream }) => sseResponse(r, fetchAPI, direct)) as never,
        'text/event-stream',
      );
    },
  };
}
