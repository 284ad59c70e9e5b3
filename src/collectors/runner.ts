/**
 * Runs one collector source once (docs/collectors.md): builds its SourceContext (base URL, credential, the
 * source's HTTP client with limits, retries, breaker, proxies and timeouts), reads the whole run into a
 * QuoteBuffer (rows validated and converted, bad ones counted and skipped), judges it, writes it through the bulk
 * ingestion and records the run in `collector_run`.
 *
 * A run is all or nothing towards the quotes: one that throws (an UpstreamError: http, format, unreachable; or
 * anything else the adapter or the body throws, such as a truncated body), or whose listing shrank (a complete
 * listing with, for some market, fewer than half the rows of the last complete run of that source, or none),
 * writes nothing: the markets' quotes stay as they were. A successful run writes its rows with `ingestBatch` in
 * chunks of INGEST_CHUNK rows (each chunk one transaction, INGEST_DEPTH of them in flight at once) and then, for a complete listing only, completes each
 * market's scan with `delistUnseen` (quotes of that market and provider the run did not see are delisted).
 * Ingestion counts the observations per market and minute (`ingest_activity`, the /status `datasource` area).
 *
 * Offline is normal: each source's state (ok, unreachable, failed with a kind, not configured) is logged when it
 * changes, not every run; its breaker makes it wait longer while its upstream stays away, and a run after the pause
 * tries again by itself.
 */
import os from 'node:os';
import { setImmediate as nextTurn } from 'node:timers/promises';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import type { CollectorSourceEnv } from '../env.js';
import type { Money } from '../lib/money.js';
import { readCurrencyRates } from '../catalogue/catalogue.js';
import { completeMarketScanTx, ingestBatch, marketCatalogue } from '../quotes/ingestion.js';
import { bumpAnswerEpoch } from '../quotes/quotes.js';
import { createSourceHttp, scrub, type SourceHttp } from './http.js';
import { QuoteBuffer } from './rows.js';
import { UpstreamError, type CollectorSource, type SourceContext } from './source.js';

/** Rows per ingestion transaction on PostgreSQL. */
export const INGEST_CHUNK = 5000;
/** Ingestion transactions of a run in flight at once (each on its own pool connection on PostgreSQL). */
export const INGEST_DEPTH = 2;
/**
 * Rows per ingestion transaction on embedded PGlite. Its statements run on the service's own thread, each to its end:
 * a chunk's statements are a stall of every request that needs the event loop (about 0.1 ms a row here), so chunks are
 * smaller there; one at a time (one connection), each begun once no request's statement waits
 * (`TransactionOptions.background`).
 */
export const PGLITE_INGEST_CHUNK = 1000;

/** Longest stretch of a run's reading (parsing, validation, conversion) between two turns of the event loop, in ms. */
const READ_SLICE_MS = 10;

/** Rows per ingestion transaction on `db` (INGEST_CHUNK, or PGLITE_INGEST_CHUNK on embedded PGlite). */
export function ingestChunkRows(db: Pick<Database, 'kind'>): number {
  return db.kind === 'pglite' ? PGLITE_INGEST_CHUNK : INGEST_CHUNK;
}
/**
 * Pool connections a process's collectors hold at most with `concurrency` sources running at once (COLLECTOR_CONCURRENCY):
 * each run's lock (a session advisory lock on a checked-out connection), INGEST_DEPTH ingestion transactions of the
 * process (`CollectorRuntime.ingestSlots`) and one for the statements between them. `openDatabase`'s `maxConnections`
 * adds it to the pool of a process that runs the collectors, so a run never waits for a connection (a wait longer than
 * the pool's bound would fail the run).
 */
export function collectorConnections(concurrency: number): number {
  return concurrency + INGEST_DEPTH + 1;
}

/** Runs kept in `collector_run`, in days. */
const RUN_RETENTION_DAYS = 7;

/** How a run ended (`collector_run.outcome`). */
export type RunOutcome = 'ok' | 'failed' | 'unreachable' | 'not_configured';

