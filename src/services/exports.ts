/**
 * Export snapshots (spec: GET /prices/export, ExportOut): the whole priced catalogue of one app id
 * and side as one gzip file, built every few minutes and served as stored.
 *
 * A build streams: item names are read in market-hash-name order (code-point order, `COLLATE "C"`)
 * a page at a time, their quotes loaded with the same query and rules as GET /prices, each item's
 * JSON written into gzip as it is produced, and the gzip output stored in ~1 MiB chunks as it comes.
 * All sides of an app id are built in one pass (each page is read once, written into each side's
 * gzip), the next page read while this one is written. Memory stays bounded by two pages of quotes plus one
 * chunk per side, whatever the catalogue size.
 *
 * Change sequence: a build reads its pages and the change sequence in one snapshot (Database.readSnapshot:
 * REPEATABLE READ on PostgreSQL; on PGlite the build holds the embedded database, and its gzip chunks are stored
 * after the snapshot ends) and records that sequence (services/changes.ts; field `change_seq` beside
 * `generated_at`, header X-Change-Sequence): the file is exactly the state at it, so a client that downloads the
 * file and then follows GET /prices/changes from it misses no change and gets none twice.
 *
 * Visibility: a build is published by one statement that points `export_current` at it, after its
 * last chunk is stored; a failed or interrupted build is never served and is deleted by the next
 * build. A build whose items are byte-for-byte those of the current snapshot is dropped, so unchanged
 * data keeps the same bytes, `generated_at` and ETag. The previous snapshot is kept until the next
 * publish, so a download that began before a publish can finish.
 */
import crypto from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { Database } from '../db/client.js';
import { formatDecimal } from '../lib/money.js';
import { snapshotBuildSeconds } from '../lib/metrics.js';
import { formatDate, formatTimestamp } from '../lib/time.js';
import { currentSequence } from './changes.js';
import { filterQuotes, loadQuotes, quotesText, type MarketQuote, type SideFilter } from './quotes.js';

/** The sides a snapshot is built for. */
export const EXPORT_SIDES: readonly SideFilter[] = ['ask', 'bid', 'mid', 'all'];
/** Bytes per stored chunk of gzip output. */
export const CHUNK_BYTES = 1024 * 1024;
/** Item names per page read while building (about 20k quotes at 40 markets: bounds the build's memory). */
export const PAGE_ITEMS = 250;

/** The snapshot currently served for an app id and side. */
export interface Snapshot {
  buildId: string;
  appId: string;
  side: SideFilter;
  /** Strong ETag, quoted: `"<base64url sha-256 of the gzip bytes>"`. */
  etag: string;
  generatedAt: Date;
  /** The change sequence the build started at (services/changes.ts), a decimal string: follow GET /prices/changes from it. */
  changeSeq: string;
  /** Size of the gzip file in bytes. */
  byteSize: number;
  itemCount: number;
  quoteCount: number;
  /** Build time in milliseconds. */
  buildMs: number;
}

interface SnapshotRow {
  id: string;
  app_id: string;
  side: SideFilter;
  etag: string;
  generated_at: Date;
  change_seq: string | null;
  byte_size: string;
  item_count: number;
  quote_count: number;
  build_ms: number;
  items_sha256: string;
}

const toSnapshot = (r: SnapshotRow): Snapshot => ({
  buildId: r.id,
  appId: r.app_id,
  side: r.side,
  etag: r.etag,
  generatedAt: new Date(r.generated_at),
  changeSeq: r.change_seq ?? '0',
  byteSize: Number(r.byte_size),
  itemCount: r.item_count,
  quoteCount: r.quote_count,
  buildMs: r.build_ms,
});

const CURRENT_SQL = `
  SELECT b.id::text AS id, b.app_id, b.side, b.etag, b.generated_at, b.change_seq::text AS change_seq, b.byte_size::text AS byte_size, b.item_count,
         b.quote_count, b.build_ms, b.items_sha256
    FROM export_current c JOIN export_build b ON b.id = c.build_id
   WHERE c.app_id = $1 AND c.side = $2`;

/** The snapshot served for `appId` and `side`, or null before the first build. */
export async function currentSnapshot(db: Pick<Database, 'query'>, appId: string, side: SideFilter): Promise<Snapshot | null> {
  const [row] = await db.query<SnapshotRow>(CURRENT_SQL, [appId, side]);
  return row ? toSnapshot(row) : null;
}

