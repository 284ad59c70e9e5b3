import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm run test:faults`: one file at a time, each with its own PostgreSQL / Redis servers that it stops,
 * pauses and restarts on purpose. Same resolution as the default config; only the file set differs.
 */
export default defineConfig({
  ...base,
  test: { ...base.test, include: ['test/faults/**/*.test.ts'], exclude: ['**/node_modules/**'], maxWorkers: 1, fileParallelism: false },
});
