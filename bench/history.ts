/**
 * `npm run bench:history`: the price-history storage (issue: price history, point 2; docs/history.md) on the
 * PostgreSQL server, with the synthetic year of bench/history-synthetic.ts (HISTORY_SCALE, default 0.1 =
 * 3,600 items x 40 markets x ask/bid x 365 days, ~103 M candles; full scale is 1.0). One command: it drops and
 * recreates the database `qg_bench_history` on DATABASE_URL's server (default postgresql://postgres@127.0.0.1:5432)
 * and measures:
 *
 * 1. Bulk write: every day but the last HISTORY_LIVE_DAYS (default 3) through `writeMonths` (whole months, the
 *    history importers' path), item after item, one call in flight while the next items are generated.
 * 2. Bytes per candle: `pg_total_relation_size('candle_month')` (heap + TOAST + index) after a plain
 *    `VACUUM ANALYZE`, divided by the candles stored; row count and average row size.
 * 3. Live path: the quotes' state of the last bulk day is loaded first (source_quote, untimed: a running
 *    service holds it), then each of the last HISTORY_LIVE_DAYS days is sent through the ingestion service (`ingestBatch`:
 *    `ingestQuotes` in one transaction per 10,000 observations, as the collector mutation does): per series and
 *    day one observation on a flat day, four on a day with a range (open, high and low in either order, close),
 *    a delisting on a delisted day; then `compactHistory` for the closed day (appends a block to the month
 *    rows). Observations/s and compacted candles/s; sizes measured again (the appends leave dead row versions
 *    that VACUUM turns into free space, as daily compaction does in production).
 * 4. Reads: `loadItemHistory` of one item's whole year, every market, both sides (interval day and week), for
 *    HISTORY_READS (default 200) random items, once to warm up and once timed: p50/p99 against the 50 ms target;
 *    and the two SQL statements of the read alone, to tell database time from decoding/aggregation time.
 * The values read back are checked against the generator (one item, every series, bulk and live days).
 * HISTORY_KEEP=1 keeps the database afterwards. Writes bench/results/history-<time>.json.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { compactHistory, loadItemHistory, writeMonths, type MonthWrite } from '../src/history/candles.js';
import { ensureItems, ingestBatch } from '../src/quotes/ingestion.js';
import type { QuoteObservation } from '../src/validation/ingest.js';
import { toMoney } from '../src/lib/money.js';
import { projectRoot } from '../src/lib/paths.js';
import { decodeMonth, type StoredCandle } from '../src/history/candle-codec.js';
import { DAYS, FULL_SCALE_CANDLES, Rng, centsText, itemSeries, syntheticPlan, type SeriesYear } from './history-synthetic.js';

const SERVER = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432';
const DB_NAME = 'qg_bench_history';
const SCALE = Number(process.env.HISTORY_SCALE ?? 0.1);
const LIVE_DAYS = Number(process.env.HISTORY_LIVE_DAYS ?? 3);
const READS = Number(process.env.HISTORY_READS ?? 200);
const KEEP = process.env.HISTORY_KEEP === '1';
/** VACUUM candle_month after each live day's compaction (default on; what autovacuum does later on its own). */
const VACUUM_EACH_DAY = process.env.HISTORY_VACUUM_EACH_DAY !== '0';
/** Items generated per writeMonths call (10 items = 9,600 month rows, two statements of writeMonths). */
const ITEMS_PER_WRITE = 10;
/** Observations per ingestion transaction (the collector's batch). */
const INGEST_BATCH = 10_000;

const plan = syntheticPlan(SCALE);
const bulkEnd = DAYS - LIVE_DAYS;
if (LIVE_DAYS < 0 || bulkEnd < 1) throw new Error(`HISTORY_LIVE_DAYS must be 0-${DAYS - 1}`);
const FROM = plan.dates[0]!;
const TO = plan.dates[DAYS - 1]!;
const log = (s: string) => console.log(s);
const secs = (ms: number) => Math.round(ms) / 1000;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
const mib = (b: number) => (b / 1048576).toFixed(1);
const gib = (b: number) => (b / 1073741824).toFixed(2);
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
const round2 = (x: number) => Math.round(x * 100) / 100;

