/**
 * Streaming reader for the bulk price lists of the collector sources (issue 42: "large bodies are parsed as
 * streams"). One whole-market response (Lis-skins' full export is ~170 MB, 2.3M listings) is read chunk by chunk
 * through stream-json's tokenizer; only one listing element at a time is assembled into an object, so memory does
 * not grow with the body. Numbers keep their source text (`numberAsString`): a price leaves here as the exact
 * characters the upstream sent, never as a JS float.
 *
 * The document shape these upstreams use is an object with a few small top-level fields (`success`, `status`,
 * `msg`, ...) and one listing (an array, or an object keyed by name). The reader:
 * - streams the elements of the listing at `listKey` (or of the root array when `listKey` is null);
 * - assembles the top-level keys named in `fields` (small values: flags, messages, timestamps) and reports each
 *   one as soon as it is complete, so an adapter can reject `{"success":false,...}` before reading any item;
 * - skips every other top-level key without building it.
 *
 * Every failure of the body as a whole is an `UpstreamError('format')`: HTML (or any non-JSON) instead of JSON,
 * invalid UTF-8, a body cut off before the document ends (the connection dropped, or the text just stops), a root
 * of the wrong kind, and a missing listing key (a renamed field). A cancelled run (the context's signal) rethrows
 * the abort as it is.
 */
import { jsonParser } from 'stream-json/core/parser.js';
import type { Token } from 'stream-json/core/parser.js';
import Assembler from 'stream-json/core/assembler.js';
import { none, isMany, getManyValues } from 'stream-chain/defs.js';
import { UpstreamError } from '../source.js';

/** One element of the listing: its array index, or its key when the listing is an object. */
export interface ListingElement {
  key: string | number;
  /** The element as JSON gives it, numbers as their source text (strings). */
  value: unknown;
}

/** What the reader reports, in document order. */
export type ListingEvent =
  | { kind: 'field'; key: string; value: unknown }
  | { kind: 'items'; items: ListingElement[] };

/** Where the listing is and which small top-level fields to report. */
export interface ListingShape {
  /** Human name of the upstream for error messages, e.g. `Waxpeer /v1/prices`. */
  label: string;
  /** Top-level key of the listing; null when the document root is itself the listing (an array). */
  listKey: string | null;
  /** The listing is an array (`array`), an object keyed by name (`object`), or either (`any`). Default `array`. */
  listKind?: 'array' | 'object' | 'any';
  /** Top-level keys (other than `listKey`) whose values are assembled and reported as `field` events. */
  fields?: readonly string[];
}

const PARSER_OPTIONS = { packValues: true, streamValues: false } as const;

function tokensOf(result: unknown): Token[] {
  if (result === none) return [];
  if (isMany(result)) return getManyValues(result) as Token[];
  return [result as Token];
}

/**
 * Reads `res`'s body as a stream and yields the listing in batches (one batch per network chunk, so the caller
 * loops synchronously over items) and the requested top-level fields as they complete.
 * Throws `UpstreamError('format')` when the body fails as a whole (see the module comment); rethrows an abort of
 * `signal` unchanged.
 */
