/**
 * The `quotegate` command: serve, import, account admin. Run as `npm run quotegate -- <command>`
 * (or `node dist/src/cli/main.js <command>` after `npm run build`).
 */
import path from 'node:path';
import { Command } from 'commander';
import cliProgress from 'cli-progress';
import { loadEnv } from '../env.js';
import { openDatabase } from '../db/client.js';
import { importPath } from '../services/importers.js';
import { createAccount } from '../services/accounts.js';
import { startServer } from '../server.js';

const env = loadEnv();
const open = () => openDatabase(env.DATABASE_URL ? { url: env.DATABASE_URL } : { pgliteDir: env.PGLITE_DIR });

const program = new Command('quotegate').description('Quotegate: CS2 marketplace quotes, fees and valuations');

program
  .command('serve')
  .description('start the HTTP service (REST + GraphQL) on PORT (default 4000)')
  .action(async () => {
    const server = await startServer(env);
    console.log(`Quotegate is up on ${env.DATABASE_URL ? 'PostgreSQL' : `embedded PGlite (${env.PGLITE_DIR})`}`);
    console.log(`  REST:     ${server.url}/websites   ${server.url}/prices?market_hash_name=...`);
    console.log(`  GraphiQL: ${server.url}/graphql`);
    console.log(
      env.DATABASE_URL
        ? '  API key:  npm run -s quotegate -- account create --credits 1000'
        : '  API key:  stop the service (Ctrl-C), run `npm run -s quotegate -- account create --credits 1000`, start it again\n' +
            '            (the embedded database belongs to one process; on PostgreSQL keys can be made while it runs)',
    );
    const stop = async () => {
      await server.close();
      process.exit(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

program
  .command('import')
  .argument('<path>', 'a data folder, a csgotrader daily folder, or a Buff163 goods page')
  .description('load quote data through the ingestion service (idempotent)')
  .action(async (target: string) => {
    const db = await open();
    const bar = new cliProgress.SingleBar({ format: 'import [{bar}] {percentage}% | {value}/{total} observations | {eta}s left' }, cliProgress.Presets.shades_classic);
    let started = false;
    const r = await importPath(db.prisma, path.resolve(target), (done, total) => {
      if (!started) {
        bar.start(total, 0);
        started = true;
      }
      bar.update(done);
    });
    if (started) bar.stop();
    console.log(`observations ${r.observations}: ${r.inserted} new quotes, ${r.updated} updated, ${r.skipped} unchanged or stale`);
    await db.close();
  });

const account = program.command('account').description('account administration');
account
  .command('create')
  .description('create an account with one API key; the key is printed once')
  .option('--credits <n>', 'credits granted', '0')
  .option('--json', 'print JSON')
  .action(async (opts: { credits: string; json?: boolean }) => {
    if (!/^\d+$/.test(opts.credits)) program.error('--credits must be a whole number >= 0');
    const db = await open();
    const r = await createAccount(db, { credits: BigInt(opts.credits) });
    await db.close();
    if (opts.json) console.log(JSON.stringify({ account_id: r.accountId, key_id: r.keyId, api_key: r.key, credits: Number(opts.credits) }));
    else console.log(`account ${r.accountId}\nAPI key (shown once, store it now): ${r.key}`);
  });

await program.parseAsync(process.argv);
