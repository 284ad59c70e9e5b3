/**
 * Starting bench/servers.ts and reading its CPU port, shared by the benchmarks that load it (`npm run bench`,
 * `bench:compare`, `bench:gc`).
 */
import path from 'node:path';
import { serviceNodeFlags } from '../scripts/build.mjs';

/**
 * The node arguments that run `root`'s bench/servers.ts as the service runs (`npm start`'s node flags, package.json),
 * with `--expose-gc` (the final full collection of its RSS report) and `extraFlags` (node/V8 flags) after them.
 */
export function serversArgs(root: string, extraFlags: readonly string[] = []): string[] {
  return ['--expose-gc', ...serviceNodeFlags(), ...extraFlags, '--import', 'tsx', path.join(root, 'bench', 'servers.ts')];
}

/** The servers' process CPU time so far (user + system, microseconds), read from its CPU port. Throws when it does not answer. */
export async function serversCpuMicros(cpuPort: number): Promise<number> {
  return ((await (await fetch(`http://127.0.0.1:${cpuPort}/`)).json()) as { cpuMicros: number }).cpuMicros;
}
