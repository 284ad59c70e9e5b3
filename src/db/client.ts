/**
 * The one place that knows which database we run on: embedded PGlite (default, data in a
 * directory, no server) or a PostgreSQL server through @prisma/adapter-pg when `DATABASE_URL` is set.
 * Both use the same schema, migrations and generated Prisma client.
 */
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations } from './migrate.js';

/** A connected database: the Prisma client plus what the service needs to know about it. */
export interface Database {
  prisma: PrismaClient;
  kind: 'pglite' | 'postgres';
  /**
   * Runs one SQL statement on the raw driver (pg pool or PGlite), bypassing Prisma's per-query
   * overhead: for the hot read paths (key lookup, quotes). Rows as the driver returns them; cast
   * numerics to text in SQL. Counted in queryCount().
   */
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Number of SQL statements sent since start (for query-count assertions and metrics). */
  queryCount(): number;
  /**
   * Runs `work` only if no other process (PostgreSQL: a session advisory lock on a dedicated
   * connection; PGlite: this process, the only one that can open it) holds the lock `name`.
   * Returns `{ acquired: false }` at once when it is held.
   */
  withLock<T>(name: string, work: () => Promise<T>): Promise<{ acquired: true; result: T } | { acquired: false }>;
  close(): Promise<void>;
}

/** Where to connect: a PostgreSQL URL, or a PGlite data directory (`memory://` for in-memory). */
export type DatabaseTarget = { url: string } | { pgliteDir: string };

/**
 * Opens the database and applies pending migrations (prisma/migrations, see migrate.ts).
 * Throws when the server cannot be reached or a migration fails.
 */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  let adapter;
  let kind: Database['kind'];
  let closeDriver: () => Promise<void>;
  let raw: <T>(sql: string, params: unknown[]) => Promise<T[]>;
  let withLock: Database['withLock'];
  if ('url' in target) {
    const pool = new pg.Pool({ connectionString: target.url, max: 10 });
    pool.on('error', () => {}); // idle client lost (server restart): the pool replaces it
    adapter = new PrismaPg(pool);
    kind = 'postgres';
    raw = async <T>(sql: string, params: unknown[]) => (await pool.query(sql, params)).rows as T[];
    closeDriver = () => pool.end();
    withLock = async (name, work) => {
      const client = await pool.connect();
      try {
        const [row] = (await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS ok`, [name])).rows;
        if (!row?.ok) return { acquired: false };
        try {
          return { acquired: true, result: await work() };
        } finally {
          await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [name]);
        }
      } finally {
        client.release();
      }
    };
  } else {
    const dir = target.pgliteDir;
    const release = dir.startsWith('memory://') ? () => {} : lockDirectory(dir);
    let pglite: PGlite;
    try {
      pglite = new PGlite(dir);
      await pglite.waitReady;
    } catch (e) {
      release();
      throw e;
    }
    adapter = new PrismaPGlite(pglite);
    kind = 'pglite';
    raw = async <T>(sql: string, params: unknown[]) => (await pglite.query<T>(sql, params)).rows;
    closeDriver = async () => {
      await pglite.close();
      release();
    };
    const held = new Set<string>();
    withLock = async (name, work) => {
      if (held.has(name)) return { acquired: false };
      held.add(name);
      try {
        return { acquired: true, result: await work() };
      } finally {
        held.delete(name);
      }
    };
  }
  let count = 0;
  const prisma = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  prisma.$on('query', () => {
    count += 1;
  });
  await applyMigrations(prisma);
  return {
    prisma,
    kind,
    query: <T>(sql: string, params: unknown[] = []) => {
      count += 1;
      return raw<T>(sql, params);
    },
    queryCount: () => count,
    withLock,
    async close() {
      await prisma.$disconnect();
      await closeDriver();
    },
  };
}

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt it.
 * Takes `<dir>/quotegate.lock` (holding the pid) and returns its release; a lock left by a dead process
 * is taken over. Throws when a live process holds it.
 */
function lockDirectory(dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'quotegate.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(fs.readFileSync(file, 'utf8'));
      let alive = false;
      try {
        process.kill(pid, 0);
        alive = true;
      } catch {
        alive = false;
      }
      if (alive) {
        throw new Error(
          `the embedded database ${dir} is in use by process ${pid} (a running service?). Stop it first, ` +
            'or run the service on PostgreSQL (DATABASE_URL) so several processes can share it.',
        );
      }
      fs.rmSync(file, { force: true });
    }
  }
  throw new Error(`could not lock ${dir}`);
}