/**
 * The current snapshots held in a replica's memory, so a conditional export request (the 304 answer) costs no
 * database round trip (issue: serving quotes at the machine's limit, export targets). An entry is served for
 * at most `maxAgeMs` (1 s): a snapshot published by another process is seen within that even if its change
 * signal is lost; a publish also signals `qg_exports`, which drops every entry at once, in this process before
 * the build returns and in the others when PostgreSQL delivers it. A load that started before a signal is not
 * stored. "No snapshot yet" is not cached.
 */
export class SnapshotCache {
  private readonly entries = new Map<string, { snapshot: Snapshot; at: number }>();
  private generation = 0;
  private readonly stop: () => void;

  constructor(
    private readonly db: Database,
    private readonly maxAgeMs = 1000,
  ) {
    this.stop = db.onNotify('qg_exports', () => {
      this.generation += 1;
      this.entries.clear();
    });
  }

  /** The snapshot served for `appId` and `side` (`currentSnapshot`, from memory while fresh), or null before the first build. */
  async current(appId: string, side: SideFilter): Promise<Snapshot | null> {
    const key = `${appId}\u0000${side}`;
    const now = performance.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.maxAgeMs) return hit.snapshot;
    const generation = this.generation;
    const snapshot = await currentSnapshot(this.db, appId, side);
    if (snapshot && generation === this.generation) this.entries.set(key, { snapshot, at: now });
    return snapshot;
  }

  /** Stops listening for change signals. */
  close(): void {
    this.stop();
  }
}

/** True once any snapshot has been published (the builder has run). */
export async function anySnapshot(db: Pick<Database, 'query'>): Promise<boolean> {
  return (await db.query(`SELECT 1 FROM export_current LIMIT 1`)).length > 0;
}

/** The gzip bytes of a build, chunk by chunk, read a few chunks per query (bounded memory). */
export function snapshotStream(db: Pick<Database, 'query'>, buildId: string): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const rows = await db.query<{ seq: number; bytes: Uint8Array }>(
        `SELECT seq, bytes FROM export_chunk WHERE build_id = $1 AND seq >= $2 ORDER BY seq LIMIT 4`,
        [buildId, next],
      );
      if (rows.length === 0) return controller.close();
      for (const r of rows) controller.enqueue(new Uint8Array(r.bytes));
      next = rows[rows.length - 1]!.seq + 1;
    },
  });
}

/** What a build did. `published` false = the data was unchanged and the current snapshot stays. */
export interface BuildResult {
  snapshot: Snapshot;
  published: boolean;
}

/** Options of buildSnapshot; `onPage` is called after each page of items (tests interrupt builds with it). */
export interface BuildOptions {
  now?: Date;
  pageItems?: number;
  onPage?: (page: number) => void | Promise<void>;
}

/** One side's output during a build: its build row, gzip pipeline, hashes and counts. */
interface SideOutput {
  side: SideFilter;
  buildId: string;
  input: PassThrough;
  done: Promise<void>;
  itemsHash: crypto.Hash;
  fileHash: crypto.Hash;
  size: number;
  items: number;
  quotes: number;
  changeSeq: string;
  /** Gzip chunks not yet stored (deferred output), in order. */
  deferred: Buffer[];
}

/** Stores a side's deferred chunks, in order. */
async function storeDeferred(db: Database, out: SideOutput): Promise<void> {
  for (const [seq, bytes] of out.deferred.entries()) await db.query(`INSERT INTO export_chunk (build_id, seq, bytes) VALUES ($1, $2, $3)`, [out.buildId, seq, bytes]);
  out.deferred = [];
}

/** Writes `bytes` into a side's gzip input, waiting while its buffers are full (backpressure). */
async function feed(out: SideOutput, bytes: Buffer): Promise<void> {
  if (!out.input.write(bytes)) await once(out.input, 'drain');
}

/** Creates a side's build row (not complete; its change sequence is set when the build is published). */
async function createBuild(db: Database, appId: string, side: SideFilter, generatedAt: Date): Promise<string> {
  const [{ id }] = (await db.query<{ id: string }>(`INSERT INTO export_build (app_id, side, generated_at) VALUES ($1, $2, $3) RETURNING id::text AS id`, [
    appId,
    side,
    generatedAt,
  ])) as [{ id: string }];
  return id;
}

/**
 * Opens a side's gzip pipeline for build row `id`; gzip output is stored in CHUNK_BYTES chunks as it comes, or,
 * with `deferred`, kept in memory until `storeDeferred` (PGlite: the build's read snapshot holds its one connection).
 */