/** The code measured: HEAD and whether the codec and the history service differ from it (they are being worked on). */
const code = (() => {
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: projectRoot }).toString().trim();
  const files = ['src/history/candle-codec.ts', 'src/history/candles.ts', 'src/quotes/ingestion.ts'];
  const dirty = execFileSync('git', ['status', '--porcelain', '--', ...files], { cwd: projectRoot }).toString().trimEnd();
  const sha = (f: string) => crypto.createHash('sha256').update(fs.readFileSync(path.join(projectRoot, f))).digest('hex').slice(0, 12);
  return { head, modified: dirty ? dirty.split('\n').map((l) => l.slice(3)) : [], sha256: Object.fromEntries(files.map((f) => [f, sha(f)])) };
})();
log(
  `history bench: scale ${SCALE} = ${plan.names.length} items x ${plan.markets.length} markets x 2 sides x ${DAYS} days ` +
    `(${plan.dates[0]} .. ${TO}); bulk through writeMonths to ${plan.dates[bulkEnd - 1]}, ${LIVE_DAYS} live day(s); ` +
    `${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`,
);
log(`code: HEAD ${code.head}${code.modified.length ? `, working-tree changes in ${code.modified.join(', ')}` : ''}`);

// The database.
const serverUrl = new URL(SERVER);
const adminUrl = new URL(serverUrl.toString());
if (adminUrl.pathname === '' || adminUrl.pathname === '/') adminUrl.pathname = '/postgres';
const benchUrl = new URL(serverUrl.toString());
benchUrl.pathname = `/${DB_NAME}`;
async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl.toString() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
await admin(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
await admin(`CREATE DATABASE ${DB_NAME}`);
const db: Database = await openDatabase({ url: benchUrl.toString() });
const [{ v: pgVersion }] = (await db.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)) as [{ v: string }];
const ids = await ensureItems(db, plan.names.map((marketHashName) => ({ appId: '730', marketHashName })));
const itemIds = plan.names.map((n) => ids.get(`730\u0000${n}`)!);

/** The candle of series `s` on day index `d` as stored. */
function storedCandle(s: SeriesYear, d: number): StoredCandle {
  return {
    day: plan.dayOfMonth[d]!,
    open: centsText(s.open[d]!),
    high: centsText(s.high[d]!),
    low: centsText(s.low[d]!),
    close: centsText(s.close[d]!),
    observations: s.observations[d]!,
    quantity: s.quantity[d]!,
    delisted: s.delisted[d] === 1,
  };
}

/** The month rows of one item's series over day indices [0, end). */
function monthWrites(item: number, list: SeriesYear[], end: number): MonthWrite[] {
  const out: MonthWrite[] = [];
  for (const s of list) {
    const market = plan.markets[s.market]!;
    for (let m = 0; m < 12; m++) {
      const first = Math.max(plan.monthFirstDay[m]!, s.start);
      const last = Math.min(m === 11 ? DAYS : plan.monthFirstDay[m + 1]!, end);
      if (first >= last) continue;
      const candles: StoredCandle[] = [];
      for (let d = first; d < last; d++) candles.push(storedCandle(s, d));
      out.push({
        itemId: itemIds[item]!,
        marketCode: market.code,
        providerCode: market.code,
        series: s.side === 0 ? 'ask' : 'bid',
        month: plan.monthStarts[m]!,
        currencyCode: market.currency,
        candles,
      });
    }
  }
  return out;
}

