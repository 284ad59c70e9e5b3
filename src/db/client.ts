/**
 * The one place that knows which database we run on: embedded PGlite (default, data in a
 * directory, no server) or a PostgreSQL server through @prisma/adapter-pg when `DATABASE_URL` is set.
 * Both use the same schema, migrations and generated Prisma client. The Prisma client is made on first use of
 * `Database.prisma`: a process that only runs raw SQL (the collector process, `quotegate collect`) never pays for
 * it (docs/collectors.md, Benchmark).
 */
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import type { PrismaPGlite } from 'pglite-prisma-adapter';
import type { PrismaPg } from '@prisma/adapter-pg';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations } from './migrate.js';
import { TransactionTimeoutError, type Sql, type SqlDatabase, type TransactionOptions } from './sql.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

export { prismaSql, TransactionTimeoutError, type Sql, type SqlDatabase, type TransactionOptions } from './sql.js';

/**
 * Default time limit of a transaction (`Database.transaction`), in ms: far above what the service's transactions
 * take (an ingestion chunk or a scan completion, well under a second to a few seconds), so it only ends one that
 * hangs (a statement waiting on a lock held by a stuck session, a caller awaiting something else while it holds
 * the transaction), releasing its locks and its connection instead of holding them for ever.
 */
export const TRANSACTION_TIMEOUT_MS = 60_000;
/**
 * Default bound on waiting for a free pool connection (PostgreSQL), in ms, for every statement and transaction (pg's
 * `connectionTimeoutMillis`: also the bound on opening a new connection). A wait that long means the pool is held
 * by work that does not finish: failing beats queueing requests behind it for ever.
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/** Statement texts sent as named prepared statements on PostgreSQL (`preparedStatement`), by text. */
const PREPARED = new Map<string, string>();

/**
 * Registers `sql` as the hot statement `name`: on PostgreSQL, `Database.query` then sends it as a named prepared
 * statement (each pool connection parses it once and PostgreSQL may keep a generic plan), instead of parsing and
 * planning it on every call. Returns `sql`. Only for statements of fixed text called very often (a GET's quote
 * lookup): every connection keeps each one. Throws when `name` is already taken by another text.
 */
export function preparedStatement(name: string, sql: string): string {
  for (const [text, n] of PREPARED) if (n === name && text !== sql) throw new Error(`prepared statement name ${name} is taken`);
  PREPARED.set(sql, name);
  return sql;
}

/**
 * Watches a connection checked out of the pool until it is handed back: a checked-out client has no listener of the
 * pool's, so a connection lost meanwhile (server restart, pg_terminate_backend) would otherwise be an unhandled 'error'
 * event that ends the process; its next statement fails instead. Returns the release: the connection goes back to the
 * pool, or is closed by it when it was lost or `failed` says it may be unusable.
 */
function watchCheckedOut(client: pg.PoolClient): (failed?: Error) => void {
  let lost: Error | undefined;
  const onError = (e: Error) => {
    lost = e;
  };
  client.on('error', onError);
  return (failed) => {
    const broken = lost ?? failed;
    // A lost connection keeps the listener: pg may report more errors while the pool closes it.
    if (!broken) client.removeListener('error', onError);
    client.release(broken);
  };
}

