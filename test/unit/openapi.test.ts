import net from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openApiDocument, catalogueExtension } from '../../src/openapi/document.js';
import { TAGS } from '../../src/operations/docs.js';
import { OPERATIONS } from '../../src/operations/index.js';
import { ENDPOINTS, endpoint } from '../../src/catalogue/endpoints.js';
import { ROUTES } from '../../src/rest/routes.js';
import * as ex from '../../src/operations/examples.js';
import { formatFindings, redoclyFindings, spectralFindings, type LintFinding } from '../helpers/openapi-lint.js';

type Doc = {
  openapi: string;
  info: Record<string, any>;
  servers: { url: string; description?: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, any> };
};
const doc = () => openApiDocument() as unknown as Doc;
const operations = (d: Doc) => Object.entries(d.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));
const pointer = (...parts: string[]) => '#/' + parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

describe('GET /openapi.json document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(openApiDocument() as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists every REST route once, each with its catalogue row as x-quotegate and its security', () => {
    const d = doc();
    expect(d.openapi).toBe('3.1.0');
    const ops = operations(d);
    expect(ops.map((o) => `${o.method} ${o.path}`).sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    for (const { path, method, op } of ops) {
      const row = ENDPOINTS.find((e) => e.path === path && e.method === method)!;
      expect(op.operationId).toBe(row.operationId);
      expect(op['x-quotegate']).toEqual(catalogueExtension(row));
      expect(op.security.length > 0).toBe(row.roles.includes('user'));
      expect(op.responses['200']).toBeDefined();
    }
    expect(d.paths['/prices/batch']!.post.requestBody.content['application/json'].schema).toBeDefined();
  });
});