// 1. The bulk of the year through writeMonths.
/** The live days' slices of every series, kept from the bulk pass: [item][series] -> the series (whole year). */
const liveSeries: SeriesYear[][] = [];
let bulkCandles = 0;
let bulkRows = 0;
/** Candles written by the bulk path, per month index. */
const bulkByMonth = new Array<number>(12).fill(0);
let genMs = 0;
const bulkStarted = performance.now();
{
  let inflight: Promise<number> | null = null;
  let nextReport = 0.1;
  for (let i = 0; i < plan.names.length; i += ITEMS_PER_WRITE) {
    const g0 = performance.now();
    const months: MonthWrite[] = [];
    for (let item = i; item < Math.min(i + ITEMS_PER_WRITE, plan.names.length); item++) {
      const list = itemSeries(plan, item);
      if (LIVE_DAYS > 0) liveSeries[item] = list;
      for (const mw of monthWrites(item, list, bulkEnd)) {
        months.push(mw);
        bulkCandles += mw.candles.length;
        const mi = Number(mw.month.slice(5, 7)) - 1;
        bulkByMonth[mi] = bulkByMonth[mi]! + mw.candles.length;
      }
    }
    bulkRows += months.length;
    genMs += performance.now() - g0;
    if (inflight) await inflight;
    inflight = writeMonths(db, months);
    const done = Math.min(i + ITEMS_PER_WRITE, plan.names.length) / plan.names.length;
    if (done >= nextReport) {
      const el = performance.now() - bulkStarted;
      log(`  bulk ${(done * 100).toFixed(0)} %: ${bulkCandles} candles, ${secs(el)} s, about ${Math.round((el / done - el) / 1000)} s left`);
      nextReport += 0.1;
    }
  }
  if (inflight) await inflight;
}
const bulkMs = performance.now() - bulkStarted;
log(`bulk write: ${bulkCandles} candles in ${bulkRows} month rows, ${secs(bulkMs)} s (${rate(bulkCandles, bulkMs)} candles/s; generating them took ${secs(genMs)} s of it)`);

interface Sizes {
  total: number;
  heap: number;
  toast: number;
  indexes: number;
  rows: number;
  avgRowBytes: number;
  avgDataBytes: number;
}
async function sizes(): Promise<Sizes> {
  await db.query(`VACUUM ANALYZE candle_month`);
  const [s] = await db.query<{ total: string; heap: string; toast: string; indexes: string }>(
    `SELECT pg_total_relation_size(c.oid)::text AS total, pg_relation_size(c.oid)::text AS heap,
            COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0)::text AS toast, pg_indexes_size(c.oid)::text AS indexes
       FROM pg_class c WHERE c.relname = 'candle_month'`,
  );
  const [r] = await db.query<{ rows: string; row: number; data: number }>(
    `SELECT count(*)::text AS rows, avg(pg_column_size(m.*))::float8 AS row, avg(octet_length(m.data))::float8 AS data FROM candle_month m`,
  );
  return { total: Number(s!.total), heap: Number(s!.heap), toast: Number(s!.toast), indexes: Number(s!.indexes), rows: Number(r!.rows), avgRowBytes: r!.row, avgDataBytes: r!.data };
}
const afterBulk = await sizes();
log(`candle_month after the bulk write: ${mib(afterBulk.total)} MiB, ${round2(afterBulk.total / bulkCandles)} bytes/candle`);

/** Sum of `data` bytes per month index. */
async function dataBytesByMonth(): Promise<number[]> {
  const out = new Array<number>(12).fill(0);
  for (const r of await db.query<{ m: number; b: string }>(`SELECT extract(month FROM month)::int AS m, sum(octet_length(data))::text AS b FROM candle_month GROUP BY 1`)) out[r.m - 1] = Number(r.b);
  return out;
}
const bulkData = await dataBytesByMonth();
/** Months the bulk path wrote whole (before the month of the first live day). */
const wholeMonths = Array.from({ length: bulkEnd < DAYS ? plan.monthOf[bulkEnd]! : 12 }, (_, m) => m);
const wholeData = wholeMonths.reduce((n, m) => n + bulkData[m]!, 0);
const wholeCandles = wholeMonths.reduce((n, m) => n + bulkByMonth[m]!, 0);

