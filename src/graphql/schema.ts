/** The GraphQL schema: imports each domain file for its side effects on the builder, then builds. */
import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder.js';
import './types/catalogue.js';
import './types/quotes.js';
import './types/fees-applied.js';
import './types/routes.js';
import './types/history.js';
import './types/valuation-accuracy.js';
import './types/changes.js';
import './types/item-search.js';
import './types/live.js';
import './types/meta.js';
import './types/account.js';
import './types/alerts.js';
import './types/exports.js';
import './types/ingestion.js';
import './types/graph.js';

/** The executable schema of both faces. */
export const schema = builder.toSchema();

/** The schema in SDL, sorted (the content of schema.graphql). */
export function printSortedSchema(): string {
  return printSchema(lexicographicSortSchema(schema)) + '\n';
}
