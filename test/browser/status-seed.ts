/**
 * Seeds 24 hours of status history through the real recorders, in time order, as the running service
 * would have written it: infrastructure checks every 5 minutes (`recordInfrastructure` with the
 * default checks on the real database and job table), HTTP probes of the service's own pages
 * (`recordServiceProbes`), quotes arriving through `ingestQuotes` (the datasource counters), and the
 * hourly scores (`recordSummary`). Planted trouble, so the page has something to be honest about:
 * - 03:00-04:00 the recorder did not run at all (no data anywhere);
 * - 05:00-07:00 no quotes arrive (the ingestion check fails, the markets have empty hours);
 * - 06:00-07:00 the export job fails (its check fails once the last success is 15 minutes old);
 * - 09:15 one `api` probe in four fails (degraded), 09:30 every `api` probe fails (down);
 * - `valuation` never ran, `api_cn` and `monitor` are not probed (no data).
 */
import type { Database } from '../../src/db/client.js';
import { ingestQuotes, obs } from '../helpers/app.js';
import {
  INFRASTRUCTURE_BUCKET_SECONDS,
  bucketStart,
  defaultChecks,
  recordInfrastructure,
  recordJobRun,
  recordServiceProbes,
  recordSummary,
  type ProbeTarget,
} from '../../src/status/status.js';

/** The seeded history ends here: the page's clock. */
export const SEED_NOW = new Date('2026-11-21T12:07:30Z');

const at = (iso: string) => Date.parse(iso);
const within = (t: number, from: string, to: string) => t >= at(from) && t < at(to);

/** Writes the history; `origin` is the served app (its `/health` and `/` are probed), `closedUrl` refuses connections. */
export async function seedStatusHistory(db: Database, origin: string, closedUrl: string): Promise<void> {
  const checks = defaultChecks(db, { exportIntervalSeconds: 300, ingestionMaxAgeSeconds: 900 });
  const last = bucketStart(SEED_NOW, INFRASTRUCTURE_BUCKET_SECONDS).getTime();
  const step = INFRASTRUCTURE_BUCKET_SECONDS * 1000;
  for (let bucket = last - 287 * step; bucket <= last; bucket += step) {
    const now = new Date(bucket + 30_000);
    const t = now.getTime();
    if (within(t, '2026-11-21T03:00:00Z', '2026-11-21T04:00:00Z')) continue; // the recorder was down
    // Quotes collected in this bucket (none 05:00-07:00): BUFF163 all day, CSFLOAT since 02:00, YOUPIN since 08:00.
    if (!within(t, '2026-11-21T05:00:00Z', '2026-11-21T07:00:00Z')) {
      const hour = new Date(t).getUTCHours();
      const observations = [];
      const markets: Array<[string, string, number]> = [['BUFF163', 'CNY', 6 + ((hour * 7) % 9)]];
      if (t >= at('2026-11-21T02:00:00Z')) markets.push(['CSFLOAT', 'USD', 3 + (hour % 4)]);
      if (t >= at('2026-11-21T08:00:00Z')) markets.push(['YOUPIN', 'CNY', 4 + ((hour * 5) % 6)]);
      for (const [market, currency, n] of markets) {
        for (let i = 0; i < n; i++) {
          observations.push(obs(`Seeded item ${i}`, { marketCode: market, providerCode: market, currencyCode: currency, price: String(10 + i), observedAt: new Date(t + i * 1000) }));
        }
      }
      await ingestQuotes(db, observations, { now });
    }
    // The export job: succeeds every 5 minutes, fails 06:00-07:00.
    await recordJobRun(db.prisma, 'export', within(t, '2026-11-21T06:00:00Z', '2026-11-21T07:00:00Z') ? new Error('disk full') : 'ok', now);
    await recordInfrastructure(db, checks, now);
    // Probes: the website (`/`) and the API (`/health`) of the served app; trouble planted at 09:15 and 09:30.
    const targets: ProbeTarget[] = [
      { component: 'web', url: `${origin}/` },
      { component: 'api', url: within(t, '2026-11-21T09:30:00Z', '2026-11-21T09:45:00Z') ? closedUrl : `${origin}/health` },
    ];
    await recordServiceProbes(db, targets, now);
    if (t >= at('2026-11-21T09:15:00Z') && t < at('2026-11-21T09:20:00Z')) await recordServiceProbes(db, [{ component: 'api', url: closedUrl }], now);
  }
  await recordSummary(db, SEED_NOW);
}
