/**
 * `npm run -s bench:gc`: how the service's garbage collection behaves on the GET hot path, one fresh servers'
 * process (bench/servers.ts, the service's node flags) per sample, so a behaviour that differs between processes
 * shows as different samples. Each sample warms up (3 s), then loads one path for BENCH_SECONDS (default 6) with
 * 50 keep-alive connections (subscription keys, round robin) and prints: requests per second, the servers' CPU time
 * per request (microseconds), the bytes V8's scavenges promoted to the old generation per request, the bytes that
 * survived a scavenge on average, and the number of old-generation collections (from `--trace-gc-nvp`).
 * Why: V8's allocation-site pretenuring decided, in about half of the processes, during the warm-up, to allocate
 * request-path objects in the old generation; those processes then promoted about 10x the bytes per request and
 * spent 1.6-1.9x the CPU per GET for the rest of their life (README, Operations: Memory).
 * Options (env): BENCH_GC_SAMPLES (default 4), BENCH_GC_PATH (default the bench's single-item GET /prices),
 * BENCH_NODE_FLAGS (extra node/V8 flags for the servers, e.g. `--allocation-site-pretenuring` to see V8's default
 * again), BENCH_SECONDS, DATABASE_URL, REDIS_URL (as bench/prices.ts).
 */
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { serviceNodeFlags } from '../scripts/build.mjs';
import { serversArgs, serversCpuMicros } from './servers-process.js';
import { projectRoot } from '../src/lib/paths.js';

const samples = Number(process.env.BENCH_GC_SAMPLES ?? 4);
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const extraFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);

/** Scavenge and old-generation collection figures of one phase of a sample (summed over its `--trace-gc-nvp` lines). */
interface GcTally {
  scavenges: number;
  promotedBytes: number;
  survivedBytes: number;
  oldCollections: number;
}

/** One sample's figures (see the module doc). */
interface Sample {
  requests_per_s: number;
  cpu_us_per_req: number;
  promoted_bytes_per_req: number;
  survived_kib_per_scavenge: number;
  old_collections: number;
  non2xx: number;
}

async function sample(): Promise<Sample> {
  const child = spawn(process.execPath, serversArgs(projectRoot, ['--trace-gc-nvp', ...extraFlags]), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  const lines = readline.createInterface({ input: child.stdout! });
  let measuring = false;
  const tally: GcTally = { scavenges: 0, promotedBytes: 0, survivedBytes: 0, oldCollections: 0 };
  // A child this process leaves behind (it failed) would keep loading the machine.
  const orphan = () => child.kill('SIGKILL');
  process.once('exit', orphan);
  const info = await new Promise<{ app: number; cpu: number; single: string; subscriptionKeys: string[] }>((resolve, reject) => {
    let ready = false;
    lines.on('line', (line) => {
      if (!ready && line.startsWith('{"app"')) {
        ready = true;
        // V8 writes its trace lines to the same stdout from C++, so one can land inside the ready line.
        try {
          return resolve(JSON.parse(line));
        } catch {
          return reject(new Error(`the servers' ready line was cut by a V8 trace line; run again: ${line.slice(0, 200)}`));
        }
      }
      const kind = /\bgc=(\S+)/.exec(line)?.[1];
      if (!kind || !measuring) return;
      if (kind === 's') {
        tally.scavenges++;
        tally.promotedBytes += Number(/\bpromoted=(\d+)/.exec(line)?.[1] ?? 0);
        tally.survivedBytes += Number(/\bnew_space_survived=(\d+)/.exec(line)?.[1] ?? 0);
      } else tally.oldCollections++;
    });
    child.once('exit', (code) => reject(new Error(`bench servers exited with ${code}`)));
  });
  const target = process.env.BENCH_GC_PATH ?? info.single;
  let next = 0;
  const load = (duration: number) =>
    autocannon({
      url: `http://127.0.0.1:${info.app}`,
      connections: 50,
      duration,
      requests: [{ method: 'GET', path: target, setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'X-API-Key': info.subscriptionKeys[next++ % info.subscriptionKeys.length]! } }) }],
    });
  const cpuNow = () => serversCpuMicros(info.cpu);
  await load(3);
  const before = await cpuNow();
  measuring = true;
  const r = await load(seconds);
  measuring = false;
  const cpu = (await cpuNow()) - before;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  process.off('exit', orphan);
  const total = Math.max(1, r.requests.total);
  return {
    requests_per_s: Math.round(r.requests.average),
    cpu_us_per_req: Math.round((10 * cpu) / total) / 10,
    promoted_bytes_per_req: Math.round(tally.promotedBytes / total),
    survived_kib_per_scavenge: Math.round(tally.survivedBytes / Math.max(1, tally.scavenges) / 1024),
    old_collections: tally.oldCollections,
    non2xx: r.non2xx,
  };
}

const rows: Sample[] = [];
for (let i = 0; i < samples; i++) rows.push(await sample());
console.log(`node flags: ${[...serviceNodeFlags(), ...extraFlags].join(' ')}; ${seconds} s per sample, one servers' process each`);
console.table(rows);
