/** An in-process app over a test database, with helpers to call it like a client would. */
import path from 'node:path';
import zlib from 'node:zlib';
import { createApp, type App, type AppDeps } from '../../src/app.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { ingestQuotes } from '../../src/quotes/ingestion.js';
import type { QuoteObservation } from '../../src/validation/ingest.js';
import { toMoney } from '../../src/lib/money.js';
import { projectRoot } from '../../src/lib/paths.js';
import { testDatabase, type TestDatabase } from './db.js';
import { responseMismatch } from './openapi.js';

export const dataDir = path.join(projectRoot, 'data');

export interface TestApp {
  db: TestDatabase;
  app: App;
  key: string;
  get(pathAndQuery: string, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  post(pathAndQuery: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  auth(): Record<string, string>;
  /** POST /graphql with this query and variables. */
  gql(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  close(): Promise<void>;
}

/**
 * Calls the app like a client. Every JSON answer of a documented operation is checked against the
 * served OpenAPI document: a mismatch fails the calling test.
 */
async function call(app: App, request: Request) {
  const res = await app.fetch(request);
  const raw = Buffer.from(await res.arrayBuffer());
  // The export is stored gzip: read it as a client's decoder would.
  const text = (res.headers.get('content-encoding') === 'gzip' && raw.length > 0 ? zlib.gunzipSync(raw) : raw).toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const url = new URL(request.url);
  if (res.headers.get('content-type')?.startsWith('application/json') || res.status === 304) {
    const mismatch = responseMismatch(request.method, url.pathname, res.status, body);
    if (mismatch) throw new Error(`response does not match /openapi.json: ${mismatch}`);
  }
  return { status: res.status, headers: res.headers, body: body as any, text };
}

/** A test app with the bundled catalogue (websites, currencies, fee chains) and one account with a key. */
export async function testApp(deps: Omit<AppDeps, 'db'> = {}): Promise<TestApp> {
  const db = await testDatabase();
  await importCatalogue(db.prisma, dataDir);
  const { key } = await createAccount(db, { credits: 1000n });
  const app = createApp({ db, ...deps });
  const t: TestApp = {
    db,
    app,
    key,
    auth: () => ({ Authorization: `Bearer ${key}` }),
    get: (p, headers = {}) => call(app, new Request(`http://test${p}`, { headers })),
    post: (p, body, headers = {}) =>
      call(
        app,
        new Request(`http://test${p}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...headers },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
      ),
    gql: (query, variables = {}, headers = {}) =>
      call(
        app,
        new Request('http://test/graphql', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json', ...headers },
          body: JSON.stringify({ query, variables }),
        }),
      ),
    close: async () => {
      await app.close();
      await db.destroy();
    },
  };
  return t;
}

/** An observation with defaults: item `name`, BUFF163 direct ask in CNY at 00:00 UTC 2026-07-16. */
export function obs(name: string, over: Partial<Omit<QuoteObservation, 'price'>> & { price?: string | null } = {}): QuoteObservation {
  const { price, ...rest } = over;
  return {
    appId: '730',
    marketHashName: name,
    marketCode: 'BUFF163',
    providerCode: 'BUFF163',
    side: 'ask',
    currencyCode: 'CNY',
    quantity: 5,
    isQuantityMinimum: false,
    isAllItemsSamePrice: false,
    observedAt: new Date('2026-07-16T00:00:00Z'),
    ...rest,
    price: price === undefined ? toMoney('10') : price === null ? null : toMoney(price),
  };
}

export { ingestQuotes };
