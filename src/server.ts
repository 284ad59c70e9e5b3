/**
 * Composition only: environment, database, bundled data on first start, app, listen, graceful shutdown.
 */
import http from 'node:http';
import path from 'node:path';
import pino from 'pino';
import type { Env } from './env.js';
import { openDatabase, type Database } from './db/client.js';
import { createApp } from './app.js';
import { importPath, isEmpty } from './services/importers.js';
import { createRateLimiter } from './plugins/rate-limiter.js';
import { startExportJob } from './jobs/export-snapshots.js';
import { startValuationJob } from './jobs/valuation.js';
import { startStatusRecorder } from './jobs/status-recorder.js';
import { defaultChecks, infrastructureComponentNames, parseProbeTargets } from './services/status.js';
import { collectProcessMetrics } from './lib/metrics.js';

/** The host this process reaches itself on: loopback when bound to every interface. */
function selfHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** A running server. */
export interface RunningServer {
  url: string;
  db: Database;
  close(): Promise<void>;
}

/**
 * Opens the database (migrations applied), loads the bundled data when it holds no quotes
 * (unless QUOTEGATE_AUTOLOAD=false), and listens on HOST:PORT. Throws when the database cannot be opened.
 */
export async function startServer(env: Env): Promise<RunningServer> {
  const logger = pino({ level: env.LOG_LEVEL, redact: ['req.headers.authorization', 'req.headers["x-api-key"]'] });
  collectProcessMetrics();
  const db = await openDatabase(env.DATABASE_URL ? { url: env.DATABASE_URL } : { pgliteDir: env.PGLITE_DIR });
  logger.info({ database: db.kind }, 'database ready');
  if (env.QUOTEGATE_AUTOLOAD === 'true' && (await isEmpty(db.prisma))) {
    const dataDir = path.resolve(env.QUOTEGATE_DATA_DIR);
    logger.info({ dataDir }, 'empty database: loading the bundled real data (about half a minute)');
    const started = Date.now();
    const r = await importPath(db.prisma, dataDir);
    logger.info({ observations: r.observations, quotes: r.inserted, ms: Date.now() - started }, 'bundled data loaded');
  }
  const rateLimiter = createRateLimiter({ redisUrl: env.REDIS_URL, enabled: env.QUOTEGATE_RATE_LIMITS === 'on', logger });
  logger.info({ rateLimits: rateLimiter.kind }, 'rate limiter ready');
  const status = { infrastructureComponents: infrastructureComponentNames(rateLimiter.ping !== undefined), distribution: env.STATUS_DISTRIBUTION };
  const app = createApp({ db, logger, rateLimiter, status });
  // The valuation catch-up runs first (in the background), so the first export snapshot carries the CSCP quotes.
  const valuationJob = env.VALUATION_JOB === 'on' ? startValuationJob(db, { logger }) : null;
  let closing = false;
  let exportJob: ReturnType<typeof startExportJob> | null = null;
  const exportStarted = (valuationJob?.startup ?? Promise.resolve()).then(() => {
    if (!closing && env.EXPORT_INTERVAL_SECONDS > 0) exportJob = startExportJob(db, env.EXPORT_INTERVAL_SECONDS, logger);
  });
  // Slow clients (README, request limits): the headers within HTTP_HEADERS_TIMEOUT_SECONDS and the whole request
  // within HTTP_REQUEST_TIMEOUT_SECONDS, else 408 and the connection is closed. Node checks those deadlines every
  // connectionsCheckingInterval (30 s by default, which would stretch them): a quarter of the headers timeout, at most 1 s.
  const headersTimeout = Math.round(env.HTTP_HEADERS_TIMEOUT_SECONDS * 1000);
  const requestTimeout = Math.round(env.HTTP_REQUEST_TIMEOUT_SECONDS * 1000);
  const server = http.createServer(
    { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 4))) },
    app.adapter as unknown as http.RequestListener,
  );
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(env.PORT, env.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : env.PORT;
  const url = `http://localhost:${port}`;
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
        })
      : null;
  return {
    url,
    db,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      closing = true;
      await valuationJob?.stop();
      await exportStarted;
      await exportJob?.stop();
      await recorder?.stop();
      await rateLimiter.close();
      await db.close();
    },
  };
}
