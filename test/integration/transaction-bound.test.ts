/**
 * `Database.transaction` is bounded (src/db/client.ts, TransactionTimeoutError): a transaction that runs past its
 * time limit fails with TransactionTimeoutError (`run`) and leaves nothing of it written, whatever held it up (a
 * statement waiting on a lock another session keeps, a long statement, the caller awaiting something else); the
 * database goes on serving afterwards. On PostgreSQL (TEST_DATABASE_URL, `npm run test:pg`) also: waiting longer
 * than the bound for a pool connection fails with TransactionTimeoutError (`connect`) and sends nothing. On PGlite
 * (the default) the cases PGlite has are run: a caller past the limit, and a transaction within it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, TransactionTimeoutError, type Database } from '../../src/db/client.js';
import { serverUrl, testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await testDatabase();
  await db.execute(`CREATE TABLE bound_probe (id int PRIMARY KEY, note text NOT NULL)`);
  await db.execute(`INSERT INTO bound_probe (id, note) VALUES (1, 'before')`);
});
afterAll(async () => {
  await db?.destroy();
});

async function notes(): Promise<string[]> {
  return (await db.query<{ note: string }>(`SELECT note FROM bound_probe ORDER BY id`)).map((r) => r.note);
}

/** What the transaction threw (it must throw). */
async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the transaction did not fail');
}

describe('Database.transaction time limit', () => {
  it('commits a transaction that stays within its limit', async () => {
    await db.transaction(async (tx) => {
      await tx.execute(`INSERT INTO bound_probe (id, note) VALUES (2, 'within')`);
    }, { timeoutMs: 10_000 });
    expect(await notes()).toEqual(['before', 'within']);
    await db.execute(`DELETE FROM bound_probe WHERE id = 2`);
  });

  it('a caller that holds the transaction past the limit gets TransactionTimeoutError and nothing is written', async () => {
    // The statement the caller sends after the limit, wrapped (a promise resolved with a promise would adopt it).
    let lateSent!: (sent: { statement: Promise<unknown> }) => void;
    const late = new Promise<{ statement: Promise<unknown> }>((r) => (lateSent = r));
    const e = await failure(
      db.transaction(async (tx) => {
        await tx.execute(`INSERT INTO bound_probe (id, note) VALUES (3, 'half-written')`);
        await tx.execute(`UPDATE bound_probe SET note = 'changed' WHERE id = 1`);
        await new Promise((r) => setTimeout(r, 600)); // the caller awaits something else meanwhile
        const statement = tx.execute(`INSERT INTO bound_probe (id, note) VALUES (4, 'after the limit')`);
        lateSent({ statement });
        await statement;
      }, { timeoutMs: 200 }),
    );
    expect(e).toBeInstanceOf(TransactionTimeoutError);
    expect(e).toMatchObject({ code: 'transaction_timeout', phase: 'run', limitMs: 200 });
    // The caller's statement sent after the limit is refused, not run on a later transaction's connection.
    await expect((await late).statement).rejects.toBeInstanceOf(TransactionTimeoutError);
    expect(await notes()).toEqual(['before']);
    // The database serves on, and the next transaction commits.
    await db.transaction((tx) => tx.execute(`UPDATE bound_probe SET note = 'before' WHERE id = 1`));
    expect(await notes()).toEqual(['before']);
  });
});

describe.runIf(serverUrl)('Database.transaction bounds on PostgreSQL', () => {
  it('a statement waiting on a lock another session holds is cancelled at the limit; nothing of the transaction is written', async () => {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`UPDATE bound_probe SET note = 'held' WHERE id = 1`); // the row stays locked
      const e = await failure(
        db.transaction(async (tx) => {
          await tx.execute(`INSERT INTO bound_probe (id, note) VALUES (5, 'half-written')`);
          await tx.execute(`UPDATE bound_probe SET note = 'waited' WHERE id = 1`); // waits for the holder
        }, { timeoutMs: 300 }),
      );
      expect(e).toBeInstanceOf(TransactionTimeoutError);
      expect(e).toMatchObject({ phase: 'run', limitMs: 300 });
      // No backend of ours is left waiting on the lock: the holder's session is the only one in the transaction.
      const waiting = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      expect(waiting[0]!.n).toBe(0);
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    expect(await notes()).toEqual(['before']);
  });

  it('a single statement longer than the limit is ended by the server; nothing is written', async () => {
    const e = await failure(
      db.transaction(async (tx) => {
        await tx.execute(`INSERT INTO bound_probe (id, note) VALUES (6, 'half-written')`);
        await tx.query(`SELECT pg_sleep(30)`);
      }, { timeoutMs: 300 }),
    );
    expect(e).toBeInstanceOf(TransactionTimeoutError);
    expect(await notes()).toEqual(['before']);
    expect(await db.query<{ one: number }>(`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
  });

  it('waiting for a pool connection longer than the bound fails with TransactionTimeoutError (connect) and sends nothing', async () => {
    const small: Database = await openDatabase({ url: db.url! }, { prisma: false, connectTimeoutMs: 300 });
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    // Every connection of the pool (10) is held by a transaction awaiting the gate.
    const holders = Array.from({ length: 10 }, () => small.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await gate;
    }));
    try {
      await new Promise((r) => setTimeout(r, 200));
      const e = await failure(small.transaction((tx) => tx.execute(`INSERT INTO bound_probe (id, note) VALUES (7, 'never sent')`)));
      expect(e).toBeInstanceOf(TransactionTimeoutError);
      expect(e).toMatchObject({ code: 'transaction_timeout', phase: 'connect', limitMs: 300 });
    } finally {
      open();
      await Promise.all(holders);
      await small.close();
    }
    expect(await notes()).toEqual(['before']);
  });
});
