/** Checks live responses against the served OpenAPI document (ajv, JSON Schema 2020-12). */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { openApiDocument } from '../../src/openapi/document.js';

const doc = openApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>> };
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(doc, 'openapi');
const templates = Object.keys(doc.paths).map((p) => ({ template: p, pattern: new RegExp('^' + p.replace(/\{[^}]+\}/g, '[^/]+') + '/?$') }));
const compiled = new Map<string, ValidateFunction>();

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * Null when the response matches the document (or is outside it: /graphql, /metrics, unknown
 * paths); otherwise a description of every mismatch.
 */
export function responseMismatch(method: string, path: string, status: number, body: unknown): string | null {
  const t = templates.find((x) => x.pattern.test(path));
  if (!t) return null;
  const op = doc.paths[t.template]![method.toLowerCase()];
  if (!op) return null;
  const response = op.responses[String(status)];
  if (!response) return `${method} ${t.template}: status ${status} is not documented`;
  if (!response.content) return body === undefined ? null : `${method} ${t.template} ${status}: documented without a body`;
  const key = `${method} ${t.template} ${status}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi#/${pointer('paths', t.template, method.toLowerCase(), 'responses', String(status), 'content', 'application/json', 'schema')}` });
    compiled.set(key, validate);
  }
  return validate(body) ? null : `${key}: ${ajv.errorsText(validate.errors)}`;
}
