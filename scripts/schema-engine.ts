/**
 * Offline schema diffs with Prisma's schema engine compiled to WebAssembly
 * (`@prisma/schema-engine-wasm`), over an in-memory PGlite shadow database.
 * The Prisma CLI cannot download its native engine on this machine (see the stack notes),
 * so new migrations are written with `npm run db:migration -- <name>` and the drift test
 * uses `diffMigrationsToSchema()`.
 */
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const root = path.resolve(import.meta.dirname, '..');
export const schemaPath = path.join(root, 'prisma', 'schema.prisma');
export const migrationsDir = path.join(root, 'prisma', 'migrations');

/** An in-memory PGlite with the contrib extensions the migrations create (pg_trgm, like src/db/client.ts). */
const pgliteWithExtensions = () => new PGlite({ extensions: { pg_trgm } });

/** The adapter factory whose shadow database (where the engine applies the migrations) loads the extensions too. */
class PrismaPGliteWithExtensions extends PrismaPGlite {
  override connectToShadowDb() {
    return new PrismaPGlite(pgliteWithExtensions()).connect();
  }
}

let loaded = false;
function loadWasm(): void {
  if (loaded) return;
  const require = createRequire(import.meta.url);
  const wasmPath = require
    .resolve('@prisma/schema-engine-wasm')
    .replace(/schema_engine\.js$/, 'schema_engine_bg.wasm');
  const module = new WebAssembly.Module(fs.readFileSync(wasmPath));
  const instance = new WebAssembly.Instance(module, {
    './schema_engine_bg.js': bg as unknown as WebAssembly.ModuleImports,
  });
  (bg as unknown as { __wbg_set_wasm(x: unknown): void }).__wbg_set_wasm(instance.exports);
  (instance.exports as { __wbindgen_start(): void }).__wbindgen_start();
  loaded = true;
}

function migrationList() {
  const dirs = fs.existsSync(migrationsDir)
    ? fs
        .readdirSync(migrationsDir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort()
    : [];
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: fs.readFileSync(path.join(migrationsDir, 'migration_lock.toml'), 'utf8') },
    shadowDbInitScript: '',
    migrationDirectories: dirs.map((name) => ({
      path: name,
      migrationFile: {
        path: 'migration.sql',
        content: { tag: 'ok' as const, value: fs.readFileSync(path.join(migrationsDir, name, 'migration.sql'), 'utf8') },
      },
    })),
  };
}

/** SQL that takes a database built by every migration to `schema.prisma`; '' when they agree. */
export async function diffMigrationsToSchema(): Promise<string> {
  loadWasm();
  const schema = fs.readFileSync(schemaPath, 'utf8');
  const factory = bindMigrationAwareSqlAdapterFactory(new PrismaPGliteWithExtensions(pgliteWithExtensions()));
  const engine = await bg.SchemaEngine.new({ datamodels: [['schema.prisma', schema]] }, () => {}, factory);
  try {
    const result = await engine.diff({
      from: { tag: 'migrations', ...migrationList() },
      to: { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: schema }] },
      script: true,
      exitCode: null,
      filters: { externalTables: [], externalEnums: [] },
    });
    const sql = (result as unknown as { stdout: string }).stdout ?? '';
    return sql.replace(/^-- This is an empty migration\.\s*$/m, '').trim();
  } finally {
    engine.free();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const name = process.argv[2];
  const sql = await diffMigrationsToSchema();
  if (!sql) {
    console.log('migrations already match schema.prisma');
  } else if (!name) {
    console.log(sql);
  } else {
    const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const dir = path.join(migrationsDir, `${stamp}_${name}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'migration.sql'), sql + '\n');
    console.log(`wrote ${path.relative(root, dir)}/migration.sql`);
  }
}
