/**
 * Every GraphQL refusal carries `extensions.code` (README, error codes), so clients branch on a code,
 * never on a message:
 * - `query_too_deep` / `too_many_aliases`: the depth and alias limits (graphql-armor reports them as
 *   validation errors without a code);
 * - `GRAPHQL_VALIDATION_FAILED`: any other validation error without a code;
 * - `BAD_USER_INPUT` (HTTP 400): variables that do not coerce to their declared types, refused
 *   before any other check (graphql-js reports them without a code);
 * - `BAD_REQUEST`: anything else without a code that is not a resolver error (those are mapped by
 *   the error masking, `internal_error` at worst).
 * Parse errors already carry Yoga's `GRAPHQL_PARSE_FAILED`.
 */
import type { Plugin } from 'graphql-yoga';
import { GraphQLError, getOperationAST, type ExecutionResult } from 'graphql';
import { coerceVariables } from './variables.js';

/** `error` with `code` added to its extensions (a new error; the original is left as it is). */
function withCode(error: GraphQLError, code: string, http?: { status: number }): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code, ...(http ? { http } : {}) },
  });
}

/** The code of a validation error that has none (see module doc). */
function validationCode(error: GraphQLError): string {
  if (/aliases limit/i.test(error.message)) return 'too_many_aliases';
  if (/depth limit/i.test(error.message)) return 'query_too_deep';
  return 'GRAPHQL_VALIDATION_FAILED';
}

/** The code of an error that reached the response without one (armor's limits may arrive here rather than at validation). */
function fallbackCode(error: GraphQLError): string {
  if (error.path) return 'internal_error';
  const code = validationCode(error);
  return code === 'GRAPHQL_VALIDATION_FAILED' ? 'BAD_REQUEST' : code;
}

const hasCode = (e: GraphQLError) => typeof e.extensions?.code === 'string';

/** The plugin; put it first, so a variable error is reported before the safety and metering checks. */
export function useErrorCodes(): Plugin {
  return {
    onValidate() {
      return ({ result, setResult }) => {
        if (result.length === 0 || result.every(hasCode)) return;
        setResult(result.map((e) => (hasCode(e) ? e : withCode(e, validationCode(e)))));
      };
    },
    onExecute({ args, setResultAndStopExecution }) {
      // A REST route's variables were built and checked by the route itself (RequestState.trustedVariables).
      if ((args.contextValue as { state?: { trustedVariables?: boolean } } | undefined)?.state?.trustedVariables) return;
      const operation = getOperationAST(args.document, args.operationName ?? undefined);
      if (!operation) return;
      const coerced = coerceVariables(args.schema, operation, args.variableValues as Record<string, unknown> | undefined);
      if (coerced.errors) setResultAndStopExecution({ errors: coerced.errors.map((e) => withCode(e, 'BAD_USER_INPUT', { status: 400 })) });
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !result || typeof result !== 'object' || !('errors' in result)) return;
      const r = result as ExecutionResult;
      if (!r.errors || r.errors.every(hasCode)) return;
      setResult({ ...r, errors: r.errors.map((e) => (hasCode(e) ? e : withCode(e, fallbackCode(e)))) });
    },
  };
}
