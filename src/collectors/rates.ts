/**
 * Exchange rates (docs/collectors.md, "Exchange rates"): the catalogue's official `currency.usd_rate` (USD value of
 * one unit, spec CurrencyOut.usd_rate) and `rate_date`, kept current from
 * - the ECB's daily reference rates (`/stats/eurofxref/eurofxref-daily.xml`, base `COLLECTOR_ECB_URL`): units per
 *   EUR, one day's set (`<Cube time='YYYY-MM-DD'>`); USD per unit of X = (USD per EUR) / (X per EUR), EUR's = USD per
 *   EUR, decimal.js with 40 significant digits, rounded half-even to the column's 18 decimal places;
 * - csgotrader's feed (`/latest/exchange_rates.json`, base `COLLECTOR_CSGOTRADER_URL`), the alternate: a flat JSON
 *   object of units per USD (`"USD": 1`); USD per unit = 1 / units. It covers the currencies the ECB does not publish
 *   (RUB, KZT, UAH, ...), and every currency when the ECB fails. Its date is its `Last-Modified` day, else the run's.
 * A rate is written only for a currency already in the catalogue (official, not deleted; USD stays 1), never with an
 * older date than the one stored (a late or replayed file changes nothing), and never when it moved by more than a
 * factor of 10 from the stored one (a broken feed, skipped and counted). Numbers are read as text (lossless-json,
 * fast-xml-parser without value parsing), never as JS floats.
 */
import { XMLParser } from 'fast-xml-parser';
import { parse as parseLossless } from 'lossless-json';
import type { Database } from '../db/client.js';
import { Money, toMoney } from '../lib/money.js';
import { readCurrencyRates } from '../catalogue/catalogue.js';
import { scrub } from './http.js';
import { emptyRun, type CollectorRuntime, type RunResult } from './runner.js';
import { UpstreamError, type SourceLimits } from './source.js';

/** The rates task's id (collector_run.source_id) and interval: hourly, so the ECB's ~16:00 CET publication is taken within an hour. */
export const RATES_TASK = { id: 'rates', intervalSeconds: 3600 } as const;

/** Polite limits for the two files (one request each per run). */
const RATE_LIMITS: SourceLimits = { requestsPerMinute: 60, concurrency: 1, timeoutMs: 30_000, retries: 2 };

/** The ECB's daily reference rates (the official source). */
export const ECB_RATES = { id: 'ecb', defaultBaseUrl: 'https://www.ecb.europa.eu', path: '/stats/eurofxref/eurofxref-daily.xml', limits: RATE_LIMITS, intervalSeconds: RATES_TASK.intervalSeconds };
/** csgotrader's exchange rates (the alternate). */
export const CSGOTRADER_RATES = { id: 'csgotrader', defaultBaseUrl: 'https://prices.csgotrader.app', path: '/latest/exchange_rates.json', limits: RATE_LIMITS, intervalSeconds: RATES_TASK.intervalSeconds };

const DECIMAL = /^\d{1,20}(\.\d{1,20})?$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
/** Stored precision of usd_rate (DECIMAL(38,18)). */
const RATE_PLACES = 18;

/** One day's rates, USD per unit, by currency code. */
export interface RateSet {
  /** The day the rates were published (YYYY-MM-DD). */
  date: string;
  usdPerUnit: Map<string, Money>;
}

/**
 * Parses the ECB's daily XML into units per EUR (as published, text). Throws UpstreamError `format` when it is not
 * the ECB's envelope (HTML, an error page, a renamed element), has no date or no USD rate, or a rate is not a positive decimal.
 */
export function parseEcbDaily(xml: string): { date: string; unitsPerEur: Map<string, string> } {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parsed XML is untyped until checked below
  let doc: any;
  try {
    doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', parseAttributeValue: false, parseTagValue: false, removeNSPrefix: true }).parse(xml, true);
  } catch (e) {
    throw new UpstreamError('format', `ECB rates: not XML (${(e as Error).message})`);
  }
  const day = doc?.Envelope?.Cube?.Cube;
  const entry = Array.isArray(day) ? day[0] : day;
  const date = entry?.time;
  if (typeof date !== 'string' || !DAY.test(date)) throw new UpstreamError('format', 'ECB rates: no <Cube time="YYYY-MM-DD"> in an eurofxref envelope');
  const cubes = Array.isArray(entry.Cube) ? entry.Cube : entry.Cube ? [entry.Cube] : [];
  const unitsPerEur = new Map<string, string>();
  for (const c of cubes) {
    if (typeof c?.currency !== 'string' || !/^[A-Z]{3}$/.test(c.currency) || typeof c.rate !== 'string' || !DECIMAL.test(c.rate) || !/[1-9]/.test(c.rate)) {
      throw new UpstreamError('format', `ECB rates: a bad rate entry ${JSON.stringify(c)?.slice(0, 80)}`);
    }
    unitsPerEur.set(c.currency, c.rate);
  }
  if (!unitsPerEur.has('USD')) throw new UpstreamError('format', 'ECB rates: no USD rate');
  return { date, unitsPerEur };
}