export async function* readJsonListing(res: Response, shape: ListingShape, signal?: AbortSignal): AsyncGenerator<ListingEvent> {
  const { label } = shape;
  const listKind = shape.listKind ?? 'array';
  const fields = new Set(shape.fields ?? []);
  const contentType = res.headers.get('content-type') ?? '';
  if (/html/i.test(contentType)) throw new UpstreamError('format', `${label}: HTML instead of JSON (Content-Type ${contentType})`);
  if (!res.body) throw new UpstreamError('format', `${label}: empty body`);

  const tokenizer = jsonParser(PARSER_OPTIONS);
  const decoder = new TextDecoder('utf-8', { fatal: true });

  // Parse state. depth counts open containers; the root is depth 1 once opened.
  let depth = 0;
  let rootSeen = false;
  let rootDone = false;
  let currentKey: string | null = null; // the top-level key whose value comes next (root object only)
  let inList = false; // inside the listing container
  let listSeen = false;
  let listIsObject = false;
  let listDepth = 0; // depth of the listing container once open
  let elementKey: string | number = 0;
  let nextIndex = 0;
  let elementAsm: Assembler | null = null; // assembling one listing element
  let fieldAsm: Assembler | null = null; // assembling one requested top-level field
  let fieldName = '';
  let skipping = false; // skipping an unwanted top-level value
  let skipDepth = 0;
  const rootIsList = shape.listKey === null;

  let batch: ListingElement[] = [];
  const out: ListingEvent[] = [];

  const fail = (why: string): never => {
    throw new UpstreamError('format', `${label}: ${why}`);
  };

  const isOpen = (t: Token) => t.name === 'startObject' || t.name === 'startArray';
  const isClose = (t: Token) => t.name === 'endObject' || t.name === 'endArray';

  const startElement = (t: Token, key: string | number) => {
    elementKey = key;
    elementAsm = new Assembler({ numberAsString: true });
    elementAsm.consume(t);
    if (elementAsm.done) finishElement();
  };
  const finishElement = () => {
    batch.push({ key: elementKey, value: elementAsm!.current });
    elementAsm = null;
  };

  const onToken = (t: Token) => {
    if (rootDone) return fail('data after the end of the document');
    if (!rootSeen) {
      rootSeen = true;
      if (rootIsList) {
        if (t.name !== 'startArray') fail('expected a JSON array at the root');
        inList = true;
        listSeen = true;
        listDepth = 1;
        depth = 1;
        return;
      }
      if (t.name !== 'startObject') fail('expected a JSON object at the root');
      depth = 1;
      return;
    }

    // Inside one listing element: feed the assembler until the element closes.
    if (elementAsm) {
      elementAsm.consume(t);
      if (isOpen(t)) depth++;
      else if (isClose(t)) depth--;
      if (elementAsm.done) finishElement();
      return;
    }

    // Inside the listing container, between elements.
    if (inList && depth === listDepth) {
      if (isClose(t)) {
        inList = false;
        depth--;
        if (depth === 0) rootDone = true;
        return;
      }
      if (listIsObject) {
        if (t.name === 'keyValue') {
          elementKey = t.value;
          return;
        }
        if (isOpen(t)) depth++;
        startElement(t, elementKey);
        return;
      }
      if (isOpen(t)) depth++;
      startElement(t, nextIndex++);
      return;
    }

    // Assembling a requested top-level field.
    if (fieldAsm) {
      fieldAsm.consume(t);
      if (isOpen(t)) depth++;
      else if (isClose(t)) depth--;
      if (fieldAsm.done) {
        out.push({ kind: 'field', key: fieldName, value: fieldAsm.current });
        fieldAsm = null;
      }
      return;
    }

    // Skipping an unwanted top-level value.
    if (skipping) {
      if (isOpen(t)) depth++;
      else if (isClose(t)) depth--;
      if (depth === skipDepth) skipping = false;
      return;
    }

    // Directly inside the root object.
    if (depth === 1) {
      if (t.name === 'endObject') {
        depth = 0;
        rootDone = true;
        return;
      }
      if (t.name === 'keyValue') {
        currentKey = t.value;
        return;
      }
      const key = currentKey;
      currentKey = null;
      if (key !== null && key === shape.listKey) {
        if (t.name === 'startArray' && listKind !== 'object') listIsObject = false;
        else if (t.name === 'startObject' && listKind !== 'array') listIsObject = true;
        else fail(`"${key}" is not ${listKind === 'any' ? 'a list' : `an ${listKind}`}`);
        inList = true;
        listSeen = true;
        depth = 2;
        listDepth = 2;
        return;
      }
      if (key !== null && fields.has(key)) {
        fieldName = key;
        fieldAsm = new Assembler({ numberAsString: true });
        fieldAsm.consume(t);
        if (isOpen(t)) depth++;
        if (fieldAsm.done) {
          out.push({ kind: 'field', key, value: fieldAsm.current });
          fieldAsm = null;
        }
        return;
      }
      if (isOpen(t)) {
        skipping = true;
        skipDepth = depth;
        depth++;
      }
      return;
    }
    fail(`unexpected ${t.name}`);
  };

  const feed = (text: string | typeof none) => {
    let tokens: Token[];
    try {
      tokens = tokensOf(tokenizer(text as string));
    } catch (err) {
      throw new UpstreamError('format', `${label}: not JSON (${(err as Error).message})`);
    }
    for (const t of tokens) onToken(t);
  };

  const flushEvents = function* (): Generator<ListingEvent> {
    if (batch.length) {
      // Within one chunk, completed fields are reported before that chunk's items (an error flag is seen early).
      out.push({ kind: 'items', items: batch });
      batch = [];
    }
    for (const e of out) yield e;
    out.length = 0;
  };

  const reader = res.body.getReader();
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal?.aborted) throw signal.reason ?? err;
        throw new UpstreamError('format', `${label}: body cut off (${(err as Error).message})`);
      }
      if (chunk.done) break;
      let text: string;
      try {
        text = decoder.decode(chunk.value, { stream: true });
      } catch {
        throw new UpstreamError('format', `${label}: body is not UTF-8`);
      }
      if (text) feed(text);
      yield* flushEvents();
    }
    let tail: string;
    try {
      tail = decoder.decode();
    } catch {
      throw new UpstreamError('format', `${label}: body is not UTF-8`);
    }
    if (tail) feed(tail);
    feed(none);
    if (!rootSeen) fail('empty body');
    if (!rootDone) fail('body cut off before the document ended');
    yield* flushEvents();
    if (!listSeen) fail(`no "${shape.listKey}" in the response (renamed or missing)`);
  } finally {
    reader.releaseLock();
    // Stop the transfer when the consumer stops early or fails (no-op once the body is fully read).
    res.body.cancel().catch(() => undefined);
  }
}

/** The value of a JSON string field, or undefined when absent or not a string. */
export function str(o: Record<string, unknown>, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' ? v : undefined;
}

/** True when `v` is a plain JSON object (not an array, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A non-negative integer count from its JSON text (`"42"`, `42`); null when absent or not a count. */
export function countOf(v: unknown): number | null {
  if (typeof v !== 'string' || !/^\d{1,15}$/.test(v)) return null;
  return Number(v);
}
