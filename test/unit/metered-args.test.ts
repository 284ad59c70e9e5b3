import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/catalogue/endpoints.js';
import { schema } from '../../src/graphql/schema.js';
import { meteredFieldArgs } from '../../src/validation/params.js';

describe('arguments of metered root fields', () => {
  it('every metered root field that takes arguments has its rule in meteredFieldArgs (the only check of them)', () => {
    const roots = [schema.getQueryType(), schema.getSubscriptionType()].flatMap((type) => (type ? Object.values(type.getFields()) : []));
    const metered = ENDPOINTS.filter((e) => e.creditCost > 0 || e.rateLimit !== null).flatMap((e) => e.graphqlFields);
    expect(metered.length).toBeGreaterThan(5);
    const missing = metered.filter((name) => {
      const field = roots.find((f) => f.name === name);
      expect(field, `root field ${name} of the catalogue`).toBeDefined();
      return field!.args.length > 0 && !(name in meteredFieldArgs);
    });
    expect(missing).toEqual([]);
  });
});
