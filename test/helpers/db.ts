/**
 * A fresh database per test file: in-memory PGlite by default; with TEST_DATABASE_URL, a new database
 * created on that PostgreSQL server (dropped afterwards), so files never share state.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/client.js';

export interface TestDatabase extends Database {
  /** Drops the per-test database on a server; closes PGlite. */
  destroy(): Promise<void>;
  /** Connection string of the per-test database on a server; undefined on PGlite. */
  url?: string;
}

export const serverUrl = process.env.TEST_DATABASE_URL;

export async function testDatabase(): Promise<TestDatabase> {
  if (!serverUrl) {
    const db = await openDatabase({ pgliteDir: 'memory://' });
    return Object.assign(db, { destroy: () => db.close() });
  }
  const name = `qg_test_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase({ url: url.toString() });
  return Object.assign(db, {
    url: url.toString(),
    async destroy() {
      await db.close();
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  });
}
