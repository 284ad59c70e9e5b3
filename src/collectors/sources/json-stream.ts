/**
 * The one streaming reader of large upstream JSON bodies (issue 42: "large bodies are parsed as streams"), for the
 * bulk adapters (csgotrader's price files, Skinport's item list, Waxpeer's price list, Lis-skins' full export,
 * market.csgo's class/instance list), and the helpers those adapters use on the entries it gives.
 *
 * The body's bytes are decoded (UTF-8, fatal on invalid bytes, a leading BOM dropped) and tokenized by
 * stream-json's bare tokenizer, chunk by chunk as they arrive; each entry of the listing (a property of an object
 * of items keyed by name, or an element of an array of items) is assembled alone and handed on, so memory holds
 * one entry, never the body (Lis-skins' export is ~170 MB). Numbers keep their source text (`JsonNumber`), never a
 * JS float: money stays a decimal string from the byte read.
 *
 * The listing is either the root value itself (`{"<name>": {...}, ...}`, `[{...}, ...]`) or one key of a root
 * wrapper object (`{"success": true, "items": [...]}`: `listKey`). A wrapper's other keys are skipped without being
 * built, except the small status fields the adapter names (`fields`), which are built and checked as soon as they
 * complete, so `{"success": false, ...}` fails the response before any later entry is handed on.
 *
 * Whole-response failures become `UpstreamError('format')` with the reason in the message (the runner then
 * leaves the market's quotes as they were, issue point 7):
 * - HTML (`Content-Type: text/html`: a login wall, a CDN error page) or any body that is not JSON (invalid UTF-8,
 *   data after the end of the document included);
 * - a truncated body (the connection closed early, or the JSON stops before its top-level value closes);
 * - a 200 with an error object: a top-level object where the format has a list, or a top-level key named
 *   `error`, `errors`, `success` or `message` (never an item name) where the format has an object of items, or a
 *   wrapper status field its check refuses (`statusFieldChecks`);
 * - a wrapper without its listing key, or with a listing of the wrong kind (a renamed or changed field);
 * - an empty body, a top-level scalar, an entry (or a checked field) nested deeper than MAX_DEPTH or longer than
 *   MAX_ENTRY_TOKENS tokens.
 * A cancelled run (the context's signal aborted) rethrows the abort as it is.
 */
import { jsonParser } from 'stream-json/core/parser.js';
import { getManyValues, isMany, none } from 'stream-chain/defs.js';
import { Money } from '../../lib/money.js';
import { UpstreamError } from '../source.js';

/** A JSON number as its source text (e.g. `"12.30"`, `"1e3"`): never turned into a JS float. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/**
 * A JSON value as the entries hold it: numbers as `JsonNumber`, objects inheriting nothing (a `__proto__` key
 * stays data), everything else as JSON.parse gives it.
 */
export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object as the entries hold it (inheriting nothing: every property is its own). */
export type JsonObject = { [key: string]: JsonValue };

/** One entry of the listing: `key` is the property name (object of items) or the index (array of items). */
export interface JsonEntry {
  key: string | number;
  value: JsonValue;
}

/** Deepest nesting accepted inside one entry (the bulk formats nest 3 levels: item, side, Doppler phases). */
export const MAX_DEPTH = 16;
/** Most tokens accepted in one entry (an item with every Doppler phase is about 60). */
export const MAX_ENTRY_TOKENS = 100_000;
/** Top-level keys that mark a 200 answer carrying an error object instead of the expected object of items. */
const ERROR_KEYS: ReadonlySet<string> = new Set(['error', 'errors', 'success', 'message']);

/** Checks one wrapper field's value once it is complete; throws (an `UpstreamError('format')`) to fail the response. */
export type FieldCheck = (value: JsonValue) => void;

/** Options of `jsonEntries`. */
export interface JsonEntriesOptions {
  /** Names the response in error messages, e.g. `skinport /v1/items`. */
  what: string;
  /** The listing's container: an object of entries keyed by item name, or an array of entries. */
  list: 'object' | 'array';
  /**
   * Absent: the root value is the listing. A key: the root is a wrapper object and the listing is this key's
   * value; a wrapper without it fails as a renamed field.
   */
  listKey?: string;
  /**
   * With `listKey`: wrapper keys whose values are built (within the entry limits) and passed to their check as soon
   * as they complete; every other wrapper key is skipped unread. `statusFieldChecks` gives the usual ones.
   */
  fields?: Readonly<Record<string, FieldCheck>>;
  /** The run's signal: once aborted, errors are rethrown as they are (a cancellation, not a format failure). */
  signal?: AbortSignal;
}

type Token = { name: string; value?: unknown };

