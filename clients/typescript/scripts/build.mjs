/**
 * Builds the package (`npm run build`, and `npm pack` / `npm publish` through `prepack`): removes dist/, then
 * compiles src/ with this folder's tsconfig.json to ES modules with their declarations (dist/*.js, *.d.ts).
 * Plain JavaScript, so it runs before anything is compiled; exit code 1 when tsc fails.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
fs.rmSync(path.join(here, 'dist'), { recursive: true, force: true });
// typescript is a devDependency: in the repository it is hoisted to the root's node_modules.
const tsc = createRequire(path.join(here, 'package.json')).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', path.join(here, 'tsconfig.json')], { stdio: 'inherit' });
process.exit(r.status ?? 1);
