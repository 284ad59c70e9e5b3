import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm run test:fuzz`: contract fuzzing (test/fuzz), thousands of generated requests per operation.
 * Same resolution as the default config; FUZZ_SEED and FUZZ_RUNS set the seed and the requests per operation.
 */
export default defineConfig({
  ...base,
  test: { ...base.test, include: ['test/fuzz/**/*.test.ts'], exclude: ['**/node_modules/**'], testTimeout: 3_600_000 },
});