async function openSide(db: Database, id: string, appId: string, side: SideFilter, generatedAt: Date, changeSeq: bigint, deferred: boolean): Promise<SideOutput> {
  const input = new PassThrough();
  let seq = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    if (pendingBytes === 0) return;
    const bytes = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    if (deferred) out.deferred.push(bytes);
    else await db.query(`INSERT INTO export_chunk (build_id, seq, bytes) VALUES ($1, $2, $3)`, [id, seq, bytes]);
    seq += 1;
  };
  const out: SideOutput = {
    side,
    buildId: id,
    input,
    done: Promise.resolve(),
    itemsHash: crypto.createHash('sha256'),
    fileHash: crypto.createHash('sha256'),
    size: 0,
    items: 0,
    quotes: 0,
    changeSeq: changeSeq.toString(),
    deferred: [],
  };
  out.done = pipeline(
    input,
    zlib.createGzip({ level: 6 }),
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        out.fileHash.update(chunk);
        out.size += chunk.length;
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= CHUNK_BYTES) flush().then(() => cb(), cb);
        else cb();
      },
      final(cb) {
        flush().then(() => cb(), cb);
      },
    }),
  );
  out.done.catch(() => {}); // awaited below; a failure is reported by buildSnapshots
  await feed(out, Buffer.from(`{"app_id":${JSON.stringify(appId)},"side":${JSON.stringify(side)},"generated_at":"${formatTimestamp(generatedAt)}","change_seq":"${changeSeq}","items":[`));
  return out;
}

/** Publishes a finished side unless its items equal the current snapshot's (then the new build is dropped). */
async function publishSide(db: Database, appId: string, out: SideOutput, generatedAt: Date, buildMs: number): Promise<BuildResult> {
  const itemsSha = out.itemsHash.digest('hex');
  const current = await db.query<SnapshotRow>(CURRENT_SQL, [appId, out.side]);
  if (current[0] && current[0].items_sha256 === itemsSha) {
    await db.query(`DELETE FROM export_build WHERE id = $1`, [out.buildId]);
    return { snapshot: toSnapshot(current[0]), published: false };
  }
  const etag = `"${out.fileHash.digest('base64url')}"`;
  await db.query(
    `UPDATE export_build SET etag = $2, items_sha256 = $3, build_ms = $4, byte_size = $5, item_count = $6, quote_count = $7, change_seq = $8::bigint, complete = true
      WHERE id = $1`,
    [out.buildId, etag, itemsSha, buildMs, out.size, out.items, out.quotes, out.changeSeq],
  );
  await db.query(
    `INSERT INTO export_current (app_id, side, build_id) VALUES ($1, $2, $3)
     ON CONFLICT (app_id, side) DO UPDATE SET build_id = EXCLUDED.build_id`,
    [appId, out.side, out.buildId],
  );
  // Every replica's SnapshotCache drops its entries (this process's at once). A signal that cannot be sent is
  // not an error of the build: the other replicas' entries expire within a second anyway.
  await db.notify('qg_exports', appId).catch(() => undefined);
  // Keep the snapshot just replaced (downloads in flight); drop older ones.
  await db.query(
    `DELETE FROM export_build WHERE app_id = $1 AND side = $2 AND complete AND id < $3
        AND id <> (SELECT COALESCE(max(id), 0) FROM export_build WHERE app_id = $1 AND side = $2 AND complete AND id < $3)`,
    [appId, out.side, out.buildId],
  );
  return {
    snapshot: { buildId: out.buildId, appId, side: out.side, etag, generatedAt, changeSeq: out.changeSeq, byteSize: out.size, itemCount: out.items, quoteCount: out.quotes, buildMs },
    published: true,
  };
}

/**
 * Builds the snapshots of `appId` for `sides` in one pass over the data (each page of quotes is read
 * once and written into every side's gzip), then publishes each side unless its items equal the
 * current snapshot's. The caller holds the builder lock (see runExportSnapshots). Throws when
 * reading or writing fails; the current snapshots are then untouched and the partial builds are
 * removed by the next build.
 */
