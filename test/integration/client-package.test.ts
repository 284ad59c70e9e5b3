/**
 * The TypeScript client as people install it (issue 44, point 6): `npm pack` of clients/typescript (its prepack
 * builds dist/ with tsc), the tarball installed into a clean folder outside the repository with npm, then
 * - the package holds compiled JavaScript, declarations and the README, and no TypeScript source;
 * - a TypeScript consumer type-checks against the installed declarations (strict, NodeNext), types not `any`;
 * - a plain `node` script (no tsx, no loader) imports it and, against a served instance over HTTP, reads a price
 *   and follows the live change stream (`transport: 'stream'`: no fallback) while this test ingests changes.
 * npm installs the package's dependencies from its cache (the repository's `npm ci` filled it) or the registry.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/lib/paths.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { runExportSnapshots } from '../../src/exports/exports.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { listen } from '../helpers/live.js';

const run = promisify(execFile);
const NAME = 'AK-47 | Packaged (Field-Tested)';
const OTHER = 'AWP | Packaged (Minimal Wear)';
const at = (h: number) => new Date(Date.UTC(2026, 6, 16, h));

/** This process's environment without npm's per-run settings (the suite may itself run under `npm test`). */
const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

let t: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
let work: string;
let app: string;
let packed: { filename: string; files: { path: string }[] };

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-client-package-'));
  const out = await run('npm', ['pack', '--json', '--pack-destination', work, '-w', 'clients/typescript'], { cwd: projectRoot, env: cleanEnv(), maxBuffer: 16 << 20 });
  // npm prints the prepack build's output before the JSON array.
  packed = (JSON.parse(out.stdout.slice(out.stdout.indexOf('\n[') + 1)) as (typeof packed)[])[0]!;
  app = path.join(work, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, packed.filename)], { cwd: app, env: cleanEnv(), maxBuffer: 16 << 20 });

  t = await testApp();
  server = await listen(t.app);
  await ingestBatch(t.db, [obs(NAME, { price: '100', observedAt: at(0) }), obs(NAME, { side: 'bid', price: '90', observedAt: at(0) }), obs(OTHER, { price: '7.25', observedAt: at(0) })]);
  await runExportSnapshots(t.db, { sides: ['all'] });
});
afterAll(async () => {
  await server?.close();
  await t?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('the packed TypeScript client', () => {
  it('holds compiled JavaScript with declarations and a README, no TypeScript source, and is not private', () => {
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts', 'dist/rate-limit.js']));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const installed = path.join(app, 'node_modules', '@quotegate', 'client');
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.private).toBeUndefined();
    expect(manifest.exports).toMatchObject({ '.': { types: './dist/index.d.ts', import: './dist/index.js' } });
    expect(fs.readFileSync(path.join(installed, 'README.md'), 'utf8')).toContain('follow(');
  });

  it('type-checks a consumer against the installed declarations (strict, NodeNext)', async () => {
    fs.writeFileSync(
      path.join(app, 'consumer.ts'),
      `import { createQuotegateClient, quoteKey, type FollowStep, type Quote, type RateLimitState } from '@quotegate/client';
const client = createQuotegateClient({ baseUrl: 'http://localhost:4000', apiKey: 'qg_x' });
export async function price(name: string): Promise<string | null | undefined> {
  const { data, error, response } = await client.api.GET('/prices', { params: { query: { market_hash_name: name } } });
  if (error) throw new Error(\`\${response.status} \${error.error.code}: \${error.error.message}\`);
  const ask: Quote | undefined = data?.data.markets.find((q) => q.side === 'ask');
  // @ts-expect-error amounts are decimal strings, never numbers (the declarations are real types, not any)
  const wrong: number = ask!.market_price_amount;
  void wrong;
  const limits: RateLimitState[] = client.rateLimits;
  void limits;
  return ask?.market_price_amount;
}
export async function first(): Promise<number> {
  for await (const step of client.follow({ transport: 'auto', intervalMs: 5000 })) {
    const s: FollowStep = step;
    return s.copy.quotes.has(quoteKey('a', 'BUFF163', 'ask')) ? 1 : 0;
  }
  return 0;
}
`,
    );
    fs.writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023', 'DOM', 'DOM.Iterable'], types: [], strict: true, noEmit: true },
        files: ['consumer.ts'],
      }),
    );
    const tsc = path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const r = await run(process.execPath, [tsc, '-p', path.join(app, 'tsconfig.json')], { cwd: app }).catch((e: { stdout: string; stderr: string }) => e);
    expect(`${r.stdout}${r.stderr}`).toBe('');
  });

  it('runs from plain node: reads a price, then follow() takes the export and the live stream of changes ingested meanwhile', async () => {
    fs.writeFileSync(
      path.join(app, 'follow.mjs'),
      `import { createQuotegateClient, quoteKey } from '@quotegate/client';
const { QG_URL, QG_KEY, QG_NAME, QG_CHANGES } = process.env;
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const client = createQuotegateClient({ baseUrl: QG_URL, apiKey: QG_KEY });
const { data, response } = await client.api.GET('/prices', { params: { query: { market_hash_name: QG_NAME, markets: 'BUFF163' } } });
out({ kind: 'price', status: response.status, markets: data.data.markets.map((q) => [q.side, q.market_price_amount]), rateLimits: client.rateLimits });
const stop = new AbortController();
let got = 0;
for await (const step of client.follow({ signal: stop.signal, transport: 'stream' })) {
  got += step.changes.length;
  out({ kind: 'step', via: step.via, size: step.copy.quotes.size, ask: step.copy.quotes.get(quoteKey(QG_NAME, 'BUFF163', 'ask'))?.market_price_amount ?? null,
    changes: step.changes.map((c) => [c.market_hash_name, c.side, c.quote ? c.quote.market_price_amount : 'gone']) });
  if (got >= Number(QG_CHANGES)) stop.abort();
}
out({ kind: 'done' });
`,
    );
    const child = spawn(process.execPath, ['follow.mjs'], {
      cwd: app,
      env: { ...cleanEnv(), QG_URL: server.url, QG_KEY: t.key, QG_NAME: NAME, QG_CHANGES: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Record<string, any>[] = [];
    let stderr = '';
    let buffer = '';
    let ingested: Promise<unknown> | null = null;
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = JSON.parse(buffer.slice(0, nl)) as Record<string, any>;
        buffer = buffer.slice(nl + 1);
        lines.push(line);
        // Once the copy is downloaded: three changes in one transaction, which the stream must bring.
        if (line.kind === 'step' && line.via === 'export' && !ingested) {
          ingested = ingestBatch(t.db, [
            obs(NAME, { price: '101.5', observedAt: at(1) }),
            obs(NAME, { side: 'bid', price: null, quantity: 0, observedAt: at(1) }),
            obs(OTHER, { price: '8', observedAt: at(1) }),
          ]);
        }
      }
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    await ingested;
    expect(stderr).toBe('');
    expect(code).toBe(0);

    expect(lines[0]).toMatchObject({ kind: 'price', status: 200, rateLimits: [{ policy: 'getPrices', limit: 120, windowSeconds: 60 }] });
    expect(lines[0]!.markets).toEqual(expect.arrayContaining([['ask', '100'], ['bid', '90']]));
    const steps = lines.filter((l) => l.kind === 'step');
    expect(steps[0]).toMatchObject({ via: 'export', ask: '100', size: 3 });
    const later = steps.slice(1);
    expect(later.length).toBeGreaterThan(0);
    for (const s of later) expect(s.via).toBe('stream');
    expect(later.flatMap((s) => s.changes).sort()).toEqual(
      [
        [NAME, 'ask', '101.5'],
        [NAME, 'bid', null], // delisted: the quote stays, without a price
        [OTHER, 'ask', '8'],
      ].sort(),
    );
    expect(later.at(-1)).toMatchObject({ ask: '101.5', size: 3 });
    expect(lines.at(-1)).toEqual({ kind: 'done' });
  });
});
