/**
 * Reads a large upstream JSON body as a stream of its top-level entries (issue 42: "large bodies are parsed as
 * streams"), for the bulk adapters (csgotrader's price files, Skinport's item list).
 *
 * The body's bytes are decoded (UTF-8, fatal on invalid bytes, a leading BOM dropped) and tokenized by
 * stream-json's bare tokenizer, chunk by chunk as they arrive; each top-level entry (a property of a top-level
 * object, or an element of a top-level array) is assembled alone and handed on, so memory holds one entry,
 * never the body. Numbers keep their source text (`JsonNumber`), never a JS float: money stays a decimal string
 * from the byte read.
 *
 * Whole-response failures become `UpstreamError('format')` with the reason in the message (the runner then
 * leaves the market's quotes as they were, issue point 7):
 * - HTML (`Content-Type: text/html`: a login wall, a CDN error page) or any body that is not JSON;
 * - a truncated body (the connection closed early, or the JSON stops before its top-level value closes);
 * - a 200 with an error object: a top-level object where the format has a list, or a top-level key named
 *   `error`, `errors`, `success` or `message` (never an item name) where the format has an object of items;
 * - an empty body, a top-level scalar, an entry nested deeper than MAX_DEPTH or longer than MAX_ENTRY_TOKENS tokens.
 * A cancelled run (the context's signal aborted) rethrows the abort as it is.
 */
import { jsonParser } from 'stream-json/core/parser.js';
import { getManyValues, isMany, none } from 'stream-chain/defs.js';
import { UpstreamError } from '../source.js';

/** A JSON number as its source text (e.g. `"12.30"`, `"1e3"`): never turned into a JS float. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/**
 * A JSON value as the entries hold it: numbers as `JsonNumber`, objects without a prototype (a `__proto__` key
 * stays data), everything else as JSON.parse gives it.
 */
export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

/** One top-level entry: `key` is the property name (top-level object) or the index (top-level array). */
export interface JsonEntry {
  key: string | number;
  value: JsonValue;
}

/** Deepest nesting accepted inside one entry (the bulk formats nest 3 levels: item, side, Doppler phases). */
export const MAX_DEPTH = 16;
/** Most tokens accepted in one entry (an item with every Doppler phase is about 60). */
export const MAX_ENTRY_TOKENS = 100_000;
/** Top-level keys that mark a 200 answer carrying an error object instead of the expected object of items. */
export const ERROR_KEYS: ReadonlySet<string> = new Set(['error', 'errors', 'success', 'message']);

/** Options of `jsonEntries`. */
export interface JsonEntriesOptions {
  /** Names the response in error messages, e.g. `skinport /v1/items`. */
  what: string;
  /** The top-level container the format has: an object of entries keyed by item name, or an array of entries. */
  top: 'object' | 'array';
  /** The run's signal: once aborted, errors are rethrown as they are (a cancellation, not a format failure). */
  signal?: AbortSignal;
}

type Token = { name: string; value?: unknown };

/** Builds one value from its tokens (numbers as `JsonNumber`), within MAX_DEPTH and MAX_ENTRY_TOKENS. */
class ValueBuilder {
  private stack: Array<JsonValue[] | { [key: string]: JsonValue }> = [];
  private keys: Array<string | null> = [];
  private tokens = 0;
  /** The finished value once `done`. */
  value: JsonValue = null;
  done = false;

  constructor(private readonly fail: (reason: string) => never) {}

  /** Feeds one token. */
  push(t: Token): void {
    if (++this.tokens > MAX_ENTRY_TOKENS) this.fail(`an entry has more than ${MAX_ENTRY_TOKENS} tokens`);
    switch (t.name) {
      case 'startObject':
      case 'startArray':
        if (this.stack.length >= MAX_DEPTH) this.fail(`an entry is nested deeper than ${MAX_DEPTH} levels`);
        this.stack.push(t.name === 'startObject' ? Object.create(null) : []);
        this.keys.push(null);
        return;
      case 'endObject':
      case 'endArray': {
        const v = this.stack.pop()!;
        this.keys.pop();
        this.put(v);
        return;
      }
      case 'keyValue':
        this.keys[this.keys.length - 1] = t.value as string;
        return;
      case 'stringValue':
        this.put(t.value as string);
        return;
      case 'numberValue':
        this.put(new JsonNumber(t.value as string));
        return;
      case 'nullValue':
        this.put(null);
        return;
      case 'trueValue':
        this.put(true);
        return;
      case 'falseValue':
        this.put(false);
        return;
      default:
        return; // whitespace and the streamed-chunk tokens the packing parser does not emit
    }
  }

  private put(v: JsonValue): void {
    const parent = this.stack[this.stack.length - 1];
    if (parent === undefined) {
      this.value = v;
      this.done = true;
    } else if (Array.isArray(parent)) parent.push(v);
    // A prototype-less object has no `__proto__` setter: every key, that one included, becomes an own property.
    else parent[this.keys[this.keys.length - 1]!] = v;
  }
}

