/**
 * Private PostgreSQL and Redis servers for the fault suite: each test file starts its own from the
 * machine's binaries on a free port, so stopping, pausing or cutting them never disturbs anything else.
 * Also a steady-load driver that records every answer with its time.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function pgBin(name: string): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const p = path.join(root, v, 'bin', name);
    if (fs.existsSync(p)) return p;
  }
  return name;
}

/** Runs a PostgreSQL binary as the `postgres` user when we are root (initdb refuses root). */
async function asPostgres(bin: string, args: string[]): Promise<string> {
  const root = process.getuid?.() === 0;
  const { stdout } = root ? await run('runuser', ['-u', 'postgres', '--', pgBin(bin), ...args]) : await run(pgBin(bin), args);
  return stdout;
}

/** A PostgreSQL server of this test file. */
export interface PrivatePostgres {
  port: number;
  /** Connection string of database `postgres` as user `postgres`. */
  url: string;
  /** URL of another database on this server. */
  urlOf(database: string): string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Terminates every backend connected to `database` (as an operator's pg_terminate_backend would). */
  terminateConnections(database: string): Promise<number>;
  destroy(): Promise<void>;
}

/** Initialises and starts a throwaway cluster (trust auth, fsync off) in a temporary directory. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-faults-pg-'));
  const data = path.join(dir, 'data');
  fs.mkdirSync(data);
  if (process.getuid?.() === 0) await run('chown', ['-R', 'postgres:postgres', dir]);
  await asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c client_connection_check_interval=1000`;
  const start = async () => {
    await asPostgres('pg_ctl', ['-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-w', '-t', '30', 'start']);
  };
  await start();
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const psql = (database: string, sql: string) => run(pgBin('psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-Atc', sql]);
  return {
    port,
    url,
    urlOf: (database) => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    start,
    async stop() {
      await asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
    },
    async terminateConnections(database) {
      const { stdout } = await psql(
        'postgres',
        `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`,
      );
      return Number(stdout.trim());
    },
    async destroy() {
      await asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates database `name` on a server. */
export async function createDatabase(server: PrivatePostgres, name: string): Promise<string> {
  await run(pgBin('psql'), ['-h', '127.0.0.1', '-p', String(server.port), '-U', 'postgres', '-d', 'postgres', '-Atc', `CREATE DATABASE ${name}`]);
  return server.urlOf(name);
}

/** A Redis server of this test file. */
export interface PrivateRedis {
  port: number;
  url: string;
  /** Kills the server (connections drop at once). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections open but answers nothing until `resume`. */
  pause(): void;
  resume(): void;
  destroy(): Promise<void>;
}

/** Starts redis-server (no persistence) on a free port. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100; i += 1) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
        s.on('error', () => resolve(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('redis-server did not start');
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    destroy: stop,
  };
}

/** One answer seen by the load driver. */
export interface Sample {
  /** ms since the driver started, when the request was sent. */
  sentAt: number;
  /** ms the answer took. */
  ms: number;
  status: number;
  /** error.code of an error envelope. */
  code?: string;
  retryAfter: string | null;
  requestId: string | null;
  /** meta.request_id of the body. */
  bodyRequestId?: string;
  billable?: boolean;
  /** Set when fetch itself failed (connection refused or reset, client timeout). */
  transport?: string;
  label: string;
}

/** A request the driver sends: `label` names it in the samples. */
export interface LoadRequest {
  label: string;
  path: string;
  headers?: Record<string, string>;
  method?: string;
  body?: string;
}

/**
 * Sends `pick()` requests from `concurrency` workers back to back until `stop()`; every answer is
 * recorded. `clientTimeoutMs` aborts a request that hangs (recorded as transport `timeout`).
 */
export function steadyLoad(base: string, concurrency: number, pick: (i: number) => LoadRequest, clientTimeoutMs = 10_000) {
  const started = performance.now();
  const samples: Sample[] = [];
  let running = true;
  let n = 0;
  const worker = async () => {
    while (running) {
      const req = pick(n++);
      const sentAt = performance.now() - started;
      const sample: Sample = { sentAt, ms: 0, status: 0, retryAfter: null, requestId: null, label: req.label };
      try {
        const res = await fetch(`${base}${req.path}`, {
          method: req.method ?? 'GET',
          headers: req.headers,
          body: req.body,
          signal: AbortSignal.timeout(clientTimeoutMs),
        });
        const text = await res.text();
        sample.status = res.status;
        sample.retryAfter = res.headers.get('retry-after');
        sample.requestId = res.headers.get('x-request-id');
        try {
          const body = JSON.parse(text);
          sample.code = body?.error?.code;
          sample.bodyRequestId = body?.meta?.request_id;
          sample.billable = body?.meta?.billable;
        } catch {
          // not JSON (e.g. an export's gzip bytes)
        }
      } catch (e) {
        sample.transport = (e as Error).name === 'TimeoutError' ? 'timeout' : String((e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message);
      }
      sample.ms = performance.now() - started - sentAt;
      samples.push(sample);
    }
  };
  const workers = Array.from({ length: concurrency }, () => worker());
  return {
    samples,
    /** ms since the driver started. */
    elapsed: () => performance.now() - started,
    async stop() {
      running = false;
      await Promise.all(workers);
      return samples;
    },
  };
}

/** Counts of samples by status (transport failures under their error name). */
export function tally(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    const k = s.transport ? `transport:${s.transport}` : String(s.status);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** Sleeps `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
