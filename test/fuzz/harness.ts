/**
 * The fuzz target and its checks: the in-process app over a fresh database with the bundled
 * catalogue, a few quotes and export snapshots, callers of every kind (a rich key, a poor one, an
 * unsynced, disabled, scoped or revoked one, a service token), and `send`, which runs one request and
 * fails with a readable message when the answer breaks the contract: a 5xx, a JSON body that does
 * not match /openapi.json for its status, an error without the envelope or whose meta.request_id is
 * not X-Request-ID, or a status outside what the test expected for that request.
 *
 * Runs are reproducible: FUZZ_SEED fixes the fast-check seed (printed at the start), FUZZ_RUNS the
 * number of generated requests per operation (default 1000).
 */
import zlib from 'node:zlib';
import pino from 'pino';
import { createApp, type App } from '../../src/app.js';
import { createRateLimiter } from '../../src/limits/rate-limiter.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { createAccount, createApiKey, createServiceToken, revokeApiKey, setAccountDisabled } from '../../src/accounts/accounts.js';
import { runExportSnapshots } from '../../src/exports/exports.js';
import { openApiDocument } from '../../src/openapi/document.js';
import { dataDir, ingestQuotes, obs } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { responseMismatch } from '../helpers/openapi.js';

/** The fast-check seed of this run: FUZZ_SEED, else a fresh one (printed so a failure can be replayed). */
export const FUZZ_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
/** Generated requests per operation: FUZZ_RUNS, default 1000. */
export const FUZZ_RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 1000;

/** How a request authenticates, and what the service must make of it. */
export type CallerKind = 'rich' | 'poor' | 'unsynced' | 'disabled' | 'scoped' | 'revoked' | 'machine' | 'unknown' | 'malformed' | 'none';

/** Items with quotes in app 730 (GET /prices answers 200 for these, 404 for any other name). */
export const QUOTED_NAMES = [
  'AK-47 | Redline (Field-Tested)',
  'Recoil Case',
  '★ Karambit | Fade (Factory New)',
  'Sticker | 🐉 Dragon & Lore, 100% +1',
  'x'.repeat(255),
  '😀'.repeat(255),
  'StatTrak™ M4A1-S | Printstream (Minimal Wear)',
  'Name with "quotes" \\ backslash / slash ? # = ;',
];

/** Everything a fuzz test needs. */
export interface FuzzTarget {
  db: TestDatabase;
  /** The app without rate limits (most requests: they reach the handlers instead of 429). */
  app: App;
  /** The same database behind the in-memory rate limiter (some requests: 429 must be well-formed too). */
  limitedApp: App;
  /** A credential of each kind, as the header value it goes in. */
  secrets: Record<Exclude<CallerKind, 'none'>, string>;
  websiteCodes: string[];
  currencyIds: number[];
  /** Codes of the official currencies (GET /prices/routes answers in any of them). */
  currencyCodes: string[];
  /** ETags of the current export snapshots (app 730). */
  etags: string[];
  /** Log lines of unexpected errors (attached to a failure). */
  errors: string[];
  close(): Promise<void>;
}

