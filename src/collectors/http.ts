/**
 * One source's HTTP client (docs/collectors.md, "Requests"): what `SourceContext.fetch` runs on. Built from
 * maintained libraries, one instance per source and process, kept across runs (the breaker remembers):
 * - undici: a keep-alive `Agent`, or per proxy a `ProxyAgent` (http://, https://) or a SOCKS dispatcher
 *   (fetch-socks: socks4://, socks5://); with several proxies each request takes the next one (round robin);
 * - bottleneck: at most `limits.requestsPerMinute` request starts a minute (evenly spaced) and
 *   `limits.concurrency` requests in flight (a request holds its slot until its body was read or dropped);
 * - cockatiel: a timeout of `limits.timeoutMs` per attempt (headers and body), `limits.retries` retries of a
 *   network failure, 429 or 5xx with exponential backoff, waiting `Retry-After` when the upstream sends one;
 *   a circuit breaker that opens after `breakerThreshold` consecutive failed requests and lets one through after
 *   a pause that doubles each time it fails again (`breakerBaseMs` up to 16x).
 * Every failure reaches the adapter as an `UpstreamError`; messages never carry the source's credential.
 */
import Bottleneck from 'bottleneck';
import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  ExponentialBackoff,
  TaskCancelledError,
  circuitBreaker,
  handleWhen,
  retry,
  type IBackoff,
  type IBackoffFactory,
  type IRetryBackoffContext,
} from 'cockatiel';
import { Agent, ProxyAgent, fetch as undiciFetch, type Dispatcher } from 'undici';
import { socksDispatcher } from 'fetch-socks';
import { UpstreamError, type SourceLimits } from './source.js';

/** What a source's client is built from. */
/** A request's method, headers and body (SourceContext.fetch's init). */
export type UpstreamRequestInit = { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string };

export interface SourceHttpOptions {
  sourceId: string;
  baseUrl: string;
  limits: SourceLimits;
  /** Proxy URLs (http, https, socks4, socks5), rotated per request; empty = direct. */
  proxies: readonly string[];
  /** Consecutive failed requests (after their retries) that open the breaker. Default 3. */
  breakerThreshold?: number;
  /** First pause of an open breaker, in ms (then doubling up to 16x). Default 60,000. */
  breakerBaseMs?: number;
  /** Longest `Retry-After` waited inside a run, in seconds; a longer one fails the request. Default 120. */
  maxRetryAfterSeconds?: number;
  /** First retry pause in ms (doubling, with jitter, up to 30 s). Default 1,000. */
  retryBaseMs?: number;
  /** Texts that must never appear in an error message (the credential). */
  secrets?: readonly string[];
}

/** A source's client; `fetch` is the context's. */
export interface SourceHttp {
  /**
   * Requests `pathAndQuery` under the base URL (GET, or `init.method` with `init.body`); resolves on 2xx with a body
   * bounded by the timeout; throws UpstreamError.
   */
  fetch(pathAndQuery: string, init: UpstreamRequestInit | undefined, signal: AbortSignal): Promise<Response>;
  /** `closed`, `open` (requests fail at once) or `half-open` (the next request is a trial). */
  breakerState(): 'closed' | 'open' | 'half-open';
  close(): Promise<void>;
}

/** Seconds in a `Retry-After` header (delta-seconds or an HTTP date), or undefined. */
function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, Math.ceil((t - now) / 1000));
}

/** Replaces each secret in `text` by `[credential]`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[credential]').split(encodeURIComponent(s)).join('[credential]');
  return out;
}

/** A failure worth another attempt: the network, a timeout, 429 or a 5xx. */
function isRetryable(e: unknown): boolean {
  return e instanceof UpstreamError && (e.kind === 'unreachable' || (e.kind === 'http' && (e.status === 429 || (e.status ?? 0) >= 500)));
}