/** A connected database: the raw driver, the Prisma client, and what the service needs to know about it. */
export interface Database extends SqlDatabase {
  /**
   * The Prisma client, made on first access: starting it (its query compiler) costs a process a large share of its
   * memory, which a process that only uses the raw driver (the collector process) does not pay (docs/collectors.md,
   * Benchmark). Throws when the database was opened with `{ prisma: false }` (its modules are not even loaded).
   */
  readonly prisma: PrismaClient;
  kind: 'pglite' | 'postgres';
  /**
   * Runs one SQL statement on the raw driver (pg pool or PGlite), bypassing Prisma's per-query
   * overhead: for the hot read paths (key lookup, quotes). Rows as the driver returns them; cast
   * numerics to text in SQL. Counted in queryCount().
   */
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** `query` for a statement whose affected row count is wanted (see `Sql`). Counted in queryCount(). */
  execute(sql: string, params?: unknown[]): Promise<number>;
  /**
   * Runs `work` in one read-write transaction on the raw driver (READ COMMITTED, as a Prisma transaction): on
   * PostgreSQL one pool connection with BEGIN and COMMIT (other connections go on as usual); on PGlite a PGlite
   * transaction, which holds the embedded database for its duration (its other statements, raw or Prisma's, wait
   * and count as waiting for `backgroundQuery`). The statements of `work` are sent one at a time, each counted in
   * queryCount(). Commits when `work` resolves; rolls back and throws what `work` (or the COMMIT) throws otherwise.
   *
   * Bounded (`opts.timeoutMs`, default the database's `transactionTimeoutMs`, TRANSACTION_TIMEOUT_MS; 0: none): when
   * the transaction runs longer it is rolled back and throws TransactionTimeoutError (`run`), whatever `work` was
   * doing. On PostgreSQL the server enforces it too (`SET LOCAL statement_timeout` and
   * `idle_in_transaction_session_timeout`, so a client that stalls still loses its locks), a statement still
   * running at the limit is cancelled, and waiting for a pool connection longer than `connectTimeoutMs` throws
   * TransactionTimeoutError (`connect`). On PGlite (one connection, statements on this thread) only the first part
   * applies: statements after the limit are refused and the transaction rolls back, but a statement running then
   * finishes first (it cannot be interrupted), and waiting for the one connection is not bounded.
   */
  transaction<T>(work: (tx: Sql) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /** Number of SQL statements sent since start (for query-count assertions and metrics). */
  queryCount(): number;
  /**
   * `query` for one statement of long background work (the export build) that must not hold up requests. On embedded
   * PGlite, whose statements all run on this process's thread and its one connection, background statements run one
   * at a time, each once no other statement (raw or Prisma's) is running or waiting, or after
   * BACKGROUND_MAX_WAIT_MS; a request's statement then waits for at most the one background statement in flight. On
   * PostgreSQL it is `query`.
   */
  backgroundQuery<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Runs `work` only if no other process (PostgreSQL: a session advisory lock on a dedicated
   * connection; PGlite: this process, the only one that can open it) holds the lock `name`.
   * Returns `{ acquired: false }` at once when it is held.
   */
  withLock<T>(name: string, work: () => Promise<T>): Promise<{ acquired: true; result: T } | { acquired: false }>;
  /**
   * Runs `work` with a `query` that reads one consistent snapshot: a REPEATABLE READ READ ONLY transaction on one
   * connection (PostgreSQL; other connections go on as usual) or a PGlite transaction, which holds the embedded
   * database for its duration (its other statements wait). Statements are sent one at a time. Throws what `work`
   * throws (the transaction is rolled back).
   */
  readSnapshot<T>(work: (query: <R>(sql: string, params?: unknown[]) => Promise<R[]>) => Promise<T>): Promise<T>;
  /**
   * Signals a committed change on `channel` (e.g. `qg_auth` with an account id) to every process of the
   * service: this process's listeners are called before it resolves; other processes get it through
   * PostgreSQL NOTIFY (PGlite has no other processes). The NOTIFY is retried for about a second; throws
   * when it still fails (the change itself is saved: repeating it, which is idempotent, tells them).
   */
  notify(channel: ChangeChannel, payload: string): Promise<void>;
  /**
   * Calls `listener` for each signal on `channel`, from this process or (PostgreSQL LISTEN) another; returns the
   * unsubscribe. When the LISTEN connection is (re)established every listener gets `*` (signals may have been
   * missed while it was down: drop everything).
   */
  onNotify(channel: ChangeChannel, listener: (payload: string) => void): () => void;
  /**
   * True while signals from every process reach this one (PGlite: always; PostgreSQL: while the LISTEN connection
   * is up). Caches serve long-lived entries only while this holds and fall back on a short age bound otherwise.
   */
  listening(): boolean;
  /**
   * Runs SQL for a job queue (pg-boss's `db` option, src/collectors/worker.ts) on this database's driver: with
   * `values`, one statement; without, the text may hold several statements (pg-boss sends its schema changes and
   * locked sections as one `BEGIN; ...; COMMIT;` text), and the last one's rows are returned. On PGlite a text is
   * one turn of the embedded database, so a locked section never interleaves with another statement.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQL rows: their shape is the statement's, read by its caller
  queueSql(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number }>;
  close(): Promise<void>;
}

/**
 * Change channels: `qg_auth` carries the id of an account whose keys, subscription, credits or state changed;
 * `qg_quotes` an app id (or `*`) whose published quotes or valuations changed (quotes/quote-cache.ts);
 * `qg_exports` an app id whose export snapshot was replaced (exports/exports.ts, SnapshotCache).
 */
export type ChangeChannel = 'qg_auth' | 'qg_quotes' | 'qg_exports';

/**
 * The contrib extensions PGlite loads (PostgreSQL servers ship them): `pg_trgm`, the trigram index of the item search
 * (migration 20261128000000_item_search, docs/search.md). A migration's `CREATE EXTENSION` needs it loaded.
 */
const PGLITE_EXTENSIONS = { pg_trgm };

/** Where to connect: a PostgreSQL URL, or a PGlite data directory (`memory://` for in-memory). */
export type DatabaseTarget = { url: string } | { pgliteDir: string };

/** Options of `openDatabase`. */
export interface OpenOptions {
  /** false: no Prisma client (its modules are not loaded; `Database.prisma` throws). Default true. */
  prisma?: boolean;
  /** Default time limit of `Database.transaction`, in ms (0: none). Default TRANSACTION_TIMEOUT_MS. */
  transactionTimeoutMs?: number;
  /** PostgreSQL: longest wait for a free pool connection, in ms. Default CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  /**
   * PostgreSQL: connections of the pool (default POOL_CONNECTIONS). A process that runs the collectors adds what they
   * hold at most (src/collectors/runner.ts `collectorConnections`), so they never wait on the requests' connections.
   */
  maxConnections?: number;
}

/** Connections of the pool of a process serving requests (PostgreSQL). */
export const POOL_CONNECTIONS = 10;

/** The deadline of a transaction bounded to `timeoutMs` from now (0: none): `expired()` once it has passed. */
function deadlineOf(timeoutMs: number): { timeoutMs: number; end: number; expired: () => boolean } {
  const end = performance.now() + timeoutMs;
  return { timeoutMs, end, expired: () => timeoutMs > 0 && performance.now() >= end };
}

/**
 * Runs `work` against `deadline` (deadlineOf): `sql` refuses statements once it has passed; when it passes before
 * `work` settles, the result rejects with TransactionTimeoutError (`run`) at once (`onExpire` is called first: cancel
 * what is running) and `work`'s own outcome is ignored.
 */
async function withDeadline<T>(deadline: ReturnType<typeof deadlineOf>, sql: Sql, work: (tx: Sql) => Promise<T>, onExpire: () => void): Promise<T> {
  const { timeoutMs, expired } = deadline;
  if (timeoutMs <= 0) return work(sql);
  const refuse = () => Promise.reject(new TransactionTimeoutError('run', timeoutMs));
  const bounded: Sql = {
    query: (text, params) => (expired() ? refuse() : sql.query(text, params)),
    execute: (text, params) => (expired() ? refuse() : sql.execute(text, params)),
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onExpire();
      reject(new TransactionTimeoutError('run', timeoutMs));
    }, Math.max(0, deadline.end - performance.now()));
  });
  const running = work(bounded);
  running.catch(() => undefined); // ignored once the deadline has won
  try {
    return await Promise.race([running, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** True for PostgreSQL's errors of a time limit: a statement cancelled by statement_timeout, a session ended idle in a transaction. */
function isServerTimeout(e: unknown): boolean {
  const err = e as { code?: string; message?: string } | null;
  return (err?.code === '57014' && /statement timeout/.test(err.message ?? '')) || err?.code === '25P03';
}

/**
 * Opens the database and applies pending migrations (prisma/migrations, see migrate.ts, through the raw driver).
 * `opts.prisma: false` opens it without the Prisma client (its modules are not loaded and `Database.prisma` throws),
 * for a process that only runs raw SQL (`quotegate collect`). Throws when the server cannot be reached or a
 * migration fails.
 */
export async function openDatabase(target: DatabaseTarget, opts: OpenOptions = {}): Promise<Database> {
  const transactionTimeoutMs = opts.transactionTimeoutMs ?? TRANSACTION_TIMEOUT_MS;
  const connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  let count = 0;
  let makeAdapter: () => PrismaPg | PrismaPGlite;
  let kind: Database['kind'];
  let closeDriver: () => Promise<void>;
  let raw: <T>(sql: string, params: unknown[]) => Promise<T[]>;
  let rawExecute: (sql: string, params: unknown[]) => Promise<number>;
  let queueSql: Database['queueSql'];
  let withLock: Database['withLock'];
  let readSnapshot: Database['readSnapshot'];
  let transaction: Database['transaction'];
  let backgroundQuery: ((sql: string, params: unknown[]) => Promise<unknown[]>) | null = null;
  const local = new EventEmitter();
  local.setMaxListeners(0);
  let publish: (channel: ChangeChannel, payload: string) => Promise<void> = async () => {};
  let listen: (channel: ChangeChannel) => void = () => {};
  let stopListening: () => Promise<void> = async () => {};
  let listening = () => true;
  if ('url' in target) {
    const url = target.url;
    // Session settings of the service's connections (an `options` parameter in DATABASE_URL replaces them):
    // - jit=off: the planner turned JIT on for the valuation's and the export's large reads, where compiling took
    //   longer than the query (docs/valuation.md section 6; figures in docs/benchmarks.md);
    // - work_mem=32MB: a valuation page's sort spilled to disk at the default 4 MB and ran on three processes; in
    //   memory it takes one and leaves the other core to this process.
    // - idleTimeoutMillis 5 min (pg's default: 10 s): a connection idle that long closes, and the next burst opens new
    //   ones; on the 2-vCPU bench machine each new backend cost PostgreSQL a lot of CPU (`npm run bench`:
    //   PostgreSQL's CPU per request of the subscription GET, whose accounts' key lookups come back every 30 s).
    // - connectionTimeoutMillis: waiting for a free connection (or for a new one to open) is bounded (CONNECT_TIMEOUT_MS).
    const pool = new pg.Pool({ connectionString: target.url, max: opts.maxConnections ?? POOL_CONNECTIONS, idleTimeoutMillis: 300_000, connectionTimeoutMillis: connectTimeoutMs, options: '-c jit=off -c work_mem=32MB' });
    pool.on('error', () => {}); // idle client lost (server restart): the pool replaces it
    makeAdapter = () => new prismaModules!.PrismaPg(pool);
    kind = 'postgres';
    raw = async <T>(sql: string, params: unknown[]) => {
      const name = PREPARED.get(sql);
      return (await (name ? pool.query({ name, text: sql, values: params }) : pool.query(sql, params))).rows as T[];
    };
    rawExecute = async (sql, params) => (await pool.query(sql, params)).rowCount ?? 0;
    queueSql = async (text, values) => {
      const r = (await pool.query(text, values)) as pg.QueryResult | pg.QueryResult[];
      const last = Array.isArray(r) ? r[r.length - 1] : r;
      return { rows: last?.rows ?? [], rowCount: last?.rowCount ?? 0 };
    };
    closeDriver = () => pool.end();
    publish = async (channel, payload) => {
      await pool.query(`SELECT pg_notify($1, $2)`, [channel, payload]);
    };
    // One LISTEN connection per process, opened at the first listener, reopened after a loss (with a pause).
    const channels = new Set<ChangeChannel>();
    let listener: pg.Client | null = null;
    // The listener once its LISTEN statements went through (null while connecting or lost).
    let connected: pg.Client | null = null;
    let closed = false;
    // The listener's statements (its connect, then each LISTEN) run one after another: pg deprecates a query sent
    // while another is in flight on the same client (a channel listened to while the connection was coming up).
    let statements: Promise<unknown> = Promise.resolve();
    const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
      const next = statements.then(work, work);
      statements = next.catch(() => undefined);
      return next;
    };
    const connectListener = async (): Promise<void> => {
      if (closed || listener) return;
      const client = new pg.Client({ connectionString: url });
      listener = client;
      statements = Promise.resolve();
      const lost = () => {
        if (listener !== client) return;
        listener = null;
        connected = null;
        void client.end().catch(() => undefined);
        if (!closed) setTimeout(() => void connectListener(), 1000).unref();
      };
      client.on('error', lost);
      client.on('end', lost);
      client.on('notification', (n) => {
        if (n.payload !== undefined) local.emit(n.channel, n.payload);
      });
      try {
        await inTurn(() => client.connect());
        for (const c of channels) await inTurn(() => client.query(`LISTEN ${c}`));
        connected = client;
        // Anything signalled while no connection listened is unknown: every listener drops everything.
        for (const c of channels) local.emit(c, '*');
      } catch {
        lost();
      }
    };
    listening = () => connected !== null && connected === listener;
    listen = (channel) => {
      if (channels.has(channel)) return;
      channels.add(channel);
      const client = listener;
      if (client) void inTurn(() => client.query(`LISTEN ${channel}`)).catch(() => undefined);
      else void connectListener();
    };
    stopListening = async () => {
      closed = true;
      const client = listener;
      listener = null;
      await client?.end().catch(() => undefined);
    };
    /**
     * Runs `work` in one transaction opened by `begin` on a connection checked out of the pool: its statements one at
     * a time (a caller may read ahead while it writes, as Prisma's transaction client sends them), COMMIT after it,
     * ROLLBACK when it throws. With `timeoutMs` > 0 it is bounded (`Database.transaction`): the server's
     * statement_timeout and idle_in_transaction_session_timeout are set to it for this transaction (BEGIN and both
     * SETs are one round trip), and at the limit a statement still running is cancelled (pg_cancel_backend from a
     * connection of its own: the pool may be the thing that is full) and the transaction rolled back. Throws what
     * `work` or the driver throws, or TransactionTimeoutError.
     */
    const inTransaction = async <T>(begin: string, work: (tx: Sql) => Promise<T>, timeoutMs: number): Promise<T> => {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (e) {
        if (connectTimeoutMs > 0 && /timeout/i.test((e as Error).message)) throw new TransactionTimeoutError('connect', connectTimeoutMs, { cause: e });
        throw e;
      }
      const release = watchCheckedOut(client);
      // Set when the connection may be unusable (BEGIN or ROLLBACK failed, a cancel sent to it): the pool then closes it.
      let broken: Error | undefined;
      let chain: Promise<unknown> = Promise.resolve();
      let running = 0;
      const run = (sql: string, params: unknown[]): Promise<pg.QueryResult> => {
        count += 1;
        const name = PREPARED.get(sql);
        const next = chain.then(async () => {
          running += 1;
          try {
            return await (name ? client.query({ name, text: sql, values: params }) : client.query(sql, params));
          } finally {
            running -= 1;
          }
        });
        chain = next.catch(() => undefined);
        return next;
      };
      const tx: Sql = {
        query: async <R>(sql: string, params: unknown[] = []) => (await run(sql, params)).rows as R[],
        execute: async (sql: string, params: unknown[] = []) => (await run(sql, params)).rowCount ?? 0,
      };
      const cancelRunning = () => {
        // The backend's process id, from the connection's start (pg keeps it; its types do not declare it).
        const pid = (client as pg.PoolClient & { processID?: number | null }).processID;
        if (running === 0 || !pid) return;
        // The cancel arrives whenever it arrives: the connection is closed, not handed back to the pool, so it can
        // never cancel another caller's statement there (seen in CI: a test's next query on the reused connection
        // was cancelled "due to user request").
        broken ??= new Error('a statement was cancelled at the transaction limit');
        const canceller = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
        canceller.on('error', () => undefined);
        void canceller
          .connect()
          .then(() => canceller.query('SELECT pg_cancel_backend($1)', [pid]))
          .catch(() => undefined)
          .finally(() => void canceller.end().catch(() => undefined));
      };
      const deadline = deadlineOf(timeoutMs);
      try {
        try {
          await client.query(timeoutMs > 0 ? `${begin}; SET LOCAL statement_timeout = ${Math.ceil(timeoutMs)}; SET LOCAL idle_in_transaction_session_timeout = ${Math.ceil(timeoutMs)}` : begin);
        } catch (e) {
          broken = e as Error;
          throw e;
        }
        try {
          const result = await withDeadline(deadline, tx, work, cancelRunning);
          await chain;
          // Finished after its limit (its last statement just in time): not committed.
          if (deadline.expired()) throw new TransactionTimeoutError('run', timeoutMs);
          await client.query('COMMIT');
          return result;
        } catch (e) {
          await chain;
          await client.query('ROLLBACK').catch((err: Error) => {
            broken = err;
          });
          if (timeoutMs > 0 && !(e instanceof TransactionTimeoutError) && (isServerTimeout(e) || deadline.expired())) {
            throw new TransactionTimeoutError('run', timeoutMs, { cause: e });
          }
          throw e;
        }
      } finally {
        release(broken);
      }
    };
    readSnapshot = (work) => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', (tx) => work(tx.query), 0);
    transaction = (work, opts) => inTransaction('BEGIN', work, opts?.timeoutMs ?? transactionTimeoutMs);
    withLock = async (name, work) => {
      const client = await pool.connect();
      // Held for the whole of `work` (a collector run): a server restart meanwhile must not crash the process.
      const release = watchCheckedOut(client);
      let broken: Error | undefined;
      try {
        const [row] = (await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS ok`, [name])).rows;
        if (!row?.ok) return { acquired: false };
        try {
          return { acquired: true, result: await work() };
        } finally {
          // A lost connection released the lock with its session; the pool closes it.
          await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [name]).catch((err: Error) => {
            broken = err;
          });
        }
      } finally {
        release(broken);
      }
    };
  } else {
    const dir = target.pgliteDir;
    const onDisk = !dir.startsWith('memory://');
    const release = onDisk ? lockDirectory(dir) : () => {};
    let pglite: PGlite;
    try {
      if (onDisk) ownerOnly(dir); // an existing directory made with wider modes (before issue 41, point 10)
      // PGlite sets the modes of the files it unpacks itself (0666), but its directories follow the process umask.
      const umask = onDisk ? process.umask(0o077) : null;
      try {
        pglite = new PGlite(dir, { extensions: PGLITE_EXTENSIONS });
        await pglite.waitReady;
      } finally {
        if (umask !== null) process.umask(umask);
      }
      if (onDisk) ownerOnly(dir); // what PGlite made while opening: its data files and the startup caches
    } catch (e) {
      release();
      throw e;
    }
    // Statements running or waiting for the one connection, from every caller: the raw driver and Prisma's adapter
    // (which calls query, exec and transaction), so background work can give way to them.
    let pending = 0;
    const counted = <A extends unknown[], R>(f: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
      pending += 1;
      try {
        await turn();
        return await f(...args);
      } finally {
        pending -= 1;
      }
    };
    const countedQuery = counted(pglite.query.bind(pglite));
    const countedExec = counted(pglite.exec.bind(pglite));
    const countedTransaction = counted(pglite.transaction.bind(pglite)) as PGlite['transaction'];
    const shared = new Proxy(pglite, {
      get(target, prop) {
        if (prop === 'query') return countedQuery;
        if (prop === 'exec') return countedExec;
        if (prop === 'transaction') return countedTransaction;
        return Reflect.get(target, prop, target);
      },
    });
    makeAdapter = () => new prismaModules!.PrismaPGlite(shared);
    kind = 'pglite';
    raw = async <T>(sql: string, params: unknown[]) => (await countedQuery(sql, params)).rows as T[];
    rawExecute = async (sql, params) => (await countedQuery(sql, params)).affectedRows ?? 0;
    /** Resolves once no counted statement is running or waiting, or after BACKGROUND_MAX_WAIT_MS (at least one turn). */
    const requestsFirst = async () => {
      const since = performance.now();
      do await turn();
      while (pending > 0 && performance.now() - since < BACKGROUND_MAX_WAIT_MS);
    };
    let lane: Promise<unknown> = Promise.resolve();
    backgroundQuery = (sql, params) => {
      const run = async () => {
        await requestsFirst();
        return raw<unknown>(sql, params);
      };
      const next = lane.then(run, run);
      lane = next.catch(() => undefined);
      return next;
    };
    queueSql = async (text, values) => {
      if (values && values.length > 0) {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the rows of queueSql (see its type)
        const r = (await countedQuery(text, values)) as { rows: any[]; affectedRows?: number };
        return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
      }
      let results;
      try {
        results = await countedExec(text);
      } catch (e) {
        // A failed statement of a `BEGIN; ...; COMMIT;` text leaves its transaction open and aborted on the one
        // connection every other statement shares: end it (a no-op warning when none is open).
        await countedExec('ROLLBACK').catch(() => undefined);
        throw e;
      }
      const last = results[results.length - 1];
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the rows of queueSql (see its type)
      return { rows: (last?.rows as any[]) ?? [], rowCount: last?.affectedRows ?? last?.rows.length ?? 0 };
    };
    closeDriver = async () => {
      await pglite.close();
      if (onDisk) ownerOnly(dir); // the statistics file PGlite writes when it closes
      release();
    };
    readSnapshot = (work) =>
      countedTransaction(async (tx) => {
        await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        let chain: Promise<unknown> = Promise.resolve();
        const query = <R>(sql: string, params: unknown[] = []): Promise<R[]> => {
          count += 1;
          const next = chain.then(async () => {
            await turn();
            return (await tx.query<R>(sql, params)).rows;
          });
          chain = next.catch(() => undefined);
          return next;
        };
        const result = await work(query);
        await chain;
        return result;
      });
    transaction = async (work, opts) => {
      const timeoutMs = opts?.timeoutMs ?? transactionTimeoutMs;
      const background = opts?.background === true;
      if (background) await requestsFirst();
      return (background ? pglite.transaction.bind(pglite) : countedTransaction)(async (t) => {
        // The limit counts from when the one connection is this transaction's (waiting for it is not bounded).
        const deadline = deadlineOf(timeoutMs);
        let chain: Promise<unknown> = Promise.resolve();
        // One statement at a time, as Prisma's transaction client sends them (PGlite queues them anyway).
        const run = (sql: string, params: unknown[]) => {
          count += 1;
          const next = chain.then(async () => {
            await turn();
            return t.query(sql, params);
          });
          chain = next.catch(() => undefined);
          return next;
        };
        const tx: Sql = {
          query: async <R>(sql: string, params: unknown[] = []) => (await run(sql, params)).rows as R[],
          execute: async (sql: string, params: unknown[] = []) => (await run(sql, params)).affectedRows ?? 0,
        };
        try {
          // A statement of PGlite runs on this thread and cannot be cancelled: nothing to do at the limit but refuse.
          const result = await withDeadline(deadline, tx, work, () => undefined);
          await chain;
          if (deadline.expired()) throw new TransactionTimeoutError('run', timeoutMs); // rolled back by PGlite
          return result;
        } finally {
          await chain; // PGlite's ROLLBACK or COMMIT follows the last statement of `work`
        }
      });
    };
    const held = new Set<string>();
    withLock = async (name, work) => {
      if (held.has(name)) return { acquired: false };
      held.add(name);
      try {
        return { acquired: true, result: await work() };
      } finally {
        held.delete(name);
      }
    };
  }
  // The Prisma client's modules, loaded here (an import is asynchronous, the `prisma` getter is not) unless the caller
  // opened the database without Prisma; the client itself, which costs the most, is made on first access.
  const prismaModules = opts.prisma === false ? null : await loadPrismaModules();
  let prisma: PrismaClient | null = null;
  const database: Database = {
    get prisma(): PrismaClient {
      if (prisma) return prisma;
      if (!prismaModules) throw new Error('this database was opened without the Prisma client (openDatabase { prisma: false })');
      const client = new prismaModules.PrismaClient({ adapter: makeAdapter(), log: [{ emit: 'event', level: 'query' }] });
      client.$on('query', () => {
        count += 1;
      });
      prisma = client;
      return client;
    },
    kind,
    query: <T>(sql: string, params: unknown[] = []) => {
      count += 1;
      return raw<T>(sql, params);
    },
    execute: async (sql: string, params: unknown[] = []) => {
      count += 1;
      return rawExecute(sql, params);
    },
    transaction: (work, opts) => transaction(work, opts),
    queryCount: () => count,
    backgroundQuery: <T>(sql: string, params: unknown[] = []) => {
      count += 1;
      return (backgroundQuery ?? raw)(sql, params) as Promise<T[]>;
    },
    withLock,
    readSnapshot: (work) => readSnapshot(work),
    async notify(channel, payload) {
      local.emit(channel, payload);
      // Other replicas cache for longer than their 1 s fallback only while they hear these signals: a publish
      // is retried for about a second, and then the change's caller hears that it may not have reached them.
      for (let attempt = 0; ; attempt++) {
        try {
          await publish(channel, payload);
          return;
        } catch (e) {
          if (attempt >= 4) throw new Error(`the change was saved, but other replicas were not told (${channel} ${payload}); repeat the change`, { cause: e });
          await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        }
      }
    },
    onNotify(channel, listener) {
      local.on(channel, listener);
      listen(channel);
      return () => local.off(channel, listener);
    },
    listening: () => listening(),
    queueSql: (text, values) => {
      count += 1;
      return queueSql(text, values);
    },
    async close() {
      await stopListening();
      await prisma?.$disconnect();
      await closeDriver();
    },
  };
  await applyMigrations(database);
  return database;
}

/** The Prisma client class and its driver adapters (imported only by a process that may use Prisma). */
async function loadPrismaModules(): Promise<{ PrismaClient: typeof PrismaClient; PrismaPg: typeof PrismaPg; PrismaPGlite: typeof PrismaPGlite }> {
  const [client, adapterPg, adapterPglite] = await Promise.all([import('../generated/prisma/client.js'), import('@prisma/adapter-pg'), import('pglite-prisma-adapter')]);
  return { PrismaClient: client.PrismaClient, PrismaPg: adapterPg.PrismaPg, PrismaPGlite: adapterPglite.PrismaPGlite };
}

/** Longest a background statement on PGlite waits for the requests' statements to finish (`backgroundQuery`), in ms. */
const BACKGROUND_MAX_WAIT_MS = 100;

/**
 * One turn of the event loop (setImmediate), taken before every PGlite statement. PGlite runs each statement
 * synchronously on this thread, and its queue hands the one connection from statement to statement in promise
 * continuations: without a turn in between, a collector's back-to-back ingestion transactions kept the loop from
 * reading sockets for seconds at a time (GETs answered from the quote cache waited 16 s during a csgotrader run).
 */
function turn(): Promise<void> {
  return nextTurn();
}

/**
 * `db` for long background work (the export build) that must not stall requests: its `query` is `backgroundQuery`.
 * On embedded PGlite every statement runs on this process's one thread and its one connection, and a chain of
 * statements awaited one after another never returned to the event loop (PGlite answers without I/O): each now
 * waits for a turn of the event loop and for the requests' statements first. On PostgreSQL `db` itself.
 */
export function backgroundDatabase(db: Database): Database {
  if (db.kind !== 'pglite') return db;
  // A copy of the descriptors, not a spread: a spread would read `prisma` and so make the client (or throw without one).
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(db)) as Database;
  copy.query = <T>(sql: string, params?: unknown[]) => db.backgroundQuery<T>(sql, params);
  return copy;
}

/**
 * Makes the embedded database's directory owner-only (issue 41, point 10: PGlite unpacks its files with mode 0666,
 * so any local user could write them): `dir` and every directory under it 0700, every other entry 0600 (symbolic
 * links are not followed). Only modes that differ are changed; returns how many were. Throws when a mode cannot be set.
 */
function ownerOnly(dir: string): number {
  let changed = 0;
  const fix = (p: string, stat: fs.Stats) => {
    const want = stat.isDirectory() ? 0o700 : 0o600;
    if ((stat.mode & 0o777) === want) return;
    fs.chmodSync(p, want);
    changed += 1;
  };
  const walk = (d: string) => {
    fix(d, fs.lstatSync(d));
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) walk(p);
      else fix(p, fs.lstatSync(p));
    }
  };
  walk(dir);
  return changed;
}

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt it.
 * Takes `<dir>/quotegate.lock` (holding the pid) and returns its release; a lock left by a dead process
 * is taken over. Throws when a live process holds it.
 */
function lockDirectory(dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'quotegate.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => fs.rmSync(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(fs.readFileSync(file, 'utf8'));
      let alive: boolean;
      try {
        process.kill(pid, 0);
        alive = true;
      } catch {
        alive = false;
      }
      if (alive) {
        throw new Error(
          `the embedded database ${dir} is in use by process ${pid} (a running service?). Stop it first, ` +
            'or run the service on PostgreSQL (DATABASE_URL) so several processes can share it.',
          { cause: e },
        );
      }
      fs.rmSync(file, { force: true });
    }
  }
  throw new Error(`could not lock ${dir}`);
}
