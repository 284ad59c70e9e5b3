/**
 * Export snapshots (spec: GET /prices/export, ExportOut): the whole priced catalogue of one app id
 * and side as one gzip file, built every few minutes and served as stored.
 *
 * A build streams: the app's item ids and names are read first and put in market-hash-name order (code-point
 * order, as `COLLATE "C"`), then a page of items at a time has its quotes loaded with the same query and rules as
 * GET /prices, each item's JSON written into gzip as it is produced, and the gzip output stored in ~1 MiB chunks
 * (128 KiB on PGlite) as it comes. All sides of an app id are built in one pass (each page is read once, written
 * into each side's gzip), the next page read while this one is written. Memory stays bounded by the names (about
 * 40 bytes each), two pages of quotes and one chunk per side, whatever the catalogue size.
 *
 * Change sequence: on PostgreSQL a build reads its pages and the change sequence in one snapshot
 * (Database.readSnapshot, REPEATABLE READ) and records that sequence (quotes/changes.ts; field `change_seq` beside
 * `generated_at`, header X-Change-Sequence): the file is exactly the state at it, so a client that downloads the
 * file and then follows GET /prices/changes from it misses no change and gets none twice.
 * On embedded PGlite one transaction would hold the process's only connection for the whole build (every request
 * waited for it: issue 41, point 6), so there the sequence is read first and each page is read by statements of its
 * own, short ones (EMBEDDED_PAGE_ITEMS names a page), each after a turn of the event loop and after the
 * requests' statements (db/client.ts `backgroundQuery`): requests go between them. An item is then written as it was when its page was
 * read, at or after the recorded sequence, so the file may already hold a change the feed delivers again after it;
 * a change carries the quote as served when it is read, so applying it again changes nothing, and still no change
 * is missed. Each item's own text is consistent: its digest is read before its rows (a write between them stores
 * the new text under the old digest, which the next build finds stale and writes again).
 *
 * Formats: every side is built as two files in the same pass, from the same item texts: `json`, the spec's ExportOut
 * document, and `ndjson` (an extension, docs/export.md): one quote per line, `{"market_hash_name":...,<the quote's
 * fields>}`, in the file's item order. Each is its own build row (`format`) with its own ETag; the two files of a
 * side are written from the same pages of the same read and published one after the other, so they hold exactly
 * the same quotes and the same change sequence.
 *
 * Visibility: a build is published by one statement that points `export_current` at it, after its
 * last chunk is stored; a failed or interrupted build is never served and is deleted by the next
 * build. A build whose items are byte-for-byte those of the current snapshot is dropped, so unchanged
 * data keeps the same bytes, `generated_at` and ETag. The previous snapshot is kept until the next
 * publish, so a download that began before a publish can finish.
 */
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { backgroundDatabase, type Database } from '../db/client.js';
import { toMoney } from '../lib/money.js';
import { deflatePiece, GzipJoiner, type GzipPiece } from '../lib/gzip-pieces.js';
import { snapshotBuildSeconds } from '../lib/metrics.js';
import { formatTimestamp } from '../lib/time.js';
import { currentSequence } from '../quotes/changes.js';
import { filterQuotes, loadQuotes, quoteJson, quoteOfRow, QUOTES_SQL, quotesText, valuationQuote, type MarketQuote, type SideFilter } from '../quotes/quotes.js';

/** The sides a snapshot is built for. */
export const EXPORT_SIDES: readonly SideFilter[] = ['ask', 'bid', 'mid', 'all'];
/**
 * The file formats of a snapshot (query parameter `format` of GET /prices/export): `json`, the spec's ExportOut
 * document (the default), and `ndjson`, an extension: one quote per line (docs/export.md).
 */
export const EXPORT_FORMATS = ['json', 'ndjson'] as const;
/** A file format of the export (EXPORT_FORMATS). */
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** The Content-Type of each format's file (before its gzip Content-Encoding). */
export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = { json: 'application/json', ndjson: 'application/x-ndjson' };
/** Bytes per stored chunk of gzip output. */
const CHUNK_BYTES = 1024 * 1024;
/** Item names per page read while building (about 20k quotes at 40 markets: bounds the build's memory). */
const PAGE_ITEMS = 250;
/**
 * Item names per page on embedded PGlite, whose statements run on this process's thread: a page of 250 held the
 * thread long enough to stall every request waiting meanwhile (figures: docs/benchmarks.md).
 */
