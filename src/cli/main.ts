/**
 * The `quotegate` command: serve, import, account admin. Run as `npx quotegate <command>` (bin/quotegate.js:
 * the compiled dist when up to date, else this file through tsx) or `npm run quotegate -- <command>`.
 * Admin commands (src/admin/commands.ts) reach a running PGlite service over its admin channel.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import cliProgress from 'cli-progress';
import { loadEnv } from '../env.js';
import { openDatabase, type Database } from '../db/client.js';
import { importPath } from '../collectors/importers.js';
import { bundledNames, historyFiles, importHistory } from '../history/import.js';
import { parseAdminArgs, runAdminCommand, type AdminArgs, type AdminCommandName, type AdminResult } from '../admin/commands.js';
import { sendAdminCommand } from '../admin/channel.js';
import { EXPORT_FORMATS, EXPORT_SIDES, runExportSnapshots, type ExportFormat } from '../exports/exports.js';
import type { SideFilter } from '../quotes/quotes.js';
import { ServiceError, validationProblems } from '../lib/errors.js';
import { startServer } from '../server.js';
import { runValuationJob } from '../jobs/valuation.js';
import { exportChildArgs } from '../jobs/export-snapshots.js';
import { computeValuations, latestValuableDate, parseDate, utcDay, valuationJson } from '../valuation/daily.js';
import { backtestDays, runBacktest, runWalkForward } from '../valuation/backtest.js';
import { formatDate } from '../lib/time.js';
import { addCollectCommand } from './collect.js';

const env = loadEnv();
const open = () => openDatabase(env.DATABASE_URL ? { url: env.DATABASE_URL } : { pgliteDir: env.PGLITE_DIR });

const program = new Command('quotegate').description('Quotegate: CS2 marketplace quotes, fees and valuations');

program
  .command('serve')
  .description('start the HTTP service (REST + GraphQL) on PORT (default 4000)')
  .action(async () => {
    // On a PostgreSQL server the export job builds in a child running this same CLI (src/jobs/export-snapshots.ts).
    const server = await startServer(env, { cli: { execPath: process.execPath, args: exportChildArgs(process.execArgv, process.argv[1]!, env.EXPORT_JOB_HEAP_MB) } });
    console.log(`Quotegate is up on ${env.DATABASE_URL ? 'PostgreSQL' : `embedded PGlite (${env.PGLITE_DIR})`}`);
    console.log(`  REST:     ${server.url}/websites   ${server.url}/prices?market_hash_name=...`);
    console.log(`  GraphiQL: ${server.url}/graphql`);
    // On embedded PGlite the CLI hands admin commands to this process over its admin channel (src/admin/channel.ts).
    console.log(
      env.DATABASE_URL || server.adminSocket
        ? '  API key:  npx quotegate account create --credits 1000   (in another terminal, while the service runs)'
        : '  API key:  stop the service (Ctrl-C), run `npx quotegate account create --credits 1000`, start it again\n' +
            '            (the admin channel is off, see the log; on PostgreSQL keys can be made while it runs)',
    );
    const stop = async () => {
      await server.close();
      process.exit(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

// `quotegate collect` (src/cli/collect.ts; bin/quotegate.js runs it from its own lean entry).
addCollectCommand(program, env);

program
  .command('import')
  .argument('<path>', 'a data folder, a csgotrader daily folder, a Buff163 goods page, a collector file (.csv/.ndjson, optionally .gz), or price history (data/history)')
  .description('load quote data through the ingestion service, and price history files as history series (idempotent)')
  .action(async (target: string) => {
    const db = await open();
    const files = historyFiles(path.resolve(target));
    if (files.length > 0) {
      // Price history (docs/history.md): imported series, never quotes. Names outside the bundled list and the items are skipped.
      const h = await importHistory(db, path.resolve(target), bundledNames(path.resolve(env.QUOTEGATE_DATA_DIR)));
      console.log(`history ${h.files.length} files: ${h.points} points in ${h.months} month rows, ${h.skippedNames} unknown names skipped`);
      if (fs.statSync(target).isFile()) return db.close();
    }
    const bar = new cliProgress.SingleBar({ format: 'import [{bar}] {percentage}% | {value}/{total} observations | {eta}s left' }, cliProgress.Presets.shades_classic);
    let started = false;
    let r: Awaited<ReturnType<typeof importPath>>;
    try {
      r = await importPath(db, path.resolve(target), (done, total) => {
        if (!started) {
          bar.start(total, 0);
          started = true;
        }
        bar.update(done);
      });
    } catch (e) {
      if (started) bar.stop();
      await db.close();
      if (!(e instanceof ServiceError)) throw e;
      // A collector file with invalid rows: nothing was applied; every problem names its line.
      const details = validationProblems(e);
      return program.error(`error: ${target} was not imported (no row applied):\n${details.map((d) => `  ${d.field}: ${d.message}`).join('\n')}`);
    }
    if (started) bar.stop();
    console.log(`observations ${r.observations}: ${r.inserted} new quotes, ${r.updated} updated, ${r.skipped} unchanged or stale`);
    await db.close();
  });

/** Runs `work` on an open database; a ServiceError (unknown id, bad value) or a database that cannot be opened becomes a one-line error and exit code 1. */
async function withDb<T>(work: (db: Database) => Promise<T>): Promise<T> {
  let db: Database;
  try {
    db = await open();
  } catch (e) {
    return program.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  }
  let failure: ServiceError;
  try {
    return await work(db);
  } catch (e) {
    if (!(e instanceof ServiceError)) throw e;
    failure = e;
  } finally {
    await db.close();
  }
  return program.error(`error: ${failure.message}`);
}

