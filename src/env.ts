/**
 * Every environment variable the service reads, parsed once with zod (fail fast on bad values).
 * Nothing else in the code base reads `process.env`.
 */
import { z } from 'zod';

const schema = z.object({
  /** PostgreSQL connection string; unset = embedded PGlite in `PGLITE_DIR`. */
  DATABASE_URL: z.string().url().optional(),
  /** PGlite data directory (embedded default); `memory://` keeps it in memory. */
  PGLITE_DIR: z.string().min(1).default('./var/pglite'),
  /** HTTP port. */
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  /** HTTP bind address. */
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Folder holding the bundled real data (see data/PROVENANCE.md). */
  QUOTEGATE_DATA_DIR: z.string().min(1).default('./data'),
  /** Load the bundled data on start when the database holds no quotes (`false` to skip). */
  QUOTEGATE_AUTOLOAD: z.enum(['true', 'false']).default('true'),
  /** Redis connection string: rate-limit counts shared by every replica; unset = this process's memory. */
  REDIS_URL: z.string().url().optional(),
  /** `off` disables rate limits (load tests of the billing path only); never in production. */
  QUOTEGATE_RATE_LIMITS: z.enum(['on', 'off']).default('on'),
  /** Seconds between export snapshot builds (GET /prices/export); 0 turns the job off in this process. */
  EXPORT_INTERVAL_SECONDS: z.coerce.number().int().min(0).default(300),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Parsed environment (see the field comments for meaning and defaults). */
export type Env = z.infer<typeof schema>;

/** Parses `source` (default `process.env`); throws a readable error naming each bad variable. */
export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const result = schema.safeParse(source);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join('\n')}`);
  }
  return result.data;
}
