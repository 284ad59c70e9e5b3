/**
 * Collector files for `quotegate import`: the rows a collector would send to `ingestQuotes`, as CSV
 * (header row with the column names below) or NDJSON (one JSON object per line), optionally gzip'd
 * (`.csv`, `.csv.gz`, `.ndjson`, `.jsonl`, `.ndjson.gz`, `.jsonl.gz`).
 *
 * Columns (snake_case; FILE_COLUMNS): market_hash_name, market_code, provider_code, side, currency_code,
 * price, observed_at required; app_id (default 730), quantity, is_quantity_minimum,
 * is_all_items_same_price, delisted optional. In CSV an empty cell is null; booleans are `true`/`false`;
 * prices stay strings (NDJSON prices must be JSON strings, never numbers).
 *
 * Two streaming passes, so memory stays bounded whatever the file size: the first checks every row with
 * the mutation's rules (a file with any invalid row is refused whole, with its line numbers, and nothing
 * is applied); the second applies the rows in transactions of FILE_BATCH rows through the ingestion
 * service. Re-running an import is idempotent (stale observations change nothing).
 */
import fs from 'node:fs';
import readline from 'node:readline';
import zlib from 'node:zlib';
import { parse } from 'csv-parse';
import type { Database } from '../db/client.js';
import { validationError, type ValidationDetail } from '../lib/errors.js';
import { checkCatalogue, FILE_COLUMNS, fileLabel, MAX_BATCH_ROWS, parseQuoteRows } from '../validation/ingest.js';
import { ingestBatch, marketCatalogue, type IngestResult } from '../quotes/ingestion.js';

/** Rows per transaction when applying a file. */
const FILE_BATCH = MAX_BATCH_ROWS;
/** Most problems reported for one file. */
const MAX_DETAILS = 50;

/** True for a path that names a collector file (by extension). */
export function isCollectorFile(p: string): boolean {
  return /\.(csv|ndjson|jsonl)(\.gz)?$/i.test(p);
}

type Row = { line: number; value: Record<string, unknown> | null; problem?: string };

function input(file: string): NodeJS.ReadableStream {
  const s = fs.createReadStream(file);
  return file.toLowerCase().endsWith('.gz') ? s.pipe(zlib.createGunzip()) : s;
}

const BOOL_COLUMNS = new Set(['is_quantity_minimum', 'is_all_items_same_price', 'delisted']);

/** Converts a CSV cell to the JSON value the row rules expect (strings stay strings, empty = null). */
function csvCell(column: string, cell: string): unknown {
  if (cell === '') return null;
  if (column === 'quantity') return /^-?\d+$/.test(cell) ? Number(cell) : cell;
  if (BOOL_COLUMNS.has(column)) return cell === 'true' ? true : cell === 'false' ? false : cell;
  return cell;
}

/** Maps a snake_case record to the camelCase row; unknown columns are a problem. */
function toRow(rec: Record<string, unknown>): { value: Record<string, unknown> | null; problem?: string } {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rec)) {
    const field = FILE_COLUMNS[k];
    if (!field) return { value: null, problem: `unknown column ${JSON.stringify(k)}` };
    out[field] = v;
  }
  return { value: out };
}

/** The rows of a collector file with their line numbers, streamed. */
async function* rows(file: string): AsyncGenerator<Row> {
  if (/\.csv(\.gz)?$/i.test(file)) {
    let header: string[] | null = null;
    let line = 0;
    for await (const record of input(file).pipe(parse({ relax_column_count: false, bom: true }))) {
      line += 1;
      const cells = record as string[];
      if (!header) {
        header = cells.map((c) => c.trim());
        const unknown = header.filter((c) => !FILE_COLUMNS[c]);
        if (unknown.length > 0) yield { line, value: null, problem: `unknown column(s) ${unknown.join(', ')}` };
        continue;
      }
      const rec: Record<string, unknown> = {};
      header.forEach((col, i) => (rec[col] = csvCell(col, cells[i] ?? '')));
      yield { line, ...toRow(rec) };
    }
    return;
  }
  let line = 0;
  for await (const text of readline.createInterface({ input: input(file), crlfDelay: Infinity })) {
    line += 1;
    if (text.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      yield { line, value: null, problem: 'is not valid JSON' };
      continue;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      yield { line, value: null, problem: 'must be a JSON object' };
      continue;
    }
    yield { line, ...toRow(parsed as Record<string, unknown>) };
  }
}

/** Checks one chunk of rows; returns the observations, or null after adding the chunk's problems to `details`. */
function checkChunk(chunk: Row[], markets: Awaited<ReturnType<typeof marketCatalogue>>, now: Date, details: ValidationDetail[]) {
  const room = () => MAX_DETAILS - details.length;
  const good = chunk.filter((r) => !r.problem);
  for (const r of chunk) if (r.problem && room() > 0) details.push({ location: 'body', field: `line ${r.line}`, message: r.problem });
  const label = fileLabel((i) => good[i]!.line);
  const checked = parseQuoteRows(
    good.map((r) => r.value),
    label,
    'body',
    now,
    Math.max(0, room()),
  );
  details.push(...checked.details.slice(0, Math.max(0, room())));
  if (checked.details.length > 0 || good.length < chunk.length) return null;
  const cat = checkCatalogue(checked.observations, markets, label, 'body', Math.max(0, room()));
  details.push(...cat);
  return cat.length > 0 ? null : checked.observations;
}

/**
 * Imports one collector file. Throws a 422 ServiceError (details name the lines) when any row is
 * invalid; nothing is applied then. `progress(done, total)` is called after each applied batch.
 */
export async function importCollectorFile(db: Pick<Database, 'query' | 'transaction'>, file: string, progress?: (done: number, total: number) => void): Promise<IngestResult & { observations: number }> {
  const markets = await marketCatalogue(db);
  const now = new Date();
  const details: ValidationDetail[] = [];
  let total = 0;
  let chunk: Row[] = [];
  for await (const r of rows(file)) {
    chunk.push(r);
    total += r.value ? 1 : 0;
    if (chunk.length === FILE_BATCH) {
      checkChunk(chunk, markets, now, details);
      chunk = [];
    }
    if (details.length >= MAX_DETAILS) break;
  }
  if (chunk.length > 0 && details.length < MAX_DETAILS) checkChunk(chunk, markets, now, details);
  if (details.length > 0) throw validationError(details);

  const result = { inserted: 0, updated: 0, skipped: 0, confirmed: 0, observations: 0 };
  const apply = async (part: Row[]) => {
    const obs = checkChunk(part, markets, now, details);
    if (!obs) throw validationError(details);
    const r = await ingestBatch(db, obs);
    result.inserted += r.inserted;
    result.updated += r.updated;
    result.skipped += r.skipped;
    result.confirmed += r.confirmed;
    result.observations += obs.length;
    progress?.(result.observations, total);
  };
  chunk = [];
  for await (const r of rows(file)) {
    chunk.push(r);
    if (chunk.length === FILE_BATCH) {
      await apply(chunk);
      chunk = [];
    }
  }
  if (chunk.length > 0) await apply(chunk);
  return result;
}
