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
