/**
 * The item page's query parameters (`currency`, `interval`, `from`, `to`) and the search text: what is accepted,
 * the problem shown for what is not (a 422 page naming the parameter), and the range and interval the page shows.
 * Pure functions; whether a currency exists is checked against the currency table by the handler.
 */
import { addDays } from '../../lib/time.js';
import { MAX_SPAN_DAYS, type HistoryInterval } from '../../history/candles.js';
import { isSupportedDay, MAX_DAY, MIN_DAY } from '../../validation/params.js';
import { DAY_MS, dayMs } from './chart.js';

/** Longest accepted search text (the longest market hash name is well below it). */
export const MAX_QUERY_LENGTH = 200;
/** Currency of the page when the query names none. */
export const DEFAULT_CURRENCY = 'USD';
/** Ranges up to this many days default to daily candles. */
const DAY_INTERVAL_UP_TO_DAYS = 120;
/** The intervals a reader may choose, in the form's order. */
export const INTERVALS: readonly HistoryInterval[] = ['day', 'week', 'month'];

/** Days from `from` to `to` (YYYY-MM-DD), both counted. */
function spanDays(from: string, to: string): number {
  return Math.round((dayMs(to) - dayMs(from)) / DAY_MS) + 1;
}

/**
 * `s` as a page may echo it: without NUL characters (an HTML page cannot carry them) and cut to MAX_QUERY_LENGTH
 * characters with an ellipsis (a name in the address may be as long as the request line allows, 16 KiB).
 */
export function shownText(s: string): string {
  const clean = s.replaceAll('\u0000', '');
  const chars = [...clean];
  return chars.length > MAX_QUERY_LENGTH ? `${chars.slice(0, MAX_QUERY_LENGTH).join('')}…` : clean;
}

/**
 * Why `v` is not a day the page can show, or null when it is one: the API's rule (src/validation/params.ts
 * `isSupportedDay`: a YYYY-MM-DD date that exists, from MIN_DAY to MAX_DAY), worded for people.
 */
function dayProblem(v: string): string | null {
  if (isSupportedDay(v)) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(v) && (v < MIN_DAY || v > MAX_DAY) && isSupportedDay(`2000${v.slice(4)}`)) {
    return `“${shownText(v)}” is outside the dates this service holds: ${MIN_DAY} to ${MAX_DAY}`;
  }
  return `“${shownText(v)}” is not a date that exists, written YYYY-MM-DD (e.g. 2026-07-16), from ${MIN_DAY} to ${MAX_DAY}`;
}

/** What the item page was asked for, checked. `from`/`to` null: not given (the item's whole history). */
export interface ItemQuery {
  currency: string;
  interval: HistoryInterval | null;
  from: string | null;
  to: string | null;
}

/** A query parameter the page cannot serve: the parameter and why (a 422 page). */
export interface QueryProblem {
  parameter: string;
  message: string;
}

/**
 * Reads `currency`, `interval`, `from` and `to` from the query. The currency code is upper-cased; whether it
 * exists is checked later against the currency table. Returns the problems found (empty when none).
 */
export function parseItemQuery(params: URLSearchParams): { query: ItemQuery; problems: QueryProblem[] } {
  const problems: QueryProblem[] = [];
  const text = (name: string) => {
    const v = params.get(name);
    return v === null || v.trim() === '' ? null : v.trim();
  };
  const currencyText = text('currency');
  const currency = (currencyText ?? DEFAULT_CURRENCY).toUpperCase();
  if (!/^[A-Z0-9]{2,16}$/.test(currency)) problems.push({ parameter: 'currency', message: `“${shownText(currencyText ?? '')}” is not a currency code (2-16 letters or digits, e.g. USD, EUR, CNY)` });
  const intervalText = text('interval');
  let interval: HistoryInterval | null = null;
  if (intervalText !== null) {
    if ((INTERVALS as readonly string[]).includes(intervalText)) interval = intervalText as HistoryInterval;
    else problems.push({ parameter: 'interval', message: `“${shownText(intervalText)}” is not an interval: use day, week or month` });
  }
  const dayParam = (name: 'from' | 'to') => {
    const v = text(name);
    if (v === null) return null;
    const problem = dayProblem(v);
    if (problem !== null) {
      problems.push({ parameter: name, message: problem });
      return null;
    }
    return v;
  };
  const from = dayParam('from');
  const to = dayParam('to');
  if (from !== null && to !== null && from > to) problems.push({ parameter: 'from', message: `the range is reversed: from (${from}) is after to (${to})` });
  return { query: { currency, interval, from, to }, problems };
}

/** The range and interval the page shows, or the reason it cannot. */
export interface ResolvedRange {
  from: string;
  to: string;
  interval: HistoryInterval;
  /** True when the reader gave neither `from` nor `to` (the chart is fitted to the data). */
  whole: boolean;
  /** A note when a defaulted end was moved to fit the interval's longest span. */
  note: string | null;
}

/**
 * Picks the range and interval: given days are kept (a range longer than the interval allows is a problem);
 * a missing `from`/`to` is the item's first/last history day, moved closer when the interval could not span it.
 * Without an interval: day up to 120 days, then week when it fits MAX_SPAN_DAYS.week, else month.
 */
export function resolveRange(query: ItemQuery, extent: { first: string; last: string } | null, today: string): ResolvedRange | QueryProblem {
  const dataFirst = extent?.first ?? today;
  const dataLast = extent?.last ?? today;
  let from = query.from ?? (query.to !== null && query.to < dataFirst ? query.to : dataFirst);
  let to = query.to ?? (query.from !== null && query.from > dataLast ? query.from : dataLast);
  let interval = query.interval;
  if (interval === null) {
    const span = spanDays(from, to);
    interval = span <= DAY_INTERVAL_UP_TO_DAYS ? 'day' : span <= MAX_SPAN_DAYS.week ? 'week' : 'month';
  }
  const max = MAX_SPAN_DAYS[interval];
  let note: string | null = null;
  if (spanDays(from, to) > max) {
    if (query.from !== null && query.to !== null) {
      return { parameter: 'from', message: `the range ${from} to ${to} spans ${spanDays(from, to)} days; interval ${interval} allows at most ${max} (use a wider interval or a shorter range)` };
    }
    if (query.from === null) from = addDays(to, -(max - 1));
    else to = addDays(from, max - 1);
    note = `Interval ${interval} spans at most ${max} days, so the range was shortened to ${from} – ${to}.`;
  }
  return { from, to, interval, whole: query.from === null && query.to === null, note };
}