/**
 * The objects entries are built of: their prototype is an empty object with no prototype of its own, so nothing
 * is inherited (`'toString' in o` is false) and there is no `__proto__` setter (a `__proto__` key is an own
 * property, data like any other). Unlike `Object.create(null)`, which V8 keeps as a slow dictionary, objects made
 * by a constructor keep V8's fast property layout (the Lis-skins export builds 2.3M of them a run).
 */
const JsonObjectOf = function JsonObject(this: JsonObject) {} as unknown as new () => JsonObject;
JsonObjectOf.prototype = Object.create(null);

/** Builds one value from its tokens (numbers as `JsonNumber`), within MAX_DEPTH and MAX_ENTRY_TOKENS. */
class ValueBuilder {
  private stack: Array<JsonValue[] | JsonObject> = [];
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
        this.stack.push(t.name === 'startObject' ? new JsonObjectOf() : []);
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
    // A JsonObjectOf inherits no `__proto__` setter: every key, that one included, becomes an own property.
    else parent[this.keys[this.keys.length - 1]!] = v;
  }
}

/** A short, printable rendering of a small value for an error message. */
function preview(v: JsonValue): string {
  const text = JSON.stringify(v, (_k, x: unknown) => (x instanceof JsonNumber ? Number(x.text) : x)) ?? String(v);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** What a token opens or is, for an error message: `object`, `array`, `a string`, ... */
function tokenKind(t: Token): string {
  return t.name === 'startObject' ? 'object' : t.name === 'startArray' ? 'array' : `a ${t.name.replace(/Value$/, '')}`;
}

/**
 * Streams the entries of the listing of a JSON response body (see the module doc). Yields entries as the bytes
 * arrive; throws `UpstreamError('format')` when the response fails as a whole, or what a field check throws.
 * Stopping early (a `return` from the consumer) cancels the body.
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
  const { listKey } = opts;
  const wrapped = listKey !== undefined;
  const top = wrapped ? 'object' : opts.list;
  // A Map, so that a wrapper key such as `toString` or `__proto__` never finds an inherited property.
  const checks = new Map(Object.entries(opts.fields ?? {}));

  let state = 'start' as 'start' | 'wrapper' | 'entries' | 'after';
  let index = 0;
  let key: string | number | null = null;
  let entry: ValueBuilder | null = null;
  // A top-level object where a list was expected, or a top-level error key: assembled (bounded) for the message.
  let errorObject: ValueBuilder | null = null;
  let sawToken = false;
  // The wrapper: the key whose value comes next, the depth of a value being skipped, a field being built.
  let wrapperKey = '';
  let skipDepth = 0;
  let field: { builder: ValueBuilder; check: FieldCheck } | null = null;
  let listSeen = false;

  /** One token directly inside the wrapper object, or inside one of its values other than the listing. */
  const onWrapperToken = (t: Token): void => {
    if (skipDepth > 0) {
      if (t.name === 'startObject' || t.name === 'startArray') skipDepth++;
      else if (t.name === 'endObject' || t.name === 'endArray') skipDepth--;
      return;
    }
    if (field) {
      field.builder.push(t);
      if (field.builder.done) {
        const { builder, check } = field;
        field = null;
        check(builder.value);
      }
      return;
    }
    if (t.name === 'keyValue') {
      wrapperKey = t.value as string;
      return;
    }
    if (t.name === 'endObject') {
      state = 'after';
      if (!listSeen) fail(`no "${listKey}" in the response (renamed or missing)`);
      return;
    }
    if (wrapperKey === listKey) {
      if (tokenKind(t) !== opts.list) fail(`"${listKey}" is not a JSON ${opts.list}, found ${tokenKind(t)}`);
      listSeen = true;
      state = 'entries';
      return;
    }
    const check = checks.get(wrapperKey);
    if (check) {
      field = { builder: new ValueBuilder(fail), check };
      onWrapperToken(t);
    } else if (t.name === 'startObject' || t.name === 'startArray') skipDepth = 1;
  };

  const onToken = (t: Token): JsonEntry | null => {
    sawToken = true;
    if (errorObject) {
      errorObject.push(t);
      if (errorObject.done) fail(`a 200 answer with an error object instead of the data: ${preview(errorObject.value)}`);
      return null;
    }
    if (state === 'start') {
      const opened = tokenKind(t);
      if (opened === top) {
        state = wrapped ? 'wrapper' : 'entries';
        return null;
      }
      if (t.name === 'startObject') {
        errorObject = new ValueBuilder(fail);
        errorObject.push(t);
        return null;
      }
      fail(`expected a JSON ${top} at the top, found ${opened}`);
    }
    if (state === 'wrapper') {
      onWrapperToken(t);
      return null;
    }
    if (state === 'after') fail('data after the end of the JSON');
    if (!entry) {
      // Between entries: the listing closes, an item's name comes, or an entry starts.
      if (t.name === 'endObject' || t.name === 'endArray') {
        state = wrapped ? 'wrapper' : 'after';
        return null;
      }
      if (opts.list === 'object' && t.name === 'keyValue') {
        key = t.value as string;
        if (!wrapped && ERROR_KEYS.has(key)) {
          errorObject = new ValueBuilder(fail);
          errorObject.push({ name: 'startObject' });
          errorObject.push(t);
        }
        return null;
      }
      if (opts.list === 'array') key = index++;
      entry = new ValueBuilder(fail);
    }
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
        if (chunk!.done && state !== 'after' && seen) fail(`the JSON ends before its top-level ${top} closes (truncated: ${message})`);
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
  if (state !== 'after') fail(`the JSON ends before its top-level ${top} closes (truncated)`);
}

/**
 * The checks of a wrapper's status fields, for `JsonEntriesOptions.fields`: `success` must be `true` and `error`
 * absent or falsy (null, false, `""`), the 200-with-an-error shapes `{"success": false, "msg"|"error": ...}` of
 * Waxpeer, Lis-skins and market.csgo; with `status`, the `status` field must be that string (Lis-skins:
 * `"success"`). A field that is absent is not checked. Each failure is `UpstreamError('format')` naming `what`.
 */
export function statusFieldChecks(what: string, opts: { status?: string } = {}): Record<string, FieldCheck> {
  const checks: Record<string, FieldCheck> = {
    success: (v) => {
      if (v !== true) throw new UpstreamError('format', `${what}: success=${preview(v)}`);
    },
    error: (v) => {
      if (v) throw new UpstreamError('format', `${what}: error ${preview(v)}`);
    },
  };
  if (opts.status !== undefined) {
    const status = opts.status;
    checks.status = (v) => {
      if (v !== status) throw new UpstreamError('format', `${what}: status=${preview(v)}`);
    };
  }
  return checks;
}

/** True for a JSON object (not a list, not a number). */
export function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}

