/**
 * Writes the client's generated files from the service's own OpenAPI document (`npm run client:generate` at the
 * repository root): clients/typescript/openapi.json (the document /openapi.json serves) and
 * clients/typescript/src/schema.ts (its paths and components as TypeScript types, by openapi-typescript).
 * test/unit/client-types.test.ts fails when they are out of date.
 */
import fs from 'node:fs';
import path from 'node:path';
import { clientFiles } from './files.js';

const root = path.join(path.dirname(new URL(import.meta.url).pathname), '..');
for (const [file, text] of Object.entries(await clientFiles())) {
  fs.writeFileSync(path.join(root, file), text);
  console.log(`wrote clients/typescript/${file}`);
}