// 3. The live path: ingestion of the last days, then compaction.
interface LiveDay {
  date: string;
  observations: number;
  ingest_s: number;
  observations_per_s: number;
  compacted_candles: number;
  compact_s: number;
  candles_per_s: number;
  /** Bytes the compaction appended to `data`, per compacted candle. */
  appended_data_bytes_per_candle: number;
  vacuum_s: number | null;
}
const liveDays: LiveDay[] = [];
let liveData = bulkData.reduce((a, b) => a + b, 0);
if (LIVE_DAYS > 0) {
  // The quotes' current state as of the last bulk day (source_quote, as a running service holds it; not timed):
  // its close, then the delisting on a delisted day. Its daily_close rows are removed again (that day's candle is
  // in candle_month already).
  const day = plan.dates[bulkEnd - 1]!;
  const seed: QuoteObservation[][] = [[], []];
  for (let item = 0; item < plan.names.length; item++) {
    for (const s of liveSeries[item]!) {
      if (bulkEnd - 1 < s.start) continue;
      const market = plan.markets[s.market]!;
      const o: QuoteObservation = {
        appId: '730',
        marketHashName: plan.names[item]!,
        marketCode: market.code,
        providerCode: market.code,
        side: s.side === 0 ? 'ask' : 'bid',
        currencyCode: market.currency,
        isQuantityMinimum: false,
        isAllItemsSamePrice: false,
        price: toMoney(centsText(s.close[bulkEnd - 1]!)),
        quantity: Math.max(1, s.quantity[bulkEnd - 1]!),
        observedAt: new Date(`${day}T22:00:00.000Z`),
        delisted: false,
      };
      seed[0]!.push(o);
      if (s.delisted[bulkEnd - 1]) seed[1]!.push({ ...o, price: null, quantity: 0, observedAt: new Date(`${day}T23:00:00.000Z`), delisted: true });
    }
  }
  const s0 = performance.now();
  for (const part of seed) for (let k = 0; k < part.length; k += 20_000) await ingestBatch(db, part.slice(k, k + 20_000));
  await db.query(`DELETE FROM daily_close`);
  await db.query(`VACUUM ANALYZE source_quote, daily_close`);
  log(`current quote state of ${day}: ${seed[0]!.length} quotes (${seed[1]!.length} delisted), ${secs(performance.now() - s0)} s (not timed)`);
}
for (let d = bulkEnd; d < DAYS; d++) {
  const date = plan.dates[d]!;
  const at = (hour: number) => new Date(`${date}T${String(hour).padStart(2, '0')}:00:00.000Z`);
  const phases: QuoteObservation[][] = [[], [], [], []];
  for (let item = 0; item < plan.names.length; item++) {
    for (const s of liveSeries[item]!) {
      if (d < s.start) continue;
      const market = plan.markets[s.market]!;
      const base = {
        appId: '730',
        marketHashName: plan.names[item]!,
        marketCode: market.code,
        providerCode: market.code,
        side: s.side === 0 ? ('ask' as const) : ('bid' as const),
        currencyCode: market.currency,
        isQuantityMinimum: false,
        isAllItemsSamePrice: false,
      };
      if (s.delisted[d]) {
        phases[3]!.push({ ...base, price: null, quantity: 0, observedAt: at(21), delisted: true });
        continue;
      }
      const q = s.quantity[d]!;
      const obs = (cents: number, hour: number): QuoteObservation => ({ ...base, price: toMoney(centsText(cents)), quantity: q, observedAt: at(hour), delisted: false });
      if (s.open[d] !== s.close[d] || s.high[d] !== s.close[d] || s.low[d] !== s.close[d]) {
        const highFirst = (item + s.market + s.side + d) % 2 === 0;
        phases[0]!.push(obs(s.open[d]!, 3));
        phases[1]!.push(obs(highFirst ? s.high[d]! : s.low[d]!, 9));
        phases[2]!.push(obs(highFirst ? s.low[d]! : s.high[d]!, 15));
      }
      phases[3]!.push(obs(s.close[d]!, 21));
    }
  }
  const total = phases.reduce((n, p) => n + p.length, 0);
  const t0 = performance.now();
  for (const [i, phase] of phases.entries()) {
    const now = new Date(at([3, 9, 15, 21][i]!).getTime() + 60_000);
    for (let k = 0; k < phase.length; k += INGEST_BATCH) await ingestBatch(db, phase.slice(k, k + INGEST_BATCH), { now });
  }
  const ingestMs = performance.now() - t0;
  const c0 = performance.now();
  const compacted = await compactHistory(db, new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000));
  const compactMs = performance.now() - c0;
  const before = liveData;
  liveData = (await dataBytesByMonth()).reduce((a, b) => a + b, 0);
  let vacuumMs: number | null = null;
  if (VACUUM_EACH_DAY) {
    const v0 = performance.now();
    await db.query(`VACUUM candle_month`);
    vacuumMs = performance.now() - v0;
  }
  liveDays.push({
    date,
    observations: total,
    ingest_s: secs(ingestMs),
    observations_per_s: rate(total, ingestMs),
    compacted_candles: compacted,
    compact_s: secs(compactMs),
    candles_per_s: rate(compacted, compactMs),
    appended_data_bytes_per_candle: round2((liveData - before) / compacted),
    vacuum_s: vacuumMs === null ? null : secs(vacuumMs),
  });
  log(
    `live ${date}: ${total} observations in ${secs(ingestMs)} s (${rate(total, ingestMs)}/s); compaction ${compacted} candles in ${secs(compactMs)} s ` +
      `(${rate(compacted, compactMs)}/s, ${round2((liveData - before) / compacted)} data bytes/candle appended)${vacuumMs === null ? '' : `; VACUUM ${secs(vacuumMs)} s`}`,
  );
}
const liveCandles = liveDays.reduce((n, x) => n + x.compacted_candles, 0);
const candles = bulkCandles + liveCandles;
const afterLive = LIVE_DAYS > 0 ? await sizes() : afterBulk;
let hot: { rows: number; total: number; heap: number; indexes: number; avgRowBytes: number } | null = null;
if (LIVE_DAYS > 0) {
  await db.query(`VACUUM ANALYZE daily_close`);
  const [h] = await db.query<{ rows: string; total: string; heap: string; indexes: string; row: number }>(
    `SELECT count(*)::text AS rows, pg_total_relation_size('daily_close')::text AS total, pg_relation_size('daily_close')::text AS heap,
            pg_indexes_size('daily_close')::text AS indexes, avg(pg_column_size(d.*))::float8 AS row FROM daily_close d`,
  );
  hot = { rows: Number(h!.rows), total: Number(h!.total), heap: Number(h!.heap), indexes: Number(h!.indexes), avgRowBytes: h!.row };
}