const EMBEDDED_PAGE_ITEMS = 50;
/**
 * Bytes per stored chunk on embedded PGlite: the INSERT of a 1 MiB chunk held this process's thread too long
 * (docs/benchmarks.md); 128 KiB took a median 30 ms (max 87), 64 KiB 9 ms (max 17) on the bundled data's database.
 */
const EMBEDDED_CHUNK_BYTES = 64 * 1024;
/**
 * Fragments written by one build from which embedded PGlite analyzes `export_fragment` afterwards. PGlite runs no
 * autovacuum, so without it the planner keeps the row count of the empty table and the sweep's keyset slices read
 * and sort the whole table (60-350 ms a slice, 4 s a sweep on the bundled data, against 9 ms and 1.4 s analyzed).
 */
const EMBEDDED_ANALYZE_FRAGMENTS = 1000;
/** Fragment rows per statement of the sweep of fragments whose item left the catalogue (keyset slices). */
const SWEEP_ROWS = 1000;

/** The snapshot currently served for an app id, side and format. */
export interface Snapshot {
  buildId: string;
  appId: string;
  side: SideFilter;
  format: ExportFormat;
  /** Strong ETag, quoted: `"<base64url sha-256 of the gzip bytes>"`. */
  etag: string;
  generatedAt: Date;
  /** The change sequence the build started at (quotes/changes.ts), a decimal string: follow GET /prices/changes from it. */
  changeSeq: string;
  /** Size of the gzip file in bytes. */
  byteSize: number;
  itemCount: number;
  /** Quotes in the file (for `ndjson`, its lines). */
  quoteCount: number;
  /** Build time in milliseconds. */
  buildMs: number;
}

interface SnapshotRow {
  id: string;
  app_id: string;
  side: SideFilter;
  format: ExportFormat;
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
  format: r.format,
  etag: r.etag,
  generatedAt: new Date(r.generated_at),
  changeSeq: r.change_seq ?? '0',
  byteSize: Number(r.byte_size),
  itemCount: r.item_count,
  quoteCount: r.quote_count,
  buildMs: r.build_ms,
});

const CURRENT_SQL = `
  SELECT b.id::text AS id, b.app_id, b.side, b.format, b.etag, b.generated_at, b.change_seq::text AS change_seq, b.byte_size::text AS byte_size, b.item_count,
         b.quote_count, b.build_ms, b.items_sha256
    FROM export_current c JOIN export_build b ON b.id = c.build_id
   WHERE c.app_id = $1 AND c.side = $2 AND c.format = $3`;

/** The snapshot served for `appId`, `side` and `format` (default `json`), or null before the first build. */
export async function currentSnapshot(db: Pick<Database, 'query'>, appId: string, side: SideFilter, format: ExportFormat = 'json'): Promise<Snapshot | null> {
  const [row] = await db.query<SnapshotRow>(CURRENT_SQL, [appId, side, format]);
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

  /** The snapshot served for `appId`, `side` and `format` (`currentSnapshot`, from memory while fresh), or null before the first build. */
  async current(appId: string, side: SideFilter, format: ExportFormat = 'json'): Promise<Snapshot | null> {
    const key = `${appId}\u0000${side}\u0000${format}`;
    const now = performance.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.maxAgeMs) return hit.snapshot;
    const generation = this.generation;
    const snapshot = await currentSnapshot(this.db, appId, side, format);
    if (snapshot && generation === this.generation) this.entries.set(key, { snapshot, at: now });
    return snapshot;
  }

  /** Stops listening for change signals. */
  close(): void {
    this.stop();
  }
}

/**
 * True once a snapshot of `side` in `format` (default `json`) has been published for any app (the builder has run
 * that side). The export job publishes its sides one after another, so a side not yet built while another is must
 * not read as "no priced items" (a 404 where the answer is 503 until it is built: seen in the replica test under
 * CI load); the same holds for the `ndjson` files right after an upgrade, until the first build that makes them.
 */
export async function anySnapshot(db: Pick<Database, 'query'>, side: SideFilter, format: ExportFormat = 'json'): Promise<boolean> {
  return (await db.query(`SELECT 1 FROM export_current WHERE side = $1 AND format = $2 LIMIT 1`, [side, format])).length > 0;
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
  /** The formats to build of each side (default EXPORT_FORMATS: both). */
  formats?: readonly ExportFormat[];
  onPage?: (page: number) => void | Promise<void>;
  /**
   * Aborts the build (the service is stopping): checked before each page and before publishing; an aborted build
   * throws the signal's reason, publishes nothing (the current snapshots stay served) and its partial rows are removed
   * by the next build.
   */
  signal?: AbortSignal;
}

