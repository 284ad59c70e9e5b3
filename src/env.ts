/**
 * Every environment variable the service reads, parsed once with zod (fail fast on bad values).
 * Nothing else in the code base reads `process.env`. Also the collectors' credentials file
 * (COLLECTOR_CREDENTIALS_FILE, `readCredentialsFile`), which supplies values for the same names as the environment.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { parsePageRateLimit, parseTrustProxy } from './pages/page-limit.js';

const schema = z.object({
  /** PostgreSQL connection string; unset = embedded PGlite in `PGLITE_DIR`. */
  DATABASE_URL: z.string().url().optional(),
  /** PGlite data directory (embedded default); `memory://` keeps it in memory. */
  PGLITE_DIR: z.string().min(1).default('./var/pglite'),
  /** HTTP port. */
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  /** HTTP bind address. */
  HOST: z.string().min(1).default('0.0.0.0'),
  /**
   * The address clients reach this service at (`https://api.example.com`, a path prefix allowed), used by the landing
   * page's examples (unset: the address it listens on, `http://localhost:PORT` on every interface) and as the
   * `servers` entry of /openapi.json (unset: `/`, relative to the document); never the request's Host header.
   * Trailing slashes are dropped.
   */
  PUBLIC_BASE_URL: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return undefined;
      let url: URL;
      try {
        url = new URL(raw.trim());
      } catch {
        ctx.addIssue({ code: 'custom', message: `${JSON.stringify(raw)} is not a URL` });
        return z.NEVER;
      }
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
        ctx.addIssue({ code: 'custom', message: `${JSON.stringify(raw)} must be an http(s) URL without credentials, query or fragment` });
        return z.NEVER;
      }
      return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
    }),
  /** Folder holding the bundled real data (see data/PROVENANCE.md). */
  QUOTEGATE_DATA_DIR: z.string().min(1).default('./data'),
  /** Load the bundled data on start when the database holds no quotes (`false` to skip). */
  QUOTEGATE_AUTOLOAD: z.enum(['true', 'false']).default('true'),
  /** Redis connection string: rate-limit counts shared by every replica; unset = this process's memory. */
  REDIS_URL: z.string().url().optional(),
  /**
   * The item pages' limit per client address, `<pages>/<seconds>` (default 30/60: 30 pages in any 60 s; `off`:
   * none). Counted where the API's rate limits are (Redis with REDIS_URL, so replicas share it); src/pages/page-limit.ts.
   */
  PAGE_RATE_LIMIT: z
    .string()
    .default('30/60')
    .transform((raw, ctx) => {
      try {
        return parsePageRateLimit(raw);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    }),
  /**
   * Which peers are this deployment's proxies, whose X-Forwarded-For names the client for the pages' limit: unset
   * = none (the connection's address counts); a hop count (`1`: one proxy in front); or addresses and subnets
   * (`loopback`, `10.0.0.0/8`, ...). Never set it without a proxy that overwrites or appends X-Forwarded-For.
   */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      try {
        return parseTrustProxy(raw);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    }),
  /** `off` disables rate limits (load tests of the billing path only); never in production. */
  QUOTEGATE_RATE_LIMITS: z.enum(['on', 'off']).default('on'),
  /** Seconds between export snapshot builds (GET /prices/export); 0 turns the job off in this process. */
  EXPORT_INTERVAL_SECONDS: z.coerce.number().int().min(0).default(300),
  /** Seconds between status recorder ticks (service probes; infrastructure checks run once per 5-minute bucket); 0 = off in this process. */
  STATUS_PROBE_INTERVAL_SECONDS: z.coerce.number().int().min(0).default(60),
  /** Probe URLs of the public components, `web=https://...,api=https://...`; `api` defaults to this process's own /health. */
  STATUS_PROBE_URLS: z.string().optional(),
  /** The `ingestion` check passes while quotes arrived within this many seconds. */
  STATUS_INGESTION_MAX_AGE_SECONDS: z.coerce.number().int().min(1).default(900),
  /** Proxy-node footprint for /status `distribution`, JSON: {"52.52,13.40": {"node_count": 3, "datacenter_count": 1}}. */
  STATUS_DISTRIBUTION: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return {};
      const entry = z.strictObject({ node_count: z.number().int().min(0), datacenter_count: z.number().int().min(0) });
      const shape = z.record(z.string().regex(/^-?\d{1,2}(\.\d+)?,-?\d{1,3}(\.\d+)?$/, 'keys are "latitude,longitude"'), entry);
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'is not JSON' });
        return z.NEVER;
      }
      const r = shape.safeParse(parsed);
      if (!r.success) {
        ctx.addIssue({ code: 'custom', message: r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
        return z.NEVER;
      }
      return r.data;
    }),
  /** `on`: this process evaluates webhook alerts and sends their deliveries (docs/alerts.md); `off`: never (another replica does). */
  ALERT_JOB: z.enum(['on', 'off']).default('on'),
  /** `true`: webhook URLs may use http:// (local receivers, tests); default https only (docs/alerts.md). */
  ALERT_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
  /**
   * `true`: webhook URLs may point at private, loopback, link-local and other non-public addresses and local names
   * (local receivers, tests), at registration and at delivery; default `false`: the SSRF guard refuses them (422 on
   * `url` at registration; `address not allowed: <address>` in the delivery log, uncharged). docs/alerts.md.
   */
  ALERT_ALLOW_PRIVATE_HOSTS: z.enum(['true', 'false']).default('false'),
  /** `on`: this process runs the daily CSCP valuation (00:05 UTC, one replica at a time) and its start-up catch-up; `off`: never. */
  VALUATION_JOB: z.enum(['on', 'off']).default('on'),
  /**
   * Bearer token that unlocks GET /metrics on the API port (at least 16 characters). Unset: /metrics
   * is not served on the API port (404), only on METRICS_PORT when that is set.
   */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** A separate listener for GET /metrics only (no token), on METRICS_HOST; unset = none. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Bind address of METRICS_PORT; loopback by default, so metrics stay off the internet. */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Seconds a replica may reuse an API-key lookup while it hears change signals (0 = never; at most 1 s while
   * its LISTEN connection is down). Changes are pushed to every replica at once (PostgreSQL NOTIFY).
   */
  AUTH_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(30),
  /**
   * With REDIS_URL: milliseconds a replica may hand out rate-limit points it took ahead for a busy account (a
   * rate-limit lease: the limit still holds across replicas; src/limits/rate-limiter.ts). 0 = every request decided in Redis.
   */
  RATE_LIMIT_LEASE_MS: z.coerce.number().int().min(0).max(10_000).default(1000),
  /** `off`: every charge is one conditional statement; `on`: large balances are charged from per-replica leases. */
  CREDIT_LEASES: z.enum(['on', 'off']).default('on'),
  /** Lifetime in seconds of a lease row after its last renewal: a dead replica's lease comes back after this (min 11). */
  CREDIT_LEASE_SECONDS: z.coerce.number().int().min(11).max(3600).default(30),
  /** Accounts with fewer credits available are charged one statement per request (no lease). */
  CREDIT_LEASE_MIN_BALANCE: z.coerce.bigint().min(0n).default(10_000n),
  /**
   * Milliseconds between the recordings of a replica's lease charges: the crash bound (a replica killed without
   * warning loses at most this much of its answered charges; README, Billing) against one statement per interval.
   */
  CREDIT_LEASE_FLUSH_MS: z.coerce.number().int().min(10).max(10_000).default(1000),
  /**
   * Seconds between the settlements of a lease's recorded charges into credits_used and the ledger (GET /me still
   * shows them at once: it adds what leases recorded). 0 settles at every recording.
   */
  CREDIT_LEASE_SETTLE_SECONDS: z.coerce.number().int().min(0).max(3600).default(10),
  /**
   * V8 old-generation cap (MiB) of `quotegate jobs run valuation`, which runs the job in a child process with
   * `--max-old-space-size` set to it; 0 runs it in the CLI's own process, uncapped. The job's live set is small
   * beside the default, but without a cap V8 lets the heap grow to several times what the last full collection
   * left (docs/valuation.md section 6; docs/benchmarks.md).
   */
  VALUATION_JOB_HEAP_MB: z.coerce.number().int().min(0).max(65_536).default(320),
  /**
   * V8 old-generation cap (MiB) of the export job's child process (on a PostgreSQL server each snapshot build runs
   * in one, src/jobs/export-snapshots.ts); 0: no cap. The default leaves room above the full-scale build's
   * (36k items x 40 markets) peak with V8's default heap growth (docs/benchmarks.md).
   */
  EXPORT_JOB_HEAP_MB: z.coerce.number().int().min(0).max(65_536).default(448),
  /** Most live subscriptions (SSE, WebSocket, REST stream) one account may have open at once, all replicas together. */
  LIVE_MAX_SUBSCRIPTIONS: z.coerce.number().int().min(1).max(1000).default(10),
  /** Undelivered changes a live subscription may hold before it is closed as a slow consumer. */
  LIVE_MAX_PENDING: z.coerce.number().int().min(10).max(1_000_000).default(10_000),
  /**
   * `on`: `quotegate serve` also runs the collectors (docs/collectors.md; on embedded PGlite the only way, one
   * process owns the database); `off`: it serves only. `quotegate collect` runs them whatever this says.
   */
  COLLECTORS: z.enum(['on', 'off']).default('on'),
  /** Multiplies every source's interval (and its breaker's pauses): `0.01` makes a 300 s source run every 3 s (tests). */
  COLLECTOR_INTERVAL_SCALE: z.coerce.number().positive().max(1000).default(1),
  /** Sources one collector process runs at once. */
  COLLECTOR_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** Proxies every source without its own `COLLECTOR_<ID>_PROXIES` uses, rotated per request (comma-separated http://, https://, socks4://, socks5:// URLs). */
  COLLECTOR_PROXIES: z.string().optional().transform((raw, ctx) => proxyList(raw, ctx)),
  /**
   * A JSON file of collector credentials, `{"CSFLOAT_API_KEY": "...", "BUFF163_COOKIE": "..."}`: values for the
   * sources' credential variables (an environment variable of the same name wins). Read when the collectors start
   * (`readCredentialsFile`: it must be readable by its owner only); unset = the environment only.
   */
  COLLECTOR_CREDENTIALS_FILE: z.string().min(1).optional(),
  /** A file of market hash names (one a line) that per-item sources collect; unset = none. */
  COLLECTOR_WATCHLIST_FILE: z.string().min(1).optional(),
  /** Items per-item sources watch when no COLLECTOR_WATCHLIST_FILE is given: the most widely listed (collectors/watchlist.ts). */
  COLLECTOR_WATCHLIST_SIZE: z.coerce.number().int().min(0).max(100_000).default(500),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Seconds a client has to send a request's headers; then 408 and the connection is closed (slow clients). */
  HTTP_HEADERS_TIMEOUT_SECONDS: z.coerce.number().positive().default(15),
  /** Seconds a client has to send a whole request, headers and body; then 408 and the connection is closed. */
  HTTP_REQUEST_TIMEOUT_SECONDS: z.coerce.number().positive().default(30),
  /**
   * Origins whose web pages may call the service (CORS), comma-separated: exact origins
   * (`https://dash.example.com`, scheme, host and port only) or `*` for any origin (default). Never with cookies.
   */
  CORS_ORIGINS: z
    .string()
    .default('*')
    .transform((raw, ctx) => {
      const origins = raw.split(',').map((o) => o.trim()).filter((o) => o !== '');
      for (const o of origins) {
        if (o === '*') continue;
        let origin: string | null;
        try {
          origin = new URL(o).origin;
        } catch {
          origin = null;
        }
        if (origin !== o) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(o)} is not an origin (scheme://host[:port], no path) or *` });
      }
      return origins.length === 0 ? ['*'] : origins;
    }),
}).refine((e) => e.HTTP_HEADERS_TIMEOUT_SECONDS <= e.HTTP_REQUEST_TIMEOUT_SECONDS, {
  message: 'must not exceed HTTP_REQUEST_TIMEOUT_SECONDS',
  path: ['HTTP_HEADERS_TIMEOUT_SECONDS'],
});