/** Builds the target (see module doc). */
export async function fuzzTarget(): Promise<FuzzTarget> {
  const db = await testDatabase();
  await importCatalogue(db.prisma, dataDir);
  await ingestQuotes(db, [
    obs('AK-47 | Redline (Field-Tested)', { price: '201.85' }),
    obs('AK-47 | Redline (Field-Tested)', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '27.14' }),
    obs('Recoil Case', { price: '2.59', quantity: 17237 }),
    obs('Recoil Case', { side: 'bid', price: '2.6' }),
    ...QUOTED_NAMES.slice(2).map((n, i) => obs(n, { price: String(1 + i) })),
    obs('Arcana', { appId: '570', price: '100' }),
  ]);
  await runExportSnapshots(db);
  const errors: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(line) });
  const rich = await createAccount(db, { credits: 10n ** 12n });
  const poor = await createAccount(db, { credits: 3n });
  const unsynced = await createAccount(db, { credits: 10n ** 6n, unsynced: true });
  const disabled = await createAccount(db, { credits: 10n ** 6n });
  await setAccountDisabled(db, disabled.accountId, true);
  const scoped = await createApiKey(db, rich.accountId, { operations: ['getMe'] });
  const revoked = await createApiKey(db, rich.accountId);
  await revokeApiKey(db, revoked.keyId);
  const machine = await createServiceToken(db, 'fuzz');
  const websiteCodes = (await db.query<{ code: string }>(`SELECT code FROM website ORDER BY code`)).map((r) => r.code);
  const currencyIds = (await db.query<{ id: number }>(`SELECT id FROM currency WHERE is_official AND NOT is_deleted ORDER BY id`)).map((r) => Number(r.id));
  const currencyCodes = (await db.query<{ code: string }>(`SELECT code FROM currency WHERE NOT is_deleted ORDER BY code`)).map((r) => r.code);
  const etags = (await db.query<{ etag: string }>(`SELECT b.etag FROM export_current c JOIN export_build b ON b.id = c.build_id`)).map((r) => r.etag);
  return {
    db,
    app: createApp({ db, logger, rateLimiter: createRateLimiter({ enabled: false }) }),
    limitedApp: createApp({ db, logger, rateLimiter: createRateLimiter({}) }),
    secrets: {
      rich: rich.key,
      poor: poor.key,
      unsynced: unsynced.key,
      disabled: disabled.key,
      scoped: scoped.key,
      revoked: revoked.key,
      machine: machine.token,
      unknown: 'qg_' + 'A'.repeat(32),
      malformed: 'qg_short',
    },
    websiteCodes,
    currencyIds,
    currencyCodes,
    etags,
    errors,
    close: () => db.destroy(),
  };
}

/** One generated request. */
export interface FuzzRequest {
  method: string;
  /** Path and query exactly as sent (already percent-encoded). */
  target: string;
  headers: [string, string][];
  body?: string | Uint8Array;
  /** Use the rate-limited app. */
  limited?: boolean;
}

/** What the test expects of the answer. */
export interface Expectation {
  statuses: number[];
  /** Why (shown on failure). */
  reason: string;
}

/** What a client received. */
export interface Received {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

interface OperationStats {
  sent: number;
  statuses: Map<number, number>;
}

const stats = new Map<string, OperationStats>();

/** Counts one answer for the report. */
export function record(operation: string, status: number): void {
  const s = stats.get(operation) ?? { sent: 0, statuses: new Map() };
  s.sent++;
  s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
  stats.set(operation, s);
}

/** Requests sent for `operation` so far. */
export function sentFor(operation: string): number {
  return stats.get(operation)?.sent ?? 0;
}

/** The run's figures as text: requests and statuses per operation, 5xx count, seed. */
export function report(title: string, seconds: number): string {
  const lines = [`${title}: seed ${FUZZ_SEED}, ${FUZZ_RUNS} runs per operation, ${seconds.toFixed(1)} s`];
  let total = 0;
  let fivexx = 0;
  for (const [op, s] of [...stats].sort(([a], [b]) => a.localeCompare(b))) {
    total += s.sent;
    const parts = [...s.statuses].sort(([a], [b]) => a - b).map(([st, n]) => `${st}x${n}`);
    for (const [st, n] of s.statuses) if (st >= 500) fivexx += n;
    lines.push(`  ${op.padEnd(40)} ${String(s.sent).padStart(6)}  ${parts.join(' ')}`);
  }
  lines.push(`  total ${total} requests, ${fivexx} answers 5xx`);
  return lines.join('\n');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Runs a request against the in-process app and reads the answer as a client would. */
export async function call(t: FuzzTarget, r: FuzzRequest): Promise<Received> {
  const init: RequestInit = { method: r.method, headers: r.headers };
  if (r.body !== undefined) init.body = r.body as BodyInit;
  const res = await (r.limited ? t.limitedApp : t.app).fetch(new Request(`http://fuzz.test${r.target}`, init));
  if (res.headers.get('content-type')?.startsWith('text/event-stream') && res.body) {
    // An event stream (GET /prices/changes/stream) never ends by itself: its first chunk, then the client leaves.
    const reader = res.body.getReader();
    const first = await reader.read();
    await reader.cancel();
    return { status: res.status, headers: res.headers, text: first.value ? Buffer.from(first.value).toString('utf8') : '', body: undefined };
  }
  const raw = Buffer.from(await res.arrayBuffer());
  const text = (res.headers.get('content-encoding') === 'gzip' && raw.length > 0 ? zlib.gunzipSync(raw) : raw).toString('utf8');
  let body: unknown = undefined;
  if (text && /json/.test(res.headers.get('content-type') ?? '')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = Symbol.for('unparseable');
    }
  }
  return { status: res.status, headers: res.headers, text, body };
}

/** A short, printable description of a request for failure messages. */
export function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : typeof r.body === 'string' ? r.body : Buffer.from(r.body).toString('latin1');
  const cut = (s: string) => (s.length > 600 ? `${s.slice(0, 600)}... (${s.length} chars)` : s);
  return `${r.method} ${cut(r.target)}${r.limited ? ' [rate-limited app]' : ''}\n  headers ${cut(JSON.stringify(r.headers))}${body ? `\n  body ${cut(JSON.stringify(body))}` : ''}`;
}

