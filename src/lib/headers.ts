/**
 * What request handling reads of a request's headers, whatever the transport: the fetch API's `Headers`
 * (the `@whatwg-node/server` face) and node:http's `IncomingHttpHeaders` (the REST fast path in app.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Read access to request headers: `get` takes a case-insensitive name and gives null when absent. */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * node:http's parsed headers as a HeaderReader, with the fetch API's rules: names are case-insensitive and
 * repeated headers (other than Set-Cookie, which a request does not carry) are joined with `, `.
 */
export function nodeHeaders(headers: IncomingHttpHeaders): HeaderReader {
  return {
    get(name) {
      const v = headers[name.toLowerCase()];
      if (v === undefined) return null;
      return Array.isArray(v) ? v.join(', ') : v;
    },
  };
}