const print = (json: boolean | undefined, data: Record<string, unknown>, text: string) => console.log(json ? JSON.stringify(data) : text);

/**
 * Runs admin command `name` (src/admin/commands.ts) and returns its result. Arguments are checked first
 * (no database needed). On embedded PGlite held by a running service the command is handed to that service
 * over its admin channel (src/admin/channel.ts), which runs the same function on its database; otherwise it
 * runs here. Any refusal exits with `error: <message>` and code 1.
 */
async function admin<N extends AdminCommandName>(name: N, args: AdminArgs<N>): Promise<AdminResult<N>> {
  try {
    parseAdminArgs(name, args);
    if (!env.DATABASE_URL && !env.PGLITE_DIR.startsWith('memory://')) {
      const sent = await sendAdminCommand(env.PGLITE_DIR, name, args);
      if (sent.reached) return sent.result;
    }
  } catch (e) {
    return program.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  }
  return withDb((db) => runAdminCommand(db, name, args));
}

/** Commander's options without `--json` (which only chooses the output), as admin command arguments. */
function argsOf<T extends { json?: boolean }>(opts: T): Omit<T, 'json'> {
  const { json: _json, ...rest } = opts;
  return rest;
}

const keyText = (r: { key_id: string; api_key: string }) => `key id ${r.key_id}\nAPI key (shown once, store it now): ${r.api_key}`;

const account = program.command('account').description('account administration');
account
  .command('create')
  .description('create an account with one API key; the key is printed once')
  .option('--id <id>', 'account id (the dashboard user id); default a random UUID')
  .option('--credits <n>', 'credits granted', '0')
  .option('--subscription <plan>', 'give it an active subscription to this plan id (needs --days)')
  .option('--days <n>', 'subscription length in days')
  .option('--category <name>', 'subscription category', 'api')
  .option('--name <name>', 'profile name')
  .option('--email <email>', 'profile email')
  .option('--unsynced', 'leave the profile unsynced (GET /me answers 404 until the dashboard syncs it)')
  .option('--json', 'print JSON')
  .action(async (opts: { id?: string; credits: string; subscription?: string; days?: string; category: string; name?: string; email?: string; unsynced?: boolean; json?: boolean }) => {
    const r = await admin('account.create', argsOf(opts));
    print(opts.json, r, `account ${r.account_id}\n${keyText(r)}`);
  });
for (const [name, disabled] of [['disable', true], ['enable', false]] as const) {
  account
    .command(name)
    .argument('<account-id>')
    .option('--json', 'print JSON')
    .description(disabled ? 'disable an account: its keys get 403' : 'enable a disabled account again')
    .action(async (id: string, opts: { json?: boolean }) => {
      const r = await admin(disabled ? 'account.disable' : 'account.enable', { account_id: id });
      print(opts.json, r, `account ${id} ${disabled ? 'disabled' : 'enabled'}`);
    });
}