const documented = openApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

/** Documented statuses of one operation (path template + method). */
export function documentedStatuses(template: string, method: string): number[] {
  return Object.keys(documented.paths[template]?.[method.toLowerCase()]?.responses ?? {}).map(Number);
}

/** Fails with `message` plus the request, the answer and any logged unexpected error. */
function fail(t: FuzzTarget, r: FuzzRequest, got: Received, message: string): never {
  const logged = t.errors.length > 0 ? `\n  logged: ${t.errors.slice(-3).join('\n  ').slice(0, 4000)}` : '';
  throw new Error(`${message}\n  request: ${describeRequest(r)}\n  answer: ${got.status} ${got.text.slice(0, 1500)}${logged}`);
}

/**
 * Sends a request of the documented operation `template` and checks the answer: never 5xx; a UUID
 * X-Request-ID; a status the document lists and the test expects; a JSON body that matches the
 * document for that status; errors in the envelope with meta.request_id equal to X-Request-ID;
 * 422 with `validation_failed` and one `{location, field, message}` per problem.
 */
export async function sendDocumented(t: FuzzTarget, template: string, r: FuzzRequest, expected: Expectation): Promise<Received> {
  t.errors.length = 0;
  const got = await call(t, r);
  record(`${r.method} ${template}`, got.status);
  if (got.status >= 500) fail(t, r, got, `5xx answer`);
  const requestId = got.headers.get('x-request-id') ?? '';
  if (!UUID.test(requestId)) fail(t, r, got, `X-Request-ID is missing or not a UUID: ${requestId}`);
  if (!documentedStatuses(template, r.method).includes(got.status)) fail(t, r, got, `status ${got.status} is not documented for ${r.method} ${template}`);
  if (!expected.statuses.includes(got.status)) fail(t, r, got, `expected ${expected.statuses.join(' or ')} (${expected.reason}), got ${got.status}`);
  const type = got.headers.get('content-type') ?? '';
  if (got.status === 304) {
    if (got.text !== '') fail(t, r, got, '304 with a body');
    return got;
  }
  if (got.status === 200 && type.startsWith('text/event-stream')) {
    // The documented event stream: it opens with a comment before any event.
    if (!Object.keys((documented.paths[template]?.[r.method.toLowerCase()]?.responses as Record<string, { content?: Record<string, unknown> }>)?.['200']?.content ?? {}).includes('text/event-stream')) fail(t, r, got, 'an event stream where JSON is documented');
    if (!got.text.startsWith(':')) fail(t, r, got, `the event stream does not open with a comment: ${got.text.slice(0, 80)}`);
    return got;
  }
  if (got.status === 200 && type.startsWith('application/x-ndjson')) {
    // The export's NDJSON file (docs/export.md): documented as a media type of the answer; one JSON quote per line.
    if (!Object.keys((documented.paths[template]?.[r.method.toLowerCase()]?.responses as Record<string, { content?: Record<string, unknown> }>)?.['200']?.content ?? {}).includes('application/x-ndjson')) fail(t, r, got, 'NDJSON where it is not documented');
    if (got.text !== '' && !got.text.endsWith('\n')) fail(t, r, got, 'the NDJSON file does not end with a line feed');
    for (const line of got.text.split('\n').slice(0, -1)) {
      let quote: unknown;
      try {
        quote = JSON.parse(line);
      } catch {
        fail(t, r, got, `an NDJSON line is not JSON: ${line.slice(0, 80)}`);
      }
      if (typeof (quote as { market_hash_name?: unknown })?.market_hash_name !== 'string') fail(t, r, got, `an NDJSON line has no market_hash_name: ${line.slice(0, 80)}`);
    }
    return got;
  }
  if (!type.startsWith('application/json')) fail(t, r, got, `content type ${type} is not JSON`);
  if (got.body === Symbol.for('unparseable')) fail(t, r, got, 'body is not valid JSON');
  const url = new URL(`http://fuzz.test${r.target}`);
  const mismatch = responseMismatch(r.method, url.pathname, got.status, got.body);
  if (mismatch) fail(t, r, got, `answer does not match /openapi.json: ${mismatch}`);
  const enveloped = got.body && typeof got.body === 'object' && 'meta' in got.body;
  if (got.status >= 400 || enveloped) {
    if (got.body?.meta?.request_id !== requestId) fail(t, r, got, `meta.request_id ${got.body?.meta?.request_id} is not X-Request-ID ${requestId}`);
  }
  if (got.status === 422) {
    const e = got.body.error;
    if (e.code !== 'validation_failed') fail(t, r, got, `422 with code ${e.code}`);
    const ok = e.details !== null && typeof e.details === 'object' && Array.isArray(e.details.errors) && e.details.errors.length > 0 && e.details.errors.every((d: any) => ['query', 'path', 'header', 'body'].includes(d.location) && typeof d.field === 'string' && typeof d.message === 'string');
    if (!ok) fail(t, r, got, '422 without a details list of {location, field, message}');
  }
  if (got.status === 413 && got.body.error.code !== 'payload_too_large') fail(t, r, got, `413 with code ${got.body.error.code}`);
  return got;
}

