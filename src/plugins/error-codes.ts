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
 * Parse errors already carry Yoga's `GRAPHQL_PARSE_FAILED`. An answer that delivers data (some root field of `data`
 * is not null) is a 200 whatever its errors (GraphQL over HTTP: data present means 2xx): its errors then set no HTTP
 * status. An answer whose root fields are all null delivers nothing and keeps its errors' status.
 *
 * The same plugin logs every error of an execution that is not an expected refusal (a ServiceError, a GraphQL
 * input error, a lost database) with the request's logger, so the line carries its request id; the answer
 * itself is masked by Yoga's maskError. (Logging there instead would need the request's logger in an
 * AsyncLocalStorage, whose promise hooks cost every request of the hot path.) One plugin for both, not two: each
 * onExecute hook costs every request envelop's iteration of it (issue: serving quotes at the machine's limit).
 */
import type { Plugin } from 'graphql-yoga';
import { GraphQLError, getOperationAST, type ExecutionResult } from 'graphql';
import type { Logger } from 'pino';
import { ServiceError, isDatabaseUnavailable } from '../lib/errors.js';
import { coerceVariables } from './variables.js';
import { isRouteDocument } from './safety.js';

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

/** `error` without the HTTP status in its extensions when `drop` (its headers stay); else `error` itself. */
function withoutStatus(error: GraphQLError, drop: boolean): GraphQLError {
  const http = error.extensions?.http as { status?: number; headers?: Record<string, string> } | undefined;
  if (!drop || http?.status === undefined) return error;
  const { http: _status, ...rest } = error.extensions;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: http.headers ? { ...rest, http: { headers: http.headers } } : rest,
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

/** What the plugin reads of the resolvers' context (src/graphql/context.ts). */
interface ErrorContext {
  state?: { log?: Logger };
}

/**
 * The plugin; put it first, so a variable error is reported before the safety and metering checks. Unexpected
 * errors are logged with the request's logger (`state.log`), else with `fallback`.
 */
export function useErrorCodes(fallback?: Logger): Plugin {
  /** The log of unexpected errors, after execution (one object for every request: it keeps no request state). */
  const logUnexpected = {
    onExecuteDone({ args, result }: { args: { contextValue: unknown }; result: unknown }) {
      const errors = (result as ExecutionResult).errors;
      if (!errors) return;
      for (const e of errors) {
        const original = e.originalError;
        if (!original || original instanceof ServiceError || original instanceof GraphQLError || isDatabaseUnavailable(original)) continue;
        ((args.contextValue as ErrorContext | undefined)?.state?.log ?? fallback)?.error({ err: original }, 'unexpected error');
      }
    },
  };
  return {
    onValidate() {
      return ({ result, setResult }) => {
        if (result.length === 0 || result.every(hasCode)) return;
        setResult(result.map((e) => (hasCode(e) ? e : withCode(e, validationCode(e)))));
      };
    },
    onExecute({ args, setResultAndStopExecution }) {
      // A REST route's variables were built and checked by the route itself (isRouteDocument).
      if (isRouteDocument(args.document)) return logUnexpected;
      const operation = getOperationAST(args.document, args.operationName ?? undefined);
      if (!operation) return logUnexpected;
      const coerced = coerceVariables(args.schema, operation, args.variableValues as Record<string, unknown> | undefined);
      if (coerced.errors) return setResultAndStopExecution({ errors: coerced.errors.map((e) => withCode(e, 'BAD_USER_INPUT', { status: 400 })) });
      return logUnexpected;
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !result || typeof result !== 'object' || !('errors' in result)) return;
      const r = result as ExecutionResult;
      if (!r.errors || r.errors.length === 0) return;
      // GraphQL over HTTP: an answer whose data is not null is a 200, errors or not (a partial answer, which metering
      // charges: README, Billing); its errors keep their codes and headers but set no HTTP status.
      // Data means a root field's value: `{ item: null }` delivers nothing, so its errors keep their status (422, 503).
      const partial = r.data !== null && r.data !== undefined && Object.values(r.data).some((v) => v !== null && v !== undefined);
      if (!partial && r.errors.every(hasCode)) return;
      setResult({ ...r, errors: r.errors.map((e) => withoutStatus(hasCode(e) ? e : withCode(e, fallbackCode(e)), partial)) });
    },
  };
}
