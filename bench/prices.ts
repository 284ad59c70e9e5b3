/**
 * `npm run bench`: GET /prices (one item) and POST /prices/batch (1,000 names) on the bundled data,
 * each against a bare node:http server returning the same bytes, in the same run (autocannon, loopback only).
 * Quotegate requests run the full pipeline (auth, rate limit, credit check, charge), spread over many
 * accounts (see bench/servers.ts); a second GET case uses subscription accounts (no charge write).
 * Options (env): BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50; batch uses a fifth),
 * BENCH_ACCOUNTS (default 500), DATABASE_URL (bench a PostgreSQL server instead of embedded PGlite),
 * REDIS_URL (rate limits in Redis).
 * Prints a table and writes bench/results/prices-<timestamp>.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { projectRoot } from '../src/lib/paths.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'bench', 'servers.ts')], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, NODE_ENV: 'production' },
});
const info: { app: number; bare: number; keys: string[]; subscriptionKeys: string[]; limiter: string; single: string; batchBody: string; database: string; singleBytes: number; batchBytes: number } =
  await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`bench servers exited with ${code}`)));
  });

interface Row {
  case: string;
  server: string;
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non2xx: number;
  errors: number;
}

async function load(name: string, server: 'quotegate' | 'bare', opts: { path: string; method: 'GET' | 'POST'; body?: string; connections: number; keys: string[] }): Promise<Row> {
  const port = server === 'quotegate' ? info.app : info.bare;
  let next = 0;
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: opts.connections,
    duration: seconds,
    requests: [
      {
        method: opts.method,
        path: opts.path,
        body: opts.body,
        // Each request carries the next account's key, round robin.
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'Content-Type': 'application/json', 'X-API-Key': opts.keys[next++ % opts.keys.length]! } }),
      },
    ],
  });
  return { case: name, server, requests_per_s: r.requests.average, p50_ms: r.latency.p50, p99_ms: r.latency.p99, non2xx: r.non2xx, errors: r.errors };
}

const rows: Row[] = [];
const cases = [
  { name: 'GET /prices (1 item), billed', path: info.single, method: 'GET' as const, connections, keys: info.keys },
  { name: 'GET /prices (1 item), subscription', path: info.single, method: 'GET' as const, connections, keys: info.subscriptionKeys },
  { name: 'POST /prices/batch (1000 names), billed', path: '/prices/batch', method: 'POST' as const, body: info.batchBody, connections: Math.max(1, Math.round(connections / 5)), keys: info.keys },
];
for (const c of cases) {
  for (const server of ['bare', 'quotegate'] as const) rows.push(await load(c.name, server, c));
}
child.kill('SIGTERM');

console.log(`database: ${info.database}; rate limits: ${info.limiter}; accounts: ${info.keys.length} billed + ${info.subscriptionKeys.length} subscription; ${seconds}s per run; response sizes: single ${info.singleBytes} B, batch ${info.batchBytes} B`);
console.table(rows);
for (const c of cases) {
  const bare = rows.find((r) => r.case === c.name && r.server === 'bare')!;
  const app = rows.find((r) => r.case === c.name && r.server === 'quotegate')!;
  console.log(`${c.name}: quotegate/bare = ${(app.requests_per_s / bare.requests_per_s).toFixed(3)}`);
}
const out = path.join(projectRoot, 'bench', 'results');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, `prices-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify({ database: info.database, limiter: info.limiter, accounts: info.keys.length, seconds, connections, rows }, null, 2));