/** An Authorization / X-API-Key header set for a caller kind, in one of several accepted spellings. */
export function credentialHeaders(t: FuzzTarget, kind: CallerKind, spelling: number): [string, string][] {
  if (kind === 'none') return [];
  if (kind === 'malformed') {
    const variants: [string, string][][] = [
      [['Authorization', 'Basic Zm9vOmJhcg==']],
      [['Authorization', 'Bearer']],
      [['Authorization', '']],
      [['X-API-Key', '']],
      [['Authorization', `Bearer ${t.secrets.malformed}`]],
      [['Authorization', `Bearer ${t.secrets.rich}x`]],
      [['X-API-Key', `${t.secrets.rich} ${t.secrets.rich}`]],
      [['Authorization', `Token ${t.secrets.rich}`], ['X-API-Key', t.secrets.rich]],
    ];
    return variants[spelling % variants.length]!;
  }
  const secret = t.secrets[kind];
  switch (spelling % 4) {
    case 0:
      return [['Authorization', `Bearer ${secret}`]];
    case 1:
      return [['X-API-Key', secret]];
    case 2:
      return [['authorization', `bearer   ${secret}  `]];
    default:
      // Authorization wins over X-API-Key: a second, wrong key there changes nothing.
      return [['Authorization', `Bearer ${secret}`], ['X-API-Key', t.secrets.unknown]];
  }
}