/** What one run did. */
export interface RunResult {
  sourceId: string;
  outcome: RunOutcome;
  startedAt: Date;
  finishedAt: Date;
  /** Rows kept per market (what was written when the outcome is ok). */
  markets: Record<string, number>;
  rowsAccepted: number;
  rowsSkipped: number;
  /** Rows skipped per reason (src/collectors/rows.ts). */
  skips: Record<string, number>;
  /** True when the run completed its markets' scans (an ok complete listing). */
  complete: boolean;
  /** Quotes delisted by the scan completions. */
  delisted: number;
  errorKind: string | null;
  errorMessage: string | null;
  /** Milliseconds spent reading (fetch, parse, validation), ingesting and completing scans. */
  phases: { readMs: number; ingestMs: number; scanMs: number };
}

/** What the runner needs besides the source: the database, the log, settings and the per-process state. */
export interface CollectorRuntimeOptions {
  db: Database;
  logger: Logger;
  /** The source's environment settings (env.ts loadCollectorSourceEnv). */
  sourceEnv: (source: Pick<CollectorSource, 'id' | 'credentialEnv'>) => CollectorSourceEnv;
  /** COLLECTOR_INTERVAL_SCALE: multiplies intervals and breaker pauses. Default 1. */
  intervalScale?: number;
  /** Names per-item sources collect, or a function giving them at the start of each run (src/collectors/watchlist.ts). */
  watchlist?: readonly string[] | (() => Promise<readonly string[]>);
  /** This process, as recorded on each run. Default `host:pid`. */
  worker?: string;
  /** First retry pause in ms (tests shorten it). Default 1,000. */
  retryBaseMs?: number;
  /** Longest Retry-After waited within a run, in seconds. Default 120. */
  maxRetryAfterSeconds?: number;
  /** Consecutive failed requests that open a source's breaker. Default 3. */
  breakerThreshold?: number;
}

/** The collectors' per-process state: each source's HTTP client (its breaker) and last logged state. */
export class CollectorRuntime {
  readonly db: Database;
  readonly logger: Logger;
  readonly worker: string;
  private readonly clients = new Map<string, { http: SourceHttp; key: string }>();
  private readonly states = new Map<string, string>();
  /**
   * Ingestion transactions of this process in flight at once, whatever the number of sources running: INGEST_DEPTH.
   * Each holds a pool connection besides its run's lock: with COLLECTOR_CONCURRENCY sources at a time the process holds
   * at most `collectorConnections` of them, which its pool adds to the requests' own.
   */
  readonly ingestSlots: LimitFunction;

  constructor(readonly opts: CollectorRuntimeOptions) {
    this.db = opts.db;
    this.ingestSlots = pLimit(opts.db.kind === 'pglite' ? 1 : INGEST_DEPTH);
    this.logger = opts.logger;
    this.worker = opts.worker ?? `${os.hostname()}:${process.pid}`;
  }

  /** The source's interval in seconds after its override and COLLECTOR_INTERVAL_SCALE (at least 0.5 s). */
  intervalSeconds(source: Pick<CollectorSource, 'id' | 'credentialEnv' | 'intervalSeconds'>): number {
    const own = this.opts.sourceEnv(source).intervalSeconds ?? source.intervalSeconds;
    return Math.max(0.5, own * (this.opts.intervalScale ?? 1));
  }

  /** The source's base URL and HTTP client, made at first use and kept (a changed setting makes a new one). */
  client(source: Pick<CollectorSource, 'id' | 'credentialEnv' | 'defaultBaseUrl' | 'limits' | 'intervalSeconds'>): { http: SourceHttp; baseUrl: string; settings: CollectorSourceEnv } {
    const settings = this.opts.sourceEnv(source);
    const baseUrl = (settings.baseUrl ?? source.defaultBaseUrl).replace(/\/+$/, '');
    const key = JSON.stringify([baseUrl, settings.proxies, source.limits]);
    let entry = this.clients.get(source.id);
    if (!entry || entry.key !== key) {
      void entry?.http.close();
      const interval = this.intervalSeconds(source);
      entry = {
        key,
        http: createSourceHttp({
          sourceId: source.id,
          baseUrl,
          limits: source.limits,
          proxies: settings.proxies,
          secrets: settings.credential ? [settings.credential] : [],
          retryBaseMs: this.opts.retryBaseMs,
          maxRetryAfterSeconds: this.opts.maxRetryAfterSeconds,
          breakerThreshold: this.opts.breakerThreshold,
          // An open breaker waits two intervals first, then twice as long each time the trial fails (up to 32).
          breakerBaseMs: Math.max(500, interval * 2000),
        }),
      };
      this.clients.set(source.id, entry);
    }
    return { http: entry.http, baseUrl, settings };
  }

