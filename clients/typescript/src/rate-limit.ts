/**
 * The service's rate-limit fields (IETF draft-ietf-httpapi-ratelimit-headers, as the README's "Rate limits"
 * section describes them): `RateLimit-Policy` lists every policy that applied to the request, each
 * `"<operationId>";q=<limit>;w=<window seconds>`, and `RateLimit` the state of each after it,
 * `"<operationId>";r=<remaining>;t=<seconds to reset>`. A GraphQL answer that ran several metered fields lists one
 * policy per field's operation, so both fields are lists; they are parsed as RFC 8941 structured-field lists
 * (the structured-headers package).
 */
import { parseList, type List } from 'structured-headers';

/** The state of one rate-limit policy after an answer. */
export interface RateLimitState {
  /** The policy's name: the catalogue operation id it limits (e.g. `getPrices`). */
  policy: string;
  /** Requests allowed per window (`q`). */
  limit: number;
  /** The window, in seconds (`w`). */
  windowSeconds: number;
  /** Requests left in the current window (`r`). */
  remaining: number;
  /** Seconds until the window frees a request (`t`). */
  resetSeconds: number;
}

/** Each named item of a structured-field list with its numeric parameters; an unparseable field is empty. */
function namedItems(text: string | null): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  if (!text) return out;
  let list: List;
  try {
    list = parseList(text);
  } catch {
    return out; // not a structured list: no usable state
  }
  for (const [value, params] of list) {
    if (typeof value !== 'string') continue; // policy names are sf-strings; inner lists and tokens are not ours
    const numbers = new Map<string, number>();
    for (const [key, v] of params) if (typeof v === 'number') numbers.set(key, v);
    out.set(value, numbers);
  }
  return out;
}

/**
 * Every rate-limit policy of an answer's headers, in the order `RateLimit-Policy` lists them, joined with its
 * `RateLimit` state by name. A policy without a state, or a field that is not a structured list, is left out;
 * an answer without the fields gives an empty array.
 */
export function readRateLimits(headers: Headers): RateLimitState[] {
  const policies = namedItems(headers.get('ratelimit-policy'));
  const states = namedItems(headers.get('ratelimit'));
  const out: RateLimitState[] = [];
  for (const [policy, p] of policies) {
    const s = states.get(policy);
    const limit = p.get('q');
    const remaining = s?.get('r');
    if (s === undefined || limit === undefined || remaining === undefined) continue;
    out.push({ policy, limit, windowSeconds: p.get('w') ?? NaN, remaining, resetSeconds: s.get('t') ?? 0 });
  }
  return out;
}
