/**
 * Starting bench/servers.ts and reading its CPU port, shared by the benchmarks that load it (`npm run bench`,
 * `bench:compare`, `bench:gc`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { serviceNodeFlags } from '../scripts/build.mjs';

/** The benchmarks' database: DATABASE_URL when set, else PGlite in `<root>/var/bench-pglite` (bench/servers.ts, bench/setup-data.ts). */
export function benchDatabaseTarget(root: string, databaseUrl: string | undefined): { url: string } | { pgliteDir: string } {
  return databaseUrl ? { url: databaseUrl } : { pgliteDir: path.join(root, 'var', benchScale() === 'full' ? 'bench-pglite-full' : 'bench-pglite') };
}

/**
 * The catalogue `npm run bench` runs on: `bundled` (the bundled real data, default) or `full` (BENCH_SCALE=full:
 * bench/scale-data.ts's 36,307 real names on 40 markets, ask and bid, the catalogue of `npm run bench:export`).
 * Throws on another value.
 */
export function benchScale(): 'bundled' | 'full' {
  const v = process.env.BENCH_SCALE ?? 'bundled';
  if (v !== 'bundled' && v !== 'full') throw new Error(`BENCH_SCALE must be bundled or full, not ${JSON.stringify(v)}`);
  return v;
}

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

/**
 * CPU time (user + system, microseconds) of this machine's PostgreSQL and Redis server processes, per process id
 * (Linux /proc only; an empty map elsewhere). The services' share of a run is the sum over the process ids present at
 * its end of the growth since its start (`storeCpuSince`): on a machine of 2 vCPUs their work competes with the servers'.
 */
export function storeCpuMicros(): Map<number, { name: string; micros: number }> {
  const out = new Map<number, { name: string; micros: number }>();
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (name !== 'postgres' && name !== 'redis-server') continue;
    // Fields after the command: state is the 3rd field of the line; utime and stime are the 14th and 15th, in clock ticks (100 a second).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(pid), { name, micros: (Number(fields[11]) + Number(fields[12])) * 10_000 });
  }
  return out;
}

/** Microseconds of CPU each store (`postgres`, `redis-server`) used since `before` (a `storeCpuMicros()` reading). */
export function storeCpuSince(before: Map<number, { name: string; micros: number }>): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const [pid, now] of storeCpuMicros()) sums[now.name] = (sums[now.name] ?? 0) + now.micros - (before.get(pid)?.micros ?? 0);
  return sums;
}