/** Uncompressed bytes per compressed segment of an export file (compressed in parallel, joined as pieces). */
const SEGMENT_BYTES = 4 * 1024 * 1024;
/** Segments of one side compressing at a time (libuv's pool has four threads; the machine has two cores). */
const SEGMENTS_IN_FLIGHT = 2;

/** One side's file in one format during a build: its build row, gzip writer, pending chunk, hashes and counts. */
interface SideOutput {
  side: SideFilter;
  format: ExportFormat;
  buildId: string;
  joiner: GzipJoiner;
  /** Uncompressed text of the segment being filled. */
  segment: Buffer[];
  segmentBytes: number;
  /** Segments compressing, oldest first. */
  compressing: Promise<GzipPiece>[];
  /** gzip bytes not yet stored as a chunk. */
  pending: Buffer[];
  pendingBytes: number;
  /** Next chunk's sequence number. */
  seq: number;
  /** Bytes per stored chunk (CHUNK_BYTES; EMBEDDED_CHUNK_BYTES on PGlite). */
  chunkBytes: number;
  itemsHash: crypto.Hash;
  fileHash: crypto.Hash;
  size: number;
  items: number;
  quotes: number;
  changeSeq: string;
}

/** Adds uncompressed text to a side's file: a full segment goes to the thread pool; the oldest finished ones are appended. */
async function write(db: Database, out: SideOutput, text: Buffer): Promise<void> {
  out.segment.push(text);
  out.segmentBytes += text.length;
  if (out.segmentBytes >= SEGMENT_BYTES) await cutSegment(db, out);
}

/** Sends the current segment to be compressed, then appends finished segments while too many are in flight. */
async function cutSegment(db: Database, out: SideOutput): Promise<void> {
  if (out.segmentBytes > 0) {
    const bytes = Buffer.concat(out.segment, out.segmentBytes);
    out.segment = [];
    out.segmentBytes = 0;
    const piece = deflatePiece(bytes);
    piece.catch(() => undefined); // awaited in order below
    out.compressing.push(piece);
  }
  while (out.compressing.length > SEGMENTS_IN_FLIGHT) await append(db, out, out.joiner.piece(await out.compressing.shift()!));
}

/** Ends a side's file: the last segment, every segment still compressing, the final block and trailer. */
async function finishSide(db: Database, out: SideOutput): Promise<void> {
  await cutSegment(db, out);
  while (out.compressing.length > 0) await append(db, out, out.joiner.piece(await out.compressing.shift()!));
  await append(db, out, out.joiner.end(), true);
}

/** Appends gzip bytes to a side's file; a full chunk (`out.chunkBytes` or more) is stored. */
async function append(db: Database, out: SideOutput, bytes: Buffer, last = false): Promise<void> {
  out.fileHash.update(bytes);
  out.size += bytes.length;
  out.pending.push(bytes);
  out.pendingBytes += bytes.length;
  if (out.pendingBytes < out.chunkBytes && !(last && out.pendingBytes > 0)) return;
  const all = Buffer.concat(out.pending, out.pendingBytes);
  out.pending = [];
  out.pendingBytes = 0;
  // A chunk holds at most chunkBytes (a compressed segment is larger than a chunk on PGlite).
  for (let at = 0; at < all.length; at += out.chunkBytes) {
    const end = Math.min(all.length, at + out.chunkBytes);
    if (end - at < out.chunkBytes && !last) {
      out.pending.push(all.subarray(at));
      out.pendingBytes = end - at;
      break;
    }
    await db.query(`INSERT INTO export_chunk (build_id, seq, bytes) VALUES ($1, $2, $3)`, [out.buildId, out.seq, all.subarray(at, end)]);
    out.seq += 1;
  }
}

/** Creates the build row of a side's file in `format` (not complete; its change sequence is set when the build is published). */
async function createBuild(db: Database, appId: string, side: SideFilter, format: ExportFormat, generatedAt: Date): Promise<string> {
  const [{ id }] = (await db.query<{ id: string }>(`INSERT INTO export_build (app_id, side, format, generated_at) VALUES ($1, $2, $3, $4) RETURNING id::text AS id`, [
    appId,
    side,
    format,
    generatedAt,
  ])) as [{ id: string }];
  return id;
}

/** zlib level of a stored item text (export_fragment.deflated): fast to write, since the file is compressed again anyway. */
const FRAGMENT_LEVEL = 1;

/**
 * What names the item writer in a fragment's digest: the source of the statement and functions that turn an
 * item's rows into its text (as this process runs them), the export text of a sample item with every field set,
 * and the zlib version and level of the stored form; any change to them writes every stored fragment again.
 * Computed once per process.
 */