const key = program.command('key').description('API keys (role user)');
key
  .command('create')
  .description('add an API key to an account; the key is printed once')
  .requiredOption('--account <id>', 'account id')
  .option('--name <name>', 'a label for the key')
  .option('--operations <ids>', 'comma-separated operation ids the key may call (default: all), e.g. getPrices,getMe')
  .option('--json', 'print JSON')
  .action(async (opts: { account: string; name?: string; operations?: string; json?: boolean }) => {
    const r = await admin('key.create', argsOf(opts));
    print(opts.json, r, keyText(r));
  });
key
  .command('revoke')
  .argument('<key-id>')
  .option('--json', 'print JSON')
  .description('revoke an API key: it gets 401 from then on')
  .action(async (id: string, opts: { json?: boolean }) => {
    const r = await admin('key.revoke', { key_id: id });
    print(opts.json, r, `key ${id} revoked`);
  });

program
  .command('credits')
  .description('credit administration')
  .command('grant')
  .argument('<account-id>')
  .argument('<amount>', 'whole credits > 0, added to the granted total')
  .option('--json', 'print JSON')
  .action(async (id: string, amount: string, opts: { json?: boolean }) => {
    const r = await admin('credits.grant', { account_id: id, amount });
    print(opts.json, r, `granted ${r.granted} credits to ${id}; total ${r.total}`);
  });

program
  .command('subscription')
  .description('subscription administration')
  .command('set')
  .argument('<account-id>')
  .option('--plan <plan>', 'plan id')
  .option('--days <n>', 'days from now until it expires')
  .option('--category <name>', 'subscription category', 'api')
  .option('--none', 'remove every subscription of the account')
  .option('--json', 'print JSON')
  .description("replace the account's subscriptions with one (or none)")
  .action(async (id: string, opts: { plan?: string; days?: string; category: string; none?: boolean; json?: boolean }) => {
    const r = await admin('subscription.set', { account_id: id, ...argsOf(opts) });
    const s = r.subscriptions[0];
    print(opts.json, r, s ? `${id}: ${s.plan_id} until ${s.expires_at}` : `${id}: no subscription`);
  });

program
  .command('export')
  .description('export snapshots (GET /prices/export)')
  .command('build')
  .description('build the snapshots now (every app id and side unless narrowed), under the builder lock')
  .option('--app-id <id>', 'only this app id')
  .option('--side <side>', 'only this side: ask, bid, mid or all')
  .option('--format <format>', 'only this file format: json or ndjson (default both)')
  .option('--json', 'print JSON')
  .option('--skip-if-busy', 'when another process is building, print {"skipped": true} (with --json) and exit 0 instead of failing')
  .action(async (opts: { appId?: string; side?: string; format?: string; json?: boolean; skipIfBusy?: boolean }) => {
    if (opts.side !== undefined && !(EXPORT_SIDES as readonly string[]).includes(opts.side)) program.error('--side must be ask, bid, mid or all');
    if (opts.format !== undefined && !(EXPORT_FORMATS as readonly string[]).includes(opts.format)) program.error('--format must be json or ndjson');
    const started = Date.now();
    const results = await withDb((db) =>
      runExportSnapshots(db, {
        appIds: opts.appId ? [opts.appId] : undefined,
        sides: opts.side ? [opts.side as SideFilter] : undefined,
        formats: opts.format ? [opts.format as ExportFormat] : undefined,
      }),
    );
    if (results === null && opts.skipIfBusy) return void console.log(opts.json ? JSON.stringify({ skipped: true }) : 'another process is building snapshots right now: skipped');
    if (results === null) return program.error('error: another process is building snapshots right now; try again shortly');
    const rows = results.map((r) => ({
      app_id: r.snapshot.appId,
      side: r.snapshot.side,
      format: r.snapshot.format,
      published: r.published,
      etag: r.snapshot.etag,
      bytes: r.snapshot.byteSize,
      items: r.snapshot.itemCount,
      quotes: r.snapshot.quoteCount,
      build_ms: r.snapshot.buildMs,
    }));
    // maxRSS: peak resident set size of this process in KiB (what the build's memory bound is checked against).
    const summary = { ms: Date.now() - started, peak_rss_mib: Math.round(process.resourceUsage().maxRSS / 1024), builds: rows };
    if (opts.json) console.log(JSON.stringify(summary));
    else {
      console.table(rows);
      console.log(`done in ${summary.ms} ms; peak RSS ${summary.peak_rss_mib} MiB`);
    }
  });

