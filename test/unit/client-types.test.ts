/**
 * The TypeScript client's generated files (clients/typescript/openapi.json and src/schema.ts) are what the served
 * /openapi.json generates now: a contract change without `npm run client:generate` fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/lib/paths.js';
import { clientFiles } from '../../clients/typescript/scripts/files.js';

describe('the TypeScript client', () => {
  it('is generated from the current OpenAPI document (run `npm run client:generate` when this fails)', async () => {
    for (const [file, text] of Object.entries(await clientFiles())) {
      expect(fs.readFileSync(path.join(projectRoot, 'clients/typescript', file), 'utf8'), file).toBe(text);
    }
  });
});
