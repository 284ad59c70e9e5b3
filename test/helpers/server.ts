/** A `quotegate serve` child process (the real CLI from source), for tests across several replicas. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../src/lib/paths.js';

export interface ServerProcess {
  url: string;
  /** The child's process id (its memory: /proc/<pid>/status). */
  pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
  /** Sends `signal` (e.g. SIGKILL: no shutdown work at all) and resolves when the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `quotegate serve` on a free port (collectors off unless `env` sets COLLECTORS) with `env` added (and `nodeArgs` for node itself); resolves once it listens.
 * From source through tsx, or with `compiled` the built `dist/src/cli/main.js` as `npm start` runs it (benchmarks:
 * tsx wraps every function it compiles; build first with `node scripts/build.mjs`).
 */
export async function startServerProcess(env: Record<string, string>, nodeArgs: string[] = [], opts: { compiled?: boolean } = {}): Promise<ServerProcess> {
  const entry = opts.compiled ? [path.join(projectRoot, 'dist/src/cli/main.js')] : ['--import', 'tsx', path.join(projectRoot, 'src/cli/main.ts')];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, ...entry, 'serve'], {
    cwd: projectRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', QUOTEGATE_AUTOLOAD: 'false', COLLECTORS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /GraphiQL: (http:\/\/\S+)\/graphql/.exec(out);
      if (m) resolve(m[1]!.replace('localhost', '127.0.0.1'));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
  return {
    url,
    pid: child.pid!,
    output: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
    kill: (signal) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}