/** A short, printable rendering of a small value for an error message. */
function preview(v: JsonValue): string {
  const text = JSON.stringify(v, (_k, x: unknown) => (x instanceof JsonNumber ? Number(x.text) : x)) ?? String(v);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Streams the top-level entries of a JSON response body (see the module doc). Resolves entries as the bytes
 * arrive; throws `UpstreamError('format')` when the response fails as a whole. Stopping early (a `return` from
 * the consumer) cancels the body.
 */
export async function* jsonEntries(res: Response, opts: JsonEntriesOptions): AsyncGenerator<JsonEntry> {
  const fail = (reason: string): never => {
    throw new UpstreamError('format', `${opts.what}: ${reason}`);
  };
  const type = res.headers.get('content-type') ?? '';
  if (/html/i.test(type)) {
    await res.body?.cancel().catch(() => undefined);
    fail(`HTML instead of JSON (Content-Type: ${type})`);
  }
  if (!res.body) fail('empty body');
  const reader = res.body!.getReader();
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const tokenize = jsonParser({ packValues: true, streamValues: false });

  let state = 'start' as 'start' | 'entries' | 'after';
  let index = 0;
  let key: string | number | null = null;
  let entry: ValueBuilder | null = null;
  // A top-level object where a list was expected, or a top-level error key: assembled (bounded) for the message.
  let errorObject: ValueBuilder | null = null;
  let sawToken = false;

  const onToken = (t: Token): JsonEntry | null => {
    sawToken = true;
    if (errorObject) {
      errorObject.push(t);
      if (errorObject.done) fail(`a 200 answer with an error object instead of the data: ${preview(errorObject.value)}`);
      return null;
    }
    if (state === 'start') {
      const opened = t.name === 'startObject' ? 'object' : t.name === 'startArray' ? 'array' : null;
      if (opened === opts.top) {
        state = 'entries';
        return null;
      }
      if (t.name === 'startObject') {
        errorObject = new ValueBuilder(fail);
        errorObject.push(t);
        return null;
      }
      fail(`expected a JSON ${opts.top} at the top, found ${opened ?? `a ${t.name.replace(/Value$/, '')}`}`);
    }
    if (state === 'after') return null;
    if (entry) {
      entry.push(t);
      if (!entry.done) return null;
      const out = { key: key!, value: entry.value };
      entry = null;
      return out;
    }
    // Between entries.
    if (t.name === 'endObject' || t.name === 'endArray') {
      state = 'after';
      return null;
    }
    if (opts.top === 'object' && t.name === 'keyValue') {
      key = t.value as string;
      if (ERROR_KEYS.has(key)) {
        errorObject = new ValueBuilder(fail);
        errorObject.push({ name: 'startObject' });
        errorObject.push(t);
      }
      return null;
    }
    if (opts.top === 'array') key = index++;
    entry = new ValueBuilder(fail);
    entry.push(t);
    if (!entry.done) return null;
    const out = { key: key!, value: entry.value };
    entry = null;
    return out;
  };

  const tokensOf = (r: unknown): Token[] => (r === none ? [] : isMany(r) ? (getManyValues(r) as Token[]) : [r as Token]);

  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        fail(`the body could not be read to its end (truncated: ${err instanceof Error ? err.message : String(err)})`);
      }
      let tokens: Token[] = [];
      try {
        const text = chunk!.done ? decoder.decode() : decoder.decode(chunk!.value, { stream: true });
        tokens = tokensOf(tokenize(text));
        if (chunk!.done) tokens.push(...tokensOf(tokenize(none as unknown as string))); // flush
      } catch (err) {
        if (err instanceof UpstreamError) throw err;
        const message = err instanceof Error ? err.message : String(err);
        const seen = sawToken || tokens.length > 0;
        if (chunk!.done && !seen) fail('empty body');
        if (chunk!.done && state !== 'after' && seen) fail(`the JSON ends before its top-level ${opts.top} closes (truncated: ${message})`);
        fail(`not valid JSON (${message})`);
      }
      const out: JsonEntry[] = [];
      for (const t of tokens) {
        const e = onToken(t);
        if (e) out.push(e);
      }
      for (const e of out) yield e;
      if (chunk!.done) break;
    }
  } finally {
    reader.releaseLock();
    // A consumer that stopped early, or a failure: let the connection go.
    await res.body!.cancel().catch(() => undefined);
  }
  if (!sawToken) fail('empty body');
  if (errorObject) fail('a 200 answer with an error object instead of the data (truncated)');
  if (state !== 'after') fail(`the JSON ends before its top-level ${opts.top} closes (truncated)`);
}

/**
 * The decimal text of a price field: a JSON number's source text, or a string as the upstream wrote it (some
 * feeds quote their numbers); null for JSON null and csgotrader's `"null"` string. The runner validates the
 * text as a positive decimal (a bad row is counted and skipped). Throws `UpstreamError('format')` for any other
 * JSON type (an object, a list or a boolean where a price belongs: the format changed).
 */
export function priceText(v: JsonValue | undefined, where: string): string | null {
  if (v === null || v === undefined || v === 'null') return null;
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === 'string') return v.trim();
  throw new UpstreamError('format', `${where}: expected a number or null, found ${Array.isArray(v) ? 'a list' : typeof v === 'boolean' ? 'a boolean' : 'an object'}`);
}

/** True for a JSON object (not a list, not a number). */
export function isJsonObject(v: JsonValue | undefined): v is { [key: string]: JsonValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}
