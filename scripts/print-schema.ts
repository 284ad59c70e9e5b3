/** Writes schema.graphql from the Pothos schema (sorted). test/unit/schema-file.test.ts fails when it is stale. */
import fs from 'node:fs';
import path from 'node:path';
import { printSortedSchema } from '../src/graphql/schema.js';
import { projectRoot } from '../src/lib/paths.js';

fs.writeFileSync(path.join(projectRoot, 'schema.graphql'), printSortedSchema());
console.log('wrote schema.graphql');
