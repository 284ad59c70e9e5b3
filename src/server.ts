/**
 * Composition only: environment, database, bundled data on first start, app, listen, graceful shutdown.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { Env } from './env.js';
import { openDatabase, POOL_CONNECTIONS, type Database } from './db/client.js';
import { collectorConnections } from './collectors/runner.js';
import { createApp, metricsResponse } from './app.js';
import { importPath, isEmpty } from './collectors/importers.js';
import { bundledNames, importHistory } from './history/import.js';
import { createRateLimiter } from './limits/rate-limiter.js';
import { startExportJob, type ExportChild } from './jobs/export-snapshots.js';
import { startValuationJob } from './jobs/valuation.js';
import { startStatusRecorder } from './jobs/status-recorder.js';
import { startAlertJob } from './jobs/alerts.js';
import { defaultChecks, infrastructureComponentNames, parseProbeTargets } from './status/status.js';
import { collectProcessMetrics } from './lib/metrics.js';
import { startAdminChannel } from './admin/channel.js';
import { startCollectors, type RunningCollectors } from './collectors/start.js';

/** The operators' metrics listener: GET (or HEAD) /metrics answers the Prometheus text, anything else 404. */
const metricsListener: http.RequestListener = (req, res) => {
  if ((req.method === 'GET' || req.method === 'HEAD') && (req.url ?? '').split('?')[0] === '/metrics') {
    void metricsResponse().then(async (r) => {
      res.writeHead(200, { 'Content-Type': r.headers.get('content-type') ?? 'text/plain' });
      res.end(req.method === 'HEAD' ? undefined : await r.text());
    });
    return;
  }
  res.writeHead(404, { 'Content-Type': 'text/plain' });
  res.end('Only GET /metrics is served here.\n');
};

