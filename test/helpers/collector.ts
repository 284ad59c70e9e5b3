/** A `quotegate collect` child process (the real CLI from source, its own entry as bin/quotegate.js runs it), for tests across several collector processes. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../src/lib/paths.js';

export interface CollectorProcess {
  pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
  /** Sends `signal` (SIGKILL: no shutdown work at all) and resolves when the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** Starts `quotegate collect <args>` with `env` added; resolves once its collectors run. */
export async function startCollectorProcess(env: Record<string, string>, args: string[] = []): Promise<CollectorProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/cli/collect.ts'), 'collect', ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (/collectors are running/.test(out)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`collector exited with ${code}:\n${out}`)));
  });
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const send = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (exited()) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  return { pid: child.pid!, output: () => out, stop: () => send('SIGTERM'), kill: send };
}
