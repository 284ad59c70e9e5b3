/**
 * The Pothos builder: plugins (validation; Relay, for cursor connections only), scalars and the context type. No
 * domain types live here.
 * Validation errors from @pothos/plugin-validation become 422 `validation_failed` with one detail per issue.
 */
import SchemaBuilder from '@pothos/core';
import ValidationPlugin from '@pothos/plugin-validation';
import RelayPlugin from '@pothos/plugin-relay';
import type { Decimal } from 'decimal.js';
import type { Context } from './context.js';
import { formatDecimal } from '../lib/money.js';
import { formatDate, formatTimestamp } from '../lib/time.js';
import { validationError } from '../lib/errors.js';
import { MAX_DAY, MIN_DAY } from '../validation/params.js';
import type { DeferredJson, RawJson } from '../lib/raw-json.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  // Relay connections (Website.quotes): a list of edges, each with a node, none of them null.
  DefaultEdgesNullability: false;
  DefaultNodeNullability: false;
  Scalars: {
    Decimal: { Input: string; Output: Decimal };
    DateTime: { Input: string; Output: Date };
    Date: { Input: string; Output: Date };
    Credits: { Input: bigint; Output: bigint };
    JSONObject: { Input: Record<string, unknown>; Output: object };
    QuotesJSON: { Input: never; Output: RawJson | DeferredJson };
  };
}>({
  plugins: [ValidationPlugin, RelayPlugin],
  defaultFieldNullability: false,
  // Connections only: no global `node`/`nodes` root fields (they would reach priced objects outside metering) and
  // no Relay mutations.
  relay: {
    cursorType: 'String',
    clientMutationId: 'omit',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
    edgesFieldOptions: { nullable: false },
    nodeFieldOptions: { nullable: false },
    pageInfoTypeOptions: { description: 'Where a page of a connection lies in its list (Relay cursor connections).' },
  },
  validation: {
    validationError: (result) =>
      validationError(
        result.issues.map((issue) => ({
          location: 'argument' as const,
          field: (issue.path ?? []).map((p) => String(typeof p === 'object' && p !== null && 'key' in p ? p.key : p)).join('.'),
          message: issue.message,
        })),
      ),
  },
});

builder.scalarType('Decimal', {
  description: 'A decimal number as a string: plain notation, trailing zeros trimmed, never scientific (money and rates).',
  serialize: (value) => formatDecimal(value),
  parseValue: (value) => String(value),
});

builder.scalarType('DateTime', {
  description: 'An RFC 3339 timestamp in UTC with milliseconds, e.g. 2026-07-16T00:00:00.000Z.',
  serialize: (value) => formatTimestamp(value),
  parseValue: (value) => String(value),
});

builder.scalarType('Date', {
  description: `A UTC calendar date, YYYY-MM-DD. An argument must be a date that exists, from ${MIN_DAY} to ${MAX_DAY} (else 422 validation_failed).`,
  serialize: (value) => formatDate(value),
  parseValue: (value) => String(value),
});

builder.scalarType('JSONObject', {
  description: 'A JSON object whose inner structure is described by the field (used for the free-form status history).',
  serialize: (value) => value,
  parseValue: (value) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError('expected a JSON object');
    return value as Record<string, unknown>;
  },
});

builder.scalarType('QuotesJSON', {
  description:
    'A list of quotes exactly as the REST API writes them (MarketQuoteOut objects: snake_case names, amounts as strings), as one JSON value.',
  // The text made once per cached quote is spliced into REST answers as is (lib/raw-json.ts); GraphQL answers parse it.
  serialize: (value) => value,
  parseValue: () => {
    throw new TypeError('QuotesJSON is an output type');
  },
});

builder.queryType({});

/**
 * The `extensions` of a list field for the GraphQL cost limit (src/plugins/safety.ts): the list
 * counts as `bound` copies of its children. `bound` is a number, or a function of the field's arguments.
 */
export function listComplexity(bound: number | ((args: Record<string, unknown>) => number)) {
  return {
    complexity: ({ args, childComplexity }: { args: Record<string, unknown>; childComplexity: number }) =>
      1 + (typeof bound === 'number' ? bound : bound(args)) * childComplexity,
  };
}
