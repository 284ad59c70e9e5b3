/**
 * Service status history (spec: GET /status, StatusOut). Recorder functions write what `/status`
 * reads; `/status` itself never probes anything live.
 *
 * Areas and their tables (all times UTC, every bucket keyed on the wire by its start in Unix seconds):
 * - `infrastructure` (status_infrastructure): one health check per backing component and 5-minute
 *   bucket. A failed check is stored (`ok` false) for the hourly score but not shown: a missing bucket
 *   on the wire means the check failed or did not run. A skipped check (nothing to judge yet, e.g. the
 *   valuation job never ran) writes nothing.
 * - `service` (status_service): probes of each public component's URL (`web`, `api`, `api_cn`,
 *   `monitor`) summed per 15-minute bucket; a component with no URL configured has no data.
 * - `datasource` (ingest_activity, written by ingestion): quote observations per market and minute.
 *   `realtime` = per market and minute over the last REALTIME_MINUTES minutes; `result` = per market and
 *   hour over the last 24 hours.
 * - `summary` (status_summary): hourly scores of the last 24 completed UTC hours per area, recomputed by
 *   `recordSummary` (formula on that function; README, Status).
 * - `distribution`: the configured proxy-node footprint (not stored; configuration).
 * Rows older than RETENTION_SECONDS are pruned by `pruneStatus`.
 */
import { Decimal } from 'decimal.js';
import type { Database } from '../db/client.js';
import type { PrismaClient } from '../generated/prisma/client.js';

/** Length of an infrastructure bucket, in seconds (spec: 5-minute buckets). */
export const INFRASTRUCTURE_BUCKET_SECONDS = 300;
/** Length of a service bucket, in seconds (spec: 15-minute buckets). */
export const SERVICE_BUCKET_SECONDS = 900;
/** The history `/status` shows, in seconds (spec: the last 24 hours). */
const WINDOW_SECONDS = 86_400;
/** How long recorded rows are kept, in seconds: the window plus one hour of slack. */
const RETENTION_SECONDS = WINDOW_SECONDS + 3600;
/** Minutes of per-minute counts in `datasource.realtime`. */
const REALTIME_MINUTES = 10;
/** The public components of area `service` (spec: StatusOut.service). */
export const SERVICE_COMPONENTS = ['web', 'api', 'api_cn', 'monitor'] as const;
/** A public component of area `service`. */
export type ServiceComponent = (typeof SERVICE_COMPONENTS)[number];
/** Longest a single check or probe may take before it counts as failed, in milliseconds. */
const CHECK_TIMEOUT_MS = 5000;

/** One entry of the proxy-node footprint, keyed by `"<latitude>,<longitude>"` (spec: StatusOut.distribution). */
export interface DistributionEntry {
  node_count: number;
  datacenter_count: number;
}

/** The StatusOut payload: every value a JSON object keyed as described in the module doc. */
export interface StatusData {
  summary: Record<string, Record<string, string>>;
  service: Record<string, Record<string, { ok: number; total: number; availability: string; latency_ms: number }>>;
  datasource: { realtime: Record<string, Record<string, number>>; result: Record<string, Record<string, number>> };
  infrastructure: Record<string, Record<string, { latency_ms: number }>>;
  distribution: Record<string, DistributionEntry>;
}

/** What `/status` shows besides the recorded rows: which infrastructure components exist here, and the footprint. */
export interface StatusSettings {
  /** Infrastructure components checked by this deployment, e.g. `database`, `redis`, `export`, `valuation`, `ingestion`. */
  infrastructureComponents: string[];
  distribution: Record<string, DistributionEntry>;
}

/** The default settings: the components every deployment checks (Redis only when configured), no proxy nodes. */
export function defaultStatusSettings(redisConfigured = false): StatusSettings {
  return { infrastructureComponents: infrastructureComponentNames(redisConfigured), distribution: {} };
}

/** Infrastructure component names in display order. */
export function infrastructureComponentNames(redisConfigured: boolean): string[] {
  return ['database', ...(redisConfigured ? ['redis'] : []), 'export', 'valuation', 'ingestion'];
}

/** Start of the bucket of `bucketSeconds` holding `at`. */
export function bucketStart(at: Date, bucketSeconds: number): Date {
  const ms = bucketSeconds * 1000;
  return new Date(Math.floor(at.getTime() / ms) * ms);
}

const unix = (d: Date) => String(Math.floor(d.getTime() / 1000));

