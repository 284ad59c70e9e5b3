/**
 * The benchmark's data set-up, run by bench/servers.ts in a process of its own before the servers start, so the
 * servers' process holds what the service holds under load and not what making 6,000 accounts left behind (its
 * RSS was 64 MiB higher after creating them in-process, and `npm run bench` reports that process's RSS).
 * Opens the same database as the servers (DATABASE_URL, else PGlite in var/bench-pglite), loads the bundled data
 * when it is empty (with BENCH_SCALE=full: the full-scale catalogue of bench/scale-data.ts unless it is there,
 * PGlite in var/bench-pglite-full; a PostgreSQL database named by DATABASE_URL is created when missing), creates BENCH_ACCOUNTS accounts (default 3,000) with a billion credits each and as many with a
 * subscription a year long, closes the database and prints one JSON line: {keys, subscriptionKeys}.
 */
import path from 'node:path';
import { loadEnv } from '../src/env.js';
import { openDatabase } from '../src/db/client.js';
import { importPath, isEmpty } from '../src/collectors/importers.js';
import { createAccount } from '../src/accounts/accounts.js';
import { projectRoot } from '../src/lib/paths.js';
import { benchDatabaseTarget, benchScale } from './servers-process.js';
import { ensurePostgresDatabase, ensureScaleCatalogue } from './scale-data.js';

const env = loadEnv();
if (benchScale() === 'full' && env.DATABASE_URL) await ensurePostgresDatabase(env.DATABASE_URL);
const db = await openDatabase(benchDatabaseTarget(projectRoot, env.DATABASE_URL));
if (benchScale() === 'full') await ensureScaleCatalogue(db);
else if (await isEmpty(db)) await importPath(db, path.join(projectRoot, 'data'));
const accounts = Number(process.env.BENCH_ACCOUNTS ?? 3000);
const keys: string[] = [];
const subscriptionKeys: string[] = [];
const yearAhead = new Date(Date.now() + 365 * 86_400_000);
for (let i = 0; i < accounts; i++) {
  keys.push((await createAccount(db, { credits: 1_000_000_000n })).key);
  subscriptionKeys.push((await createAccount(db, { subscription: { category: 'api', planId: 'bench', expiresAt: yearAhead } })).key);
}
await db.close();
console.log(JSON.stringify({ keys, subscriptionKeys }));