// Correctness: one item read back equals the generator (bulk days from candle_month, live days from daily_close).
{
  const item = Math.floor(plan.names.length / 2);
  const got = await loadItemHistory(db, { itemId: itemIds[item]!, markets: null, series: null, from: FROM, to: TO, interval: 'day' });
  const want = itemSeries(plan, item);
  let checked = 0;
  for (const s of want) {
    const out = got.series.find((x) => x.marketCode === plan.markets[s.market]!.code && x.series === (s.side === 0 ? 'ask' : 'bid'));
    if (!out) throw new Error(`read back: series ${s.market}/${s.side} of item ${item} missing`);
    if (out.candles.length !== DAYS - s.start) throw new Error(`read back: ${out.candles.length} candles, expected ${DAYS - s.start}`);
    for (const c of out.candles) {
      const d = plan.dates.indexOf(c.date);
      const num = (x: string | null) => Math.round(Number(x) * 100);
      const live = d >= bulkEnd;
      const ok =
        num(c.close) === s.close[d] &&
        num(c.open) === s.open[d] &&
        num(c.high) === s.high[d] &&
        num(c.low) === s.low[d] &&
        c.delisted === (s.delisted[d] === 1) &&
        c.quantity === s.quantity[d] &&
        (live || c.observations === s.observations[d]);
      if (!ok) throw new Error(`read back: item ${item} series ${s.market}/${s.side} ${c.date}: ${JSON.stringify(c)} differs from the generator`);
      checked++;
    }
  }
  log(`read back: ${checked} candles of item ${item} equal the generator`);
}

