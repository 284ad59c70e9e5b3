/**
 * The admin channel: on embedded PGlite one process owns the data directory (src/db/client.ts
 * lockDirectory), so while the service runs, the CLI cannot open the database to make an API key. The
 * running service therefore listens on a Unix socket in that directory, `<PGLITE_DIR>/admin.sock`
 * (mode 0600: only the owner of the data can use it, as only they can read the data itself), and the CLI
 * hands its admin command to it: one HTTP request (node:http over the socket) `POST /command` with the JSON
 * body `{"command": "account.create", "args": {...}}`. The service runs the same function the CLI would
 * (src/admin/commands.ts) on its own database and answers `200 {"result": {...}}`, or
 * `<status> {"error": {"code", "message"}}` for a ServiceError (422, 404, 409) and `500` for anything else.
 * Neither arguments nor results (which hold new secrets) are logged.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { ServiceError } from '../lib/errors.js';
import { isAdminCommand, runAdminCommand, type AdminArgs, type AdminCommandName, type AdminResult } from './commands.js';

/** Largest request body the channel reads (bytes); admin arguments are a few short strings. */
const MAX_BODY = 64 * 1024;
/** Unix socket paths longer than this (bytes) cannot be bound on Linux (sun_path is 108 with its NUL). */
const MAX_SOCKET_PATH = 107;

/** The socket of the service that owns the PGlite directory `pgliteDir` (absolute). */
function adminSocketPath(pgliteDir: string): string {
  return path.join(path.resolve(pgliteDir), 'admin.sock');
}

/** A listening admin channel. */
export interface AdminChannel {
  /** Absolute path of the socket. */
  path: string;
  /** Stops listening, ends open connections and removes the socket file. */
  close(): Promise<void>;
}

/** True when something accepts connections on the Unix socket `file` (false: refused, absent, not a socket). */
function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(file);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Reads a request body of at most MAX_BODY bytes; null when it is larger. */
async function readBody(req: http.IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * Starts the admin channel of the service that owns `pgliteDir` (call it after opening the database, which
 * takes the directory lock). A socket file left by a crashed service is detected (nothing answers on it) and
 * replaced. Returns null, after a warning in `logger`, when the channel cannot be offered: the socket path is
 * too long for a Unix socket, another process answers on it, or a file that is not a socket is in the way;
 * the service runs on without it (admin commands then need the service stopped, as before).
 */
export async function startAdminChannel(db: Database, pgliteDir: string, logger: Logger): Promise<AdminChannel | null> {
  const file = adminSocketPath(pgliteDir);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    logger.warn({ socket: file }, 'admin channel off: the PGlite directory path is too long for a Unix socket; stop the service to run admin commands');
    return null;
  }
  const existing = fs.lstatSync(file, { throwIfNoEntry: false });
  if (existing) {
    if (!existing.isSocket()) {
      logger.warn({ socket: file }, 'admin channel off: a file that is not a socket is in the way');
      return null;
    }
    if (await answers(file)) {
      logger.warn({ socket: file }, 'admin channel off: another process answers on the socket');
      return null;
    }
    fs.rmSync(file, { force: true }); // stale: left by a service that did not shut down
  }
  const server = http.createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST' || req.url !== '/command') return reply(res, 404, { error: { code: 'route_not_found', message: 'POST /command only' } });
      const raw = await readBody(req);
      if (raw === null) return reply(res, 413, { error: { code: 'payload_too_large', message: `request body over ${MAX_BODY} bytes` } });
      let body: { command?: unknown; args?: unknown };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        return reply(res, 400, { error: { code: 'bad_request', message: 'the body is not JSON' } });
      }
      if (!isAdminCommand(body?.command)) return reply(res, 400, { error: { code: 'bad_request', message: `unknown admin command ${JSON.stringify(body?.command)}` } });
      const command = body.command;
      try {
        const result = await runAdminCommand(db, command, (body.args ?? {}) as AdminArgs<typeof command>);
        logger.info({ command }, 'admin command');
        reply(res, 200, { result });
      } catch (e) {
        if (e instanceof ServiceError) {
          logger.info({ command, code: e.code }, 'admin command refused');
          return reply(res, e.status, { error: { code: e.code, message: e.message } });
        }
        logger.error({ command, err: e }, 'admin command failed');
        reply(res, 500, { error: { code: 'internal_error', message: e instanceof Error ? e.message : String(e) } });
      }
    })().catch((e: unknown) => {
      logger.error({ err: e }, 'admin channel request failed');
      if (!res.headersSent) reply(res, 500, { error: { code: 'internal_error', message: 'admin channel failure' } });
      else res.destroy();
    });
  });
  // Owner-only from the first moment: the socket is created (bound) synchronously inside listen() under
  // umask 0177, so it never exists with wider permissions; the chmod below only makes that explicit.
  const umask = process.umask(0o177);
  const listening = new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  try {
    server.listen(file);
  } finally {
    process.umask(umask);
  }
  try {
    await listening;
  } catch (e) {
    logger.warn({ socket: file, err: e }, 'admin channel off: could not listen on the socket');
    return null;
  }
  fs.chmodSync(file, 0o600);
  logger.info({ socket: file }, 'admin channel listening (quotegate admin commands work while the service runs)');
  return {
    path: file,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      fs.rmSync(file, { force: true });
    },
  };
}

/** The outcome of offering a command to a running service: `reached: false` when none listens. */
export type AdminChannelOutcome<N extends AdminCommandName> = { reached: false } | { reached: true; result: AdminResult<N> };

/**
 * Sends admin command `name` with `args` to the service owning `pgliteDir`, if one listens there. Returns
 * `{reached: false}` when no service answers (no socket file, or a stale one: connection refused), so the
 * caller may open the database itself; nothing was sent then. Otherwise returns the result, or throws a
 * ServiceError carrying the service's code, status and message when it refused the command. Throws a plain
 * Error when the service accepted the connection but no complete answer came back (the command may or may
 * not have been applied; the caller must not retry it locally).
 */
export function sendAdminCommand<N extends AdminCommandName>(pgliteDir: string, name: N, args: AdminArgs<N>): Promise<AdminChannelOutcome<N>> {
  const socketPath = adminSocketPath(pgliteDir);
  const payload = JSON.stringify({ command: name, args });
  return new Promise((resolve, reject) => {
    let connected = false;
    const req = http.request(
      { socketPath, method: 'POST', path: '/command', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: { result?: AdminResult<N>; error?: { code: string; message: string } };
          try {
            body = JSON.parse(text) as typeof body;
          } catch {
            return reject(new Error(`the running service answered the admin command with status ${res.statusCode}: ${text.slice(0, 200)}`));
          }
          if (res.statusCode === 200 && body.result) return resolve({ reached: true, result: body.result });
          const err = body.error ?? { code: 'internal_error', message: `status ${res.statusCode}` };
          reject(new ServiceError(err.code, res.statusCode ?? 500, err.message));
        });
      },
    );
    req.on('socket', (s) => s.once('connect', () => (connected = true)));
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (!connected && (e.code === 'ENOENT' || e.code === 'ECONNREFUSED')) return resolve({ reached: false });
      reject(new Error(`the running service did not answer the admin command (${e.message}); check whether it was applied before retrying`));
    });
    req.end(payload);
  });
}
