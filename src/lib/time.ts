/** Timestamps on the wire: RFC 3339 in UTC with millisecond precision, e.g. `2026-07-16T00:00:00.000Z`. */
export function formatTimestamp(date: Date): string {
  return date.toISOString();
}

/** A UTC calendar date as `YYYY-MM-DD`. */
export function formatDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}
