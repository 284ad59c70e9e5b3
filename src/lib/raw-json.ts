/**
 * JSON text made once and spliced into answers as is (issue: serving quotes at the machine's limit, step 6:
 * each item's quotes are serialized once and a batch answer becomes mostly concatenation).
 */

/**
 * A value already written as JSON text. `stringifyWithRaw` splices `text` in place; anything else
 * (`JSON.stringify`, e.g. a GraphQL response) sees the parsed value through `toJSON`.
 */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/**
 * `JSON.stringify(value)` where every RawJson inside plain objects and arrays is written as its text.
 * Keys whose value is undefined are left out, as JSON.stringify does; other values go to JSON.stringify.
 */
export function stringifyWithRaw(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + (value[i] === undefined ? 'null' : stringifyWithRaw(value[i]));
    return out + ']';
  }
  if (value !== null && typeof value === 'object' && isPlainObject(value)) {
    let out = '{';
    let first = true;
    for (const key in value as Record<string, unknown>) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      out += (first ? '' : ',') + JSON.stringify(key) + ':' + stringifyWithRaw(v);
      first = false;
    }
    return out + '}';
  }
  return JSON.stringify(value) ?? 'null';
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
  texts(keys: readonly string[]): Promise<string[]>;
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
 * `blockSize`), and its text is dropped once written. So an answer of many quotes holds one block of them at a
 * time, however long it is. Throws (from the iterator) what a source throws.
 */
export async function* streamWithRaw(value: unknown): AsyncGenerator<Uint8Array> {
  const parts: (string | DeferredJson)[] = [];
  let text = '';
  const walk = (v: unknown): void => {
    if (v instanceof DeferredJson) {
      parts.push(text, v);
      text = '';
    } else if (v instanceof RawJson) text += v.text;
    else if (Array.isArray(v)) {
      text += '[';
      for (let i = 0; i < v.length; i++) {
        if (i > 0) text += ',';
        if (v[i] === undefined) text += 'null';
        else walk(v[i]);
      }
      text += ']';
    } else if (v !== null && typeof v === 'object' && isPlainObject(v)) {
      text += '{';
      let first = true;
      for (const key in v as Record<string, unknown>) {
        const x = (v as Record<string, unknown>)[key];
        if (x === undefined) continue;
        text += (first ? '' : ',') + JSON.stringify(key) + ':';
        first = false;
        walk(x);
      }
      text += '}';
    } else text += JSON.stringify(v) ?? 'null';
  };
  walk(value);
  parts.push(text);
  const resolved = new Map<DeferredJson, string>();
  let out = '';
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (typeof part === 'string') out += part;
    else {
      if (!resolved.has(part)) {
        const block: DeferredJson[] = [];
        for (let j = i; j < parts.length && block.length < part.source.blockSize; j++) {
          const p = parts[j]!;
          if (typeof p !== 'string' && p.source === part.source && !resolved.has(p)) block.push(p);
        }
        const texts = await part.source.texts(block.map((d) => d.key));
        block.forEach((d, k) => resolved.set(d, texts[k]!));
      }
      out += resolved.get(part)!;
      resolved.delete(part);
    }
    parts[i] = '';
    if (out.length >= STREAM_PIECE_CHARS) {
      yield Buffer.from(out, 'utf8');
      out = '';
    }
  }
  if (out.length > 0) yield Buffer.from(out, 'utf8');
}
