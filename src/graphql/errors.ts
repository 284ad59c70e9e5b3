/**
 * The GraphQL edge of the services' domain errors (src/lib/errors.ts): a ServiceError becomes a
 * GraphQLError whose `extensions` carry `code`, `http: { status, headers }` and, when present,
 * `details` (README, error codes); the ServiceError stays its `originalError`, so the REST facade reads
 * the same refusal back unchanged.
 */
import { GraphQLError, type ASTNode } from 'graphql';
import { ServiceError } from '../lib/errors.js';

/** The `extensions` of a refusal on the GraphQL face. */
export function serviceErrorExtensions(error: ServiceError): Record<string, unknown> {
  return {
    code: error.code,
    http: { status: error.status, headers: error.headers },
    ...(error.details === undefined ? {} : { details: error.details }),
  };
}

/** `error` as a GraphQL error (at `path` and `nodes` when given: a field's error). */
export function toGraphQLError(error: ServiceError, at: { nodes?: readonly ASTNode[] | ASTNode | null; path?: readonly (string | number)[] } = {}): GraphQLError {
  return new GraphQLError(error.message, { nodes: at.nodes ?? null, path: at.path, originalError: error, extensions: serviceErrorExtensions(error) });
}

/** The ServiceError behind a GraphQL error (thrown by a resolver or set by a plugin), or null. */
export function serviceErrorOf(error: unknown): ServiceError | null {
  if (error instanceof ServiceError) return error;
  if (error instanceof GraphQLError && error.originalError instanceof ServiceError) return error.originalError;
  return null;
}
