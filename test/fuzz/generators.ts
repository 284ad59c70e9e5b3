/**
 * Request generators driven by /openapi.json, and the oracle that says, from the document alone,
 * whether a generated request is valid.
 *
 * Values mix what the document allows (enum members, boundary lengths counted in characters, spec
 * examples, known codes and ids) with what it does not (empty, one over the bound, far too long,
 * NUL, lone surrogates, odd whitespace and Unicode, wrong types), and are percent-encoded in several
 * ways, including the WTF-8 bytes of a lone surrogate that no well-formed encoder produces.
 *
 * The oracle decodes the URL as the server's URL parser does (WHATWG URL, form-urlencoded query) and
 * checks each parameter against its schema in the document with ajv; the rules the document states in
 * prose are applied here too: a documented query parameter given twice is invalid (README,
 * "Parameters"), unknown query parameters are ignored, and a non-negative integer in a path is
 * written in decimal digits.
 */
import fc from 'fast-check';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { openApiDocument } from '../../src/openapi/document.js';

interface ParameterDoc {
  in: 'query' | 'path' | 'header';
  name: string;
  required?: boolean;
  schema: Record<string, unknown>;
}
interface OperationDoc {
  operationId: string;
  parameters?: ParameterDoc[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, unknown>;
  security?: unknown[];
  'x-quotegate': { credit_cost: number; rate_limit: unknown };
}

/** The served document. */
export const DOC = openApiDocument() as { paths: Record<string, Record<string, OperationDoc>>; components: Record<string, unknown> };

const ajv = new Ajv2020({ strict: false, allErrors: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(DOC, 'openapi');
const compiled = new Map<string, ValidateFunction>();

function validator(pointer: string, schema?: unknown): ValidateFunction {
  let v = compiled.get(pointer);
  if (!v) {
    v = schema !== undefined ? ajv.compile(schema as object) : ajv.compile({ $ref: `openapi#${pointer}` });
    compiled.set(pointer, v);
  }
  return v;
}

/** Every documented operation: path template, method and its document entry. */
export function documentedOperations(): { template: string; method: string; op: OperationDoc }[] {
  return Object.entries(DOC.paths).flatMap(([template, ops]) => Object.entries(ops).map(([method, op]) => ({ template, method: method.toUpperCase(), op })));
}

// ---------------------------------------------------------------------------------------------
// Strings

const ASTRAL = ['😀', '🐉', '𝔘', '𠜎', '🏳️‍🌈'];
/** Strings that have broken parsers before: whitespace of every kind, escapes, injections, normalisation. */
const ODD = [
  '', ' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u2028', '\u200b', '\ufeff', '\u0000', 'a\u0000b', '\u0007', '\u001b[31m',
  '%', '%%', '%zz', '%00', '%2F', '+', '&', '=', '#', '?', '/', '\\', '"', "'", '`', ',', ';', '*', '..', '.',
  'null', 'undefined', 'true', 'NaN', '-1', '0', '1e309', '[]', '{}', '__proto__', 'constructor', 'toString',
  "'; DROP TABLE item; --", '${jndi:ldap://x}', '<script>alert(1)</script>', '../../etc/passwd', 'A\u030a', '\u00c5', 'ǅ', 'İ', 'ß', 'ﬀ',
  'עברית', 'العربية', '中文字符', '\u202eevil', 'Z\u0351\u0332\u0344', '\ud800', '\udfff', 'a\ud83d', '\ude00b',
];

/** Any string: ASCII, any code point (astral too), graphemes, lone surrogates, odd values. */
export const anyText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 2 },
  { arbitrary: fc.constantFrom(...ODD), weight: 3 },
  {
    arbitrary: fc.tuple(fc.string({ maxLength: 5 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ maxLength: 5 })).map(([a, c, b]) => a + String.fromCharCode(c) + b),
    weight: 1,
  },
);

/** A string of exactly `n` characters made of one repeated character (ASCII, accented, astral, combining). */
export const ofLength = (n: number): fc.Arbitrary<string> =>
  fc.constantFrom('a', 'é', '中', ...ASTRAL.slice(0, 4), ' ', 'e\u0301'.slice(1)).map((ch) => ch.repeat(Math.max(0, n)));

/** Lengths around a documented bound: min-1, min, max, max+1, and far over. */
export const aroundBounds = (min: number, max: number): fc.Arbitrary<string> =>
  fc.constantFrom(min - 1, min, min + 1, max - 1, max, max + 1, max * 4, 70_000).filter((n) => n >= 0).chain(ofLength);

/** `s` with a character inserted at a random place. */
export const withInserted = (s: fc.Arbitrary<string>, inserted: fc.Arbitrary<string>) =>
  fc.tuple(s, inserted, fc.nat()).map(([a, c, at]) => {
    const chars = [...a];
    const i = chars.length === 0 ? 0 : at % (chars.length + 1);
    return [...chars.slice(0, i), c, ...chars.slice(i)].join('');
  });

// ---------------------------------------------------------------------------------------------
// Dates

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/**
 * Days at and beyond the edges of what a date parameter may name (issue 41, points 7 and 14): any day of years
 * 0000-0099 (PostgreSQL has no year 0; a range's defaults reach before year 1), the day before 1970-01-01, the last
 * days of 9999, five-digit and signed years, and 29 February of leap years (2000, 2024, 1972, 9996) and of
 * common ones (1900, 2100, 2023, 2026, 1970, 9999). Valid or not is the document's verdict (`isDocumentedDay`).
 */
export const edgeDay: fc.Arbitrary<string> = fc.oneof(
  {
    arbitrary: fc.tuple(fc.integer({ min: 0, max: 99 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 })).map(([y, m, d]) => `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`),
    weight: 3,
  },
  {
    arbitrary: fc.constantFrom(
      '0000-01-01', '0000-12-31', '0001-01-01', '0001-01-03', '0099-12-31', '0100-01-01', '1969-12-31', '1970-01-01', '1970-01-02',
      '9999-12-31', '9999-12-30', '9999-01-01', '10000-01-01', '99999-12-31', '+010000-01-01', '-000001-01-01', '+002026-07-16',
    ),
    weight: 3,
  },
  {
    arbitrary: fc.constantFrom('2000-02-29', '2024-02-29', '1972-02-29', '9996-02-29', '1900-02-29', '2100-02-29', '2023-02-29', '2026-02-29', '1970-02-29', '9999-02-29', '0000-02-29', '0004-02-29'),
    weight: 2,
  },
);

/**
 * The document's verdict on a date parameter value (any `from`, `to` or `as_of` of /openapi.json: a date YYYY-MM-DD
 * that exists, in the years its pattern allows), which the GraphQL `Date` arguments and the pages follow too.
 */
export function isDocumentedDay(value: string): boolean {
  const param = DOC.paths['/valuation/accuracy']!.get!.parameters!.find((p) => p.name === 'from')!;
  return validator('/query/date', param.schema)(value);
}

// ---------------------------------------------------------------------------------------------
// Percent-encoding

/** How a value is written into a URL. */
export type Encoding = 'component' | 'plus' | 'raw' | 'lower';

const hex = (b: number, lower: boolean) => '%' + (lower ? b.toString(16).padStart(2, '0') : b.toString(16).toUpperCase().padStart(2, '0'));

/**
 * Percent-encodes `value`. `component` is encodeURIComponent; `plus` writes spaces as `+`; `lower`
 * uses lower-case hex; `raw` leaves characters that cannot end a parameter as they are (the URL
 * parser encodes them); lone surrogates, which encodeURIComponent refuses, are written as their
 * WTF-8 bytes (`%ED%A0%80`), in every style.
 */
export function encodeValue(value: string, how: Encoding): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    const isHigh = c >= 0xd800 && c <= 0xdbff;
    const next = value.charCodeAt(i + 1);
    if (isHigh && next >= 0xdc00 && next <= 0xdfff) {
      const pair = value.slice(i, i + 2);
      out += how === 'raw' ? pair : how === 'lower' ? encodeURIComponent(pair).toLowerCase() : encodeURIComponent(pair);
      i++;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => hex(b, how === 'lower')).join('');
      continue;
    }
    const ch = value[i]!;
    if (how === 'plus' && ch === ' ') out += '+';
    else if (how === 'raw' && !/[&=+#%\u0000-\u0020\u007f]/.test(ch) && ch !== '/' && ch !== '?') out += ch;
    else if (how === 'lower') out += encodeURIComponent(ch).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    else out += encodeURIComponent(ch);
  }
  return out;
}