/** The host this process reaches itself on: loopback when bound to every interface. */
function selfHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The host of this service's own address as people type it: `localhost` when bound to every interface. */
function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/** A running server. */
export interface RunningServer {
  url: string;
  db: Database;
  /** The admin channel's socket (embedded PGlite in a directory: CLI admin commands while running); null otherwise. */
  adminSocket: string | null;
  /** GET /metrics on the operators' listener (METRICS_PORT); null when there is none. */
  metricsUrl: string | null;
  /** Resolves when the start-up work (valuation catch-up, first export build) is over; until then nothing is recorded for /status. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the database (migrations applied), loads the bundled data when it holds no quotes
 * (unless QUOTEGATE_AUTOLOAD=false), and listens on HOST:PORT. Throws when the database cannot be opened.
 */
/** What `startServer` may be given besides the environment. */
export interface ServerOptions {
  /** How to run this service's CLI in a child: with it, the export job builds in child processes on PostgreSQL. */
  cli?: ExportChild;
}

/** Starts the collectors in this process when COLLECTORS=on; a failure to start is logged, and the service serves on. */
async function maybeCollectors(env: Env, db: Database, logger: pino.Logger): Promise<RunningCollectors | null> {
  if (env.COLLECTORS !== 'on') return null;
  try {
    return await startCollectors(db, logger, env);
  } catch (err) {
    logger.error({ err }, 'collectors not started');
    return null;
  }
}

export async function startServer(env: Env, opts: ServerOptions = {}): Promise<RunningServer> {
  const logger = pino({ level: env.LOG_LEVEL, redact: ['req.headers.authorization', 'req.headers["x-api-key"]'] });
  collectProcessMetrics();
  // Collectors in this process (COLLECTORS=on) get connections of their own on top of the requests' (runner.ts).
  const maxConnections = POOL_CONNECTIONS + (env.COLLECTORS === 'on' ? collectorConnections(env.COLLECTOR_CONCURRENCY) : 0);
  const db = await openDatabase(env.DATABASE_URL ? { url: env.DATABASE_URL } : { pgliteDir: env.PGLITE_DIR }, { maxConnections });
  logger.info({ database: db.kind }, 'database ready');
  // Embedded PGlite belongs to this process: the CLI hands admin commands to it (src/admin/channel.ts).
  const admin = db.kind === 'pglite' && !env.PGLITE_DIR.startsWith('memory://') ? await startAdminChannel(db, env.PGLITE_DIR, logger) : null;
  if (env.QUOTEGATE_AUTOLOAD === 'true' && (await isEmpty(db))) {
    const dataDir = path.resolve(env.QUOTEGATE_DATA_DIR);
    logger.info({ dataDir }, 'empty database: loading the bundled real data (about half a minute)');
    const started = Date.now();
    const r = await importPath(db, dataDir);
    logger.info({ observations: r.observations, quotes: r.inserted, ms: Date.now() - started }, 'bundled data loaded');
    // The bundled price history (data/history: imported series, never quotes; docs/history.md).
    const historyDir = path.join(dataDir, 'history');
    if (fs.existsSync(historyDir)) {
      const h = await importHistory(db, historyDir, bundledNames(dataDir));
      logger.info({ points: h.points, months: h.months, skippedNames: h.skippedNames, ms: Date.now() - started }, 'bundled price history loaded');
    }
  }
  const rateLimiter = createRateLimiter({ redisUrl: env.REDIS_URL, enabled: env.QUOTEGATE_RATE_LIMITS === 'on', logger, leaseMs: env.RATE_LIMIT_LEASE_MS });
  logger.info({ rateLimits: rateLimiter.kind }, 'rate limiter ready');
  const status = { infrastructureComponents: infrastructureComponentNames(rateLimiter.ping !== undefined), distribution: env.STATUS_DISTRIBUTION };
  // The landing page's examples: PUBLIC_BASE_URL, else where this process listens (set once it does), never the Host header.
  let listeningAt = `http://${displayHost(env.HOST)}:${env.PORT}`;
  const app = createApp({ db, logger, rateLimiter, status, publicBaseUrl: () => env.PUBLIC_BASE_URL ?? listeningAt, apiServerUrl: env.PUBLIC_BASE_URL, corsOrigins: env.CORS_ORIGINS, metricsToken: env.METRICS_TOKEN ?? null, authCacheSeconds: env.AUTH_CACHE_SECONDS,
    creditLeases: env.CREDIT_LEASES === 'off' ? false : { leaseSeconds: env.CREDIT_LEASE_SECONDS, minBalance: env.CREDIT_LEASE_MIN_BALANCE, flushMs: env.CREDIT_LEASE_FLUSH_MS, settleMs: env.CREDIT_LEASE_SETTLE_SECONDS * 1000 },
    live: { maxConcurrent: env.LIVE_MAX_SUBSCRIPTIONS, maxQueue: env.LIVE_MAX_PENDING, redisUrl: env.REDIS_URL },
    pages: { rateLimit: env.PAGE_RATE_LIMIT, trustProxy: env.TRUST_PROXY },
    alerts: { allowHttp: env.ALERT_ALLOW_HTTP === 'true', allowPrivateHosts: env.ALERT_ALLOW_PRIVATE_HOSTS === 'true' },
  });
  // The valuation catch-up runs first (in the background), so the first export snapshot carries the CSCP quotes.
  const valuationJob = env.VALUATION_JOB === 'on' ? startValuationJob(db, { logger }) : null;
  const alertJob = env.ALERT_JOB === 'on' ? startAlertJob(db, { logger, delivery: { allowPrivateHosts: env.ALERT_ALLOW_PRIVATE_HOSTS === 'true' } }) : null;
  let closing = false;
  let exportJob: ReturnType<typeof startExportJob> | null = null;
  const exportStarted = (valuationJob?.startup ?? Promise.resolve()).then(() => {
    if (!closing && env.EXPORT_INTERVAL_SECONDS > 0) exportJob = startExportJob(db, env.EXPORT_INTERVAL_SECONDS, logger, opts.cli);
  });
  // Ready once the start-up work is over: the bundled data (loaded before listening), the valuation catch-up and the
  // first export build. Until then the status recorder records nothing (src/jobs/status-recorder.ts, `ready`).
  let isReady = false;
  const ready = exportStarted
    .then(() => exportJob?.firstRun)
    .then(() => {
      isReady = true;
      logger.info('start-up work done: the status recorder records from now on');
    });
  // Slow clients (README, request limits): the headers within HTTP_HEADERS_TIMEOUT_SECONDS and the whole request
  // within HTTP_REQUEST_TIMEOUT_SECONDS, else 408 and the connection is closed. Node checks those deadlines every
  // connectionsCheckingInterval (30 s by default, which would stretch them): a quarter of the headers timeout, at most 1 s.
  const headersTimeout = Math.round(env.HTTP_HEADERS_TIMEOUT_SECONDS * 1000);
  const requestTimeout = Math.round(env.HTTP_REQUEST_TIMEOUT_SECONDS * 1000);
  const server = http.createServer(
    { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 4))) },
    app.listener,
  );
  server.keepAliveTimeout = 65_000;
  const closeWebSockets = app.attachWebSockets(server); // GraphQL subscriptions over graphql-ws on /graphql
  await new Promise<void>((resolve) => server.listen(env.PORT, env.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : env.PORT;
  const url = `http://localhost:${port}`;
  listeningAt = `http://${displayHost(env.HOST)}:${port}`;
  // Operators' metrics listener (README, Operations): GET /metrics only, loopback by default.
  const metricsServer = env.METRICS_PORT === undefined ? null : http.createServer(metricsListener);
  if (metricsServer) await new Promise<void>((resolve) => metricsServer.listen(env.METRICS_PORT, env.METRICS_HOST, resolve));
  const metricsAddress = metricsServer?.address();
  const metricsUrl = metricsAddress && typeof metricsAddress === 'object' ? `http://${selfHost(env.METRICS_HOST)}:${metricsAddress.port}/metrics` : null;
  if (metricsUrl) logger.info({ metricsUrl }, 'metrics listener ready');
  // Collectors (docs/collectors.md): in this process when COLLECTORS=on (on embedded PGlite the only way: it owns the database).
  const collectors = await maybeCollectors(env, db, logger);
  const recorder =
    env.STATUS_PROBE_INTERVAL_SECONDS > 0
      ? startStatusRecorder(db, {
          checks: defaultChecks(db, {
            redisPing: rateLimiter.ping?.bind(rateLimiter),
            exportIntervalSeconds: env.EXPORT_INTERVAL_SECONDS,
            ingestionMaxAgeSeconds: env.STATUS_INGESTION_MAX_AGE_SECONDS,
          }),
          targets: parseProbeTargets(env.STATUS_PROBE_URLS, `http://${selfHost(env.HOST)}:${port}/health`),
          intervalSeconds: env.STATUS_PROBE_INTERVAL_SECONDS,
          logger,
          ready: () => isReady,
        })
      : null;
  return {
    url,
    db,
    ready,
    adminSocket: admin?.path ?? null,
    metricsUrl,
    async close() {
      if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
      await admin?.close();
      // Live streams end first (their clients get a terminal error and resubscribe elsewhere), so the server can close.
      await closeWebSockets();
      await app.live.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      closing = true;
      await collectors?.stop();
      await valuationJob?.stop();
      await alertJob?.stop();
      await exportStarted;
      await exportJob?.stop();
      await recorder?.stop();
      await rateLimiter.close();
      // Charges answered from credit leases are recorded and the leases given back before the database closes.
      await app.close().catch((err: unknown) => logger.error({ err }, 'recording the last lease charges failed'));
      await db.close();
    },
  };
}