/** Exponential backoff with full jitter that waits an upstream's `Retry-After` instead when it sent one. */
class RetryAfterBackoff implements IBackoffFactory<IRetryBackoffContext<unknown>> {
  constructor(private readonly baseMs: number, private readonly maxMs: number) {}
  next(context: IRetryBackoffContext<unknown>): IBackoff<IRetryBackoffContext<unknown>> {
    const err = 'error' in context.result ? context.result.error : undefined;
    let duration: number;
    if (err instanceof UpstreamError && err.retryAfterSeconds !== undefined) duration = err.retryAfterSeconds * 1000;
    else {
      const cap = Math.min(this.maxMs, this.baseMs * 2 ** (context.attempt - 1));
      duration = cap / 2 + Math.random() * (cap / 2);
    }
    return { duration, next: (c) => this.next(c) };
  }
}

function dispatcherFor(proxy: string | null): Dispatcher {
  if (!proxy) return new Agent({ keepAliveTimeout: 30_000 });
  const url = new URL(proxy);
  if (url.protocol === 'socks4:' || url.protocol === 'socks5:') {
    return socksDispatcher({
      type: url.protocol === 'socks4:' ? 4 : 5,
      host: url.hostname,
      port: Number(url.port),
      userId: url.username ? decodeURIComponent(url.username) : undefined,
      password: url.password ? decodeURIComponent(url.password) : undefined,
    });
  }
  return new ProxyAgent({ uri: proxy });
}

/** Maps what undici throws to an UpstreamError (`unreachable`), keeping an UpstreamError as it is. */
function networkError(e: unknown, what: string, secrets: readonly string[]): UpstreamError {
  if (e instanceof UpstreamError) return e;
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  const detail = err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
  return new UpstreamError('unreachable', scrub(`${what}: ${detail}`, secrets));
}