  /**
   * Logs a source's state when it differs from the last one logged by this process: "unreachable" once when the
   * upstream goes away, once when it is back, not at every run.
   */
  noteState(sourceId: string, state: string, fields: Record<string, unknown>, message: string): void {
    const before = this.states.get(sourceId);
    this.states.set(sourceId, state);
    if (before === state) {
      this.logger.debug({ source: sourceId, state, ...fields }, message);
      return;
    }
    const level = state === 'ok' || state === 'not_configured' ? 'info' : 'warn';
    this.logger[level]({ source: sourceId, state, previous: before ?? null, ...fields }, before && state === 'ok' ? `${message} (recovered)` : message);
  }

  /** Closes every source's connections. */
  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.http.close()));
    this.clients.clear();
  }
}

/** The kind and message of what a run threw (UpstreamError kinds; anything else from a body is a format failure). */
function classify(e: unknown, secrets: readonly string[]): { kind: string; message: string } {
  if (e instanceof UpstreamError) return { kind: e.kind, message: scrub(e.message, secrets) };
  const cause = (e as { cause?: unknown }).cause;
  if (cause instanceof UpstreamError) return { kind: cause.kind, message: scrub(cause.message, secrets) };
  const message = e instanceof Error ? e.message : String(e);
  return { kind: 'format', message: scrub(message, secrets) };
}

/** Official USD rates of the catalogue's currencies (USD per unit). */
async function usdRates(db: Database): Promise<Map<string, Money>> {
  return new Map((await readCurrencyRates(db, { officialOnly: true })).map((r) => [r.code, r.usdRate]));
}

/** Rows per market of the source's last ok complete run, or null when it never had one. */
async function lastCompleteListing(db: Database, sourceId: string): Promise<Record<string, number> | null> {
  const [row] = await db.query<{ markets: Record<string, number> }>(
    `SELECT markets FROM collector_run WHERE source_id = $1 AND outcome = 'ok' AND complete ORDER BY started_at DESC, id DESC LIMIT 1`,
    [sourceId],
  );
  return row?.markets ?? null;
}

/** Writes the run to `collector_run` and prunes runs past RUN_RETENTION_DAYS. */
async function recordRun(rt: CollectorRuntime, r: RunResult): Promise<void> {
  await rt.db.query(
    `INSERT INTO collector_run (source_id, worker, started_at, finished_at, outcome, complete, markets, rows_accepted, rows_skipped, skips, error_kind, error_message)
     VALUES ($1, $2, $3::timestamptz, $4::timestamptz, $5, $6, $7::jsonb, $8, $9, $10::jsonb, $11, $12)`,
    [
      r.sourceId,
      rt.worker.slice(0, 128),
      r.startedAt.toISOString(),
      r.finishedAt.toISOString(),
      r.outcome,
      r.complete,
      JSON.stringify(r.markets),
      r.rowsAccepted,
      r.rowsSkipped,
      JSON.stringify(r.skips),
      r.errorKind,
      r.errorMessage?.slice(0, 1000) ?? null,
    ],
  );
  await rt.db.query(`DELETE FROM collector_run WHERE started_at < $1::timestamptz`, [new Date(r.startedAt.getTime() - RUN_RETENTION_DAYS * 86_400_000).toISOString()]);
}

/** Options of one run. */
export interface RunOptions {
  /** The run's clock (observations are stamped with it). Default now. */
  now?: Date;
  /** Cancels the run (shutdown). */
  signal?: AbortSignal;
  /** Abandons the run after this many ms. Default: max(10 min, 2 intervals). */
  deadlineMs?: number;
}

