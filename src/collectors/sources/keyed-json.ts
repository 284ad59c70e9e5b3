/**
 * Reading a small upstream JSON body for the keyed and per-item adapters (steam, csfloat, buff163, ...): every way
 * the body can fail as a whole (cut short, an HTML page such as a login wall or a CDN challenge, not JSON) becomes
 * `UpstreamError('format')`, so the runner fails the run and keeps the market's quotes as they were.
 */
import { parse as parseLossless, isLosslessNumber } from 'lossless-json';
import { UpstreamError } from '../source.js';

/**
 * Reads `res` (a 2xx response from `ctx.fetch`) as JSON. With `lossless`, JSON numbers come back as lossless-json
 * `LosslessNumber`s (their source text in `.value`), never JS numbers; without it, plain `JSON.parse` (for bodies whose
 * money is in strings). `what` names the request in error messages (never a credential).
 * Throws UpstreamError('format') on a truncated body, an HTML page or text that is not JSON.
 */
export async function readJsonBody(res: Response, what: string, opts: { lossless?: boolean } = {}): Promise<unknown> {
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    throw new UpstreamError('format', `${what}: body cut short (${(err as Error).message})`);
  }
  const type = res.headers.get('content-type') ?? '';
  const head = text.trimStart().slice(0, 1);
  if (/text\/html/i.test(type) || head === '<') throw new UpstreamError('format', `${what}: an HTML page instead of JSON (login wall or CDN page)`);
  try {
    return opts.lossless ? parseLossless(text) : JSON.parse(text);
  } catch (err) {
    throw new UpstreamError('format', `${what}: not JSON or truncated (${(err as Error).message})`);
  }
}

/** True for a plain JSON object (not null, not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !isLosslessNumber(v);
}

/** The source text of a JSON number read with `lossless: true`, or null when `v` is not a number. */
export function numberText(v: unknown): string | null {
  return isLosslessNumber(v) ? v.value : null;
}
