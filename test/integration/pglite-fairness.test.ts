/**
 * Embedded PGlite runs every statement on the service's own thread over one connection. What keeps requests
 * answered while a collector ingests in the same process (`npm start`): the event loop turns between statements
 * (a socket read queued meanwhile is handled before the next statement), and background transactions
 * (`TransactionOptions.background`, the collector runner's chunks) begin only once no request's statement waits.
 * Order, not time, is asserted. On PostgreSQL neither applies (separate connections and processes): skipped there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl, testDatabase, type TestDatabase } from '../helpers/db.js';

describe.skipIf(serverUrl)('embedded PGlite: requests first', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('turns the event loop between the statements of a transaction', async () => {
    const order: string[] = [];
    await db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      // A macrotask queued now (as a socket's data would be) must run before the transaction's next statement.
      setImmediate(() => order.push('macrotask'));
      await tx.query('SELECT 2');
      order.push('second statement');
      await tx.query('SELECT 3');
      order.push('third statement');
    });
    expect(order).toEqual(['macrotask', 'second statement', 'third statement']);
  });

  it("starts a background transaction only after the statements that were waiting, even ones sent after it", async () => {
    const order: string[] = [];
    const busy = db.query('SELECT pg_sleep(0.05)').then(() => order.push('request 1'));
    const background = db.transaction(
      async (tx) => {
        order.push('background begins');
        await tx.query('SELECT 1');
      },
      { background: true },
    );
    const later = db.query('SELECT 1').then(() => order.push('request 2'));
    await Promise.all([busy, background, later]);
    expect(order).toEqual(['request 1', 'request 2', 'background begins']);
  });

  it('a plain transaction keeps its place in the queue', async () => {
    const order: string[] = [];
    const busy = db.query('SELECT pg_sleep(0.05)').then(() => order.push('request 1'));
    const plain = db.transaction(async (tx) => {
      order.push('transaction begins');
      await tx.query('SELECT 1');
    });
    const later = db.query('SELECT 1').then(() => order.push('request 2'));
    await Promise.all([busy, plain, later]);
    expect(order).toEqual(['request 1', 'transaction begins', 'request 2']);
  });
});
