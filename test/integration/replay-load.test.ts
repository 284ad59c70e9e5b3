/**
 * A replay far behind never stalls the service (issue 41, point 5). A real `quotegate serve` process (PGlite
 * directory, or the PostgreSQL test database) over 300,000 changes written with SQL: a REST stream from the
 * beginning whose filter matches nothing gets its headers while its replay is still reading (the replay gauge
 * in /metrics), every `/health` polled every 100 ms meanwhile answers (within a generous 2 s), the replay
 * reaches the end, and the server's RSS grows by less than 64 MiB. A GraphQL SSE replay stops reading when its
 * client leaves. The cursor feed with a filter that matches nothing answers a bounded page (`has_more`, the
 * cursor where it stopped) instead of reading the whole backlog. Latency targets are the bench's
 * (`npm run bench:replay`); here only outcomes with generous bounds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { MAX_SCAN_PER_PAGE } from '../../src/quotes/changes.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { startServerProcess, type ServerProcess } from '../helpers/server.js';
import { seedChanges } from '../helpers/changes-seed.js';

const CHANGES = 300_000;
const METRICS_TOKEN = 'replay-load-metrics-token-0123456789';
let dir: string | null = null;
let pg: TestDatabase | null = null;
let server: ServerProcess;
let key: string;
let last: bigint;

/** The server's resident set in bytes (Linux /proc). */
const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
/** A metric's value from /metrics (0 when absent). */
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}
const auth = () => ({ Authorization: `Bearer ${key}` });

beforeAll(async () => {
  let db: Database;
  if (process.env.TEST_DATABASE_URL) db = pg = await testDatabase();
  else {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-replay-load-'));
    db = await openDatabase({ pgliteDir: dir });
  }
  ({ key } = await createAccount(db, { credits: 1000n }));
  ({ last } = await seedChanges(db, { prefix: 'Replay load item ', items: 3000, changes: CHANGES }));
  if (!pg) await db.close(); // the server owns the embedded database
  server = await startServerProcess({
    ...(pg ? { DATABASE_URL: pg.url! } : { PGLITE_DIR: dir! }),
    METRICS_TOKEN,
    EXPORT_INTERVAL_SECONDS: '0',
    VALUATION_JOB: 'off',
    STATUS_PROBE_INTERVAL_SECONDS: '0',
    LOG_LEVEL: 'warn',
  });
}, 600_000);
afterAll(async () => {
  await server?.stop();
  await pg?.destroy();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a replay of 300,000 changes whose filter matches nothing', () => {
  it('sends its headers while replaying, keeps /health answering, reaches the end, and holds the RSS within 64 MiB', async () => {
    // Warm up: one stream from now (the code paths loaded), then the baseline.
    const warm = new AbortController();
    const first = await fetch(`${server.url}/prices/changes/stream`, { headers: auth(), signal: warm.signal });
    expect(first.status).toBe(200);
    warm.abort();
    await expect.poll(() => metric('quotegate_live_replays'), { timeout: 30_000 }).toBe(0);
    const baseline = rss(server.pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(server.pid))), 50);
    // /health every 100 ms, each with 2 s to answer.
    const polls: { ok: boolean; error?: string }[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const started = Date.now();
        try {
          const res = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(2000) });
          polls.push({ ok: res.status === 200 });
        } catch (e) {
          polls.push({ ok: false, error: String(e) });
        }
        await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - started))));
      }
    })();
    const ctl = new AbortController();
    try {
      const res = await fetch(`${server.url}/prices/changes/stream?since=0&market_hash_name=zz-no-such-item`, { headers: auth(), signal: ctl.signal });
      // The headers came first: the replay was still reading when they arrived.
      const replayingAtHeaders = await metric('quotegate_live_replays');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(replayingAtHeaders).toBe(1);
      // The replay reads the whole backlog, then joins the live hub.
      await expect.poll(() => metric('quotegate_live_replays'), { timeout: 300_000, interval: 500 }).toBe(0);
      expect(await metric('quotegate_live_replay_rows_total')).toBeGreaterThanOrEqual(CHANGES);
    } finally {
      ctl.abort();
      polling = false;
      await poller;
      clearInterval(sampler);
    }
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.filter((p) => !p.ok)).toEqual([]);
    expect(peak - baseline).toBeLessThan(64 * 1024 * 1024);
  });

  it('a GraphQL SSE replay stops reading when its client leaves', async () => {
    const before = await metric('quotegate_live_replay_rows_total');
    const ctl = new AbortController();
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { ...auth(), Accept: 'text/event-stream', 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'subscription { quoteChanged(since: "0", marketHashNames: ["zz-no-such-item"]) { seq } }' }),
      signal: ctl.signal,
    });
    expect(res.status).toBe(200);
    expect(await metric('quotegate_live_replays')).toBe(1); // replaying when the client leaves
    ctl.abort();
    await expect.poll(() => metric('quotegate_live_replays'), { timeout: 60_000 }).toBe(0);
    const stopped = await metric('quotegate_live_replay_rows_total');
    await new Promise((r) => setTimeout(r, 1000));
    expect(await metric('quotegate_live_replay_rows_total')).toBe(stopped); // nothing read after it stopped
    expect(stopped - before).toBeLessThan(CHANGES); // it stopped before the end
  });
});

describe('the cursor feed far behind', () => {
  it('a filter that matches nothing: a bounded page (no changes, has_more, the cursor where it stopped), then the next', async () => {
    const page = await fetch(`${server.url}/prices/changes?since=0&markets=SKINPORT`, { headers: auth() });
    expect(page.status).toBe(200);
    const { data } = await page.json();
    expect(data).toMatchObject({ changes: [], has_more: true });
    expect(BigInt(data.next_cursor)).toBeGreaterThan(0n);
    expect(BigInt(data.next_cursor)).toBeLessThanOrEqual(BigInt(MAX_SCAN_PER_PAGE));
    // Following has_more reaches the end of the sequence.
    let cursor = data.next_cursor as string;
    for (let i = 0; i < Math.ceil(CHANGES / MAX_SCAN_PER_PAGE) + 1; i++) {
      const next = (await (await fetch(`${server.url}/prices/changes?since=${cursor}&markets=SKINPORT`, { headers: auth() })).json()).data;
      cursor = next.next_cursor;
      if (!next.has_more) break;
    }
    expect(BigInt(cursor)).toBe(last);
  });
});