const token = program.command('token').description('service tokens (role machine, for the dashboard sync)');
token
  .command('create')
  .requiredOption('--name <name>', 'who uses it, e.g. dashboard')
  .option('--json', 'print JSON')
  .description('create a machine service token; printed once')
  .action(async (opts: { name: string; json?: boolean }) => {
    const r = await admin('token.create', argsOf(opts));
    print(opts.json, r, `token id ${r.token_id}\nservice token (shown once, store it now): ${r.token}`);
  });
token
  .command('revoke')
  .argument('<token-id>')
  .option('--json', 'print JSON')
  .description('revoke a service token')
  .action(async (id: string, opts: { json?: boolean }) => {
    const r = await admin('token.revoke', { token_id: id });
    print(opts.json, r, `token ${id} revoked`);
  });

/** A `--date` option: YYYY-MM-DD or a usage error. */
function dateOption(raw: string): Date {
  try {
    return parseDate(raw);
  } catch {
    return program.error('--date must be a calendar date YYYY-MM-DD');
  }
}

/** Set in the child of `inHeapCappedChild`, so it does the work itself. */
const HEAP_CAPPED_CHILD = 'QUOTEGATE_HEAP_CAPPED_CHILD';

/**
 * Runs this same command again in a child process with V8's old generation capped at `heapMb` MiB
 * (`--max-old-space-size`), its output and exit code passed through; resolves with the child's exit code, or with
 * null when this process is to do the work itself: it is that child, the cap is 0, or the process was started
 * with a cap already (execArgv or NODE_OPTIONS). The cap cannot be set once V8 runs (`v8.setFlagsFromString`
 * does not move it), hence a child. A heap that reaches the cap fails the child with V8's out-of-memory error
 * (exit code 134); raise VALUATION_JOB_HEAP_MB then.
 */
async function inHeapCappedChild(heapMb: number): Promise<number | null> {
  const flag = '--max-old-space-size';
  if (heapMb === 0 || process.env[HEAP_CAPPED_CHILD] === '1') return null;
  if (process.execArgv.some((a) => a.startsWith(flag)) || (process.env.NODE_OPTIONS ?? '').includes(flag)) return null;
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [...process.execArgv, `${flag}=${heapMb}`, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, [HEAP_CAPPED_CHILD]: '1' },
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      process.off('SIGINT', forward).off('SIGTERM', forward);
      resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1));
    });
  });
}

const jobs = program.command('jobs').description('background jobs, run now');
jobs
  .command('run')
  .argument('<job>', 'valuation')
  .option('--date <YYYY-MM-DD>', 'valuation date (UTC); default: the latest date with closes before it (today on a live feed)')
  .option('--json', 'print JSON')
  .description('run a job now: `valuation` computes and publishes the CSCP valuations of a date (replacing that date\'s)')
  .action(async (job: string, opts: { date?: string; json?: boolean }) => {
    if (job !== 'valuation') program.error('unknown job; jobs: valuation');
    const code = await inHeapCappedChild(env.VALUATION_JOB_HEAP_MB);
    if (code !== null) {
      process.exitCode = code;
      return;
    }
    const outcome = await withDb(async (db) => {
      const date = opts.date ? dateOption(opts.date) : ((await latestValuableDate(db, new Date())) ?? utcDay(new Date()));
      return runValuationJob(db, date, { force: true });
    });
    if (outcome.status === 'locked') return program.error('error: another process is running the valuation job right now; try again shortly');
    if (outcome.status !== 'done') return;
    const r = outcome.result;
    print(
      opts.json,
      { date: r.date, items: r.items, two_sided: r.twoSided, one_sided: r.oneSided, ms: r.durationMs, computed_at: r.computedAt.toISOString() },
      `valuation ${r.date}: ${r.items} items (${r.twoSided} two-sided, ${r.oneSided} one-sided) in ${r.durationMs} ms`,
    );
  });

program
  .command('valuation')
  .description('CSCP valuations')
  .command('explain')
  .argument('<market-hash-name>')
  .requiredOption('--date <YYYY-MM-DD>', 'valuation date (UTC)')
  .description('recompute one item\'s valuation of a date and print every source: close, fee path, cash amount, sigma, weight')
  .action(async (name: string, opts: { date: string }) => {
    const date = dateOption(opts.date);
    const c = await withDb((db) => computeValuations(db, date, { explain: [name] }));
    const e = c.explained[0];
    if (!e) return program.error(`error: no closes for ${JSON.stringify(name)} in the window before ${formatDate(date)}`);
    console.log(JSON.stringify({ date: formatDate(date), window: c.stats.window, tau: c.stats.model.tau, ...explainJson(e) }, null, 2));
  });

