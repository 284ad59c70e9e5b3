import { defineConfig } from 'vitest/config';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // One graphql module instance for Pothos, Yoga and the tests ("another module or realm").
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Own commands: `npm run test:faults` (private PostgreSQL and Redis servers it stops and starts; its
    // request-limits file needs none and runs here too) and `npm run test:fuzz` (thousands of generated requests per operation).
    exclude: ['test/faults/**/!(request-limits).test.ts', 'test/fuzz/**', '**/node_modules/**'],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
