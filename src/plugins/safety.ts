/**
 * GraphQL safety limits, all applied before any resolver runs: bracket nesting (before parsing), query depth and alias count
 * (graphql-armor validation rules) and a cost limit that counts list sizes (graphql-query-complexity
 * with the `complexity` extension each list field declares, see `listComplexity`). The REST
 * documents stay far below every limit; the limits only bound what an ad-hoc GraphQL query can ask for.
 */
import type { Plugin } from 'graphql-yoga';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import { GraphQLError, Lexer, Source, TokenKind } from 'graphql';
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
/**
 * Deepest nesting of brackets (`{`, `[`, `(`) in a document, checked before parsing: graphql-js parses
 * recursively, so a few thousand nested list values would overflow the stack. Real documents need
 * about 20 (selection depth is limited to MAX_DEPTH anyway).
 */
export const MAX_NESTING = 64;

/** Throws a syntax error when `source` nests brackets deeper than `max` (one pass of graphql-js's own lexer). */
export function assertNesting(source: string | Source, max: number): void {
  const lexer = new Lexer(typeof source === 'string' ? new Source(source) : source);
  let depth = 0;
  for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
    if (token.kind === TokenKind.BRACE_L || token.kind === TokenKind.BRACKET_L || token.kind === TokenKind.PAREN_L) {
      if (++depth > max) throw new GraphQLError(`Syntax Error: brackets nested deeper than ${max}.`, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
    } else if (token.kind === TokenKind.BRACE_R || token.kind === TokenKind.BRACKET_R || token.kind === TokenKind.PAREN_R) {
      depth--;
    }
  }
}

/**
 * Yoga parses the `variables` and `extensions` of GET and form requests with a bare JSON.parse: its
 * SyntaxError is the client's, so it becomes 400 `BAD_REQUEST` here instead of an unexpected 500.
 */
function useRequestJsonErrors(): Plugin {
  return {
    onRequestParse({ requestParser, setRequestParser }) {
      if (!requestParser) return;
      setRequestParser(async (request) => {
        try {
          return await requestParser(request);
        } catch (e) {
          if (!(e instanceof SyntaxError)) throw e;
          throw new GraphQLError('The variables or extensions parameter is not valid JSON.', { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
        }
      });
    },
  };
}

function useNestingLimit(max: number): Plugin {
  return {
    onParse({ parseFn, setParseFn }) {
      setParseFn((source, options) => {
        assertNesting(source, max);
        return parseFn(source, options);
      });
    },
  };
}

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

/** The safety plugins, in the order they must run (before metering): request JSON errors, nesting, depth, aliases, cost. */
export function safetyPlugins(): Plugin[] {
  return [
    useRequestJsonErrors(),
    useNestingLimit(MAX_NESTING),
    maxDepthPlugin({ n: MAX_DEPTH, exposeLimits: true }) as Plugin,
    maxAliasesPlugin({ n: MAX_ALIASES, exposeLimits: true }) as Plugin,
    useComplexityLimit(MAX_COMPLEXITY),
  ];
}