/** USD per unit from the ECB's units per EUR (EUR itself included; see the file comment). */
function usdRatesFromEcb(date: string, unitsPerEur: ReadonlyMap<string, string>): RateSet {
  const usdPerEur = toMoney(unitsPerEur.get('USD')!);
  const usdPerUnit = new Map<string, Money>([['EUR', usdPerEur.toDecimalPlaces(RATE_PLACES, Money.ROUND_HALF_EVEN)]]);
  for (const [code, rate] of unitsPerEur) {
    if (code === 'USD') continue;
    usdPerUnit.set(code, usdPerEur.div(toMoney(rate)).toDecimalPlaces(RATE_PLACES, Money.ROUND_HALF_EVEN));
  }
  return { date, usdPerUnit };
}

/**
 * Parses csgotrader's exchange_rates.json (units per USD) into USD per unit. Throws UpstreamError `format` unless it is
 * a flat object of positive decimal numbers with `"USD": 1`.
 */
function parseCsgotraderRates(text: string, date: string): RateSet {
  let body: unknown;
  try {
    body = parseLossless(text, undefined, (s: string) => s);
  } catch (e) {
    throw new UpstreamError('format', `csgotrader rates: not JSON (${(e as Error).message})`);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UpstreamError('format', 'csgotrader rates: not an object of rates');
  const entries = Object.entries(body as Record<string, unknown>);
  const usd = (body as Record<string, unknown>).USD;
  if (typeof usd !== 'string' || !toMoney(usd).eq(1)) throw new UpstreamError('format', `csgotrader rates: "USD" is not 1 (${JSON.stringify(body).slice(0, 80)})`);
  const usdPerUnit = new Map<string, Money>();
  for (const [code, v] of entries) {
    if (typeof v !== 'string' || !/^\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v)) throw new UpstreamError('format', `csgotrader rates: ${code} is not a number`);
    const units = toMoney(v);
    if (!units.gt(0) || !/^[A-Z]{3}$/.test(code) || code === 'USD') continue;
    usdPerUnit.set(code, new Money(1).div(units).toDecimalPlaces(RATE_PLACES, Money.ROUND_HALF_EVEN));
  }
  return { date, usdPerUnit };
}

/** What `applyRates` did. */
export interface RatesApplied {
  updated: string[];
  /** Currencies skipped: `older` (a newer rate is stored), `jump` (moved more than 10x), `unknown` (not in the catalogue). */
  skipped: Record<'older' | 'jump' | 'unknown', number>;
}

/**
 * Writes `set` to the catalogue's currencies (see the file comment for the rules), one statement. Only codes in
 * `only` when given. Throws on a database error.
 */
async function applyRates(db: Database, set: RateSet, only?: ReadonlySet<string>): Promise<RatesApplied> {
  const stored = await readCurrencyRates(db, { officialOnly: true });
  const byCode = new Map(stored.map((r) => [r.code, r]));
  const out: RatesApplied = { updated: [], skipped: { older: 0, jump: 0, unknown: 0 } };
  const codes: string[] = [];
  const values: string[] = [];
  for (const [code, rate] of set.usdPerUnit) {
    if (only && !only.has(code)) continue;
    const s = byCode.get(code);
    if (!s || code === 'USD') {
      out.skipped.unknown += 1;
      continue;
    }
    if (s.rateDate && s.rateDate > set.date) {
      out.skipped.older += 1;
      continue;
    }
    const old = s.usdRate;
    if (old.gt(0) && (rate.div(old).gt(10) || old.div(rate).gt(10))) {
      out.skipped.jump += 1;
      continue;
    }
    if (old.eq(rate) && s.rateDate === set.date) continue;
    codes.push(code);
    values.push(rate.toFixed());
  }
  if (codes.length > 0) {
    await db.query(
      `UPDATE currency c SET usd_rate = t.rate, rate_date = $3::date
         FROM unnest($1::text[], $2::numeric[]) AS t(code, rate)
        WHERE c.code = t.code AND c.is_official AND NOT c.is_deleted AND (c.rate_date IS NULL OR c.rate_date <= $3::date)`,
      [codes, values, set.date],
    );
    out.updated = codes;
  }
  return out;
}

