/**
 * JSON text made once and spliced into answers as is (issue: serving quotes at the machine's limit, step 6:
 * each item's quotes are serialized once and a batch answer becomes mostly concatenation).
 */

/**
 * One JSON text as the strings it is made of, in order, never joined: a long quote answer read from the database
 * (quotes.ts `loadQuoteTexts`: the market quotes PostgreSQL wrote around the CSCP quote), which `encodeWithRaw` hands
 * on as its own pieces and node:http encodes straight into the socket's write. Joining them, wrapping them in the
 * envelope and encoding that had made three more copies of a full-scale item's 28 KB on V8's heap per answer (issue
 * 45; docs/benchmarks.md). `length`: its characters (its UTF-8 bytes when ASCII, as quote texts are).
 */
export class JsonPieces {
  readonly length: number;
  constructor(readonly pieces: readonly string[]) {
    let n = 0;
    for (const p of pieces) n += p.length;
    this.length = n;
  }
  /** The text as one string. */
  toString(): string {
    return this.pieces.join('');
  }
  /** The text's UTF-8 bytes in one Buffer of their exact length (a copy held by the quote cache). */
  toBuffer(): Buffer {
    let bytes = 0;
    for (const p of this.pieces) bytes += Buffer.byteLength(p, 'utf8');
    const out = Buffer.allocUnsafe(bytes);
    let at = 0;
    for (const p of this.pieces) at += out.write(p, at, 'utf8');
    return out;
  }
}

/** A JSON text as a string, its UTF-8 bytes, or its pieces (JsonPieces). */
export type JsonText = string | Buffer | JsonPieces;

/**
 * A value already written as JSON text, as its UTF-8 bytes (a Buffer: the quote cache's stored answer texts) or as
 * its pieces (JsonPieces). `stringifyWithRaw` and `encodeWithRaw` splice it in place (`encodeWithRaw` copies bytes as
 * they are, never decoding them, and keeps pieces apart); anything else (`JSON.stringify`, e.g. a GraphQL response)
 * sees the parsed value through `toJSON`.
 */
export class RawJson {
  constructor(readonly text: JsonText) {}
  toJSON(): unknown {
    return JSON.parse(textOf(this.text));
  }
}

/** A JSON text held as a string, as UTF-8 bytes or as pieces, as a string. */
function textOf(text: JsonText): string {
  return typeof text === 'string' ? text : text.toString();
}

/**
 * `JSON.stringify(value)` where every RawJson inside plain objects and arrays is written as its text.
 * Keys whose value is undefined are left out, as JSON.stringify does; other values go to JSON.stringify.
 * Throws TypeError for a DeferredJson (only `streamWithRaw` writes those).
 */
export function stringifyWithRaw(value: unknown): string {
  const w: JsonWriter = { text: '' };
  writeJson(value, w);
  return w.text;
}

/**
 * An answer of JSON text pieces and bytes, in order (`encodeWithRaw`): written one after the other, its stored bytes
 * are never copied. `bytes` is its length in UTF-8 bytes.
 */
export interface JsonParts {
  parts: (string | Buffer)[];
  bytes: number;
}

/**
 * `stringifyWithRaw(value)` where each RawJson held as bytes stays those bytes, neither decoded nor copied, and each
 * held as JsonPieces stays those strings, not joined: a string when the value holds neither (a small answer node:http
 * writes with its headers), else the pieces in order (JsonParts). The REST face's answers (src/rest/facade.ts).
 * Throws TypeError for a DeferredJson.
 */
export function encodeWithRaw(value: unknown): string | JsonParts {
  const parts: (string | Buffer)[] = [];
  let bytes = 0;
  const flush = () => {
    if (w.text !== '') {
      parts.push(w.text);
      bytes += Buffer.byteLength(w.text, 'utf8');
    }
    w.text = '';
  };
  const w: JsonWriter = {
    text: '',
    bytes(b) {
      flush();
      parts.push(b);
      bytes += b.length;
    },
    pieces(t) {
      flush();
      for (const p of t.pieces) {
        parts.push(p);
        bytes += Buffer.byteLength(p, 'utf8');
      }
    },
  };
  writeJson(value, w);
  if (parts.length === 0) return w.text;
  if (w.text !== '') {
    parts.push(w.text);
    bytes += Buffer.byteLength(w.text, 'utf8');
  }
  return { parts, bytes };
}

/** JsonParts as one Buffer (a transport that takes one body: the fetch API's Response). */
export function joinParts(body: JsonParts): Buffer {
  return Buffer.concat(
    body.parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)),
    body.bytes,
  );
}

/**
 * The text written so far; where a DeferredJson goes (`streamWithRaw`; without `deferred` one is refused) and a RawJson
 * held as bytes (`encodeWithRaw`, `streamWithRaw`; without `bytes` they are decoded into `text`).
 */
interface JsonWriter {
  text: string;
  deferred?(d: DeferredJson): void;
  bytes?(b: Buffer): void;
  /** Where JsonPieces go; without it they are appended to `text`. */
  pieces?(t: JsonPieces): void;
}