let fingerprint: string | undefined;
function writerFingerprint(): string {
  if (fingerprint) return fingerprint;
  const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  const sample: MarketQuote[] = [
    { appId: '730', marketHashName: 'S', marketCode: 'A', providerCode: 'B', side: 'ask', currencyCode: 'USD', price: toMoney('1.5'), quantity: 2, isQuantityMinimum: true, isAllItemsSamePrice: false, changedAt: at, observedAt: at, delistedAt: at, freshAt: at, valuation: null },
    {
      appId: '730', marketHashName: 'S', marketCode: 'CSCP', providerCode: 'CSCP', side: 'mid', currencyCode: 'CNY', price: toMoney('10.25'), quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null, changedAt: at, observedAt: null, delistedAt: null, freshAt: at,
      valuation: { valuationDate: at, uncertainty: 0.25, credibility: Math.exp(-0.25), isTwoSided: true, askAmount: toMoney('11'), bidAmount: toMoney('9.5'), askQuoteCount: 3, bidQuoteCount: 1, askUncertainty: 0.1, bidUncertainty: 0.2, mid: toMoney('10.25'), computedAt: at },
    },
  ];
  // The code that reads and writes an item (its statement and functions as this process runs them) and a sample
  // output: any change to how the rows become the text, precedence included, writes every item again.
  const code = [QUOTES_SQL, loadQuotes, quoteOfRow, valuationQuote, filterQuotes, quoteJson, itemText].map(String).join('\u0000');
  return (fingerprint = crypto.createHash('sha256').update(code).update(itemText('S', sample)).update(`|zlib ${process.versions.zlib}|level ${FRAGMENT_LEVEL}`).digest('hex'));
}

/** One item of the export file (spec: ExportOut items): its name and quotes (already filtered to the side). */
function itemText(name: string, quotes: readonly MarketQuote[]): string {
  return `{"market_hash_name":${JSON.stringify(name)},"markets":${quotesText(quotes)}}`;
}

const NEWLINE = Buffer.from('\n');

/**
 * The `ndjson` lines of one item (docs/export.md) from its export text (`itemText`:
 * `{"market_hash_name":<name>,"markets":[<quote>,...]}`, UTF-8): one line per quote, in the item's order,
 * `{"market_hash_name":<name>,<the quote's own fields>}` and a line feed. The quotes are found by scanning the text's
 * bytes (strings, escapes, nesting), never by parsing and writing them again, so every field is the text the one
 * quote writer wrote (amounts stay decimal strings). Returns the lines and their count. Throws when `text` is not
 * an item text of `name` (a build fails rather than publish a wrong file).
 */
function quoteLines(name: string, text: Buffer): { bytes: Buffer; count: number } {
  const prefix = Buffer.from(`{"market_hash_name":${JSON.stringify(name)},`, 'utf8');
  const open = prefix.length + '"markets":['.length;
  const end = text.length - 2; // before the closing `]}`
  if (
    end < open ||
    text.compare(prefix, 0, prefix.length, 0, prefix.length) !== 0 ||
    text.toString('latin1', prefix.length, open) !== '"markets":[' ||
    text[end] !== 0x5d ||
    text[end + 1] !== 0x7d
  ) {
    throw new Error(`export: the stored text of ${JSON.stringify(name)} is not an item of the file`);
  }
  const parts: Buffer[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = open; i < end; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: the next byte is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth++ === 0) start = i;
    } else if (c === 0x7d || c === 0x5d) {
      if (--depth === 0) parts.push(prefix, text.subarray(start + 1, i + 1), NEWLINE);
      else if (depth < 0) break;
    }
  }
  if (depth !== 0 || inString) throw new Error(`export: the stored text of ${JSON.stringify(name)} does not end its quotes`);
  return { bytes: Buffer.concat(parts), count: parts.length / 3 };
}

/**
 * SQL: the items of ids `$1` (one page), each with its name and digest (null when it has no quote row and no
 * valuation). The digest, salted with `$2` (writerFingerprint), is the md5 of the count,
 * sum and xor of the row versions (`xmin`, the transaction that wrote the row) and places (`ctid`) of every
 * `source_quote` row of the item, chosen by the precedence or not, and of its latest valuation: the two tables
 * `loadQuotes` reads (quotes/quotes.ts). PostgreSQL writes a new row version on every update, with a newer
 * transaction id, so any insert, update or delete of those rows changes the digest; reading the versions costs
 * no text conversion of the rows (hashing their text was a large part of a full-scale build; docs/benchmarks.md).
 * A rewrite of the table (VACUUM FULL, a restore) changes every digest: the next build writes every item again,
 * and nothing is lost.
 */