describe('/openapi.json for people (src/operations/*, src/operations/examples.ts)', () => {
  it('every operation has a tag of the document, a summary and a description, from its operation file', () => {
    const d = doc();
    const tagNames = d.tags.map((t) => t.name);
    expect(tagNames).toEqual(TAGS.map((t) => t.name));
    for (const t of d.tags) expect(t.description.length, t.name).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const { path, method, op } of operations(d)) {
      const where = `${method} ${path} (${op.operationId})`;
      if (!(op.tags?.length === 1 && tagNames.includes(op.tags[0]))) missing.push(`${where}: no tag of the document`);
      if (!(typeof op.summary === 'string' && op.summary.length >= 5 && !op.summary.endsWith('.'))) missing.push(`${where}: no summary`);
      if (!(typeof op.description === 'string' && op.description.length >= 40)) missing.push(`${where}: no description`);
    }
    expect(missing).toEqual([]);
    // Every operation of the registry is documented, and nothing else.
    expect(operations(d).map((o) => o.op.operationId as string).sort()).toEqual(OPERATIONS.map((o) => o.id).sort());
    // Every tag is used.
    expect(new Set(operations(d).map((o) => o.op.tags[0])).size).toBe(TAGS.length);
  });

  it('every parameter has a description and an example; every named schema, request body and JSON success response an example', () => {
    const d = doc();
    const missing: string[] = [];
    for (const { path, method, op } of operations(d)) {
      for (const p of op.parameters ?? []) {
        if (p.example === undefined) missing.push(`${method} ${path} ${p.in} ${p.name}: no example`);
        if (!p.description) missing.push(`${method} ${path} ${p.in} ${p.name}: no description`);
      }
      for (const media of Object.values<any>(op.requestBody?.content ?? {})) if (media.example === undefined) missing.push(`${method} ${path}: request body without example`);
      const ok = op.responses['200'].content ?? {};
      if (ok['application/json'] && ok['application/json'].example === undefined) missing.push(`${method} ${path}: 200 without example`);
    }
    for (const [id, schema] of Object.entries(d.components.schemas)) if (!(Array.isArray(schema.examples) && schema.examples.length > 0)) missing.push(`schema ${id}: no example`);
    expect(missing).toEqual([]);
    // No example is kept for a schema the document does not have.
    expect(Object.keys(ex.SCHEMA_EXAMPLES).filter((id) => !d.components.schemas[id])).toEqual([]);
  });

  it('every example is valid against its own schema (JSON Schema 2020-12, formats checked)', () => {
    const d = doc();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    ajv.addSchema(d, 'openapi');
    const invalid: string[] = [];
    const check = (where: string, schemaPointer: string, value: unknown) => {
      const validate = ajv.compile({ $ref: `openapi${schemaPointer}` });
      if (!validate(value)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    };
    for (const [id, schema] of Object.entries(d.components.schemas)) for (const e of schema.examples ?? []) check(`schema ${id}`, pointer('components', 'schemas', id), e);
    for (const { path, method, op } of operations(d)) {
      const m = method.toLowerCase();
      (op.parameters ?? []).forEach((p: any, i: number) => check(`${method} ${path} ${p.name}`, pointer('paths', path, m, 'parameters', String(i), 'schema'), p.example));
      for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) check(`${method} ${path} body`, pointer('paths', path, m, 'requestBody', 'content', type, 'schema'), media.example);
      for (const [status, response] of Object.entries<any>(op.responses))
        for (const [type, media] of Object.entries<any>(response.content ?? {}))
          if (media.example !== undefined) check(`${method} ${path} ${status}`, pointer('paths', path, m, 'responses', status, 'content', type, 'schema'), media.example);
    }
    expect(invalid).toEqual([]);
  });

  it('examples are the real data: the item, market codes and currencies of the bundled catalogue; GET /endpoints rows as served', async () => {
    const fs = await import('node:fs');
    const websites = JSON.parse(fs.readFileSync(new URL('../../data/websites.json', import.meta.url), 'utf8')) as { websites: { code: string }[] };
    const codes = new Set(websites.websites.map((w) => w.code));
    expect(codes.has('BUFF163')).toBe(true);
    const d = doc();
    const seen = new Set<string>();
    const walk = (v: unknown, key?: string) => {
      if (Array.isArray(v)) v.forEach((x) => walk(x, key));
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
      else if (typeof v === 'string' && /^[A-Z0-9_]+$/.test(v) && (key === 'market_code' || key === 'code' || key === 'website_code')) seen.add(v);
    };
    for (const schema of Object.values(d.components.schemas)) walk(schema.examples);
    for (const { op } of operations(d)) walk(op.responses['200'].content?.['application/json']?.example);
    const unknown = [...seen].filter((c) => !codes.has(c) && c !== 'CSCP' && !/^[A-Z]{3}$/.test(c));
    expect(unknown).toEqual([]);
    expect(ex.ITEM_PRICES.market_hash_name).toBe('AK-47 | Redline (Field-Tested)');
    for (const row of ex.ENDPOINTS) expect(row).toEqual(catalogueExtension(ENDPOINTS.find((e) => e.method === row.method && e.path === row.path)!));
    expect(ex.ENDPOINTS.length).toBeGreaterThan(0);
    expect(endpoint('listEndpoints').path).toBe('/endpoints');
  });

  it('no integer carries the safe-integer range as a bound (zod renders z.int() so; those are not rules of the API)', () => {
    const found: string[] = [];
    const walk = (v: unknown, at: string) => {
      if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}/${i}`));
      else if (v && typeof v === 'object')
        for (const [k, x] of Object.entries(v)) {
          if ((k === 'minimum' || k === 'maximum') && Math.abs(x as number) === Number.MAX_SAFE_INTEGER) found.push(`${at}/${k}`);
          walk(x, `${at}/${k}`);
        }
    };
    walk(openApiDocument(), '#');
    expect(found).toEqual([]);
    expect(doc().components.schemas.CreditMeta.properties.cost).toMatchObject({ type: 'integer', minimum: 0 });
  });

  it('servers, contact and licence: `/` (relative to the document) by default; PUBLIC_BASE_URL when it is set', () => {
    const d = doc();
    expect(d.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    expect(d.info.contact).toMatchObject({ name: 'Quotegate' });
    expect(d.info.license).toMatchObject({ name: expect.stringContaining('Proprietary'), identifier: expect.stringMatching(/^LicenseRef-/) });
    const configured = openApiDocument({ serverUrl: 'https://prices.quotegate.test/api' }) as unknown as Doc;
    expect(configured.servers).toEqual([{ url: 'https://prices.quotegate.test/api', description: 'This service' }]);
    expect(configured.info.contact).toEqual({ name: 'Quotegate', url: 'https://prices.quotegate.test/api/' });
    // The rest is the same document.
    expect({ ...configured, servers: null, info: null }).toEqual({ ...d, servers: null, info: null });
  });
});

/**
 * Findings accepted on purpose, each with its reason. Redocly's `operation-4xx-response` asks every operation for a
 * 4XX answer; these four have none: they take no parameter and no credential, and the spec gives them none (GET
 * /status: 503 only; /health, /config, /endpoints: none), so documenting one would be untrue.
 */
const ACCEPTED: { linter: LintFinding['linter']; rule: string; at: string }[] = ['/config', '/endpoints', '/health', '/status'].map((p) => ({
  linter: 'redocly',
  rule: 'operation-4xx-response',
  at: pointer('paths', p, 'get', 'responses'),
}));

describe('/openapi.json passes the linters people use (Redocly recommended, Spectral spectral:oas), offline', () => {
  // Any use of the network is recorded and refused: global fetch (Redocly's resolver) and every TCP connection
  // (node-fetch in Spectral's resolver, undici).
  const calls: string[] = [];
  beforeEach(() => {
    calls.length = 0;
    vi.stubGlobal('fetch', (input: unknown) => {
      calls.push(`fetch ${String(input)}`);
      return Promise.reject(new Error(`the linters must not use the network (fetch ${String(input)})`));
    });
    vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
      calls.push(`connect ${JSON.stringify(args[0])}`);
      throw new Error('the linters must not use the network');
    });
  });
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  const split = (findings: LintFinding[]) => {
    const accepted = findings.filter((f) => ACCEPTED.some((a) => a.linter === f.linter && a.rule === f.rule && a.at === f.at));
    return { accepted, rest: findings.filter((f) => !accepted.includes(f)) };
  };

  it.each([
    ['default (relative server)', {}],
    ['with PUBLIC_BASE_URL', { serverUrl: 'https://prices.quotegate.test' }],
  ])('Redocly `recommended`: no error, no warning (%s)', async (_name, opts) => {
    const { accepted, rest } = split(await redoclyFindings(openApiDocument(opts)));
    expect(rest, formatFindings(rest)).toEqual([]);
    // Each accepted finding still occurs: an exception that no longer applies is removed from ACCEPTED.
    expect(accepted.map((f) => f.at).sort()).toEqual(ACCEPTED.filter((a) => a.linter === 'redocly').map((a) => a.at).sort());
    expect(calls).toEqual([]);
  }, 60_000);

  it.each([
    ['default (relative server)', {}],
    ['with PUBLIC_BASE_URL', { serverUrl: 'https://prices.quotegate.test' }],
  ])('Spectral `spectral:oas`: no finding at all (%s)', async (_name, opts) => {
    const findings = await spectralFindings(openApiDocument(opts));
    expect(findings, formatFindings(findings)).toEqual([]);
    expect(calls).toEqual([]);
  }, 60_000);

  it('the network guard works: a remote $ref makes both linters reach for the network, and it is refused', async () => {
    const remote = structuredClone(openApiDocument()) as unknown as Doc;
    remote.components.schemas.Remote = { $ref: 'https://schemas.quotegate.test/remote.json' };
    await redoclyFindings(remote).catch(() => undefined);
    expect(calls.some((c) => c.includes('schemas.quotegate.test'))).toBe(true);
    calls.length = 0;
    await spectralFindings(remote).catch(() => undefined);
    expect(calls.length).toBeGreaterThan(0);
  }, 60_000);

  it('the lint helpers do report: a document stripped of what people need fails both', async () => {
    const bare = structuredClone(openApiDocument()) as unknown as Doc;
    delete (bare as Partial<Doc>).servers;
    delete bare.paths['/prices']!.get.summary;
    delete bare.paths['/prices']!.get.description;
    delete bare.paths['/prices']!.get.tags;
    bare.components.schemas.CreditMeta.examples = [{ cost: -1, remaining: 3 }];
    bare.paths['/prices']!.get.responses['200'].content['application/json'].example = { data: null };
    const redocly = (await redoclyFindings(bare)).map((f) => `${f.rule} ${f.at}`);
    expect(redocly).toEqual(expect.arrayContaining(['no-empty-servers #/openapi', 'operation-summary #/paths/~1prices/get/summary', expect.stringMatching(/^no-invalid-schema-examples #\/components\/schemas\/CreditMeta\/examples/), expect.stringMatching(/^no-invalid-media-type-examples #\/paths\/~1prices\/get\/responses\/200/)]));
    const spectral = (await spectralFindings(bare)).map((f) => `${f.rule} ${f.at}`);
    expect(spectral).toEqual(expect.arrayContaining(['oas3-api-servers #', 'operation-description #/paths/~1prices/get', 'operation-tags #/paths/~1prices/get', expect.stringMatching(/^oas3-valid-media-example #\/paths\/~1prices\/get\/responses\/200/)]));
    expect(calls).toEqual([]);
  }, 60_000);
});