export const encodingArb: fc.Arbitrary<Encoding> = fc.constantFrom('component', 'component', 'plus', 'raw', 'lower');

// ---------------------------------------------------------------------------------------------
// Query strings

/** One query parameter as generated: a name, a value and how both are written. */
export interface QueryPart {
  name: string;
  value: string;
  encoding: Encoding;
  /** Write `name` without `=value`. */
  bare?: boolean;
}

/** Builds `?a=b&...` (or '') from parts, sometimes with stray separators. */
export function queryString(parts: QueryPart[], stray: number): string {
  const pieces = parts.map((p) => (p.bare ? encodeValue(p.name, p.encoding) : `${encodeValue(p.name, p.encoding)}=${encodeValue(p.value, p.encoding)}`));
  if (stray % 5 === 1) pieces.push('');
  if (stray % 5 === 2) pieces.unshift('');
  if (stray % 5 === 3) pieces.splice(pieces.length >> 1, 0, '&');
  const q = pieces.join('&');
  return q === '' && stray % 7 !== 4 ? '' : `?${q}`;
}

/**
 * The query of one operation: each documented parameter left out, given once or twice (values from
 * `values[name]`), plus up to three unknown parameters, in random order.
 */
export function queryArb(names: string[], values: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const one = (name: string) =>
    fc.oneof(
      { arbitrary: fc.constant([] as QueryPart[]), weight: 2 },
      { arbitrary: fc.tuple(values[name]!, encodingArb).map(([value, encoding]) => [{ name, value, encoding }]), weight: 6 },
      {
        arbitrary: fc.tuple(values[name]!, values[name]!, encodingArb, fc.boolean()).map(([a, b, encoding, bare]) => [
          { name, value: a, encoding },
          { name, value: b, encoding, bare },
        ]),
        weight: 1,
      },
      { arbitrary: fc.constant([{ name, value: '', encoding: 'component' as Encoding, bare: true }]), weight: 1 },
    );
  const unknownName = fc.oneof(
    fc.constantFrom('foo', 'page', 'limit', 'callback', '__proto__', 'constructor', 'a[]', '', ' ', ...names.map((n) => n.toUpperCase()), ...names.map((n) => `${n}[]`), ...names.map((n) => ` ${n}`)),
    anyText,
  );
  const unknown = fc.array(fc.tuple(unknownName, anyText, encodingArb).map(([name, value, encoding]) => ({ name, value, encoding })), { maxLength: 3 });
  return fc
    .tuple(fc.tuple(...names.map(one)), unknown, fc.nat(), fc.nat())
    .map(([known, extra, seed, stray]) => {
      const parts = [...known.flat(), ...extra];
      // A cheap deterministic shuffle (the seed comes from fast-check, so runs replay).
      for (let i = parts.length - 1; i > 0; i--) {
        const j = (seed + i * 7919) % (i + 1);
        [parts[i], parts[j]] = [parts[j]!, parts[i]!];
      }
      return queryString(parts, stray);
    });
}