/** Parsed environment (see the field comments for meaning and defaults). */
export type Env = z.infer<typeof schema>;

/** Parses `source` (default `process.env`); throws a readable error naming each bad variable. */
export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const result = schema.safeParse(source);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** Proxy URL schemes a collector can use (undici ProxyAgent for http/https, fetch-socks for SOCKS). */
const PROXY_SCHEMES = new Set(['http:', 'https:', 'socks4:', 'socks5:']);

/** Parses a comma-separated proxy list; each must be an http(s):// or socks4/5:// URL with a host and port. */
function proxyList(raw: string | undefined, ctx: z.RefinementCtx): string[] {
  if (!raw) return [];
  const out: string[] = [];
  for (const item of raw.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    let url: URL | null;
    try {
      url = new URL(item);
    } catch {
      url = null;
    }
    if (!url || !PROXY_SCHEMES.has(url.protocol) || !url.hostname || !url.port) {
      // The proxy's password must not reach the error message.
      const shown = url ? `${url.protocol}//${url.hostname}${url.port ? `:${url.port}` : ''}` : 'an entry';
      ctx.addIssue({ code: 'custom', message: `${shown} is not a proxy URL (http://, https://, socks4:// or socks5://host:port)` });
      continue;
    }
    out.push(item);
  }
  return out;
}

