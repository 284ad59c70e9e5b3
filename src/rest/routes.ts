/**
 * The REST route table, derived from the operation registry (src/operations/): each documented path runs its
 * operation's GraphQL document with the variables its parameters read (every invalid parameter reported at once,
 * 422) and answers the payload at the end of the operation's field path. Method and path template come from the
 * operation's catalogue row (data/endpoints.json) only.
 */
import type { Operation, RespondContext, RestInput } from '../operations/operation.js';
import { payloadOf, restVariables } from '../operations/operation.js';
import { OPERATIONS } from '../operations/index.js';
import { endpoint } from '../catalogue/endpoints.js';
import type { Reply } from '../http/replies.js';

export type { RespondContext, RestInput as RouteInput };

/** One REST route: its operation's REST behaviour with the method and path template of its catalogue row. */
export interface Route {
  operation: Operation;
  operationId: string;
  method: 'GET' | 'POST' | 'DELETE';
  /** Path template as in the spec, e.g. `/websites/{code}`. */
  path: string;
  /** Builds the document's variables; throws `validation_failed` (422) listing every bad parameter. */
  variables(input: RestInput): Record<string, unknown>;
  /** Picks the payload out of the GraphQL result data. */
  payload(data: Record<string, unknown>): unknown;
  /** False for a bare answer (`/health`, spec general conventions 2; the export; the event stream). */
  envelope: boolean;
  /** Extra response headers of a success. */
  headers?: Record<string, string>;
  /** True when the request has a JSON body. */
  body?: boolean;
  /** Builds the whole answer instead of the JSON envelope. */
  respond?(payload: unknown, ctx: RespondContext): Reply;
  /** True when these variables make an answer with many quotes (the facade runs few such at once). */
  heavy?(variables: Record<string, unknown>): boolean;
  /** The answer is an event stream (text/event-stream) of the subscription the document starts. */
  stream?: true;
}

/** Every REST route of the service. */
export const ROUTES: readonly Route[] = OPERATIONS.map((op) => {
  const row = endpoint(op.id);
  return {
    operation: op,
    operationId: op.id,
    method: row.method,
    path: row.path,
    variables: (input: RestInput) => restVariables(op, input),
    payload: (data: Record<string, unknown>) => payloadOf(op, data),
    envelope: op.rest.envelope,
    ...(op.rest.headers ? { headers: op.rest.headers } : {}),
    ...(op.body ? { body: true } : {}),
    ...(op.rest.respond ? { respond: op.rest.respond } : {}),
    ...(op.rest.heavy ? { heavy: op.rest.heavy } : {}),
    ...(op.rest.stream ? { stream: true as const } : {}),
  };
});
