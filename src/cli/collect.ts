/**
 * `quotegate collect` (docs/collectors.md): the collectors as their own process. Registered on the full CLI
 * (src/cli/main.ts) and, run as a program itself (`collectMain`, which bin/quotegate.js calls for `quotegate collect`), without the rest of the service: a collector process does not load the HTTP app,
 * GraphQL schema and jobs it never uses, so it stays smaller in memory (docs/benchmarks.md).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import pino from 'pino';
import { loadEnv, type Env } from '../env.js';
import { openDatabase, POOL_CONNECTIONS, type Database } from '../db/client.js';
import { collectorConnections } from '../collectors/runner.js';
import { collectOnce, loadSourcesModule, startCollectors, type CollectorSelection } from '../collectors/start.js';

/** Adds the `collect` command to `program`, with the environment `env`. */
export function addCollectCommand(program: Command, env: Env): void {
  program
    .command('collect')
    .description(
      'run the collectors as their own process (docs/collectors.md): every source once per interval, shared with any other ' +
        'collector process on the same PostgreSQL; on embedded PGlite only while the service is stopped (`npm start` runs them itself)',
    )
    .option('--sources-module <file>', "also run the collector sources this module exports as `sources` (an adapter in development; the tests' fake source)")
    .option('--only <ids>', 'comma-separated source ids (and `rates`) to run; default all')
    .option('--once', 'run each selected source once now, without the queue, print each run as a JSON line, and exit')
    .action(async (opts: { sourcesModule?: string; only?: string; once?: boolean }) => {
      const logger = pino({ level: env.LOG_LEVEL });
      let sel: CollectorSelection;
      try {
        sel = { extraSources: opts.sourcesModule ? await loadSourcesModule(opts.sourcesModule) : [], only: opts.only?.split(',').map((s) => s.trim()).filter((s) => s !== '') };
      } catch (e) {
        return program.error(`error: ${e instanceof Error ? e.message : String(e)}`);
      }
      let db: Database;
      try {
        // Without the Prisma client: the collectors write through the raw driver only, and the client would cost this
        // process a share of its memory target (docs/collectors.md, Benchmark).
        db = await openDatabase(env.DATABASE_URL ? { url: env.DATABASE_URL } : { pgliteDir: env.PGLITE_DIR }, { prisma: false, maxConnections: Math.max(POOL_CONNECTIONS, collectorConnections(env.COLLECTOR_CONCURRENCY)) });
      } catch (e) {
        return program.error(`error: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (opts.once) {
        try {
          await collectOnce(db, logger, env, sel, (r) =>
            console.log(JSON.stringify({ source: r.sourceId, outcome: r.outcome, rows: r.rowsAccepted, skipped: r.rowsSkipped, delisted: r.delisted, error_kind: r.errorKind, error: r.errorMessage, ms: r.finishedAt.getTime() - r.startedAt.getTime(), phases_ms: r.phases })),
          );
        } catch (e) {
          await db.close();
          return program.error(`error: ${e instanceof Error ? e.message : String(e)}`);
        }
        return db.close();
      }
      let collectors: Awaited<ReturnType<typeof startCollectors>>;
      try {
        collectors = await startCollectors(db, logger, env, sel);
      } catch (e) {
        await db.close();
        return program.error(`error: ${e instanceof Error ? e.message : String(e)}`);
      }
      console.log(`Quotegate collectors are running on ${env.DATABASE_URL ? 'PostgreSQL' : `embedded PGlite (${env.PGLITE_DIR})`} (pid ${process.pid})`);
      const stop = async () => {
        await collectors.stop();
        await db.close();
        process.exit(0);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}

/** Runs `quotegate collect ...` alone (argv as process.argv: node, script, `collect`, options). */
export async function collectMain(argv: string[]): Promise<void> {
  const program = new Command('quotegate');
  addCollectCommand(program, loadEnv());
  await program.parseAsync(argv);
}

// Run as a program of its own (node dist/src/cli/collect.js collect ...).
if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) await collectMain(process.argv);