/** A collector source's settings from the environment (docs/collectors.md). */
export interface CollectorSourceEnv {
  /** `COLLECTOR_<ID>_URL`: replaces the source's base URL (request paths stay the upstream's). */
  baseUrl: string | null;
  /** `COLLECTOR_<ID>_PROXIES`, else `COLLECTOR_PROXIES`; empty = direct. */
  proxies: string[];
  /** `COLLECTOR_<ID>_INTERVAL_SECONDS`: replaces the source's interval (before COLLECTOR_INTERVAL_SCALE). */
  intervalSeconds: number | null;
  /**
   * The source's credential: its `credentialEnv` variable, else that name's value in COLLECTOR_CREDENTIALS_FILE; null
   * when both are unset or blank (the source is "not configured").
   */
  credential: string | null;
}

/** `skinport` -> `SKINPORT`, `market-csgo` -> `MARKET_CSGO`: the infix of a source's variables. */
export function collectorEnvName(id: string): string {
  return id.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
}

/**
 * Reads one collector source's variables from `source` (default `process.env`): `COLLECTOR_<ID>_URL`,
 * `COLLECTOR_<ID>_PROXIES`, `COLLECTOR_<ID>_INTERVAL_SECONDS` and its credential variable, which, when unset or blank
 * there, is taken from `credentialsFile` (the values of COLLECTOR_CREDENTIALS_FILE, `readCredentialsFile`).
 * `globalProxies` is `Env.COLLECTOR_PROXIES`. Throws a readable error naming each bad variable (never its credential's value).
 */