// 4. Reads.
const rng = new Rng(4242);
const sample = Array.from({ length: Math.min(READS, plan.names.length) }, () => itemIds[Math.floor(rng.next() * plan.names.length)]!);
interface ReadStats {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  mean_ms: number;
  candles_per_read: number;
  series_per_read: number;
}
async function timeReads(interval: 'day' | 'week'): Promise<ReadStats> {
  const q = (itemId: number) => ({ itemId, markets: null, series: null, from: FROM, to: TO, interval });
  for (const id of sample) await loadItemHistory(db, q(id)); // warm-up
  const times: number[] = [];
  let candlesRead = 0;
  let seriesRead = 0;
  for (const id of sample) {
    const t0 = performance.now();
    const h = await loadItemHistory(db, q(id));
    times.push(performance.now() - t0);
    seriesRead += h.series.length;
    for (const s of h.series) candlesRead += s.candles.length;
  }
  times.sort((a, b) => a - b);
  return {
    p50_ms: round2(pct(times, 0.5)),
    p99_ms: round2(pct(times, 0.99)),
    max_ms: round2(times[times.length - 1]!),
    mean_ms: round2(times.reduce((a, b) => a + b, 0) / times.length),
    candles_per_read: Math.round(candlesRead / sample.length),
    series_per_read: Math.round(seriesRead / sample.length),
  };
}
/** The read's two statements alone (rows fetched, nothing decoded), as loadItemHistory sends them. */
async function timeSql(): Promise<{ p50_ms: number; p99_ms: number; decode_p50_ms: number; decode_p99_ms: number; cold_rows: number; cold_bytes: number; hot_rows: number }> {
  const kinds = ['ask', 'bid', 'listing_minimum', 'sales'];
  const run = (id: number) =>
    Promise.all([
      db.query<{ data: Uint8Array }>(
        `SELECT market_code, provider_code, series::text AS series, month::text AS month, currency_code, data FROM candle_month
          WHERE item_id = $1 AND month BETWEEN $2::date AND $3::date AND series::text = ANY($4::text[]) AND ($5::text[] IS NULL OR market_code = ANY($5::text[]))`,
        [id, FROM, `${TO.slice(0, 7)}-01`, kinds, null],
      ),
      db.query(
        `SELECT market_code, provider_code, side::text AS side, day::text AS day, currency_code, price::text AS price, open_price::text AS open_price,
                high_price::text AS high_price, low_price::text AS low_price, observations, quantity, delisted, confirmed_at
           FROM daily_close WHERE item_id = $1 AND day BETWEEN $2::date AND $3::date AND side::text = ANY($4::text[]) AND ($5::text[] IS NULL OR market_code = ANY($5::text[]))`,
        [id, FROM, TO, kinds, null],
      ),
    ]);
  for (const id of sample) await run(id);
  const times: number[] = [];
  const decodeTimes: number[] = [];
  let coldRows = 0;
  let coldBytes = 0;
  let hotRows = 0;
  for (const id of sample) {
    const t0 = performance.now();
    const [cold, hotRs] = await run(id);
    times.push(performance.now() - t0);
    const t1 = performance.now();
    for (const r of cold) decodeMonth(r.data);
    decodeTimes.push(performance.now() - t1);
    coldRows += cold.length;
    for (const r of cold) coldBytes += r.data.length;
    hotRows += hotRs.length;
  }
  times.sort((a, b) => a - b);
  decodeTimes.sort((a, b) => a - b);
  return {
    p50_ms: round2(pct(times, 0.5)),
    p99_ms: round2(pct(times, 0.99)),
    decode_p50_ms: round2(pct(decodeTimes, 0.5)),
    decode_p99_ms: round2(pct(decodeTimes, 0.99)),
    cold_rows: Math.round(coldRows / sample.length),
    cold_bytes: Math.round(coldBytes / sample.length),
    hot_rows: Math.round(hotRows / sample.length),
  };
}
const readDay = await timeReads('day');
const readWeek = await timeReads('week');
const readSql = await timeSql();