/** `v`'s JSON type for an error message: `null`, `a list`, `a number`, `an object`, `a string`, `a boolean`. */
function jsonKind(v: JsonValue | undefined): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (v instanceof JsonNumber) return 'a number';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * `v` as an object holding every key of `keys` (values of any type, null included). Throws
 * `UpstreamError('format')` naming `where` when `v` is not an object (`expected <noun>, found a number`) or lacks a
 * key (`no \`min_price\` field (renamed upstream?)`): the upstream's format changed.
 */
export function requireFields(v: JsonValue, keys: readonly string[], where: string, noun = 'an object'): JsonObject {
  if (!isJsonObject(v)) throw new UpstreamError('format', `${where}: expected ${noun}, found ${jsonKind(v)}`);
  for (const k of keys) if (!(k in v)) throw new UpstreamError('format', `${where}: no \`${k}\` field (renamed upstream?)`);
  return v;
}

/**
 * The text of a value as the upstream wrote it, for a name or a price handed on for the runner to validate: a
 * string as it is, a number's source text, `true`/`false`/`null`; an object or a list as (at most 200 characters of)
 * its JSON, which no runner check accepts as a price.
 */
export function scalarText(v: JsonValue): string {
  if (typeof v === 'string') return v;
  if (v instanceof JsonNumber) return v.text;
  if (v === null || typeof v === 'boolean') return String(v);
  return preview(v);
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
  throw new UpstreamError('format', `${where}: expected a number or null, found ${jsonKind(v)}`);
}

/** A non-negative integer count from its JSON text (`42` or `"42"`, up to 15 digits); null when absent or not a count. */
export function countOf(v: JsonValue | undefined): number | null {
  const text = v instanceof JsonNumber ? v.text : v;
  if (typeof text !== 'string' || !/^\d{1,15}$/.test(text)) return null;
  return Number(text);
}

/** Plain decimal text: digits with an optional fraction, no sign or exponent, up to 20 digits on each side. */
const DECIMAL_TEXT = /^\d{1,20}(\.\d{1,20})?$/;

/** `text` as a decimal.js `Money` when it is plain decimal text (`"0.50"`, `"937999"`; no sign, no exponent), else null. */
export function decimalOf(text: string): Money | null {
  return DECIMAL_TEXT.test(text) ? new Money(text) : null;
}

/** `text` as a decimal.js `Money` when it is plain decimal text above zero, else null (the caller passes the text on for the runner to refuse). */
export function positiveDecimal(text: string): Money | null {
  const d = decimalOf(text);
  return d && !d.isZero() ? d : null;
}
