import { describe, expect, it } from 'vitest';
import type { GraphQLObjectType } from 'graphql';
import { ENDPOINTS } from '../../src/catalogue/endpoints.js';
import { schema } from '../../src/graphql/schema.js';
import { meteredFieldArgs } from '../../src/plugins/metering/plan.js';

describe('arguments of metered root fields', () => {
  it('every metered root field that takes arguments has its rule in meteredFieldArgs (the only check of them)', () => {
    const roots = [schema.getQueryType(), schema.getSubscriptionType()].flatMap((type) => (type ? Object.values(type.getFields()) : []));
    // The account's own mutations (createAlert, deleteAlert) are metered for their rate limits but check their input
    // in their resolvers (src/plugins/metering/plan.ts, planMeteredFields).
    const mutations = Object.keys(schema.getMutationType()?.getFields() ?? {});
    const metered = ENDPOINTS.filter((e) => e.creditCost > 0 || e.rateLimit !== null).flatMap((e) => e.graphqlFields.filter((f) => !f.includes('.') && !mutations.includes(f)));
    expect(metered.length).toBeGreaterThan(5);
    const missing = metered.filter((name) => {
      const field = roots.find((f) => f.name === name);
      expect(field, `root field ${name} of the catalogue`).toBeDefined();
      return field!.args.length > 0 && !(name in meteredFieldArgs);
    });
    expect(missing).toEqual([]);
  });

  it('every metered edge (Type.field in the catalogue) is a field of the schema, and checks its own arguments', () => {
    const edges = ENDPOINTS.flatMap((e) => e.graphqlFields.filter((f) => f.includes('.')));
    expect(edges.sort()).toEqual(['Item.history', 'Item.routes', 'MarketQuote.item', 'Website.quotes']);
    for (const coordinate of edges) {
      const [type, name] = coordinate.split('.') as [string, string];
      const field = (schema.getType(type) as GraphQLObjectType | undefined)?.getFields()[name];
      expect(field, coordinate).toBeDefined();
      // Nested fields are checked where they run (Pothos validate): a bad argument fails the field, which is then not delivered.
      if (field!.args.some((a) => a.name !== 'appId' && a.name !== 'side')) expect(field!.extensions?.pothosOptions, coordinate).toHaveProperty('validate');
    }
  });
});
