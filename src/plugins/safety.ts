/**
 * GraphQL safety limits, all applied before any resolver runs: query depth and alias count
 * (graphql-armor validation rules) and a cost limit that counts list sizes (graphql-query-complexity
 * with the `complexity` extension each list field declares, see `listComplexity`). The REST
 * documents stay far below every limit; the limits only bound what an ad-hoc GraphQL query can ask for.
 */
import type { Plugin } from 'graphql-yoga';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import { ServiceError } from '../lib/errors.js';

/** Deepest selection accepted (the full fee-schedule query of GraphiQL needs 9). */
export const MAX_DEPTH = 12;
/** Most aliases in one operation (the REST documents use up to 22 for their snake_case names). */
export const MAX_ALIASES = 50;
/**
 * Largest estimated cost of one operation: each field costs 1, a list field multiplies its
 * children by its declared bound (batch names by the request's own count). The REST batch document
 * (1000 names, every quote and valuation field) scores 1,013,001 and the full fee-schedule listing
 * 13,321; two full batches in one query are refused.
 */
export const MAX_COMPLEXITY = 1_200_000;

function useComplexityLimit(max: number): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      let complexity: number;
      try {
        complexity = getComplexity({
          schema: args.schema,
          query: args.document,
          operationName: args.operationName ?? undefined,
          variables: (args.variableValues ?? {}) as Record<string, unknown>,
          estimators: [fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })],
        });
      } catch {
        return; // bad variables: execution reports them before any resolver runs
      }
      if (complexity > max) {
        setResultAndStopExecution({
          errors: [
            new ServiceError('query_too_complex', 422, `The query's estimated cost ${complexity} exceeds the limit of ${max}; split it into smaller queries.`, {
              complexity,
              max_complexity: max,
            }),
          ],
        });
      }
    },
  };
}

/** The safety plugins, in the order they must run (before metering). */
export function safetyPlugins(): Plugin[] {
  return [
    maxDepthPlugin({ n: MAX_DEPTH, exposeLimits: true }) as Plugin,
    maxAliasesPlugin({ n: MAX_ALIASES, exposeLimits: true }) as Plugin,
    useComplexityLimit(MAX_COMPLEXITY),
  ];
}
