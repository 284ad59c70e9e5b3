/**
 * `npm run bench:history:columnar`: the embedded columnar alternative for the price history, measured on the same
 * synthetic year as `npm run bench:history` (bench/history-synthetic.ts, HISTORY_SCALE, default 0.1), so the
 * storage choice of docs/history.md is made by measurement.
 *
 * DuckDB (@duckdb/node-api, in process) with one row per daily candle, integer ids and scaled integer prices:
 *   candles(item_id INTEGER, market_id UTINYINT, provider_id UTINYINT, series UTINYINT (0 ask, 1 bid), day DATE,
 *           scale UTINYINT (decimal places of the amounts), open/high/low/close BIGINT (amount x 10^scale),
 *           observations USMALLINT, quantity INTEGER, delisted BOOLEAN)
 * written in (item, market, provider, series, day) order through the appender (data chunks of 2,048 rows) into
 * a DuckDB database file, then copied to Parquet files (ZSTD; Parquet format v1 and v2, the latter with delta
 * encodings; DuckDB's default row groups of 122,880 rows, so one item's year of ~29k rows lies in one or two).
 * Measured: write time, bytes per candle on disk (Parquet file size; DuckDB's own file after CHECKPOINT), and
 * the one-item one-year read (every market, both sides; interval day: the rows; week: aggregated in SQL),
 * warm, p50/p99 over HISTORY_READS (default 200) random items, each answer shaped into candles with decimal
 * strings as the service serves them. Files go to HISTORY_COLUMNAR_DIR (default /tmp/qg-bench-history-columnar,
 * emptied first; removed afterwards unless HISTORY_KEEP=1). DuckDB runs with 2 threads and a 4 GB memory limit.
 * Writes bench/results/history-columnar-<time>.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIGINT, BOOLEAN, DATE, DuckDBDataChunk, DuckDBDateValue, DuckDBInstance, INTEGER, USMALLINT, UTINYINT, type DuckDBConnection } from '@duckdb/node-api';
import { projectRoot } from '../src/lib/paths.js';
import { DAYS, FULL_SCALE_CANDLES, HISTORY_YEAR, Rng, itemSeries, syntheticPlan } from './history-synthetic.js';

const SCALE = Number(process.env.HISTORY_SCALE ?? 0.1);
const READS = Number(process.env.HISTORY_READS ?? 200);
const KEEP = process.env.HISTORY_KEEP === '1';
const DIR = process.env.HISTORY_COLUMNAR_DIR ?? '/tmp/qg-bench-history-columnar';
const plan = syntheticPlan(SCALE);
const log = (s: string) => console.log(s);
const secs = (ms: number) => Math.round(ms) / 1000;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
const mib = (b: number) => (b / 1048576).toFixed(1);
const gib = (b: number) => (b / 1073741824).toFixed(2);
const round2 = (x: number) => Math.round(x * 100) / 100;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;

fs.rmSync(DIR, { recursive: true, force: true });
fs.mkdirSync(DIR, { recursive: true });
const dbFile = path.join(DIR, 'candles.duckdb');
const instance = await DuckDBInstance.create(dbFile, { threads: '2', memory_limit: '4GB' });
const con = await instance.connect();
const [[duckVersion]] = (await con.runAndReadAll(`SELECT version()`)).getRows() as [[string]];
log(
  `columnar history bench: DuckDB ${duckVersion}, scale ${SCALE} = ${plan.names.length} items x ${plan.markets.length} markets x 2 sides x ${DAYS} days; ` +
    `${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`,
);
await con.run(`CREATE TABLE market (market_id UTINYINT PRIMARY KEY, code VARCHAR, currency VARCHAR)`);
for (const [i, m] of plan.markets.entries()) await con.run(`INSERT INTO market VALUES ($1, $2, $3)`, [i, m.code, m.currency]);
await con.run(
  `CREATE TABLE candles (item_id INTEGER, market_id UTINYINT, provider_id UTINYINT, series UTINYINT, day DATE, scale UTINYINT,
     open BIGINT, high BIGINT, low BIGINT, close BIGINT, observations USMALLINT, quantity INTEGER, delisted BOOLEAN)`,
);

// 1. Load: the generator's candles through the appender, in (item, market, provider, series, day) order.
const types = [INTEGER, UTINYINT, UTINYINT, UTINYINT, DATE, UTINYINT, BIGINT, BIGINT, BIGINT, BIGINT, USMALLINT, INTEGER, BOOLEAN];
const CHUNK = 2048;
const epochDay = Date.UTC(HISTORY_YEAR, 0, 1) / 86_400_000;
const dayValues = Array.from({ length: DAYS }, (_, d) => new DuckDBDateValue(epochDay + d));
let candles = 0;
let genMs = 0;
const loadStarted = performance.now();
{
  const appender = await con.createAppender('candles');
  // Column buffers of one chunk, copied into fresh vectors when full.
  const cols = {
    item: new Int32Array(CHUNK),
    market: new Uint8Array(CHUNK),
    series: new Uint8Array(CHUNK),
    day: new Int32Array(CHUNK),
    open: new Int32Array(CHUNK),
    high: new Int32Array(CHUNK),
    low: new Int32Array(CHUNK),
    close: new Int32Array(CHUNK),
    observations: new Uint16Array(CHUNK),
    quantity: new Int32Array(CHUNK),
    delisted: new Uint8Array(CHUNK),
  };
  let n = 0;
  const flush = () => {
    const chunk = DuckDBDataChunk.create(types, n);
    const v = types.map((_, i) => chunk.getColumnVector(i)) as unknown as { setItem(i: number, x: unknown): void; flush(): void }[];
    for (let i = 0; i < n; i++) {
      v[0]!.setItem(i, cols.item[i]);
      v[1]!.setItem(i, cols.market[i]);
      v[2]!.setItem(i, cols.market[i]);
      v[3]!.setItem(i, cols.series[i]);
      v[4]!.setItem(i, dayValues[cols.day[i]!]);
      v[5]!.setItem(i, 2);
      v[6]!.setItem(i, BigInt(cols.open[i]!));
      v[7]!.setItem(i, BigInt(cols.high[i]!));
      v[8]!.setItem(i, BigInt(cols.low[i]!));
      v[9]!.setItem(i, BigInt(cols.close[i]!));
      v[10]!.setItem(i, cols.observations[i]);
      v[11]!.setItem(i, cols.quantity[i]);
      v[12]!.setItem(i, cols.delisted[i] === 1);
    }
    for (const x of v) x.flush();
    appender.appendDataChunk(chunk);
    n = 0;
  };
  let nextReport = 0.1;
  for (let item = 0; item < plan.names.length; item++) {
    const g0 = performance.now();
    const list = itemSeries(plan, item);
    genMs += performance.now() - g0;
    for (const s of list) {
      for (let d = s.start; d < DAYS; d++) {
        cols.item[n] = item + 1;
        cols.market[n] = s.market;
        cols.series[n] = s.side;
        cols.day[n] = d;
        cols.open[n] = s.open[d]!;
        cols.high[n] = s.high[d]!;
        cols.low[n] = s.low[d]!;
        cols.close[n] = s.close[d]!;
        cols.observations[n] = s.observations[d]!;
        cols.quantity[n] = s.quantity[d]!;
        cols.delisted[n] = s.delisted[d]!;
        n++;
        candles++;
        if (n === CHUNK) flush();
      }
    }
    const done = (item + 1) / plan.names.length;
    if (done >= nextReport) {
      const el = performance.now() - loadStarted;
      log(`  load ${(done * 100).toFixed(0)} %: ${candles} candles, ${secs(el)} s`);
      nextReport += 0.1;
    }
  }
  if (n > 0) flush();
  appender.flushSync();
  appender.closeSync();
  await con.run(`CHECKPOINT`);
}
const loadMs = performance.now() - loadStarted;
const nativeBytes = fs.statSync(dbFile).size + (fs.existsSync(`${dbFile}.wal`) ? fs.statSync(`${dbFile}.wal`).size : 0);
log(`load: ${candles} candles in ${secs(loadMs)} s (${rate(candles, loadMs)} candles/s; generating them took ${secs(genMs)} s); DuckDB file ${mib(nativeBytes)} MiB`);

// 2. Parquet files.
interface Variant {
  name: string;
  file: string;
  options: string;
  write_s: number;
  bytes: number;
  bytes_per_candle: number;
  row_groups: number;
}
const variants: Variant[] = [];
for (const [name, options] of [
  ['parquet v1 zstd', `FORMAT parquet, COMPRESSION zstd`],
  ['parquet v2 zstd', `FORMAT parquet, COMPRESSION zstd, PARQUET_VERSION v2`],
] as const) {
  const file = path.join(DIR, `candles-${name.replace(/\W+/g, '-')}.parquet`);
  const t0 = performance.now();
  await con.run(`COPY (SELECT * FROM candles ORDER BY item_id, market_id, provider_id, series, day) TO '${file}' (${options})`);
  const ms = performance.now() - t0;
  const bytes = fs.statSync(file).size;
  const [[groups]] = (await con.runAndReadAll(`SELECT count(DISTINCT row_group_id)::INTEGER FROM parquet_metadata('${file}')`)).getRows() as [[number]];
  variants.push({ name, file, options, write_s: secs(ms), bytes, bytes_per_candle: round2(bytes / candles), row_groups: groups });
  log(`${name}: ${mib(bytes)} MiB = ${round2(bytes / candles)} bytes/candle, ${groups} row groups, written in ${secs(ms)} s`);
}

// 3. Reads: one item's year, every market, both sides, shaped into candles as the service serves them.
await con.run(`SET parquet_metadata_cache = true`);
interface OutCandle {
  date: string;
  open: string;
  high: string;
  low: string;
  close: string;
  observations: number;
  quantity: number | null;
  delisted: boolean;
  days: number;
}
const amount = (v: bigint, scale: number): string => {
  const n = Number(v);
  if (scale === 0) return String(n);
  const f = 10 ** scale;
  const whole = Math.floor(n / f);
  const frac = String(n - whole * f).padStart(scale, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : String(whole);
};
function shape(cols: unknown[][]): Map<string, OutCandle[]> {
  const [market, series, date, scale, open, high, low, close, obs, qty, delisted, days] = cols as [
    number[],
    number[],
    string[],
    number[],
    bigint[],
    bigint[],
    bigint[],
    bigint[],
    (number | bigint)[],
    (number | bigint)[],
    boolean[],
    (number | bigint)[],
  ];
  const out = new Map<string, OutCandle[]>();
  let key = '';
  let list: OutCandle[] = [];
  for (let i = 0; i < date.length; i++) {
    const k = `${plan.markets[market[i]!]!.code}:${series[i] === 0 ? 'ask' : 'bid'}`;
    if (k !== key) {
      key = k;
      list = [];
      out.set(k, list);
    }
    const sc = scale[i]!;
    list.push({
      date: date[i]!,
      open: amount(open[i]!, sc),
      high: amount(high[i]!, sc),
      low: amount(low[i]!, sc),
      close: amount(close[i]!, sc),
      observations: Number(obs[i]),
      quantity: qty[i] === null ? null : Number(qty[i]),
      delisted: delisted[i]!,
      days: Number(days[i]),
    });
  }
  return out;
}
const daySql = (from: string) =>
  `SELECT market_id, series, strftime(day, '%Y-%m-%d'), scale, open, high, low, close, observations, quantity, delisted, 1
     FROM ${from} WHERE item_id = $1 AND day BETWEEN DATE '${HISTORY_YEAR}-01-01' AND DATE '${HISTORY_YEAR}-12-31'
    ORDER BY market_id, provider_id, series, day`;
const weekSql = (from: string) =>
  `SELECT market_id, series, strftime(date_trunc('week', day), '%Y-%m-%d') AS week, max(scale), arg_min(open, day), max(high), min(low),
          arg_max(close, day), sum(observations), arg_max(quantity, day), arg_max(delisted, day), count(*)
     FROM ${from} WHERE item_id = $1 AND day BETWEEN DATE '${HISTORY_YEAR}-01-01' AND DATE '${HISTORY_YEAR}-12-31'
    GROUP BY market_id, provider_id, series, week ORDER BY market_id, series, week`;
const rng = new Rng(4242);
const sample = Array.from({ length: Math.min(READS, plan.names.length) }, () => 1 + Math.floor(rng.next() * plan.names.length));
interface ReadStats {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** The query and fetching its rows into JS values (getColumns), before shaping them into candles. */
  fetch_p50_ms: number;
  fetch_p99_ms: number;
  candles_per_read: number;
}
async function timeReads(c: DuckDBConnection, sql: string): Promise<ReadStats> {
  const ps = await c.prepare(sql);
  const fetch = async (id: number) => {
    ps.bindInteger(1, id);
    return (await ps.runAndReadAll()).getColumns();
  };
  for (const id of sample) shape(await fetch(id)); // warm-up
  const times: number[] = [];
  const fetchTimes: number[] = [];
  let n = 0;
  for (const id of sample) {
    const t0 = performance.now();
    const cols = await fetch(id);
    const t1 = performance.now();
    const out = shape(cols);
    const t2 = performance.now();
    times.push(t2 - t0);
    fetchTimes.push(t1 - t0);
    for (const l of out.values()) n += l.length;
  }
  times.sort((a, b) => a - b);
  fetchTimes.sort((a, b) => a - b);
  return {
    p50_ms: round2(pct(times, 0.5)),
    p99_ms: round2(pct(times, 0.99)),
    max_ms: round2(times[times.length - 1]!),
    fetch_p50_ms: round2(pct(fetchTimes, 0.5)),
    fetch_p99_ms: round2(pct(fetchTimes, 0.99)),
    candles_per_read: Math.round(n / sample.length),
  };
}
const reads: Record<string, { day: ReadStats; week: ReadStats }> = {};
// Check: one item read back from each source equals the generator.
const checkItem = Math.floor(plan.names.length / 2);
const want = itemSeries(plan, checkItem);
for (const [name, from] of [['duckdb table', 'candles'], ...variants.map((v) => [v.name, `read_parquet('${v.file}')`])] as [string, string][]) {
  const ps = await con.prepare(daySql(from));
  ps.bindInteger(1, checkItem + 1);
  const got = shape((await ps.runAndReadAll()).getColumns());
  for (const s of want) {
    const list = got.get(`${plan.markets[s.market]!.code}:${s.side === 0 ? 'ask' : 'bid'}`) ?? [];
    if (list.length !== DAYS - s.start) throw new Error(`${name}: ${list.length} candles for series ${s.market}/${s.side}, expected ${DAYS - s.start}`);
    for (const [k, c] of list.entries()) {
      const d = s.start + k;
      const cents = (x: string) => Math.round(Number(x) * 100);
      if (cents(c.close) !== s.close[d] || cents(c.open) !== s.open[d] || cents(c.high) !== s.high[d] || cents(c.low) !== s.low[d] || c.quantity !== s.quantity[d]) {
        throw new Error(`${name}: item ${checkItem} series ${s.market}/${s.side} day ${d} differs from the generator: ${JSON.stringify(c)}`);
      }
    }
  }
  reads[name] = { day: await timeReads(con, daySql(from)), week: await timeReads(con, weekSql(from)) };
  log(`${name}: read day p50 ${reads[name]!.day.p50_ms} ms p99 ${reads[name]!.day.p99_ms} ms; week p50 ${reads[name]!.week.p50_ms} ms p99 ${reads[name]!.week.p99_ms} ms`);
}

