/**
 * JSON text made once and spliced into answers as is (issue: serving quotes at the machine's limit, step 6:
 * each item's quotes are serialized once and a batch answer becomes mostly concatenation).
 */

/**
 * A value already written as JSON text, or as its UTF-8 bytes (a Buffer: the quote cache's stored answer texts).
 * `stringifyWithRaw` and `encodeWithRaw` splice it in place (`encodeWithRaw` copies bytes as they are, never decoding
 * them); anything else (`JSON.stringify`, e.g. a GraphQL response) sees the parsed value through `toJSON`.
 */
export class RawJson {
  constructor(readonly text: string | Buffer) {}
  toJSON(): unknown {
    return JSON.parse(textOf(this.text));
  }
}

/** A JSON text held as a string or as UTF-8 bytes, as a string. */
function textOf(text: string | Buffer): string {
  return typeof text === 'string' ? text : text.toString('utf8');
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
 * `stringifyWithRaw(value)` where each RawJson held as bytes stays those bytes, neither decoded nor copied: a string
 * when the value holds no such bytes (a small answer node:http writes with its headers), else the pieces in order
 * (JsonParts). The REST face's answers (src/rest/facade.ts). Throws TypeError for a DeferredJson.
 */
export function encodeWithRaw(value: unknown): string | JsonParts {
  const parts: (string | Buffer)[] = [];
  let bytes = 0;
  const w: JsonWriter = {
    text: '',
    bytes(b) {
      if (w.text !== '') {
        parts.push(w.text);
        bytes += Buffer.byteLength(w.text, 'utf8');
      }
      w.text = '';
      parts.push(b);
      bytes += b.length;
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
}

/** Appends `value` as JSON to `w` (the rules of stringifyWithRaw). */
function writeJson(value: unknown, w: JsonWriter): void {
  if (typeof value !== 'object' || value === null) {
    w.text += JSON.stringify(value) ?? 'null';
  } else if (value instanceof RawJson) {
    if (typeof value.text === 'string') w.text += value.text;
    else if (w.bytes) w.bytes(value.text);
    else w.text += value.text.toString('utf8');
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
  /** Each key's JSON text, as a string or as UTF-8 bytes (written as they are). */
  texts(keys: readonly string[]): Promise<(string | Buffer)[]>;
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
  const resolved = new Map<DeferredJson, string | Buffer>();
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