const PAGE_SQL = `
WITH page AS (
  SELECT id, market_hash_name FROM item WHERE id = ANY($1::int[])
), digests AS (
  SELECT p.id, p.market_hash_name,
         CASE WHEN h.n > 0 OR v.version IS NOT NULL THEN
           md5($2::text || h.n::text || '|' || COALESCE(h.total, 0)::text || '|' || COALESCE(h.mix, 0)::text || '|' || COALESCE(h.places, 0)::text || '|' || COALESCE(v.version, ''))
         END AS digest
    FROM page p
    CROSS JOIN LATERAL (
      SELECT count(*) AS n, sum(q.xmin::text::bigint) AS total, bit_xor(q.xmin::text::bigint) AS mix, sum(hashtext(q.ctid::text)::bigint) AS places
        FROM source_quote q WHERE q.item_id = p.id) h
    LEFT JOIN LATERAL (
      SELECT v.xmin::text || v.ctid::text || v.valuation_date::text AS version
        FROM valuation v WHERE v.item_id = p.id ORDER BY v.valuation_date DESC LIMIT 1) v ON true
)
SELECT id, market_hash_name, digest FROM digests`;

/** Rows of the item list read per statement (keyset slices by id). */
const ITEM_LIST_ROWS = 1000;

/**
 * Orders strings by Unicode code point, as PostgreSQL's `COLLATE "C"` orders UTF-8 text (its bytes): UTF-16 code
 * units compare the same way except surrogates (U+10000 and up) against U+E000-U+FFFF, which this corrects.
 */
function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/**
 * The items of app `appId` (id and name) in code-point order of their names (the order of the file), read in
 * keyset slices by id (short statements, the primary key's order) and sorted here: an order by `COLLATE "C"` in SQL
 * sorted the whole table for every page (no index has that collation). About 40 bytes a name (36k at full scale).
 */