export async function buildSnapshots(db: Database, appId: string, sides: readonly SideFilter[], opts: BuildOptions = {}): Promise<BuildResult[]> {
  const started = performance.now();
  const generatedAt = opts.now ?? new Date();
  // Leftovers of interrupted builds (never current) go first.
  await db.query(
    `DELETE FROM export_build WHERE app_id = $1 AND side = ANY($2::text[]) AND NOT complete
        AND id NOT IN (SELECT build_id FROM export_current)`,
    [appId, sides],
  );
  const outs: SideOutput[] = [];
  const ids: string[] = [];
  for (const side of sides) ids.push(await createBuild(db, appId, side, generatedAt));
  // Every page and the change sequence are read in one snapshot (REPEATABLE READ): the file holds exactly the
  // changes up to its change_seq, and following the feed from there gives exactly the ones after it.
  const deferred = db.kind === 'pglite';
  try {
    await db.readSnapshot(async (query) => {
      const changeSeq = await currentSequence({ query });
      for (const [i, side] of sides.entries()) outs.push(await openSide(db, ids[i]!, appId, side, generatedAt, changeSeq, deferred));
      // The next page is read while this one is written (its names and quotes in flight on the database's
      // core while this process serializes and compresses): two pages held at most.
      const readPage = async (after: string) => {
        const names = (
          await query<{ market_hash_name: string }>(
            `SELECT market_hash_name FROM item WHERE app_id = $1 AND market_hash_name COLLATE "C" > $2
              ORDER BY market_hash_name COLLATE "C" LIMIT $3`,
            [appId, after, opts.pageItems ?? PAGE_ITEMS],
          )
        ).map((r) => r.market_hash_name);
        return { names, quotes: names.length === 0 ? new Map<string, MarketQuote[]>() : await loadQuotes({ query }, appId, names) };
      };
      let next = readPage('');
      let page = 0;
      for (;;) {
        const { names, quotes } = await next;
        if (names.length === 0) break;
        next = readPage(names[names.length - 1]!);
        // A failure of the read ahead is the next iteration's to throw; until then it must not go unhandled.
        next.catch(() => undefined);
        // One item at a time into each gzip: no page-sized string is ever built.
        for (const name of names) {
          const all = quotes.get(name) ?? [];
          quotes.delete(name);
          for (const out of outs) {
            const list = filterQuotes(all, { markets: null, side: out.side });
            if (list.length === 0) continue;
            const text = Buffer.from((out.items === 0 ? '' : ',') + `{"market_hash_name":${JSON.stringify(name)},"markets":${quotesText(list)}}`);
            out.itemsHash.update(text);
            out.items += 1;
            out.quotes += list.length;
            await feed(out, text);
          }
        }
        page += 1;
        await opts.onPage?.(page);
      }
      for (const out of outs) out.input.end(']}');
      await Promise.all(outs.map((o) => o.done));
    });
    for (const out of outs) await storeDeferred(db, out);
  } catch (e) {
    for (const out of outs) out.input.destroy(e as Error);
    await Promise.allSettled(outs.map((o) => o.done));
    throw e;
  }
  const buildMs = Math.round(performance.now() - started);
  const results: BuildResult[] = [];
  for (const out of outs) {
    const r = await publishSide(db, appId, out, generatedAt, buildMs);
    snapshotBuildSeconds.observe({ side: out.side, outcome: r.published ? 'published' : 'unchanged' }, buildMs / 1000);
    results.push(r);
  }
  return results;
}

/** Builds and publishes one side (see buildSnapshots). */
export async function buildSnapshot(db: Database, appId: string, side: SideFilter, opts: BuildOptions = {}): Promise<BuildResult> {
  return (await buildSnapshots(db, appId, [side], opts))[0]!;
}

/** App ids that have items. */
export async function appIds(db: Pick<Database, 'query'>): Promise<string[]> {
  return (await db.query<{ app_id: string }>(`SELECT DISTINCT app_id FROM item ORDER BY app_id`)).map((r) => r.app_id);
}

/**
 * One run of the snapshot job: every app id and side, under the `export-snapshots` lock so only one
 * replica builds at a time. Returns null when another builder holds the lock.
 */
export async function runExportSnapshots(db: Database, opts: { now?: Date; sides?: readonly SideFilter[]; appIds?: string[] } = {}): Promise<BuildResult[] | null> {
  const r = await db.withLock('quotegate:export-snapshots', async () => {
    const out: BuildResult[] = [];
    for (const app of opts.appIds ?? (await appIds(db))) out.push(...(await buildSnapshots(db, app, opts.sides ?? EXPORT_SIDES, { now: opts.now })));
    return out;
  });
  return r.acquired ? r.result : null;
}

/**
 * True when an `If-None-Match` header value names `etag` (RFC 9110 13.1.2: weak comparison, so
 * `W/"x"` matches `"x"`; a list matches if any member does; `*` matches any current snapshot).
 */
export function ifNoneMatchHits(header: string | null | undefined, etag: string): boolean {
  if (!header) return false;
  const value = header.trim();
  if (value === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return value.split(',').some((tag) => opaque(tag) === etag);
}
