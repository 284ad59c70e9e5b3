/**
 * A local stand-in for an upstream marketplace API: serves recorded responses (fixtures stored beside the
 * adapter tests, each with its PROVENANCE) on 127.0.0.1 and plays the upstream's failures on demand, so
 * collectors are tested without the internet (issue 42, "Tests without the internet").
 *
 * Routes map a path to a fixture: a route whose path has a query string answers exactly that request (a page number,
 * one item of a per-item upstream), else the route of the path without its query string answers; `play` switches a
 * path (without the query string: every request of that path) into a failure mode:
 * - `429`: 429 with `Retry-After: <retryAfterSeconds>` (default 1);
 * - `500` / `503`: a 5xx with a short text body;
 * - `hang`: headers never come (a timeout);
 * - `truncated`: 200, the fixture's first half, then the connection is destroyed;
 * - `html`: 200 with an HTML page (a login wall or a CDN error page) and `Content-Type: text/html`;
 * - `error-object`: 200 with `{"success":false,"error":"..."}`.
 * Each failure applies to the next `times` requests of that path (default: every request until `play(path, null)`).
 */
import http from 'node:http';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { SourceContext } from '../../src/collectors/source.js';

export type FailureMode = '429' | '500' | '503' | 'hang' | 'truncated' | 'html' | 'error-object';

/** One served path: a fixture file (or inline body) and its content type. */
export interface UpstreamRoute {
  /**
   * Path without the query string, e.g. `/v1/items` (every request of that path), or with one
   * (`/api/market/goods?game=csgo&page_num=2&page_size=80`: only that exact request, before the path's own route).
   */
  path: string;
  /** A fixture file path, or the body itself. */
  file?: string;
  body?: string | Buffer;
  contentType?: string;
  /** Extra response headers (e.g. `Last-Modified`). */
  headers?: Record<string, string>;
}

/** A running local upstream. */
export interface LocalUpstream {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Requests seen, in order: path with query string and the request headers. */
  requests: { path: string; headers: http.IncomingHttpHeaders }[];
  /** Replaces (or adds) a route's body. */
  route(r: UpstreamRoute): void;
  /** Plays `mode` on `path` for the next `times` requests (all when omitted); null restores normal answers. */
  play(path: string, mode: FailureMode | null, opts?: { times?: number; retryAfterSeconds?: number }): void;
  close(): Promise<void>;
}

/** Starts a local upstream serving `routes` on an ephemeral port of 127.0.0.1. */
export async function startUpstream(routes: UpstreamRoute[]): Promise<LocalUpstream> {
  const table = new Map<string, UpstreamRoute>(routes.map((r) => [r.path, r]));
  const failures = new Map<string, { mode: FailureMode; left: number; retryAfterSeconds: number }>();
  const requests: LocalUpstream['requests'] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const full = req.url ?? '/';
    const path = full.split('?')[0]!;
    requests.push({ path: full, headers: req.headers });
    const failure = failures.get(path);
    if (failure && failure.left !== 0) {
      if (failure.left > 0) failure.left -= 1;
      return fail(failure.mode, failure.retryAfterSeconds, table.get(full) ?? table.get(path), res);
    }
    const route = table.get(full) ?? table.get(path);
    if (!route) {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    res.writeHead(200, { 'Content-Type': route.contentType ?? 'application/json', ...route.headers });
    res.end(bodyOf(route));
  });
  function fail(mode: FailureMode, retryAfter: number, route: UpstreamRoute | undefined, res: http.ServerResponse): void {
    switch (mode) {
      case '429':
        res.writeHead(429, { 'Retry-After': String(retryAfter), 'Content-Type': 'application/json' }).end('{"error":"Too Many Requests"}');
        return;
      case '500':
      case '503':
        res.writeHead(Number(mode), { 'Content-Type': 'text/plain' }).end('upstream error');
        return;
      case 'hang':
        hanging.add(res);
        return;
      case 'truncated': {
        const body = route ? bodyOf(route) : Buffer.from('{"items":[{"a":1},');
        res.writeHead(200, { 'Content-Type': route?.contentType ?? 'application/json', 'Content-Length': String(body.length) });
        res.write(body.subarray(0, Math.max(1, Math.floor(body.length / 2))), () => res.destroy());
        return;
      }
      case 'html':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>Checking your browser</body></html>');
        return;
      case 'error-object':
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"success":false,"error":"Internal error, try again later"}');
        return;
    }
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    route: (r) => void table.set(r.path, r),
    play(path, mode, opts = {}) {
      if (mode === null) failures.delete(path);
      else failures.set(path, { mode, left: opts.times ?? -1, retryAfterSeconds: opts.retryAfterSeconds ?? 1 });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function bodyOf(route: UpstreamRoute): Buffer {
  if (route.body !== undefined) return Buffer.isBuffer(route.body) ? route.body : Buffer.from(route.body);
  if (route.file) return fs.readFileSync(route.file);
  return Buffer.alloc(0);
}

/**
 * A bare SourceContext for an adapter's own test: `fetch` is Node's fetch against `baseUrl`, throwing on a non-2xx
 * status like the runner's does (no retries, no breaker: those are the runner's and tested with it).
 */
export function bareContext(baseUrl: string, opts: Partial<Pick<SourceContext, 'credential' | 'watchlist' | 'now'>> = {}): SourceContext {
  const controller = new AbortController();
  return {
    baseUrl,
    credential: opts.credential ?? null,
    watchlist: opts.watchlist ?? [],
    now: opts.now ?? new Date(),
    signal: controller.signal,
    async fetch(pathAndQuery, init) {
      const res = await fetch(baseUrl + pathAndQuery, { method: init?.method, headers: init?.headers, body: init?.body, signal: controller.signal });
      if (!res.ok) {
        const { UpstreamError } = await import('../../src/collectors/source.js');
        throw new UpstreamError('http', `${res.status} from ${pathAndQuery}`, res.status);
      }
      return res;
    },
  };
}

/** Collects an adapter's whole run into an array (tests only). */
export async function collectAll<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const r of rows) out.push(r);
  return out;
}