export function loadCollectorSourceEnv(
  spec: { id: string; credentialEnv?: string },
  globalProxies: string[],
  source: Record<string, string | undefined> = process.env,
  credentialsFile: CollectorCredentials = {},
): CollectorSourceEnv {
  const name = collectorEnvName(spec.id);
  const shape = z.object({
    [`COLLECTOR_${name}_URL`]: z
      .string()
      .url()
      .refine((u) => /^https?:$/.test(new URL(u).protocol), { message: 'must be an http:// or https:// URL' })
      .optional(),
    [`COLLECTOR_${name}_PROXIES`]: z.string().optional().transform((raw, ctx) => (raw === undefined ? null : proxyList(raw, ctx))),
    [`COLLECTOR_${name}_INTERVAL_SECONDS`]: z.coerce.number().positive().max(7 * 86_400).optional(),
  });
  const r = shape.safeParse(source);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join('\n')}`);
  }
  const d = r.data as Record<string, unknown>;
  const url = d[`COLLECTOR_${name}_URL`] as string | undefined;
  const proxies = d[`COLLECTOR_${name}_PROXIES`] as string[] | null | undefined;
  const fromEnv = spec.credentialEnv ? (source[spec.credentialEnv] ?? '').trim() : '';
  const credential = fromEnv !== '' ? fromEnv : spec.credentialEnv ? (credentialsFile[spec.credentialEnv] ?? '').trim() : '';
  return {
    baseUrl: url ? url.replace(/\/+$/, '') : null,
    proxies: proxies ?? globalProxies,
    intervalSeconds: (d[`COLLECTOR_${name}_INTERVAL_SECONDS`] as number | undefined) ?? null,
    credential: credential === '' ? null : credential,
  };
}

/** Credential values by variable name (`CSFLOAT_API_KEY` -> its key), as COLLECTOR_CREDENTIALS_FILE holds them. */
export type CollectorCredentials = Readonly<Record<string, string>>;

/** What `readCredentialsFile` throws: the file and what is wrong with it, never a value of it. */
class CredentialsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsFileError';
  }
}

/** A credential variable's name: upper-case letters, digits and `_`, not starting with a digit. */
const CREDENTIAL_NAME = /^[A-Z_][A-Z0-9_]*$/;

/**
 * Reads COLLECTOR_CREDENTIALS_FILE: a JSON object of credential variable names to string values,
 * `{"CSFLOAT_API_KEY": "...", "BUFF163_COOKIE": "session=...", "C5GAME_APP_KEY": "..."}` (blank values count as
 * unset). `known` is every credential variable of the sources this process knows (registry and `--sources-module`);
 * a name outside it is refused, so a misspelt name is not a source silently left "not configured".
 *
 * Like ssh with a private key, a file that its group or others may read, write or run (`mode & 0o077`, POSIX only) is
 * refused: `chmod 600` it. Throws an Error naming the file and what is wrong (missing, unreadable, not a regular file,
 * too open, not JSON, not an object of strings, an unknown name) and never any value of it, nor the parser's message
 * (which may quote the text).
 */
export function readCredentialsFile(file: string, known: ReadonlySet<string>): CollectorCredentials {
  const fail = (what: string): never => {
    throw new CredentialsFileError(`COLLECTOR_CREDENTIALS_FILE ${file}: ${what}`);
  };
  let text: string;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) fail('is not a regular file');
      if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
        fail(`is accessible by group or others (mode ${(st.mode & 0o777).toString(8).padStart(3, '0')}); it holds secrets: chmod 600 it`);
      }
      if (st.size > 1_048_576) fail('is larger than 1 MiB');
      text = fs.readFileSync(fd, 'utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch (e) {
    if (e instanceof CredentialsFileError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    return fail(code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? 'error'})`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    return fail('is not JSON (expected {"CSFLOAT_API_KEY": "...", ...})');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return fail('is not a JSON object of credential names to strings');
  const out: Record<string, string> = {};
  const problems: string[] = [];
  let unknown = 0;
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    // An unknown name is counted, not shown: a value pasted as a name would otherwise reach the log.
    if (!CREDENTIAL_NAME.test(name) || !known.has(name)) unknown += 1;
    else if (typeof value !== 'string') problems.push(`${name} is not a string`);
    else out[name] = value;
  }
  if (unknown > 0) problems.push(`${unknown} ${unknown === 1 ? 'name is' : 'names are'} not the credential variable of any source (known: ${[...known].sort().join(', ') || 'none'})`);
  if (problems.length > 0) fail(problems.join('; '));
  return out;
}
