/**
 * The raw-driver statement interface shared by the database (src/db/client.ts) and the code that runs SQL on it
 * or in one of its transactions (migrations, quotes/ingestion.ts). Kept apart from client.ts so that migrate.ts,
 * which client.ts runs at open, needs no import of it.
 */
import type { PrismaClient } from '../generated/prisma/client.js';

/**
 * Statements on the raw driver (pg or PGlite): the whole database (`Database`, each statement on its own) or one
 * transaction (`Database.transaction`). `query` returns the rows as the driver returns them (int4 and boolean as
 * numbers and booleans, timestamps as Date; cast numerics and int8 to text in SQL); `execute` the number of rows
 * the statement inserted, updated or deleted. Both throw the driver's error.
 */
export interface Sql {
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  execute(sql: string, params?: unknown[]): Promise<number>;
}

/**
 * `Sql` on a Prisma client or interactive transaction, for the callers of raw-SQL functions (quotes/ingestion.ts,
 * quotes/changes.ts) that already hold a Prisma transaction. Rows are then as Prisma returns them (Decimal, BigInt).
 */
export function prismaSql(prisma: Pick<PrismaClient, '$queryRawUnsafe' | '$executeRawUnsafe'>): Sql {
  return {
    query: <T>(sql: string, params: unknown[] = []) => prisma.$queryRawUnsafe<T[]>(sql, ...params),
    execute: (sql: string, params: unknown[] = []) => prisma.$executeRawUnsafe(sql, ...params),
  };
}

/** `Sql` on the whole database plus its transactions (`Database.transaction`, documented there). */
export interface SqlDatabase extends Sql {
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
}