function explainJson(e: Awaited<ReturnType<typeof computeValuations>>['explained'][number]) {
  const side = (s: NonNullable<typeof e.sides>['ask'] | null | undefined) =>
    s && {
      amount: s.amount.toFixed(),
      uncertainty: s.uncertainty,
      count: s.count,
      sources: s.outcomes.map((o) => ({
        market: o.source.market,
        cash_cny: o.source.amount.toFixed(),
        sigma: o.source.sigma,
        weight: o.weight.toFixed(),
        residual: o.residual,
        excluded: o.reason,
      })),
    };
  return {
    market_hash_name: e.marketHashName,
    closes: e.closes.map((c) => ({ market: c.market, provider: c.provider, side: c.side, price: c.price.toFixed(), currency: c.currency, age_days: c.ageDays, fee_path: c.path })),
    crossed_bids: e.sides?.crossed ?? [],
    ask: side(e.sides?.ask),
    bid: side(e.sides?.bid),
    valuation: e.valuation && { ...valuationJson(e.valuation), half_spread: e.valuation.halfSpread },
  };
}

program
  .command('backtest')
  .option('--from <YYYY-MM-DD>', 'first day to score')
  .option('--to <YYYY-MM-DD>', 'last day to score')
  .option('--history <series>', 'score on the price history instead of the daily closes: sales, listing_minimum, ask or bid')
  .option('--market <code>', "with --history: only this market's series (e.g. STEAM)")
  .option('--walk-forward', 'choose the biweight constant, calibration factors and market weights on earlier days only and score each later day with them (the first day only trains)')
  .option('--json', 'print JSON')
  .description('value each day with enough history from the days before it and score against what the markets showed that day (stores nothing)')
  .action(async (opts: { from?: string; to?: string; history?: string; market?: string; walkForward?: boolean; json?: boolean }) => {
    const from = opts.from ? dateOption(opts.from) : null;
    const to = opts.to ? dateOption(opts.to) : null;
    if (opts.market !== undefined && opts.history === undefined) return program.error('--market needs --history');
    if (opts.walkForward && opts.history !== undefined) return program.error('--walk-forward works on the daily closes, not with --history');
    if (opts.history !== undefined) {
      // The history backtest (src/valuation/history-backtest.ts, docs/valuation.md "Backtest on the price history").
      const { HISTORY_BACKTEST_SERIES, runHistoryBacktest } = await import('../valuation/history-backtest.js');
      const series = HISTORY_BACKTEST_SERIES.find((s) => s === opts.history);
      if (!series) return program.error(`--history must be one of ${HISTORY_BACKTEST_SERIES.join(', ')}`);
      const h = await withDb((db) =>
        runHistoryBacktest(db, { series, market: opts.market, from: from ? formatDate(from) : undefined, to: to ? formatDate(to) : undefined }, opts.json ? undefined : (d) =>
          console.log(`${d.date}: ${d.valued_items} items, ${d.targets} targets, consensus ${d.consensus_mdae}, previous close ${d.previous_close_mdae}, 7-day median ${d.median7_mdae}, inside e^(+-u) ${d.calibration}, tau ${d.tau}`),
        ),
      );
      if (opts.json) return console.log(JSON.stringify(h));
      const skipped = h.unscored_days.length > 0 ? `${h.unscored_days.length} day${h.unscored_days.length === 1 ? '' : 's'} with candles not scored (nothing in the window): ${h.unscored_days.slice(0, 5).join(', ')}${h.unscored_days.length > 5 ? ', ...' : ''}` : '';
      if (h.targets === 0) return console.log(`no day of the ${series} history${h.market ? ` of ${h.market}` : ''} could be scored; ${skipped || 'no candles'}`);
      const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
      console.log(
        `\nmedian |ln error| over ${h.targets} ${series} candles${h.market ? ` of ${h.market}` : ''} on ${h.days.length} days: consensus ${h.consensus_mdae}; ` +
          `previous close ${h.previous_close.mdae} (consensus on the same ${h.previous_close.n}: ${h.previous_close.consensus_mdae}); ` +
          `7-day median ${h.median7.mdae} (consensus on the same ${h.median7.n}: ${h.median7.consensus_mdae})`,
      );
      const row = (g: (typeof h.bands)[number]) => ({ targets: g.n, consensus: g.consensus_mdae, 'previous close': g.previous_close_mdae, '7-day median': g.median7_mdae, 'inside e^(+-u)': g.calibration });
      console.table(Object.fromEntries([...h.bands.map((g) => [`price ${g.label}`, row(g)]), ...h.ages.map((g) => [`close ${g.label} old`, row(g)])]));
      console.log(`calibration: ${pct(h.calibration.share)} inside consensus x e^(+-u), ${pct(h.calibration.share_2u)} inside e^(+-2u); median u ${h.calibration.median_u}; 68 % would need u x ${h.calibration.u_factor_68}`);
      if (skipped) console.log(skipped);
      return;
    }
    if (opts.walkForward) {
      const w = await withDb(async (db) => runWalkForward(db, (await backtestDays(db)).filter((d) => (!from || d >= from) && (!to || d <= to))));
      if (opts.json) return console.log(JSON.stringify(w));
      console.table(
        Object.fromEntries(
          w.days.map((d) => [
            d.date,
            {
              'chosen C (earlier days)': d.chosen_c ?? 'trains only',
              ...Object.fromEntries(Object.entries(d.by_c).map(([c, e]) => [`C=${c}`, e])),
              'factors two/one/ask/bid': `${d.learned.factors.two_sided} / ${d.learned.factors.one_sided} / ${d.learned.factors.ask} / ${d.learned.factors.bid}`,
              'markets with accuracy': Object.keys(d.learned.markets).length,
            },
          ]),
        ),
      );
      const r = w.scored;
      if (r.targets === 0) return console.log('walk-forward: nothing scored (it needs at least two backtestable days)');
      console.log(`walk-forward, ${r.days.length} scored days, ${r.targets} next-day quotes: consensus ${r.consensus_mdae}; plain cross-market median ${r.plain_median.mdae} (consensus on the same ${r.plain_median.n}: ${r.plain_median.consensus_mdae})`);
      console.table(Object.fromEntries(Object.entries(r.markets).map(([k, v]) => [k, { targets: v.n, 'previous close': v.mdae, consensus: v.consensus_mdae }])));
      return console.log(
        `calibration, walk-forward: ${(r.calibration.share * 100).toFixed(1)} % inside price x e^(+-u) (two-sided ${(r.calibration.two_sided * 100).toFixed(1)} %, one-sided ${(r.calibration.one_sided * 100).toFixed(1)} %; ask targets ${(r.calibration.ask_targets * 100).toFixed(1)} %, bid targets ${(r.calibration.bid_targets * 100).toFixed(1)} % inside their side's own u)`,
      );
    }
    const r = await withDb(async (db) => {
      const days = (await backtestDays(db)).filter((d) => (!from || d >= from) && (!to || d <= to));
      return runBacktest(db, days, opts.json ? undefined : (d) => console.log(`${d.date}: ${d.valued_items} items, ${d.targets} targets, consensus ${d.consensus_mdae}, plain median ${d.plain_median_mdae}, inside e^(+-u) ${d.calibration}`));
    });
    if (opts.json) return console.log(JSON.stringify(r));
    console.log(`\nmedian |ln error| over ${r.targets} next-day quotes: consensus ${r.consensus_mdae}; plain cross-market median ${r.plain_median.mdae} (consensus on the same ${r.plain_median.n}: ${r.plain_median.consensus_mdae})`);
    console.table(Object.fromEntries(Object.entries(r.markets).map(([k, v]) => [k, { targets: v.n, 'previous close': v.mdae, consensus: v.consensus_mdae }])));
    console.log(`calibration: ${(r.calibration.share * 100).toFixed(1)} % of next-day quotes inside price x e^(+-u) (two-sided ${(r.calibration.two_sided * 100).toFixed(1)} %, one-sided ${(r.calibration.one_sided * 100).toFixed(1)} %; ask targets ${(r.calibration.ask_targets * 100).toFixed(1)} %, bid targets ${(r.calibration.bid_targets * 100).toFixed(1)} %)`);
  });

await program.parseAsync(process.argv);
