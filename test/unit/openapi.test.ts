import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { openApiDocument, catalogueExtension } from '../../src/openapi/document.js';
import { ENDPOINTS } from '../../src/catalogue/endpoints.js';
import { ROUTES } from '../../src/rest/routes.js';

describe('GET /openapi.json document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(openApiDocument() as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists every REST route once, each with its catalogue row as x-quotegate and its security', () => {
    const doc = openApiDocument() as { openapi: string; paths: Record<string, Record<string, any>> };
    expect(doc.openapi).toBe('3.1.0');
    const ops = Object.entries(doc.paths).flatMap(([p, methods]) => Object.entries(methods).map(([m, op]) => ({ path: p, method: m.toUpperCase(), op })));
    expect(ops.map((o) => `${o.method} ${o.path}`).sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    for (const { path, method, op } of ops) {
      const row = ENDPOINTS.find((e) => e.path === path && e.method === method)!;
      expect(op.operationId).toBe(row.operationId);
      expect(op['x-quotegate']).toEqual(catalogueExtension(row));
      expect(op.security.length > 0).toBe(row.roles.includes('user'));
      expect(op.responses['200']).toBeDefined();
    }
    expect(doc.paths['/prices/batch']!.post.requestBody.content['application/json'].schema).toBeDefined();
  });
});
