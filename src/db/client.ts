/**
 * The one place that knows which database we run on: embedded PGlite (default, data in a
 * directory, no server) or a PostgreSQL server through @prisma/adapter-pg when `DATABASE_URL` is set.
 * Both use the same schema, migrations and generated Prisma client.
 */
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import fs from 'node:fs';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations } from './migrate.js';

/** A connected database: the Prisma client plus what the service needs to know about it. */
export interface Database {
  prisma: PrismaClient;
  kind: 'pglite' | 'postgres';
  /** Number of SQL statements sent since start (for query-count assertions and metrics). */
  queryCount(): number;
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
  if ('url' in target) {
    adapter = new PrismaPg({ connectionString: target.url, max: 10 });
    kind = 'postgres';
    closeDriver = async () => {};
  } else {
    const dir = target.pgliteDir;
    if (!dir.startsWith('memory://')) fs.mkdirSync(dir, { recursive: true });
    const pglite = new PGlite(dir);
    await pglite.waitReady;
    adapter = new PrismaPGlite(pglite);
    kind = 'pglite';
    closeDriver = () => pglite.close();
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
    queryCount: () => count,
    async close() {
      await prisma.$disconnect();
      await closeDriver();
    },
  };
}
