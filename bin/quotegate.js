#!/usr/bin/env node
/**
 * The `quotegate` command (package.json `bin`; `npx quotegate <command>` in the clone after `npm ci`).
 * Makes sure the Prisma client is generated for the current schema (scripts/build.mjs, skipped when it is),
 * then runs the CLI (src/cli/main.ts): the compiled dist/src/cli/main.js when dist is up to date with src/
 * (`npm start` and `npm run build` compile it), otherwise the TypeScript source in this process through tsx
 * (a devDependency). Nothing is written to stdout before the CLI runs, so `--json` output stays clean.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { distIsFresh, ensurePrismaClient, root } from '../scripts/build.mjs';

try {
  if (ensurePrismaClient() === 'generated') console.error('quotegate: generated the Prisma client (src/generated)');
} catch (e) {
  console.error(`quotegate: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

// `quotegate collect` runs from its own entry (src/cli/collect.ts): a collector process loads none of the HTTP service.
const collect = process.argv[2] === 'collect';
if (distIsFresh()) {
  if (collect) await (await import(pathToFileURL(path.join(root, 'dist', 'src', 'cli', 'collect.js')).href)).collectMain(process.argv);
  else await import(pathToFileURL(path.join(root, 'dist', 'src', 'cli', 'main.js')).href);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    console.error('quotegate: dist/ is missing or older than src/ and tsx is not installed: run `npm ci` (with dev dependencies) or `npm run build`');
    process.exit(1);
  }
  register();
  if (collect) await (await import(pathToFileURL(path.join(root, 'src', 'cli', 'collect.ts')).href)).collectMain(process.argv);
  else await import(pathToFileURL(path.join(root, 'src', 'cli', 'main.ts')).href);
}
