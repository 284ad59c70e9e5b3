/**
 * Expected errors, one convention for both faces: each carries a stable `code` (spec: ErrorBody.code),
 * an HTTP status, and optional `details`. GraphQL puts them in `extensions` (code, http.status, details);
 * the REST facade turns them into the error envelope.
 *
 * Codes: `validation_failed` 422, `not_found` 404, `route_not_found` 404, `method_not_allowed` 405,
 * `unauthorized` 401, `forbidden` 403, `credit_insufficient` 402, `rate_limited` 429, `conflict` 409,
 * `query_too_complex` 422 (GraphQL cost limit), `response_too_large` 422 (GraphQL answer size limit),
 * `bad_request` 400, `not_acceptable` 406, `unsupported_media_type` 415, `cursor_expired` 410 (change feed),
 * `dependency_unavailable` 503, `payload_too_large` 413, `internal_error` 500.
 *
 * Services throw these domain errors and know nothing of either face: the REST facade writes them as the
 * envelope (src/app.ts), the GraphQL edge as errors with extensions (src/graphql/errors.ts).
 */

/** One invalid parameter or body field. `location` is `query`, `path`, `header`, `body` or `argument` (GraphQL). */
export interface ValidationDetail {
  location: 'query' | 'path' | 'header' | 'body' | 'argument';
  field: string;
  message: string;
}

/**
 * An error a client can cause or a dependency can raise; never masked. `code` is the envelope's
 * `error.code`, `status` the HTTP status, `details` the envelope's `error.details` (absent = none) and
 * `headers` response headers the refusal needs (Retry-After, Allow).
 */
export class ServiceError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: unknown;
  readonly headers: Record<string, string>;
  constructor(code: string, status: number, message: string, details?: unknown, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.status = status;
    this.details = details;
    this.headers = headers;
  }
}

/**
 * `details` of every 422 (spec, ErrorBody: "details (object or null, optional)"): one entry per
 * problem under `errors`, the same shape on REST and in GraphQL `extensions.details`. A
 * `query_too_complex` refusal adds its figures beside `errors`.
 */
export interface ValidationDetails {
  errors: ValidationDetail[];
}

/** 422 `validation_failed` with `details: { errors }`, one entry per invalid parameter. */
export function validationError(problems: ValidationDetail[], message = 'The request has invalid parameters.'): ServiceError {
  return new ServiceError('validation_failed', 422, message, { errors: problems } satisfies ValidationDetails);
}

/** The problems a 422's `details.errors` lists (empty for any other error or shape). */
export function validationProblems(error: ServiceError): ValidationDetail[] {
  const d = error.details as Partial<ValidationDetails> | null | undefined;
  return d && Array.isArray(d.errors) ? d.errors : [];
}

/** 404 `not_found`. */
export function notFound(message: string): ServiceError {
  return new ServiceError('not_found', 404, message);
}

/** 401 `unauthorized`. */
export function unauthorized(message = 'A valid API key is required (Authorization: Bearer <key> or X-API-Key).'): ServiceError {
  return new ServiceError('unauthorized', 401, message);
}

/** 403 `forbidden`: a valid credential that may not call the operation. */
export function forbidden(message: string): ServiceError {
  return new ServiceError('forbidden', 403, message);
}

/** 503 `dependency_unavailable` with a Retry-After hint in seconds. */
export function dependencyUnavailable(message: string, retryAfterSeconds = 5): ServiceError {
  return new ServiceError('dependency_unavailable', 503, message, undefined, { 'Retry-After': String(retryAfterSeconds) });
}

/**
 * True for errors that mean the database cannot be reached (connection refused, terminated, shut down) or cannot
 * serve in time (a transaction past its bound or no pool connection free within the wait bound:
 * TransactionTimeoutError, code `transaction_timeout`, src/db/client.ts), so callers answer 503 and nothing was written.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let e: unknown = error;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|57P0[123]|08\d\d\d|P1001|P1002|P1017|transaction_timeout)$/.test(code)) return true;
    if (typeof message === 'string' && /ECONNREFUSED|Connection terminated|terminating connection|database system is (shutting down|starting up)|Can't reach database|Closed|connection.*closed|timeout exceeded when trying to connect/i.test(message)) return true;
    e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return false;
}