/** Runs `work` with a time limit; a late answer counts as a failure. */
async function withTimeout<T>(work: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Outcome of one infrastructure check: `skipped` writes nothing (no bucket). */
export type CheckOutcome = { ok: true; detail?: string } | { ok: false; detail: string } | { skipped: true; detail: string };

/** One infrastructure health check. `run` may throw (a failure) and must settle within CHECK_TIMEOUT_MS. */
export interface InfrastructureCheck {
  component: string;
  run(now: Date): Promise<CheckOutcome>;
}

/** What the default checks need from the outside. */
export interface CheckOptions {
  /** Pings the shared Redis; absent when REDIS_URL is unset (no `redis` check). */
  redisPing?: () => Promise<unknown>;
  /** Seconds between export builds (EXPORT_INTERVAL_SECONDS); a build older than 3 intervals (at least 15 min) fails the check. */
  exportIntervalSeconds: number;
  /** Newest ingestion activity must be at most this old, in seconds (STATUS_INGESTION_MAX_AGE_SECONDS). */
  ingestionMaxAgeSeconds: number;
}

/**
 * The infrastructure checks of the spec: `database` (a round trip), `redis` (PING, only when configured),
 * `export` (the snapshot job's last success within 3 intervals), `valuation` (the valuation job's last
 * success within 26 hours; skipped until it first runs), `ingestion` (quotes received within
 * `ingestionMaxAgeSeconds`). The job checks read `job_run`, which the jobs write (`recordJobRun`).
 */
export function defaultChecks(db: Database, opts: CheckOptions): InfrastructureCheck[] {
  const jobCheck = (job: string, maxAgeSeconds: number): InfrastructureCheck => ({
    component: job,
    async run(now) {
      const row = await db.prisma.jobRun.findUnique({ where: { job } });
      if (!row || (!row.lastOkAt && !row.lastErrorAt)) return { skipped: true, detail: `the ${job} job has not run yet` };
      if (row.lastOkAt && now.getTime() - row.lastOkAt.getTime() <= maxAgeSeconds * 1000) return { ok: true };
      return { ok: false, detail: row.lastError ? `last run failed: ${row.lastError}`.slice(0, 200) : `no successful run in ${maxAgeSeconds} s` };
    },
  });
  const checks: InfrastructureCheck[] = [
    {
      component: 'database',
      async run() {
        await db.prisma.$queryRawUnsafe('SELECT 1');
        return { ok: true };
      },
    },
  ];
  if (opts.redisPing) {
    const ping = opts.redisPing;
    checks.push({
      component: 'redis',
      async run() {
        await ping();
        return { ok: true };
      },
    });
  }
  checks.push(jobCheck('export', Math.max(3 * opts.exportIntervalSeconds, 900)));
  checks.push(jobCheck('valuation', 26 * 3600));
  checks.push({
    component: 'ingestion',
    async run(now) {
      const [row] = await db.prisma.$queryRawUnsafe<{ newest: Date | null }[]>(`SELECT max(minute_start) AS newest FROM ingest_activity`);
      const newest = row?.newest ?? null;
      // The counter is per minute: a quote seen at 12:00:59 is filed under 12:00.
      if (newest && now.getTime() - newest.getTime() <= opts.ingestionMaxAgeSeconds * 1000 + 60_000) return { ok: true };
      return { ok: false, detail: newest ? `newest quote received at ${newest.toISOString()}` : 'no quotes received in the last 25 hours' };
    },
  });
  return checks;
}

/**
 * Runs every check once and records it in the 5-minute bucket of `now` (a later run in the same bucket
 * replaces it). Returns what each check decided. Throws only when the results cannot be written.
 */
export async function recordInfrastructure(db: Database, checks: InfrastructureCheck[], now: Date): Promise<Record<string, CheckOutcome>> {
  const bucket = bucketStart(now, INFRASTRUCTURE_BUCKET_SECONDS);
  const outcomes: Record<string, CheckOutcome> = {};
  await Promise.all(
    checks.map(async (check) => {
      const started = performance.now();
      let outcome: CheckOutcome;
      try {
        outcome = await withTimeout(() => check.run(now), CHECK_TIMEOUT_MS);
      } catch (e) {
        outcome = { ok: false, detail: (e instanceof Error ? e.message : String(e)).slice(0, 200) };
      }
      outcomes[check.component] = outcome;
      if ('skipped' in outcome) return;
      const latencyMs = Math.round(performance.now() - started);
      const data = { ok: outcome.ok, latencyMs, detail: outcome.detail ?? null, checkedAt: now };
      await db.prisma.statusInfrastructure.upsert({
        where: { component_bucketStart: { component: check.component, bucketStart: bucket } },
        create: { component: check.component, bucketStart: bucket, ...data },
        update: data,
      });
    }),
  );
  return outcomes;
}

/** A probe target of area `service`. */
export interface ProbeTarget {
  component: ServiceComponent;
  url: string;
}

/**
 * Parses STATUS_PROBE_URLS, `component=url` pairs separated by commas (e.g.
 * `web=https://quotegate.example/,api=https://api.quotegate.example/health`). Components not named have
 * no URL, except `api`, which defaults to `defaultApiUrl` (the service's own /health). Throws on an
 * unknown component or a URL that does not parse.
 */
export function parseProbeTargets(spec: string | undefined, defaultApiUrl: string | null): ProbeTarget[] {
  const targets = new Map<ServiceComponent, string>();
  if (defaultApiUrl) targets.set('api', defaultApiUrl);
  for (const part of (spec ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const at = part.indexOf('=');
    const name = at > 0 ? part.slice(0, at).trim() : '';
    const url = at > 0 ? part.slice(at + 1).trim() : '';
    if (!(SERVICE_COMPONENTS as readonly string[]).includes(name)) throw new Error(`STATUS_PROBE_URLS: unknown component "${name}" (one of ${SERVICE_COMPONENTS.join(', ')})`);
    try {
      new URL(url);
    } catch {
      throw new Error(`STATUS_PROBE_URLS: "${url}" is not a URL`);
    }
    targets.set(name as ServiceComponent, url);
  }
  return [...targets].map(([component, url]) => ({ component, url }));
}

/**
 * Probes each target once (GET, CHECK_TIMEOUT_MS) and adds the outcome to the 15-minute bucket of
 * `now`: a 2xx or 3xx answer is up, anything else (status, timeout, refused) is down. Returns up/down
 * per component. Throws only when the results cannot be written.
 */
export async function recordServiceProbes(
  db: Database,
  targets: ProbeTarget[],
  now: Date,
  fetchImpl: typeof fetch = fetch,
): Promise<Record<string, boolean>> {
  const bucket = bucketStart(now, SERVICE_BUCKET_SECONDS);
  const outcomes: Record<string, boolean> = {};
  await Promise.all(
    targets.map(async (t) => {
      const started = performance.now();
      let up: boolean;
      try {
        const res = await fetchImpl(t.url, { signal: AbortSignal.timeout(CHECK_TIMEOUT_MS), redirect: 'manual' });
        await res.arrayBuffer().catch(() => undefined);
        up = res.status >= 200 && res.status < 400;
      } catch {
        up = false;
      }
      outcomes[t.component] = up;
      const latency = BigInt(Math.round(performance.now() - started));
      await db.prisma.$executeRawUnsafe(
        `INSERT INTO status_service AS s (component, bucket_start, ok_count, total, latency_ms_sum)
         VALUES ($1, $2::timestamptz, $3, 1, $4)
         ON CONFLICT (component, bucket_start) DO UPDATE SET
           ok_count = s.ok_count + EXCLUDED.ok_count, total = s.total + 1, latency_ms_sum = s.latency_ms_sum + EXCLUDED.latency_ms_sum`,
        t.component,
        bucket.toISOString(),
        up ? 1 : 0,
        latency,
      );
    }),
  );
  return outcomes;
}

/** A score with two decimals, half-even (e.g. `99.31`), from a ratio in [0, 1]. */
function score(ratio: Decimal): string {
  return ratio.times(100).toDecimalPlaces(2, Decimal.ROUND_HALF_EVEN).toFixed(2);
}

/**
 * Recomputes the hourly scores of the last 24 completed UTC hours before `now` (README, Status):
 * - `infrastructure`: passed checks / (buckets x components checked at least once that hour), buckets being
 *   the hour's 12, less those before the first bucket ever recorded (a new install's first hour is not scored
 *   on the minutes before it existed: issue 41, point 12); a bucket whose check failed or did not run after
 *   that lowers the score. No check that hour: no score.
 * - `service`: mean over the components probed that hour of (up probes / probes). None: no score.
 * - `datasource`: markets that received at least one quote that hour / markets that received any in
 *   the 24 hours scored. No market at all in those 24 hours: no scores.
 * Replaces the stored scores of those hours in one transaction; returns them keyed by area then hour.
 */
export async function recordSummary(db: Database, now: Date): Promise<Record<string, Record<string, string>>> {
  const end = bucketStart(now, 3600);
  const start = new Date(end.getTime() - WINDOW_SECONDS * 1000);
  const scores: Record<string, Record<string, string>> = { service: {}, infrastructure: {}, datasource: {} };
  const perHour = 3600 / INFRASTRUCTURE_BUCKET_SECONDS;
  const hourKey = `date_bin('1 hour', bucket_start, TIMESTAMPTZ '2000-01-01 00:00:00+00')`;
  await db.prisma.$transaction(async (tx) => {
    const infra = await tx.$queryRawUnsafe<{ hour: Date; components: number; passed: number }[]>(
      `SELECT ${hourKey} AS hour, count(DISTINCT component)::int AS components, count(*) FILTER (WHERE ok)::int AS passed
       FROM status_infrastructure WHERE bucket_start >= $1::timestamptz AND bucket_start < $2::timestamptz GROUP BY 1`,
      start.toISOString(),
      end.toISOString(),
    );
    // The first bucket recorded (rows are kept 25 hours): buckets of its hour before it did not exist yet.
    const [first] = await tx.$queryRawUnsafe<{ first: Date | null }[]>(`SELECT min(bucket_start) AS first FROM status_infrastructure`);
    const firstMs = first?.first ? new Date(first.first).getTime() : -Infinity;
    for (const r of infra) {
      const hourMs = new Date(r.hour).getTime();
      const buckets = Math.min(perHour, Math.ceil((hourMs + 3600_000 - Math.max(hourMs, firstMs)) / (INFRASTRUCTURE_BUCKET_SECONDS * 1000)));
      scores.infrastructure![unix(r.hour)] = score(Decimal.min(1, new Decimal(r.passed).div(buckets * r.components)));
    }
    const service = await tx.$queryRawUnsafe<{ hour: Date; component: string; ok: number; total: number }[]>(
      `SELECT ${hourKey} AS hour, component, sum(ok_count)::int AS ok, sum(total)::int AS total
       FROM status_service WHERE bucket_start >= $1::timestamptz AND bucket_start < $2::timestamptz GROUP BY 1, 2`,
      start.toISOString(),
      end.toISOString(),
    );
    const byHour = new Map<string, Decimal[]>();
    for (const r of service) {
      if (r.total <= 0) continue;
      const k = unix(r.hour);
      byHour.set(k, [...(byHour.get(k) ?? []), new Decimal(r.ok).div(r.total)]);
    }
    for (const [k, ratios] of byHour) scores.service![k] = score(Decimal.sum(...ratios).div(ratios.length));
    const activity = await tx.$queryRawUnsafe<{ hour: Date; markets: number }[]>(
      `SELECT date_bin('1 hour', minute_start, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS hour, count(DISTINCT market_code)::int AS markets
       FROM ingest_activity WHERE minute_start >= $1::timestamptz AND minute_start < $2::timestamptz GROUP BY 1`,
      start.toISOString(),
      end.toISOString(),
    );
    const [all] = await tx.$queryRawUnsafe<{ markets: number }[]>(
      `SELECT count(DISTINCT market_code)::int AS markets FROM ingest_activity WHERE minute_start >= $1::timestamptz AND minute_start < $2::timestamptz`,
      start.toISOString(),
      end.toISOString(),
    );
    const total = all?.markets ?? 0;
    if (total > 0) {
      const active = new Map(activity.map((r) => [unix(r.hour), r.markets]));
      for (let h = start.getTime(); h < end.getTime(); h += 3600_000) {
        const k = String(h / 1000);
        scores.datasource![k] = score(new Decimal(active.get(k) ?? 0).div(total));
      }
    }
    await tx.$executeRawUnsafe(`DELETE FROM status_summary WHERE hour_start >= $1::timestamptz AND hour_start < $2::timestamptz`, start.toISOString(), end.toISOString());
    const areas: string[] = [];
    const hours: string[] = [];
    const values: string[] = [];
    for (const [area, byKey] of Object.entries(scores)) {
      for (const [k, v] of Object.entries(byKey)) {
        areas.push(area);
        hours.push(new Date(Number(k) * 1000).toISOString());
        values.push(v);
      }
    }
    if (areas.length > 0) {
      await tx.$executeRawUnsafe(
        `INSERT INTO status_summary (area, hour_start, score) SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::numeric[])`,
        areas,
        hours,
        values,
      );
    }
  });
  return scores;
}

/** Deletes recorded rows older than RETENTION_SECONDS before `now`; returns how many per table. */
export async function pruneStatus(db: Database, now: Date): Promise<Record<string, number>> {
  const cutoff = new Date(now.getTime() - RETENTION_SECONDS * 1000);
  const [infrastructure, service, activity, summary] = await db.prisma.$transaction([
    db.prisma.statusInfrastructure.deleteMany({ where: { bucketStart: { lt: cutoff } } }),
    db.prisma.statusService.deleteMany({ where: { bucketStart: { lt: cutoff } } }),
    db.prisma.ingestActivity.deleteMany({ where: { minuteStart: { lt: cutoff } } }),
    db.prisma.statusSummary.deleteMany({ where: { hourStart: { lt: cutoff } } }),
  ]);
  return { infrastructure: infrastructure.count, service: service.count, activity: activity.count, summary: summary.count };
}

/**
 * Records the outcome of a background job run in `job_run` (read by the `export` and `valuation`
 * checks): `started` stamps the start, `ok` a success, an Error a failure with its message.
 */
export async function recordJobRun(prisma: Pick<PrismaClient, 'jobRun'>, job: string, event: 'started' | 'ok' | Error, at: Date = new Date()): Promise<void> {
  const data =
    event === 'started'
      ? { lastStartedAt: at }
      : event === 'ok'
        ? { lastOkAt: at }
        : { lastErrorAt: at, lastError: (event.message || String(event)).slice(0, 500) };
  await prisma.jobRun.upsert({ where: { job }, create: { job, ...data }, update: data });
}

/**
 * Reads the status history as of `now` (spec: StatusOut) in one read-only, repeatable-read
 * transaction, so the areas agree with each other. Throws when any part cannot be read (the caller
 * answers 503, never a partial result).
 */
export async function readStatus(db: Database, settings: StatusSettings, now: Date): Promise<StatusData> {
  const since = new Date(now.getTime() - WINDOW_SECONDS * 1000);
  const hourEnd = bucketStart(now, 3600);
  const hourStart = new Date(hourEnd.getTime() - WINDOW_SECONDS * 1000);
  const minuteFrom = new Date(bucketStart(now, 60).getTime() - (REALTIME_MINUTES - 1) * 60_000);
  const p = db.prisma;
  const [summaryRows, serviceRows, infraRows, realtimeRows, resultRows] = await p.$transaction(
    [
      p.statusSummary.findMany({ where: { hourStart: { gte: hourStart, lt: hourEnd } }, orderBy: [{ area: 'asc' }, { hourStart: 'asc' }] }),
      p.statusService.findMany({ where: { bucketStart: { gt: new Date(since.getTime() - SERVICE_BUCKET_SECONDS * 1000), lte: now } }, orderBy: [{ component: 'asc' }, { bucketStart: 'asc' }] }),
      p.statusInfrastructure.findMany({
        where: { ok: true, bucketStart: { gt: new Date(since.getTime() - INFRASTRUCTURE_BUCKET_SECONDS * 1000), lte: now } },
        orderBy: [{ component: 'asc' }, { bucketStart: 'asc' }],
      }),
      p.ingestActivity.findMany({ where: { minuteStart: { gte: minuteFrom, lte: now } }, orderBy: [{ marketCode: 'asc' }, { minuteStart: 'asc' }] }),
      p.$queryRawUnsafe<{ market_code: string; hour: Date; count: bigint }[]>(
        `SELECT market_code, date_bin('1 hour', minute_start, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS hour, sum(count)::bigint AS count
         FROM ingest_activity WHERE minute_start >= $1::timestamptz AND minute_start <= $2::timestamptz GROUP BY 1, 2 ORDER BY 1, 2`,
        since.toISOString(),
        now.toISOString(),
      ),
    ],
    { isolationLevel: 'RepeatableRead' },
  );
  const summary: StatusData['summary'] = { service: {}, infrastructure: {}, datasource: {} };
  for (const r of summaryRows) (summary[r.area] ??= {})[unix(r.hourStart)] = new Decimal(r.score.toString()).toFixed(2);
  const service: StatusData['service'] = Object.fromEntries(SERVICE_COMPONENTS.map((c) => [c, {}]));
  for (const r of serviceRows) {
    if (r.total <= 0) continue;
    (service[r.component] ??= {})[unix(r.bucketStart)] = {
      ok: r.okCount,
      total: r.total,
      availability: score(new Decimal(r.okCount).div(r.total)),
      latency_ms: Math.round(Number(r.latencyMsSum) / r.total),
    };
  }
  const infrastructure: StatusData['infrastructure'] = Object.fromEntries(settings.infrastructureComponents.map((c) => [c, {}]));
  for (const r of infraRows) (infrastructure[r.component] ??= {})[unix(r.bucketStart)] = { latency_ms: r.latencyMs };
  const realtime: Record<string, Record<string, number>> = {};
  for (const r of realtimeRows) (realtime[r.marketCode] ??= {})[unix(r.minuteStart)] = Number(r.count);
  const result: Record<string, Record<string, number>> = {};
  for (const r of resultRows) (result[r.market_code] ??= {})[unix(r.hour)] = Number(r.count);
  return { summary, service, datasource: { realtime, result }, infrastructure, distribution: settings.distribution };
}
