import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { printSortedSchema } from '../../src/graphql/schema.js';
import { projectRoot } from '../../src/lib/paths.js';
import { diffMigrationsToSchema } from '../../scripts/schema-engine.js';

describe('generated files stay in step with the code', () => {
  it('schema.graphql equals the printed Pothos schema (run `npm run schema:print` when this fails)', () => {
    const onDisk = fs.readFileSync(path.join(projectRoot, 'schema.graphql'), 'utf8');
    expect(onDisk).toBe(printSortedSchema());
  });

  it('prisma/migrations build exactly schema.prisma (run `npm run db:migration -- <name>` when this fails)', async () => {
    expect(await diffMigrationsToSchema()).toBe('');
  });
});