/** Builds a source's client (see the file comment). */
export function createSourceHttp(opts: SourceHttpOptions): SourceHttp {
  const secrets = opts.secrets ?? [];
  const proxies = opts.proxies.length > 0 ? [...opts.proxies] : [null];
  const dispatchers = proxies.map(dispatcherFor);
  let turn = 0;
  const limiter = new Bottleneck({
    maxConcurrent: Math.max(1, opts.limits.concurrency),
    minTime: Math.ceil(60_000 / Math.max(1, opts.limits.requestsPerMinute)),
  });
  const maxRetryAfter = opts.maxRetryAfterSeconds ?? 120;
  const retryPolicy = retry(handleWhen(isRetryable), {
    maxAttempts: Math.max(0, opts.limits.retries),
    backoff: new RetryAfterBackoff(opts.retryBaseMs ?? 1000, 30_000),
  });
  const breakerBase = opts.breakerBaseMs ?? 60_000;
  const breaker = circuitBreaker(handleWhen((e) => isRetryable(e)), {
    halfOpenAfter: new ExponentialBackoff({ initialDelay: breakerBase, maxDelay: breakerBase * 16 }),
    breaker: new ConsecutiveBreaker(opts.breakerThreshold ?? 3),
  });

  /** One attempt: resolves with the response once its status is 2xx; the body keeps the attempt's deadline and slot. */
  async function attempt(pathAndQuery: string, init: UpstreamRequestInit | undefined, outer: AbortSignal): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      // A run cancelled while this request waits for its slot (a minute away at 1 request a minute) ends now; the
      // slot, when it comes, is given back at once.
      const onAbortWhileQueued = () => reject(networkError(outer.reason, `request to ${pathAndQuery} cancelled before it started`, secrets));
      if (outer.aborted) return onAbortWhileQueued();
      outer.addEventListener('abort', onAbortWhileQueued, { once: true });
      limiter
        .schedule(
          () =>
            new Promise<void>((release) => {
              outer.removeEventListener('abort', onAbortWhileQueued);
              const controller = new AbortController();
              let done = false;
              const finish = () => {
                if (done) return;
                done = true;
                clearTimeout(timer);
                outer.removeEventListener('abort', onOuter);
                release();
              };
              const timer = setTimeout(() => {
                controller.abort(new UpstreamError('unreachable', `timeout: no complete answer to ${scrub(pathAndQuery, secrets)} within ${opts.limits.timeoutMs} ms`));
                finish();
              }, opts.limits.timeoutMs);
              const onOuter = () => controller.abort(outer.reason);
              // A request that waited in the limiter while its run was cancelled never starts.
              if (outer.aborted) onOuter();
              else outer.addEventListener('abort', onOuter, { once: true });
              const dispatcher = dispatchers[turn++ % dispatchers.length]!;
              undiciFetch(opts.baseUrl + pathAndQuery, {
                dispatcher,
                method: init?.method ?? 'GET',
                ...(init?.body !== undefined ? { body: init.body } : {}),
                headers: { 'user-agent': 'quotegate-collector/0.1', accept: 'application/json, application/xml;q=0.9, */*;q=0.5', ...init?.headers },
                signal: controller.signal,
              }).then(
                async (res) => {
                  if (!res.ok) {
                    const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
                    await res.body?.cancel().catch(() => undefined);
                    finish();
                    if (res.status === 429 && retryAfter !== undefined && retryAfter > maxRetryAfter) {
                      reject(new UpstreamError('http', `429 from ${scrub(pathAndQuery, secrets)}: Retry-After ${retryAfter} s is beyond ${maxRetryAfter} s`, 429));
                      return;
                    }
                    reject(new UpstreamError('http', `${res.status} from ${scrub(pathAndQuery, secrets)}`, res.status, retryAfter));
                    return;
                  }
                  resolve(withWatchedBody(res as unknown as Response, controller.signal, finish, secrets, pathAndQuery));
                },
                (e: unknown) => {
                  finish();
                  const reason = controller.signal.aborted ? controller.signal.reason : e;
                  reject(networkError(reason, `request to ${pathAndQuery} failed`, secrets));
                },
              );
            }),
        )
        .catch((e: unknown) => reject(networkError(e, 'rate limiter', secrets)));
    });
  }

  return {
    async fetch(pathAndQuery, init, signal) {
      try {
        return await breaker.execute(() => retryPolicy.execute(() => attempt(pathAndQuery, init, signal), signal), signal);
      } catch (e) {
        if (e instanceof BrokenCircuitError) {
          throw new UpstreamError('unreachable', `circuit open: ${opts.sourceId} failed ${opts.breakerThreshold ?? 3} requests in a row; waiting before the next try`);
        }
        if (e instanceof TaskCancelledError) throw new UpstreamError('unreachable', 'run cancelled');
        throw e instanceof UpstreamError ? e : networkError(e, `request to ${pathAndQuery} failed`, secrets);
      }
    },
    breakerState() {
      const s = breaker.state;
      return s === CircuitState.Closed ? 'closed' : s === CircuitState.HalfOpen ? 'half-open' : 'open';
    },
    async close() {
      await limiter.stop({ dropWaitingJobs: true }).catch(() => undefined);
      // destroy, not close: close waits for requests in flight, and an upstream that never answers (a network that
      // drops packets) held a stopping service for the whole request timeout.
      await Promise.all(dispatchers.map((d) => d.destroy().catch(() => undefined)));
    },
  };
}

/**
 * The response with its body wrapped: `finish` runs when the body has been read to its end, cancelled or
 * failed (the slot and deadline end there), and a body cut short by the deadline or the connection fails
 * with an UpstreamError (`unreachable` for the deadline, `format` for a truncated body).
 */
function withWatchedBody(res: Response, signal: AbortSignal, finish: () => void, secrets: readonly string[], pathAndQuery: string): Response {
  if (!res.body) {
    finish();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          finish();
          controller.close();
        } else controller.enqueue(value);
      } catch (e) {
        finish();
        if (signal.aborted && signal.reason instanceof UpstreamError) controller.error(signal.reason);
        else controller.error(new UpstreamError('format', scrub(`truncated body from ${pathAndQuery}: ${(e as Error).message ?? String(e)}`, secrets)));
      }
    },
    async cancel(reason) {
      finish();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers as unknown as HeadersInit });
}
