/** Clients of the live subscriptions as users run them: SSE over Node's fetch (undici) and graphql-ws over `ws`. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import type { App } from '../../src/app.js';

/** One server-sent event: its name (`message` when unnamed), data lines joined, and id when sent. */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** A listening node:http server for `app` with WebSockets attached; `close` ends it. */
export async function listen(app: App): Promise<{ url: string; ws: string; close(): Promise<void> }> {
  const server = http.createServer(app.listener);
  const closeWs = app.attachWebSockets(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ws: `ws://127.0.0.1:${port}/graphql`,
    async close() {
      await closeWs();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An open event stream: events arrive in `events` as they are parsed; `next(n)` waits for the n-th, `ended`
 * resolves when the server closed the stream; `abort` leaves.
 */
export interface EventStream {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** Resolves with the events once at least `count` arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  ended: Promise<void>;
  abort(): void;
}

/** Opens `url` as an event stream (GET, or POST with `body`), reading it in the background. */
export async function openStream(url: string, init: { headers?: Record<string, string>; body?: unknown } = {}): Promise<EventStream> {
  const ctl = new AbortController();
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: { Accept: 'text/event-stream', ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: ctl.signal,
  });
  const events: SseEvent[] = [];
  const waiters: (() => void)[] = [];
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const e: SseEvent = { event: 'message', data: '' };
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':') || line === '') continue;
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'event') e.event = value;
            else if (field === 'data') data.push(value);
            else if (field === 'id') e.id = value;
          }
          if (data.length === 0 && e.event === 'message') continue; // a comment-only block (heartbeat)
          e.data = data.join('\n');
          events.push(e);
          for (const w of waiters.splice(0)) w();
        }
      }
    } catch {
      // aborted by the test
    } finally {
      for (const w of waiters.splice(0)) w();
    }
  })();
  let done = false;
  void ended.then(() => (done = true));
  return {
    status: res.status,
    headers: res.headers,
    events,
    ended,
    abort: () => ctl.abort(),
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < count) {
        if (done) throw new Error(`the stream ended after ${events.length} of ${count} events: ${JSON.stringify(events)}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`only ${events.length} of ${count} events within ${timeoutMs} ms: ${JSON.stringify(events)}`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return events;
    },
  };
}

/** A graphql-ws client on `url` sending `apiKey` in connection_init (lazy: connects on the first subscription). */
export function wsClient(url: string, apiKey: string | null): Client {
  return createClient({ url, webSocketImpl: WebSocket, connectionParams: apiKey === null ? {} : { apiKey }, retryAttempts: 0, lazy: true });
}
