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

/** Options of one transaction (`Database.transaction`). */
export interface TransactionOptions {
  /**
   * Longest the transaction may run, in ms, from its start to its commit; 0: no bound (the migrations, which may
   * rebuild a large table and wait for another replica's). Default: the database's (`openDatabase`,
   * TRANSACTION_TIMEOUT_MS).
   */
  timeoutMs?: number;
  /**
   * Background work (a collector's ingestion chunks), which must not hold up requests. On embedded PGlite, where every
   * statement runs on this process's thread over one connection, the transaction begins once no request's statement
   * is running or waiting (or after BACKGROUND_MAX_WAIT_MS, 100 ms, so it always makes progress), and its own
   * statements do not count as waiting for other background work; a request's statement then waits for at most the
   * one background transaction in flight. On PostgreSQL it changes nothing. Default false.
   */
  background?: boolean;
}

/**
 * A transaction that ran past its bound (`Database.transaction`): `phase` `connect` when no pool connection was free
 * within the wait bound (nothing was sent), `run` when the transaction itself ran longer than its time limit (it was
 * rolled back: nothing of it was written). `limitMs` is the bound that was passed. `code` is `transaction_timeout`.
 */
export class TransactionTimeoutError extends Error {
  readonly code = 'transaction_timeout';
  constructor(
    readonly phase: 'connect' | 'run',
    readonly limitMs: number,
    options?: { cause?: unknown },
  ) {
    super(phase === 'connect' ? `no database connection was free within ${limitMs} ms` : `the transaction ran longer than ${limitMs} ms and was rolled back`, options);
    this.name = 'TransactionTimeoutError';
  }
}

/** `Sql` on the whole database plus its transactions (`Database.transaction`, documented there). */
export interface SqlDatabase extends Sql {
  transaction<T>(work: (tx: Sql) => Promise<T>, opts?: TransactionOptions): Promise<T>;
}