// ---------------------------------------------------------------------------------------------
// The oracle

/** The document's verdict on a request's parameters: the problems found (none = valid). */
export function parameterProblems(template: string, method: string, url: URL, headers: Headers): string[] {
  const op = DOC.paths[template]![method.toLowerCase()]!;
  const problems: string[] = [];
  const pathValues = matchTemplate(template, url.pathname);
  for (const p of op.parameters ?? []) {
    const pointer = `/${p.in}/${template}/${method}/${p.name}`;
    const validate = validator(pointer, p.schema);
    let raw: string[];
    if (p.in === 'query') raw = url.searchParams.getAll(p.name);
    else if (p.in === 'header') raw = headers.has(p.name) ? [headers.get(p.name)!] : [];
    else {
      const encoded = pathValues?.[p.name];
      if (encoded === undefined) {
        problems.push(`${p.name}: path does not match`);
        continue;
      }
      try {
        raw = [decodeURIComponent(encoded)];
      } catch {
        problems.push(`${p.name}: not valid percent-encoded UTF-8`);
        continue;
      }
    }
    if (raw.length === 0) {
      if (p.required) problems.push(`${p.name}: required`);
      continue;
    }
    if (p.schema.type === 'array') {
      // A repeatable parameter (form style, exploded): every value given, judged as one list.
      if (!validate(raw)) problems.push(`${p.name}: ${ajv.errorsText(validate.errors)}`);
      continue;
    }
    if (raw.length > 1) {
      problems.push(`${p.name}: given ${raw.length} times`);
      continue;
    }
    let value: unknown = raw[0];
    if (p.schema.type === 'integer') {
      if (!/^[0-9]+$/.test(raw[0]!)) {
        problems.push(`${p.name}: not written in decimal digits`);
        continue;
      }
      value = Number(raw[0]);
    }
    if (!validate(value)) problems.push(`${p.name}: ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}

/** Percent-encoded path parameter values when `pathname` matches `template`, else null. */
export function matchTemplate(template: string, pathname: string): Record<string, string> | null {
  const names: string[] = [];
  const re = new RegExp('^' + template.replace(/\{([^}]+)\}/g, (_m, n: string) => (names.push(n), '([^/]+)')) + '/?$');
  const m = re.exec(pathname);
  if (!m) return null;
  return Object.fromEntries(names.map((n, i) => [n, m[i + 1]!]));
}

/** The document's template for a pathname (the request's operation), or null. */
export function templateOf(pathname: string, method: string): string | null {
  const candidates = Object.keys(DOC.paths).filter((t) => DOC.paths[t]![method.toLowerCase()] && matchTemplate(t, pathname));
  // A literal segment wins over a parameter (`/prices/batch` is not `/prices/{x}`).
  candidates.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return candidates[0] ?? null;
}

/** The document's verdict on a JSON request body: null when valid, else the problem. */
export function bodyProblem(template: string, method: string, value: unknown): string | null {
  const pointer = `/paths/${template.replace(/~/g, '~0').replace(/\//g, '~1')}/${method.toLowerCase()}/requestBody/content/application~1json/schema`;
  const validate = validator(pointer);
  return validate(value) ? null : ajv.errorsText(validate.errors);
}
