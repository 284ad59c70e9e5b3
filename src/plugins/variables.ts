/**
 * Variable coercion shared by the plugins of one execution: the error codes, the cost limit and
 * metering each need the operation's coerced variables; they get one `getVariableValues` result per
 * raw variables object and operation (the same object every plugin of an execution receives).
 */
import type { GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { getVariableValues } from 'graphql/execution/values.js';

type Coerced = ReturnType<typeof getVariableValues>;

const coercedByRaw = new WeakMap<object, { schema: GraphQLSchema; operation: OperationDefinitionNode; result: Coerced }>();

/**
 * `getVariableValues(schema, operation.variableDefinitions, raw)`, computed once per raw variables
 * object and operation. The result (coerced values or errors) must be treated as read-only.
 */
export function coerceVariables(schema: GraphQLSchema, operation: OperationDefinitionNode, raw: Record<string, unknown> | null | undefined): Coerced {
  if (!raw) return getVariableValues(schema, operation.variableDefinitions ?? [], {});
  const hit = coercedByRaw.get(raw);
  if (hit && hit.schema === schema && hit.operation === operation) return hit.result;
  const result = getVariableValues(schema, operation.variableDefinitions ?? [], raw);
  coercedByRaw.set(raw, { schema, operation, result });
  return result;
}
