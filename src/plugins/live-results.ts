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
 * Queries, mutations and subscriptions over WebSocket keep their transports; only the shared execution applies
 * to a WebSocket subscription.
 */
import { createSourceEventStream, execute, Kind, visit, type DocumentNode, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import { mapAsyncIterator } from 'graphql/execution/mapAsyncIterator.js';
import { isAsyncIterable } from '@envelop/core';
import type { Plugin } from 'graphql-yoga';

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

/**
 * Subscribe as graphql-js does (the source stream from the root field's `subscribe`), executing each event's
 * selection once per share key (see the module doc).
 */
async function sharedSubscribe(args: ExecutionArgs): Promise<AsyncGenerator<ExecutionResult, void, void> | ExecutionResult> {
  const source = await createSourceEventStream(args);
  if (!isAsyncIterable(source)) return source as ExecutionResult;
  const key = shareKey(args);
  const own = (payload: unknown) => Promise.resolve(execute({ ...args, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>);
  const run = async (payload: unknown): Promise<ExecutionResult> => {
    const event = typeof payload === 'object' && payload !== null ? payload : null;
    if (!event) return own(payload);
    let byKey = sharedResults.get(event);
    const shared = byKey?.get(key);
    if (shared) {
      // The execution is shared while it runs (subscriptions receive an event at the same moment).
      const r = await shared;
      return r.errors ? own(payload) : r;
    }
    const p = own(payload);
    if (!byKey) sharedResults.set(event, (byKey = new Map()));
    byKey.set(key, p);
    const r = await p;
    if (r.errors) byKey.delete(key);
    return r;
  };
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

/**
 * An SSE response for a stream of results: each pull writes every result already available (up to
 * MAX_EVENTS_PER_WRITE) as one chunk; a result not yet available is awaited by the next pull.
 */
function sseResponse(results: AsyncIterable<ExecutionResult>, fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream }): Response {
  const iterator = results[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  let pending: Promise<IteratorResult<ExecutionResult>> | null = null;
  let ping: NodeJS.Timeout | null = null;
  const stop = () => {
    if (ping) clearInterval(ping);
    ping = null;
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
        if (r.done) {
          text += 'event: complete\ndata:\n\n';
          controller.enqueue(encoder.encode(text));
          stop();
          controller.close();
          return;
        }
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

/** The plugin (see the module doc); mount it after Yoga's own result processors (any place in `plugins`). */
export function useLiveResults(): Plugin {
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(sharedSubscribe as never);
    },
    onResultProcess({ result, acceptableMediaTypes, request, setResultProcessor }) {
      if (!isAsyncIterable(result)) return;
      if (!(request.headers.get('accept') ?? '').includes('text/event-stream')) return;
      acceptableMediaTypes.push('text/event-stream');
      setResultProcessor(((r: AsyncIterable<ExecutionResult>, fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream }) => sseResponse(r, fetchAPI)) as never, 'text/event-stream');
    },
  };
}