/** The UTC day of a `Last-Modified` header, else of `now`. */
function dayOf(lastModified: string | null, now: Date): string {
  const t = lastModified ? Date.parse(lastModified) : NaN;
  return new Date(Number.isNaN(t) ? now.getTime() : t).toISOString().slice(0, 10);
}

/**
 * One rates run: the ECB first, then csgotrader for the currencies the ECB did not give (all of them when the ECB
 * failed). Recorded in collector_run as source `rates` (rows = currencies updated). Never throws for an upstream's
 * failure; throws when the database fails.
 */
export async function runRates(rt: CollectorRuntime, opts: { now?: Date; signal?: AbortSignal } = {}): Promise<RunResult> {
  const startedAt = opts.now ?? new Date();
  const signal = opts.signal ?? new AbortController().signal;
  const result = emptyRun(RATES_TASK.id, startedAt);
  const problems: { kind: string; message: string }[] = [];
  const skips: Record<string, number> = {};
  const addSkips = (a: RatesApplied) => {
    for (const [k, v] of Object.entries(a.skipped)) if (v) skips[k] = (skips[k] ?? 0) + v;
  };
  const covered = new Set<string>();
  let anySource = false;
  const attempt = async (source: typeof ECB_RATES, read: (res: Response) => Promise<RateSet>, only?: ReadonlySet<string>) => {
    const { http, settings } = rt.client(source);
    let set: RateSet;
    try {
      set = await read(await http.fetch(source.path, undefined, signal));
    } catch (e) {
      // A body cut short or unreadable is the upstream's failure too (format), like the runner's.
      const kind = e instanceof UpstreamError ? e.kind : 'format';
      problems.push({ kind, message: scrub(`${source.id}: ${(e as Error).message ?? String(e)}`, settings.credential ? [settings.credential] : []) });
      return;
    }
    anySource = true;
    const applied = await applyRates(rt.db, set, only);
    result.rowsAccepted += applied.updated.length;
    addSkips(applied);
    for (const c of set.usdPerUnit.keys()) covered.add(c);
    covered.add('USD');
  };
  await attempt(ECB_RATES, async (res) => {
    const { date, unitsPerEur } = parseEcbDaily(await res.text());
    return usdRatesFromEcb(date, unitsPerEur);
  });
  const catalogue = await rt.db.query<{ code: string }>(`SELECT code FROM currency WHERE is_official AND NOT is_deleted`);
  const missing = new Set(catalogue.map((c) => c.code).filter((c) => !covered.has(c)));
  if (missing.size > 0) {
    await attempt(CSGOTRADER_RATES, async (res) => parseCsgotraderRates(await res.text(), dayOf(res.headers.get('last-modified'), startedAt)), missing);
  }
  result.skips = skips;
  result.rowsSkipped = Object.values(skips).reduce((a, b) => a + b, 0);
  result.finishedAt = new Date();
  if (!anySource) {
    const first = problems[0]!;
    result.outcome = problems.every((p) => p.kind === 'unreachable') ? 'unreachable' : 'failed';
    result.errorKind = first.kind;
  }
  result.errorMessage = problems.length > 0 ? problems.map((p) => p.message).join('; ') : null;
  await rt.db.query(
    `INSERT INTO collector_run (source_id, worker, started_at, finished_at, outcome, complete, markets, rows_accepted, rows_skipped, skips, error_kind, error_message)
     VALUES ($1, $2, $3::timestamptz, $4::timestamptz, $5, false, '{}'::jsonb, $6, $7, $8::jsonb, $9, $10)`,
    [RATES_TASK.id, rt.worker.slice(0, 128), startedAt.toISOString(), result.finishedAt.toISOString(), result.outcome, result.rowsAccepted, result.rowsSkipped, JSON.stringify(skips), result.errorKind, result.errorMessage?.slice(0, 1000) ?? null],
  );
  const fields = { rows: result.rowsAccepted, skipped: result.rowsSkipped, error: result.errorMessage };
  if (result.outcome === 'ok') rt.noteState(RATES_TASK.id, problems.length ? 'ok-partial' : 'ok', fields, problems.length ? 'exchange rates updated from the alternate' : 'exchange rates run ok');
  else rt.noteState(RATES_TASK.id, result.outcome, fields, result.outcome === 'unreachable' ? 'exchange rate sources unreachable' : 'exchange rates run failed');
  return result;
}
