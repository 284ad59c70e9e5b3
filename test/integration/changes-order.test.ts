/**
 * The change sequence's ordering promise on a real PostgreSQL server (quotes/changes.ts): a change recorded
 * by a transaction that has not committed blocks the changes of every later writer, so a reader can never see a
 * sequence number while a smaller one may still appear. Two connections write concurrently; a reader polls in
 * between. Runs with TEST_DATABASE_URL (PGlite has one connection: writers cannot overlap there).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl, testDatabase, type TestDatabase } from '../helpers/db.js';
import { ingestQuotes, obs } from '../helpers/app.js';
import { currentSequence, readChanges } from '../../src/quotes/changes.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!serverUrl)('change sequence on PostgreSQL: numbers become visible in order', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
    await ingestQuotes(db, [obs('Order | First', { price: '1' }), obs('Order | Second', { price: '2' })]);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  it('a slow first writer holds back a fast second one; the reader sees nothing, then both in commit order', async () => {
    const start = await currentSequence(db);
    const read = () => readChanges(db, { appId: '730', since: start, markets: null, side: 'all', limit: 100 });
    let releaseFirst!: () => void;
    const firstMayCommit = new Promise<void>((r) => (releaseFirst = r));
    // The first writer records its change, then waits before committing.
    const first = db.transaction(async (tx) => {
      await ingestQuotes(tx, [obs('Order | First', { price: '11', observedAt: new Date('2026-07-17T00:00:00Z') })]);
      await firstMayCommit;
    });
    await sleep(200);
    // The second writer starts later and would commit at once if nothing held it.
    let secondDone = false;
    const second = ingestBatch(db, [obs('Order | Second', { price: '22', observedAt: new Date('2026-07-17T00:00:00Z') })]).then(() => (secondDone = true));
    await sleep(300);
    expect(secondDone).toBe(false); // waiting for the first's commit
    expect((await read()).changes).toEqual([]); // neither is visible
    releaseFirst();
    await Promise.all([first, second]);
    const page = await read();
    expect(page.changes.map((c) => c.marketHashName)).toEqual(['Order | First', 'Order | Second']);
    expect(page.changes[0]!.seq < page.changes[1]!.seq).toBe(true);
    expect(page.changes.map((c) => c.quote?.price?.toFixed())).toEqual(['11', '22']);
  });
});
