/**
 * The request target of a node:http request without the WHATWG URL parser, when parsing could change
 * nothing (issue: serving quotes at the machine's limit; `new URL` and its `searchParams` showed in each hot
 * request's CPU in `BENCH_PROFILE=1 npm run bench`; docs/benchmarks.md). Anything else takes `new URL` as before.
 */

/** What request handling reads of a request URL: the path (still percent-encoded) and the query parameters. */
export interface RequestTarget {
  readonly pathname: string;
  readonly searchParams: URLSearchParams;
}

/**
 * Characters a target may hold for the parser to leave it as it is: unreserved, sub-delims, `:`, `@`, `/`, `?`
 * and `%` escapes. The URL parser would percent-encode anything else (space, quotes, `<`, `>`, non-ASCII),
 * turn `\` into `/` and cut at `#`.
 */
const PLAIN = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*$/;
/** A dot segment (`.`/`..`, also percent-encoded) in the path, which the parser would resolve. */
const DOT_SEGMENT = /\/(?:\.|%2e)(?:\.|%2e)?(?:\/|$)/i;

/**
 * Hosts (`Host` header values) `new URL` accepted as the host of an `http:` URL, and what it made of them; at most
 * 64 remembered (then forgotten all at once), so a client cycling through odd hosts costs a parse each, not memory.
 */
export class KnownHosts {
  private readonly ok = new Set<string>();

  /** True when `host` forms a URL as it is (unchanged by parsing, so a request target's own rules decide). */
  valid(host: string): boolean {
    if (this.ok.has(host)) return true;
    let parsed: URL;
    try {
      parsed = new URL(`http://${host}/`);
    } catch {
      return false;
    }
    // Only hosts the parser leaves as written (lower-case, no default port): anything else takes `new URL`.
    if (parsed.host !== host) return false;
    if (this.ok.size >= 64) this.ok.clear();
    this.ok.add(host);
    return true;
  }
}

/**
 * The target `raw` (node's `req.url`) with Host `host` when `new URL(raw, 'http://' + host)` would give the same
 * path and query parameters without changing a character (see PLAIN and DOT_SEGMENT); else null (parse it).
 */
export function plainTarget(raw: string | undefined, host: string | undefined, hosts: KnownHosts): RequestTarget | null {
  // `//x` is a scheme-relative reference (x would be the host), so only a single leading slash passes.
  if (raw === undefined || host === undefined || raw.charCodeAt(1) === 47 || !PLAIN.test(raw)) return null;
  const q = raw.indexOf('?');
  const pathname = q < 0 ? raw : raw.slice(0, q);
  if (pathname.includes('/.') || pathname.includes('%') ? DOT_SEGMENT.test(pathname) : false) return null;
  if (!hosts.valid(host)) return null;
  return new PlainTarget(pathname, q < 0 ? '' : raw.slice(q + 1));
}

/**
 * A plain target: its path, and its query parameters parsed when first read. A class, not an object literal
 * with a getter: each such literal's getter is a new closure, so V8 cannot share one hidden class between them,
 * and the per-object class (in old space) pointing at the closure kept each request's objects alive past young
 * collections: `--trace-gc-nvp` under `npm run bench` load showed bytes promoted at every young collection with
 * the literal, none with the class (docs/benchmarks.md).
 */
class PlainTarget implements RequestTarget {
  private params: URLSearchParams | null = null;

  constructor(
    readonly pathname: string,
    private readonly query: string,
  ) {}

  get searchParams(): URLSearchParams {
    // The constructor drops one leading `?` of a string; the parser keeps it (`/p??a` has the parameter `?a`).
    return (this.params ??= new URLSearchParams(this.query.charCodeAt(0) === 63 ? '&' + this.query : this.query));
  }
}
