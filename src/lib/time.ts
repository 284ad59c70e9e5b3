import { validationError } from './errors.js';

/** Timestamp texts by epoch milliseconds: quotes of one scan or ingestion batch share their times. */
const timestampTexts = new Map<number, string>();

/**
 * Timestamps on the wire: RFC 3339 in UTC with millisecond precision, e.g. `2026-07-16T00:00:00.000Z`.
 * Remembered by epoch milliseconds (at most 65,536 texts, then forgotten at once): writing timestamps was a
 * tenth of a full-scale batch's CPU and most repeat (every quote of a market's scan has the same fresh_at);
 * the GraphQL `DateTime` scalar and the quote's JSON writer both go through here.
 */
export function formatTimestamp(date: Date): string {
  const ms = date.getTime();
  let text = timestampTexts.get(ms);
  if (text === undefined) {
    if (timestampTexts.size >= 65_536) timestampTexts.clear();
    text = date.toISOString();
    timestampTexts.set(ms, text);
  }
  return text;
}

/** A UTC calendar date as `YYYY-MM-DD`. */
export function formatDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;

/** `day` (UTC, YYYY-MM-DD) moved by `days` (negative: earlier). */
export function addDays(day: string, days: number): string {
  return formatDate(new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS));
}

/**
 * A range of UTC days from optional ends (YYYY-MM-DD, already checked to exist): `to` defaults to `defaultTo`,
 * `from` to `defaultSpanDays` days ending at `to`. Throws 422 `validation_failed` on the argument `from`
 * (the REST facade names the query parameter) when `from` is after `to` or the range spans more than
 * `maxSpanDays` days (inclusive); `tooLongHint` follows the span in that message.
 */
export function dayRange(
  from: string | null | undefined,
  to: string | null | undefined,
  rule: { defaultTo: string; defaultSpanDays: number; maxSpanDays: number; tooLongHint: string },
): { from: string; to: string } {
  const end = to ?? rule.defaultTo;
  const start = from ?? addDays(end, -(rule.defaultSpanDays - 1));
  if (start > end) throw validationError([{ location: 'argument', field: 'from', message: `must not be after to (${end})` }]);
  const span = (Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS + 1;
  if (span > rule.maxSpanDays) throw validationError([{ location: 'argument', field: 'from', message: `the range spans ${span} days; ${rule.tooLongHint}` }]);
  return { from: start, to: end };
}