async function itemList(query: <R>(sql: string, params?: unknown[]) => Promise<R[]>, appId: string): Promise<{ id: number; name: string }[]> {
  const items: { id: number; name: string }[] = [];
  for (let after = 0; ; ) {
    const rows = await query<{ id: number; market_hash_name: string }>(
      `SELECT id, market_hash_name FROM item WHERE app_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
      [appId, after, ITEM_LIST_ROWS],
    );
    for (const r of rows) items.push({ id: r.id, name: r.market_hash_name });
    if (rows.length < ITEM_LIST_ROWS) break;
    after = rows[rows.length - 1]!.id;
  }
  return items.sort((a, b) => compareCodePoints(a.name, b.name));
}

/** SQL: the stored fragments of names `$2` (app `$1`) on sides `$3`, by primary key (a join with the digests read them all). */
const STORED_SQL = `
SELECT market_hash_name, side, digest, deflated, quote_count FROM export_fragment
 WHERE app_id = $1 AND market_hash_name = ANY($2::text[]) AND side = ANY($3::text[])`;

/** An item's text on one side: stored compressed (`deflated`), and its uncompressed text; both null when the side has no quote. */
interface Fragment {
  deflated: Buffer | null;
  text: Buffer | null;
  quoteCount: number;
}

/** One page of items as the build writes them: each name (in order) with its fragment per side, and the fragments written anew. */
interface Page {
  names: string[];
  fragments: Map<string, Map<SideFilter, Fragment>>;
  /** Fragments written in this page (their items' rows changed or had none stored): stored for the next build. */
  fresh: { name: string; side: SideFilter; digest: string; fragment: Fragment }[];
}

const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/**
 * Reads one page of items (`items`, in the file's order) inside the build's snapshot: their digests, the
 * stored fragments, then the quotes of the items whose stored fragments are missing on a side or were written
 * from other rows (loadQuotes), whose fragments are written here. An item gone since the list was read is left out.
 */
async function readPage(query: <R>(sql: string, params?: unknown[]) => Promise<R[]>, appId: string, sides: readonly SideFilter[], items: readonly { id: number; name: string }[]): Promise<Page> {
  const page: Page = { names: [], fragments: new Map(), fresh: [] };
  if (items.length === 0) return page;
  const found = new Map(
    (await query<{ id: number; market_hash_name: string; digest: string | null }>(PAGE_SQL, [items.map((i) => i.id), writerFingerprint()])).map((r) => [r.id, r]),
  );
  const rows = items.flatMap((i) => found.get(i.id) ?? []);
  page.names = rows.map((r) => r.market_hash_name);
  if (rows.length === 0) return page;
  const digests = new Map<string, string>();
  for (const r of rows) if (r.digest !== null) digests.set(r.market_hash_name, r.digest); // null: no quote and no valuation, not in the file
  const stored = await query<{ market_hash_name: string; side: SideFilter; digest: string; deflated: Uint8Array | null; quote_count: number }>(STORED_SQL, [appId, page.names, sides]);
  for (const r of stored) {
    if (digests.get(r.market_hash_name) !== r.digest) continue; // written from other rows
    let bySide = page.fragments.get(r.market_hash_name);
    if (!bySide) page.fragments.set(r.market_hash_name, (bySide = new Map()));
    const deflated = r.deflated === null ? null : asBuffer(r.deflated);
    bySide.set(r.side, { deflated, text: deflated === null ? null : zlib.inflateRawSync(deflated), quoteCount: r.quote_count });
  }
  const stale = [...digests.keys()].filter((name) => sides.some((side) => !page.fragments.get(name)?.has(side)));
  if (stale.length === 0) return page;
  const quotes = await loadQuotes({ query }, appId, stale);
  for (const name of stale) {
    const all = quotes.get(name) ?? [];
    let bySide = page.fragments.get(name);
    if (!bySide) page.fragments.set(name, (bySide = new Map()));
    for (const side of sides) {
      const list = filterQuotes(all, { markets: null, side });
      const text = list.length === 0 ? null : Buffer.from(itemText(name, list), 'utf8');
      const fragment: Fragment = { text, deflated: text === null ? null : zlib.deflateRawSync(text, { level: FRAGMENT_LEVEL }), quoteCount: list.length };
      bySide.set(side, fragment);
      page.fresh.push({ name, side, digest: digests.get(name)!, fragment });
    }
  }
  return page;
}

/** Stores fragments written by a build (one statement), replacing what an item and side had. */
async function storeFragments(db: Pick<Database, 'query'>, appId: string, fresh: Page['fresh']): Promise<void> {
  if (fresh.length === 0) return;
  await db.query(
    `INSERT INTO export_fragment (app_id, market_hash_name, side, digest, deflated, quote_count)
     SELECT $1, n, s, d, decode(b, 'hex'), q FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[]) AS t(n, s, d, b, q)
     ON CONFLICT (app_id, market_hash_name, side) DO UPDATE
        SET digest = EXCLUDED.digest, deflated = EXCLUDED.deflated, quote_count = EXCLUDED.quote_count`,
    [
      appId,
      fresh.map((f) => f.name),
      fresh.map((f) => f.side),
      fresh.map((f) => f.digest),
      fresh.map((f) => (f.fragment.deflated ? f.fragment.deflated.toString('hex') : null)),
      fresh.map((f) => f.fragment.quoteCount),
    ],
  );
}

/** Publishes a side's finished file unless its items equal those of the current snapshot of its side and format (then the new build is dropped). */
async function publishSide(db: Database, appId: string, out: SideOutput, generatedAt: Date, buildMs: number): Promise<BuildResult> {
  const itemsSha = out.itemsHash.digest('hex');
  const current = await db.query<SnapshotRow>(CURRENT_SQL, [appId, out.side, out.format]);
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
    `INSERT INTO export_current (app_id, side, format, build_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (app_id, side, format) DO UPDATE SET build_id = EXCLUDED.build_id`,
    [appId, out.side, out.format, out.buildId],
  );
  // Every replica's SnapshotCache drops its entries (this process's at once). A signal that cannot be sent is
  // not an error of the build: the other replicas' entries expire within a second anyway.
  await db.notify('qg_exports', appId).catch(() => undefined);
  // Keep the snapshot just replaced (downloads in flight); drop older ones.
  await db.query(
    `DELETE FROM export_build WHERE app_id = $1 AND side = $2 AND format = $4 AND complete AND id < $3
        AND id <> (SELECT COALESCE(max(id), 0) FROM export_build WHERE app_id = $1 AND side = $2 AND format = $4 AND complete AND id < $3)`,
    [appId, out.side, out.buildId, out.format],
  );
  return {
    snapshot: { buildId: out.buildId, appId, side: out.side, format: out.format, etag, generatedAt, changeSeq: out.changeSeq, byteSize: out.size, itemCount: out.items, quoteCount: out.quotes, buildMs },
    published: true,
  };
}

/**
 * Builds the snapshots of `appId` for `sides`, each in `opts.formats` (default both), in one pass over the data
 * (each page of items is read once and written into every file), then publishes each file unless its items
 * equal the current snapshot's of its side and format. Returns one result per side and format, a side's formats
 * in EXPORT_FORMATS order. The caller holds the builder lock (see runExportSnapshots). Throws when reading or
 * writing fails; the current snapshots are then untouched and the partial builds are removed by the next build.
 *
 * Each item's text on a side is kept (compressed) in `export_fragment` with the digest of the rows it was
 * written from: a later build reads the digests (the database hashes the rows; no quote leaves it) and writes
 * only the items whose rows changed, reusing every other text as stored. The file is compressed in 4 MiB
 * segments on the thread pool, in parallel, joined into one gzip member (lib/gzip-pieces.ts). So a build costs
 * about reading the digests and stored texts plus compressing the file, and the changed items; the first build
 * writes every item.
 */
export async function buildSnapshots(database: Database, appId: string, sides: readonly SideFilter[], opts: BuildOptions = {}): Promise<BuildResult[]> {
  const started = performance.now();
  const generatedAt = opts.now ?? new Date();
  // On PGlite every statement of the build lets waiting requests go first (see the module doc).
  const db = backgroundDatabase(database);
  const embedded = db.kind === 'pglite';
  // Leftovers of interrupted builds (never current) go first.
  await db.query(
    `DELETE FROM export_build WHERE app_id = $1 AND side = ANY($2::text[]) AND NOT complete
        AND id NOT IN (SELECT build_id FROM export_current)`,
    [appId, sides],
  );
  // Each side's files, a format after the other: the order they are published in and returned.
  const files = sides.flatMap((side) => (opts.formats ?? EXPORT_FORMATS).map((format) => ({ side, format })));
  const ids: string[] = [];
  for (const f of files) ids.push(await createBuild(db, appId, f.side, f.format, generatedAt));
  // PostgreSQL: every page and the change sequence are read in one snapshot (REPEATABLE READ): the file holds exactly
  // the changes up to its change_seq, and following the feed from there gives exactly the ones after it. PGlite: the
  // sequence first, then each page by short statements of its own (module doc).
  const reads = <T>(work: (query: <R>(sql: string, params?: unknown[]) => Promise<R[]>) => Promise<T>): Promise<T> =>
    embedded ? work(db.query) : db.readSnapshot(work);
  const comma = Buffer.from(',');
  const outs: SideOutput[] = [];
  let storing: Promise<void> = Promise.resolve();
  let freshCount = 0;
  await reads(async (query) => {
    const changeSeq = (await currentSequence({ query })).toString();
    for (const [i, { side, format }] of files.entries()) {
      const out: SideOutput = {
        side, format, buildId: ids[i]!, joiner: new GzipJoiner(), segment: [], segmentBytes: 0, compressing: [], pending: [], pendingBytes: 0, seq: 0,
        chunkBytes: embedded ? EMBEDDED_CHUNK_BYTES : CHUNK_BYTES, itemsHash: crypto.createHash('sha256'), fileHash: crypto.createHash('sha256'), size: 0, items: 0, quotes: 0, changeSeq,
      };
      outs.push(out);
      await append(db, out, out.joiner.header());
      if (format === 'ndjson') continue; // lines only: the snapshot's fields are its headers
      const head = `{"app_id":${JSON.stringify(appId)},"side":${JSON.stringify(side)},"generated_at":"${formatTimestamp(generatedAt)}","change_seq":"${changeSeq}","items":[`;
      await write(db, out, Buffer.from(head, 'utf8'));
    }
    const pageItems = opts.pageItems ?? (embedded ? EMBEDDED_PAGE_ITEMS : PAGE_ITEMS);
    const items = await itemList(query, appId);
    // The next page is read while this one is written (its digests and changed quotes in flight on the
    // database's core while this process writes): two pages held at most.
    let next = readPage(query, appId, sides, items.slice(0, pageItems));
    let pageNo = 0;
    for (let at = pageItems; ; at += pageItems) {
      opts.signal?.throwIfAborted();
      const page = await next;
      if (at - pageItems >= items.length) break;
      next = readPage(query, appId, sides, items.slice(at, at + pageItems));
      // A failure of the read ahead is the next iteration's to throw; until then it must not go unhandled.
      next.catch(() => undefined);
      for (const name of page.names) {
        const bySide = page.fragments.get(name);
        if (!bySide) continue; // no quote on any market
        for (const out of outs) {
          const fragment = bySide.get(out.side)!;
          if (fragment.text === null) continue;
          out.itemsHash.update(fragment.deflated!);
          out.items += 1;
          if (out.format === 'ndjson') {
            const lines = quoteLines(name, fragment.text);
            out.quotes += lines.count;
            await write(db, out, lines.bytes);
            continue;
          }
          if (out.items > 1) await write(db, out, comma);
          out.quotes += fragment.quoteCount;
          await write(db, out, fragment.text);
        }
      }
      if (page.fresh.length > 0) {
        // One statement in flight at a time; the next page is written meanwhile.
        const fresh = page.fresh;
        freshCount += fresh.length;
        storing = storing.then(() => storeFragments(db, appId, fresh));
        storing.catch(() => undefined);
      }
      pageNo += 1;
      await opts.onPage?.(pageNo);
    }
    for (const out of outs) {
      if (out.format === 'json') await write(db, out, Buffer.from(']}'));
      await finishSide(db, out);
    }
  });
  await storing;
  opts.signal?.throwIfAborted();
  const buildMs = Math.round(performance.now() - started);
  const results: BuildResult[] = [];
  for (const out of outs) {
    const r = await publishSide(db, appId, out, generatedAt, buildMs);
    snapshotBuildSeconds.observe({ side: out.side, format: out.format, outcome: r.published ? 'published' : 'unchanged' }, buildMs / 1000);
    results.push(r);
  }
  // See EMBEDDED_ANALYZE_FRAGMENTS (PostgreSQL's autovacuum does this there).
  if (embedded && freshCount >= EMBEDDED_ANALYZE_FRAGMENTS) await db.query(`ANALYZE export_fragment`);
  await sweepFragments(db, appId);
  return results;
}

/**
 * Deletes the stored fragments of app `appId` whose item is no longer in the catalogue, in keyset slices of
 * `rows` fragment rows (primary-key order; default SWEEP_ROWS), each one short statement. Returns how many were deleted.
 */
export async function sweepFragments(db: Pick<Database, 'query'>, appId: string, rows = SWEEP_ROWS): Promise<number> {
  let after = null as { name: string; side: string } | null;
  let deleted = 0;
  for (;;) {
    const [row]: { last_name: string | null; last_side: string | null; n: number }[] = await db.query<{ last_name: string | null; last_side: string | null; n: number }>(
      `WITH slice AS (
         SELECT market_hash_name, side FROM export_fragment
          WHERE app_id = $1 AND ($2::text IS NULL OR (market_hash_name, side) > ($2::text, $3::text))
          ORDER BY market_hash_name, side LIMIT $4
       ), gone AS (
         DELETE FROM export_fragment f USING slice s
          WHERE f.app_id = $1 AND f.market_hash_name = s.market_hash_name AND f.side = s.side
            AND NOT EXISTS (SELECT 1 FROM item i WHERE i.app_id = $1 AND i.market_hash_name = s.market_hash_name)
         RETURNING 1
       ), last AS (SELECT market_hash_name, side FROM slice ORDER BY market_hash_name DESC, side DESC LIMIT 1)
       SELECT (SELECT market_hash_name FROM last) AS last_name, (SELECT side FROM last) AS last_side, (SELECT count(*) FROM gone)::int AS n`,
      [appId, after?.name ?? null, after?.side ?? null, rows],
    );
    deleted += row?.n ?? 0;
    if (!row?.last_name) return deleted;
    after = { name: row.last_name, side: row.last_side! };
  }
}

/** Builds and publishes one side, its files in `opts.formats` (default both; see buildSnapshots); returns the first format's result (`json` by default). */
export async function buildSnapshot(db: Database, appId: string, side: SideFilter, opts: BuildOptions = {}): Promise<BuildResult> {
  return (await buildSnapshots(db, appId, [side], opts))[0]!;
}

/** App ids that have items. */
async function appIds(db: Pick<Database, 'query'>): Promise<string[]> {
  return (await db.query<{ app_id: string }>(`SELECT DISTINCT app_id FROM item ORDER BY app_id`)).map((r) => r.app_id);
}

/**
 * One run of the snapshot job: every app id and side, in both formats, under the `export-snapshots` lock so only one
 * replica builds at a time. Returns null when another builder holds the lock.
 */
export async function runExportSnapshots(
  db: Database,
  opts: { now?: Date; sides?: readonly SideFilter[]; formats?: readonly ExportFormat[]; appIds?: string[]; signal?: AbortSignal } = {},
): Promise<BuildResult[] | null> {
  const r = await db.withLock('quotegate:export-snapshots', async () => {
    const out: BuildResult[] = [];
    for (const app of opts.appIds ?? (await appIds(db))) out.push(...(await buildSnapshots(db, app, opts.sides ?? EXPORT_SIDES, { now: opts.now, formats: opts.formats, signal: opts.signal })));
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