// The table.
const row = (k: string, v: string) => log(`  ${k.padEnd(52)} ${v}`);
log('');
log(`Price history, embedded columnar (DuckDB ${duckVersion}; scale ${SCALE}; ${candles} candles; full scale = ${FULL_SCALE_CANDLES} candles)`);
row('load through the appender (+ CHECKPOINT)', `${secs(loadMs)} s (${rate(candles, loadMs)} candles/s; generating: ${secs(genMs)} s)`);
row('DuckDB database file', `${mib(nativeBytes)} MiB = ${round2(nativeBytes / candles)} bytes/candle; full scale ${gib((nativeBytes / candles) * FULL_SCALE_CANDLES)} GiB`);
for (const v of variants) {
  row(`${v.name} (${v.row_groups} row groups), write`, `${v.write_s} s`);
  row(`${v.name}: BYTES PER CANDLE on disk`, `${v.bytes_per_candle} (${mib(v.bytes)} MiB; full scale ${gib(v.bytes_per_candle * FULL_SCALE_CANDLES)} GiB)`);
}
for (const [name, r] of Object.entries(reads)) {
  row(`read one item-year, ${name}, day (n=${sample.length})`, `p50 ${r.day.p50_ms} ms, p99 ${r.day.p99_ms} ms, max ${r.day.max_ms} ms (${r.day.candles_per_read} candles)`);
  row('  of which query + fetch (getColumns)', `p50 ${r.day.fetch_p50_ms} ms, p99 ${r.day.fetch_p99_ms} ms`);
  row(`read one item-year, ${name}, week`, `p50 ${r.week.p50_ms} ms, p99 ${r.week.p99_ms} ms, max ${r.week.max_ms} ms (${r.week.candles_per_read} candles)`);
  row('  of which query + fetch (getColumns)', `p50 ${r.week.fetch_p50_ms} ms, p99 ${r.week.fetch_p99_ms} ms`);
}

const out = path.join(projectRoot, 'bench', 'results', `history-columnar-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(
  out,
  JSON.stringify(
    {
      scale: SCALE,
      duckdb: duckVersion,
      cores: os.cpus().length,
      load_at_end: os.loadavg(),
      candles,
      load: { seconds: secs(loadMs), candles_per_s: rate(candles, loadMs), generate_s: secs(genMs) },
      duckdb_file: { bytes: nativeBytes, bytes_per_candle: round2(nativeBytes / candles) },
      parquet: variants.map(({ file, ...v }) => ({ ...v, file: path.basename(file) })),
      reads: { sample: sample.length, ...reads },
      full_scale: { candles: FULL_SCALE_CANDLES },
    },
    null,
    2,
  ),
);
log(`wrote ${path.relative(projectRoot, out)} (load at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')})`);
con.closeSync();
instance.closeSync();
if (!KEEP) fs.rmSync(DIR, { recursive: true, force: true });
