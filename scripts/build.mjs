/**
 * Build steps that are skipped when already done, shared by `npm start`, `npm run build` and bin/quotegate.js
 * (plain JavaScript: it runs before anything is compiled).
 *
 * - Prisma client (src/generated): `prisma generate` runs only when the stamp
 *   node_modules/.cache/quotegate/prisma-generate.json does not hold the SHA-256 of the schema, the Prisma
 *   config and the installed prisma and @prisma/client versions, or src/generated/prisma/client.ts is missing.
 *   The stamp lives in node_modules, so a fresh `npm ci` generates again.
 * - Compiled service (dist/): `tsc -p tsconfig.build.json` (incremental, build info in dist/) runs only when a
 *   file under src/ or a tsconfig is newer than dist/.build-stamp, whose modification time is set to the
 *   moment the last successful build started (so an edit made during a build counts as newer).
 *
 * Command line: `node scripts/build.mjs [--generate] [--force]` does both steps (`--generate`: the Prisma client
 * only; `--force`: regardless of the stamps) and says on stderr what it did or skipped; exit code 1 when a step
 * fails.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root (the folder holding package.json). */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const GENERATE_STAMP = path.join(root, 'node_modules', '.cache', 'quotegate', 'prisma-generate.json');
const GENERATED_CLIENT = path.join(root, 'src', 'generated', 'prisma', 'client.ts');
const DIST_STAMP = path.join(root, 'dist', '.build-stamp');
const DIST_MAIN = path.join(root, 'dist', 'src', 'cli', 'main.js');
const BUILD_INFO = path.join(root, 'dist', 'tsconfig.build.tsbuildinfo');

function version(pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return 'missing';
  }
}

/** The SHA-256 (hex) of what the generated Prisma client depends on. */
function generateKey() {
  const h = crypto.createHash('sha256');
  for (const f of ['prisma/schema.prisma', 'prisma.config.ts']) h.update(f).update('\0').update(fs.readFileSync(path.join(root, f))).update('\0');
  h.update(`prisma@${version('prisma')} @prisma/client@${version('@prisma/client')}`);
  return h.digest('hex');
}

/**
 * The environment `npm start` sets for the service besides NODE_ENV (`NAME=value` before `node` in its script, e.g.
 * MALLOC_ARENA_MAX), for the benchmarks to start the service the same way.
 */
export function serviceEnv() {
  const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const m = /&&((?: [A-Z_]+=\S+)*) node\b/.exec(start);
  const env = {};
  for (const pair of (m?.[1] ?? '').trim().split(' ').filter(Boolean)) {
    const [name, value] = pair.split('=');
    if (name !== 'NODE_ENV') env[name] = value;
  }
  return env;
}

/**
 * The Node/V8 flags `npm start` serves with, read from its script in package.json (the one place they are written),
 * for the benchmarks to start the service the same way. Throws when the script no longer has the
 * `node <flags> dist/src/cli/main.js` form.
 */
export function serviceNodeFlags() {
  const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const m = /\bnode((?: --[\w-]+(?:=\S+)?)*) dist\/src\/cli\/main\.js\b/.exec(start);
  if (!m) throw new Error(`package.json scripts.start does not run \`node <flags> dist/src/cli/main.js\`: ${start}`);
  return m[1].trim().split(' ').filter(Boolean);
}

/** True when src/generated holds the client of the current schema (the stamp matches and the client exists). */
export function prismaClientIsCurrent() {
  if (!fs.existsSync(GENERATED_CLIENT)) return false;
  try {
    return JSON.parse(fs.readFileSync(GENERATE_STAMP, 'utf8')).key === generateKey();
  } catch {
    return false;
  }
}

/** Runs a command in the project root, its output captured; returns its exit status and output. */
function run(command, args, env = {}) {
  const r = spawnSync(command, args, { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

const bin = (name) => path.join(root, 'node_modules', '.bin', name);

/**
 * Runs `prisma generate` (the same environment as `npm run generate`) unless the client is current or `force`.
 * Returns 'skipped' or 'generated'; throws with Prisma's output when it fails.
 */
export function ensurePrismaClient({ force = false } = {}) {
  if (!force && prismaClientIsCurrent()) return 'skipped';
  const key = generateKey();
  const r = run(bin('prisma'), ['generate'], { CHECKPOINT_DISABLE: '1', PRISMA_HIDE_UPDATE_MESSAGE: '1', PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false' });
  if (!r.ok) throw new Error(`prisma generate failed:\n${r.output}`);
  fs.mkdirSync(path.dirname(GENERATE_STAMP), { recursive: true });
  fs.writeFileSync(GENERATE_STAMP, JSON.stringify({ key }));
  return 'generated';
}

/** The newest modification time (ms) of the files under `dir` (recursive), 0 when it is empty or absent. */
function newestUnder(dir) {
  let newest = 0;
  const entries = fs.readdirSync(dir, { withFileTypes: true, recursive: true });
  for (const e of entries) {
    if (!e.isFile()) continue;
    const m = fs.statSync(path.join(e.parentPath ?? e.path, e.name)).mtimeMs;
    if (m > newest) newest = m;
  }
  return newest;
}

/** True when dist/ holds a build of the current sources (nothing under src/ nor a tsconfig is newer than the stamp). */
export function distIsFresh() {
  const stamp = fs.statSync(DIST_STAMP, { throwIfNoEntry: false });
  if (!stamp || !fs.existsSync(DIST_MAIN)) return false;
  const sources = Math.max(
    newestUnder(path.join(root, 'src')),
    ...['tsconfig.json', 'tsconfig.build.json'].map((f) => fs.statSync(path.join(root, f)).mtimeMs),
  );
  return sources < stamp.mtimeMs;
}

/**
 * Compiles src/ into dist/ with tsc (incremental) unless dist is fresh or `force`. Returns 'skipped' or
 * 'compiled'; throws with tsc's output when it fails (the stamp is then left as it was).
 */
export function ensureDist({ force = false } = {}) {
  if (!force && distIsFresh()) return 'skipped';
  const started = new Date();
  // Build info without the files it describes (dist/src deleted by hand) would make tsc emit nothing.
  if (!fs.existsSync(DIST_MAIN)) fs.rmSync(BUILD_INFO, { force: true });
  const r = run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json']);
  if (!r.ok) throw new Error(`tsc failed:\n${r.output}`);
  fs.writeFileSync(DIST_STAMP, `${started.toISOString()}\n`);
  fs.utimesSync(DIST_STAMP, started, started);
  return 'compiled';
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const force = process.argv.includes('--force');
  try {
    let t = Date.now();
    const generated = ensurePrismaClient({ force });
    console.error(`build: prisma client ${generated === 'skipped' ? 'current, generate skipped' : `generated in ${Date.now() - t} ms`}`);
    if (process.argv.includes('--generate')) process.exit(0);
    t = Date.now();
    const compiled = ensureDist({ force });
    console.error(`build: dist ${compiled === 'skipped' ? 'current, tsc skipped' : `compiled in ${Date.now() - t} ms`}`);
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  }
}