// The table.
const perCandle = afterLive.total / candles;
const liveObs = liveDays.reduce((n, x) => n + x.observations, 0);
const liveIngestMs = liveDays.reduce((n, x) => n + x.ingest_s * 1000, 0);
const compactMs = liveDays.reduce((n, x) => n + x.compact_s * 1000, 0);
const fullFactor = FULL_SCALE_CANDLES / candles;
const appendedPerCandle = liveCandles > 0 ? (liveData - bulkData.reduce((a, b) => a + b, 0)) / liveCandles : 0;
/** Bytes per candle if every month were built by daily compaction (no repacking): the measured figure plus the extra data bytes. */
const compactionBuilt = liveCandles > 0 ? perCandle + (appendedPerCandle - wholeData / wholeCandles) * (bulkCandles / candles) : null;
const row = (k: string, v: string) => log(`  ${k.padEnd(58)} ${v}`);
log('');
log(`Price history on PostgreSQL ${pgVersion} (scale ${SCALE}; ${candles} candles written; full scale = ${FULL_SCALE_CANDLES} candles)`);
row('bulk write (writeMonths), candles', `${bulkCandles} in ${bulkRows} rows`);
row('bulk write time', `${secs(bulkMs)} s (${rate(bulkCandles, bulkMs)} candles/s, ${rate(bulkRows, bulkMs)} rows/s)`);
row('  of which generating the synthetic data', `${secs(genMs)} s`);
row('candle_month after bulk + VACUUM ANALYZE', `${mib(afterBulk.total)} MiB (heap ${mib(afterBulk.heap)}, index ${mib(afterBulk.indexes)}) = ${round2(afterBulk.total / bulkCandles)} bytes/candle`);
row('  rows; average row; average data (bulk only)', `${afterBulk.rows}; ${round2(afterBulk.avgRowBytes)} B; ${round2(afterBulk.avgDataBytes)} B`);
for (const x of liveDays) {
  row(`live ${x.date}: ingestBatch`, `${x.observations} obs, ${x.ingest_s} s, ${x.observations_per_s} obs/s`);
  row(`live ${x.date}: compactHistory`, `${x.compacted_candles} candles, ${x.compact_s} s, ${x.candles_per_s} candles/s`);
}
if (liveDays.length > 0) row('live ingestion, all live days', `${liveObs} obs, ${rate(liveObs, liveIngestMs)} obs/s`);
if (liveDays.length > 0) row('compaction, all live days', `${liveCandles} candles, ${rate(liveCandles, compactMs)} candles/s`);
row('data bytes per candle, months written whole (one block)', `${round2(wholeData / wholeCandles)} (${wholeMonths.length} months)`);
if (liveDays.length > 0) row('data bytes per candle, appended by daily compaction', `${round2(appendedPerCandle)} (one block per day)`);
row('candle_month total (heap + TOAST + index), after VACUUM', `${mib(afterLive.total)} MiB (heap ${mib(afterLive.heap)}, TOAST ${mib(afterLive.toast)}, index ${mib(afterLive.indexes)})`);
row('rows; average row (pg_column_size); average data', `${afterLive.rows}; ${round2(afterLive.avgRowBytes)} B; ${round2(afterLive.avgDataBytes)} B`);
row('heap bytes per row (incl. page and item overhead)', `${round2(afterLive.heap / afterLive.rows)} B`);
row('BYTES PER CANDLE on disk (target <= 16)', `${round2(perCandle)}`);
row('full scale (1.05 B candles) at that rate', `${gib(perCandle * FULL_SCALE_CANDLES)} GiB`);
if (compactionBuilt !== null) {
  row('derived: every month built by daily compaction', `${round2(compactionBuilt)} bytes/candle, ${gib(compactionBuilt * FULL_SCALE_CANDLES)} GiB at full scale`);
}
if (hot) {
  row(`daily_close (hot tier), ${LIVE_DAYS} days, after VACUUM`, `${hot.rows} rows, ${mib(hot.total)} MiB (heap ${mib(hot.heap)}, indexes ${mib(hot.indexes)}) = ${round2(hot.total / hot.rows)} bytes/row`);
  row('  average daily_close row (pg_column_size)', `${round2(hot.avgRowBytes)} B`);
}
row(`read one item, year, all markets, day (n=${sample.length}, warm)`, `p50 ${readDay.p50_ms} ms, p99 ${readDay.p99_ms} ms, max ${readDay.max_ms} ms (${readDay.series_per_read} series, ${readDay.candles_per_read} candles)`);
row('read one item, year, all markets, week', `p50 ${readWeek.p50_ms} ms, p99 ${readWeek.p99_ms} ms, max ${readWeek.max_ms} ms (${readWeek.candles_per_read} candles)`);
row('  the two SQL statements alone (rows fetched)', `p50 ${readSql.p50_ms} ms, p99 ${readSql.p99_ms} ms (${readSql.cold_rows} month rows, ${readSql.cold_bytes} B of data, ${readSql.hot_rows} hot rows)`);
row('  decodeMonth of those rows alone', `p50 ${readSql.decode_p50_ms} ms, p99 ${readSql.decode_p99_ms} ms`);
row('read target 50 ms (p99)', readDay.p99_ms <= 50 && readWeek.p99_ms <= 50 ? 'met' : 'NOT met');
row('extrapolated bulk write of the full-scale year', `${Math.round((bulkMs * fullFactor) / 60000)} min at this rate`);
if (liveDays.length > 0) row('extrapolated daily compaction at full scale (2.88 M candles)', `${Math.round((2_880_000 / rate(liveCandles, compactMs)) * 10) / 10} s`);