/** Appends `value` as JSON to `w` (the rules of stringifyWithRaw). */
function writeJson(value: unknown, w: JsonWriter): void {
  if (typeof value !== 'object' || value === null) {
    w.text += JSON.stringify(value) ?? 'null';
  } else if (value instanceof RawJson) {
    const t = value.text;
    if (typeof t === 'string') w.text += t;
    else if (t instanceof JsonPieces) {
      if (w.pieces) w.pieces(t);
      else for (const p of t.pieces) w.text += p;
    } else if (w.bytes) w.bytes(t);
    else w.text += t.toString('utf8');
  } else if (Array.isArray(value)) {
    w.text += '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) w.text += ',';
      const v: unknown = value[i];
      if (v === undefined) w.text += 'null';
      else writeJson(v, w);
    }
    w.text += ']';
  } else if (value instanceof DeferredJson && w.deferred) {
    w.deferred(value);
  } else if (isPlainObject(value)) {
    w.text += '{';
    let first = true;
    for (const key in value as Record<string, unknown>) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      w.text += first ? keyText(key) : ',' + keyText(key);
      first = false;
      writeJson(v, w);
    }
    w.text += '}';
  } else w.text += JSON.stringify(value) ?? 'null';
}

/** `"key":` of the keys written so far (answers use a few dozen names; at most KEY_TEXTS are kept). */
const keyTexts = new Map<string, string>();
const KEY_TEXTS = 4096;

/** `"key":` for an object key: made once per name (a JSON.stringify per key was a third of a small answer's writing). */
function keyText(key: string): string {
  let text = keyTexts.get(key);
  if (text === undefined) {
    text = JSON.stringify(key) + ':';
    if (keyTexts.size < KEY_TEXTS) keyTexts.set(key, text);
  }
  return text;
}

/** Objects of object literals and of graphql-js results (`Object.create(null)`). */
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Where the texts of DeferredJson values come from: `texts(keys)` resolves, in order, the JSON text of each key
 * (one call per block of at most `blockSize` keys, in document order). It may throw (a database failure); the
 * stream that asked then fails.
 */
export interface DeferredJsonSource {
  readonly blockSize: number;
  /** Each key's JSON text, as a string, as UTF-8 bytes (written as they are) or as pieces. */
  texts(keys: readonly string[]): Promise<JsonText[]>;
}

/**
 * JSON text not made yet: written by `streamWithRaw` when its turn comes, with the next values of the same
 * source resolved together, and dropped once written. Only streamed answers hold one (the REST face of a heavy
 * batch, src/rest/facade.ts); `stringifyWithRaw` and `JSON.stringify` refuse it (TypeError).
 */
export class DeferredJson {
  constructor(
    readonly source: DeferredJsonSource,
    readonly key: string,
  ) {}
  toJSON(): never {
    throw new TypeError('a DeferredJson value can only be written by streamWithRaw');
  }
}

/** Characters gathered before `streamWithRaw` hands a piece on. */
const STREAM_PIECE_CHARS = 64 * 1024;

/**
 * `stringifyWithRaw(value)` as a sequence of UTF-8 pieces of about 64 Ki characters, made as they are asked for:
 * each DeferredJson is resolved when the writer reaches it, together with the next ones of its source (up to
 * `blockSize`), and its text is dropped once written; a text held as bytes is its own piece, not copied. So an answer
 * of many quotes holds one block of them at a time, however long it is. Throws (from the iterator) what a source
 * throws.
 */
export async function* streamWithRaw(value: unknown): AsyncGenerator<Uint8Array> {
  const parts: (string | Buffer | DeferredJson)[] = [];
  const w: JsonWriter = {
    text: '',
    deferred(d) {
      parts.push(w.text, d);
      w.text = '';
    },
    bytes(b) {
      parts.push(w.text, b);
      w.text = '';
    },
  };
  writeJson(value, w);
  parts.push(w.text);
  const resolved = new Map<DeferredJson, JsonText>();
  let out = '';
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    let bytes: Buffer | null = null;
    if (typeof part === 'string') out += part;
    else if (Buffer.isBuffer(part)) bytes = part;
    else {
      if (!resolved.has(part)) {
        const block: DeferredJson[] = [];
        for (let j = i; j < parts.length && block.length < part.source.blockSize; j++) {
          const p = parts[j]!;
          if (p instanceof DeferredJson && p.source === part.source && !resolved.has(p)) block.push(p);
        }
        const texts = await part.source.texts(block.map((d) => d.key));
        block.forEach((d, k) => resolved.set(d, texts[k]!));
      }
      const text = resolved.get(part)!;
      if (typeof text === 'string') out += text;
      else if (text instanceof JsonPieces) for (const p of text.pieces) out += p;
      else bytes = text;
      resolved.delete(part);
    }
    parts[i] = '';
    if (bytes !== null) {
      if (out.length > 0) yield Buffer.from(out, 'utf8');
      out = '';
      yield bytes;
    } else if (out.length >= STREAM_PIECE_CHARS) {
      yield Buffer.from(out, 'utf8');
      out = '';
    }
  }
  if (out.length > 0) yield Buffer.from(out, 'utf8');
}