/** The result of a run of task `sourceId` started at `startedAt` before it did anything: outcome ok, nothing counted. */
export function emptyRun(sourceId: string, startedAt: Date): RunResult {
  return {
    sourceId,
    outcome: 'ok',
    startedAt,
    finishedAt: startedAt,
    markets: {},
    rowsAccepted: 0,
    rowsSkipped: 0,
    skips: {},
    complete: false,
    delisted: 0,
    errorKind: null,
    errorMessage: null,
    phases: { readMs: 0, ingestMs: 0, scanMs: 0 },
  };
}

/**
 * Runs `source` once and records the run (see the file comment). Never throws for an upstream's failure: the
 * outcome says it. Throws only when the database fails while recording.
 */
export async function runSource(rt: CollectorRuntime, source: CollectorSource, opts: RunOptions = {}): Promise<RunResult> {
  const startedAt = opts.now ?? new Date();
  const result = emptyRun(source.id, startedAt);
  const { http, baseUrl, settings } = rt.client(source);
  const secrets = settings.credential ? [settings.credential] : [];
  const finish = async (outcome: RunOutcome, error: { kind: string; message: string } | null, buffer?: QuoteBuffer): Promise<RunResult> => {
    result.outcome = outcome;
    result.finishedAt = new Date();
    if (buffer) {
      result.skips = Object.fromEntries(buffer.skips);
      result.rowsSkipped = buffer.skipped;
      result.markets = Object.fromEntries(buffer.perMarket);
      if (outcome === 'ok') result.rowsAccepted = buffer.size;
    }
    result.errorKind = error?.kind ?? null;
    result.errorMessage = error ? scrub(error.message, secrets) : null;
    await recordRun(rt, result);
    const fields = { outcome, rows: result.rowsAccepted, skipped: result.rowsSkipped, errorKind: result.errorKind, error: result.errorMessage, ms: result.finishedAt.getTime() - startedAt.getTime() };
    if (outcome === 'ok') rt.noteState(source.id, 'ok', fields, 'collector run ok');
    else if (outcome === 'not_configured') rt.noteState(source.id, 'not_configured', fields, `collector not configured: ${source.credentialEnv} is not set`);
    else if (outcome === 'unreachable') rt.noteState(source.id, 'unreachable', fields, 'collector upstream unreachable');
    else rt.noteState(source.id, `failed:${result.errorKind}`, fields, 'collector run failed');
    return result;
  };

  if (source.credentialEnv && !settings.credential) return finish('not_configured', null);

  const controller = new AbortController();
  const deadlineMs = opts.deadlineMs ?? Math.max(600_000, rt.intervalSeconds(source) * 2000);
  const deadline = setTimeout(() => controller.abort(new UpstreamError('unreachable', `run deadline: not finished within ${Math.round(deadlineMs / 1000)} s`)), deadlineMs);
  deadline.unref();
  const onCancel = () => controller.abort(new UpstreamError('unreachable', 'run cancelled (shutdown)'));
  opts.signal?.addEventListener('abort', onCancel, { once: true });
  let buffer: QuoteBuffer | undefined;
  try {
    const watch = rt.opts.watchlist;
    const [markets, rates, watchlist] = await Promise.all([marketCatalogue(rt.db), usdRates(rt.db), !source.perItem ? [] : typeof watch === 'function' ? watch() : (watch ?? [])]);
    buffer = new QuoteBuffer({ markets, sourceMarkets: source.markets, usdRates: rates });
    const ctx: SourceContext = {
      baseUrl,
      credential: settings.credential,
      watchlist,
      signal: controller.signal,
      now: startedAt,
      fetch: (pathAndQuery, init) => http.fetch(pathAndQuery, init, controller.signal),
    };
    let t = performance.now();
    try {
      // A body already received is parsed in promise continuations, which never let the event loop turn: every
      // READ_SLICE_MS of reading, one turn (setImmediate), so a service running the collectors (embedded PGlite)
      // goes on reading its sockets meanwhile.
      let slice = performance.now();
      for await (const row of source.collect(ctx)) {
        buffer.add(row);
        if (controller.signal.aborted) throw controller.signal.reason;
        if (performance.now() - slice >= READ_SLICE_MS) {
          await nextTurn();
          slice = performance.now();
        }
      }
    } catch (e) {
      const err = controller.signal.aborted && controller.signal.reason instanceof UpstreamError && !(e instanceof UpstreamError) ? controller.signal.reason : e;
      const c = classify(err, secrets);
      return await finish(c.kind === 'unreachable' ? 'unreachable' : 'failed', c, buffer);
    }
    result.phases.readMs = Math.round(performance.now() - t);
    // Judged as a whole before anything is written: a complete listing that lost more than half of a market fails.
    if (source.completeListing) {
      const last = await lastCompleteListing(rt.db, source.id);
      for (const m of source.markets) {
        const now = buffer.perMarket.get(m) ?? 0;
        const before = last?.[m] ?? 0;
        if (now === 0 && markets.has(m) && !markets.get(m)!.isDeprecated) {
          return await finish('failed', { kind: 'shrunk', message: `the listing of ${m} is empty (${buffer.skipped} rows skipped)` }, buffer);
        }
        if (now * 2 < before) {
          return await finish('failed', { kind: 'shrunk', message: `the listing of ${m} shrank from ${before} to ${now} rows (more than half)` }, buffer);
        }
      }
    }
    let wrote = false;
    try {
      t = performance.now();
      // Each chunk drops only the changed names from the replicas' quote caches; the run's confirmations (its
      // observed_at and fresh_at) are signalled once, after its last write (below).
      // Two chunks in flight, each in its own transaction on its own connection: the next one's JavaScript (its
      // rows, parameters and their encoding) runs while PostgreSQL writes the one before, where one chunk after the
      // other left the process waiting for half of each chunk and PostgreSQL for the other half (docs/collectors.md,
      // Benchmark). Chunks of a run share no quote; the ingestion takes the rows they do share (new items, the
      // counters) in one order, so they wait for each other and never deadlock. At most INGEST_DEPTH chunks are held.
      const inFlight: Promise<unknown>[] = [];
      try {
        for (const chunk of buffer.observations(source.providerCode, startedAt, ingestChunkRows(rt.db))) {
          wrote = true;
          const p = rt.ingestSlots(() => ingestBatch(rt.db, chunk, { confirmations: 'later', concurrent: true, background: true }));
          p.catch(() => undefined); // awaited below; a failure must not count as unhandled meanwhile
          inFlight.push(p);
          if (inFlight.length >= INGEST_DEPTH) await inFlight.shift();
        }
        while (inFlight.length > 0) await inFlight.shift();
      } finally {
        // A failed chunk fails the run; the others still running finish (commit or roll back) before it is recorded.
        await Promise.allSettled(inFlight);
      }
      result.phases.ingestMs = Math.round(performance.now() - t);
      t = performance.now();
      if (source.completeListing) {
        for (const m of source.markets) {
          if (!buffer.perMarket.get(m)) continue;
          // The scan completes at the run's observation time: what it lists is as of then. So the quotes it saw keep
          // their fresh_at and daily close (already that time) and only the unseen ones are written again.
          const scan = await completeMarketScanTx(rt.db, { marketCode: m, providerCode: source.providerCode, startedAt, completedAt: startedAt, delistUnseen: true }, { background: true });
          result.delisted += scan.delisted;
        }
        result.complete = true;
      }
      result.phases.scanMs = Math.round(performance.now() - t);
    } catch (e) {
      return await finish('failed', { kind: 'database', message: e instanceof Error ? e.message : String(e) }, buffer);
    } finally {
      // The run's confirmations, committed chunk by chunk, reach every replica's quote cache: it drops everything.
      // The stored answers too (quotes/quotes.ts STORED_ANSWERS_SQL): the epoch first, so a replica that hears the
      // signal and misses reads the confirmed quotes.
      if (wrote) {
        await bumpAnswerEpoch(rt.db)
          .then(() => rt.db.notify('qg_quotes', '*'))
          .catch((e: unknown) => rt.logger.warn({ err: e, source: source.id }, 'quote cache signal failed'));
      }
    }
    return await finish('ok', null, buffer);
  } finally {
    clearTimeout(deadline);
    opts.signal?.removeEventListener('abort', onCancel);
  }
}
