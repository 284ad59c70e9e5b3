/**
 * Applies `prisma/migrations/<name>/migration.sql` in name order through the app's own driver,
 * recording each in `_quotegate_migrations` (name + SHA-256) so a second start applies nothing.
 * Needed because the Prisma CLI cannot download its schema engine here (stack notes).
 * Throws when an applied migration's file changed since it was applied.
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { SqlDatabase } from './sql.js';
import { projectRoot } from '../lib/paths.js';

/** Absolute path of prisma/migrations in this checkout. */
const migrationsDir = path.join(projectRoot, 'prisma', 'migrations');

/** Names of migrations applied by this call (empty when the database was up to date). */
export async function applyMigrations(db: SqlDatabase, dir = migrationsDir): Promise<string[]> {
  await db.execute(
    `CREATE TABLE IF NOT EXISTS "_quotegate_migrations" (
       name text PRIMARY KEY, sha256 char(64) NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  const rows = await db.query<{ name: string; sha256: string }>(`SELECT name, sha256 FROM "_quotegate_migrations"`);
  const applied = new Map(rows.map((r) => [r.name, r.sha256]));
  const names = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  const done: string[] = [];
  for (const name of names) {
    const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
    const sha = crypto.createHash('sha256').update(sql).digest('hex');
    const known = applied.get(name);
    if (known !== undefined) {
      if (known !== sha) throw new Error(`migration ${name} changed after it was applied`);
      continue;
    }
    await db.transaction(async (tx) => {
      // Serialise concurrent starts of several replicas on one server.
      await tx.execute(`SELECT pg_advisory_xact_lock(727300001)`);
      const again = await tx.query(`SELECT 1 FROM "_quotegate_migrations" WHERE name = $1`, [name]);
      if (again.length > 0) return;
      for (const statement of splitStatements(sql)) await tx.execute(statement);
      await tx.execute(`INSERT INTO "_quotegate_migrations" (name, sha256) VALUES ($1, $2)`, [name, sha]);
      done.push(name);
      // Not bounded: a migration may rebuild a large table, and a replica starting meanwhile waits for it here.
    }, { timeoutMs: 0 });
  }
  return done;
}

/** Splits a migration script into statements (no dollar-quoted bodies are used in our migrations). */
function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