const out = path.join(projectRoot, 'bench', 'results', `history-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(
  out,
  JSON.stringify(
    {
      scale: SCALE,
      items: plan.names.length,
      markets: plan.markets.length,
      days: DAYS,
      live_days: LIVE_DAYS,
      postgres: pgVersion,
      code,
      load_at_end: os.loadavg(),
      cores: os.cpus().length,
      candles,
      bulk: { candles: bulkCandles, rows: bulkRows, seconds: secs(bulkMs), candles_per_s: rate(bulkCandles, bulkMs), generate_s: secs(genMs) },
      size_after_bulk: { ...afterBulk, bytes_per_candle: round2(afterBulk.total / bulkCandles) },
      live: liveDays,
      size_after_live: { ...afterLive, bytes_per_candle: round2(perCandle) },
      data_bytes_per_candle: {
        whole_months: round2(wholeData / wholeCandles),
        appended_by_compaction: round2(appendedPerCandle),
        derived_all_months_by_compaction: compactionBuilt === null ? null : round2(compactionBuilt),
      },
      vacuum_each_day: VACUUM_EACH_DAY,
      hot_tier: hot,
      reads: { sample: sample.length, day: readDay, week: readWeek, sql_only: readSql },
      full_scale: { candles: FULL_SCALE_CANDLES, bytes: Math.round(perCandle * FULL_SCALE_CANDLES), bulk_write_minutes: Math.round((bulkMs * fullFactor) / 60000) },
    },
    null,
    2,
  ),
);
log(`wrote ${path.relative(projectRoot, out)} (load at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')})`);
await db.close();
if (!KEEP) await admin(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
