/**
 * `npm run bench:live` (issue: live, point 4): live delivery at load on one replica.
 *
 * A real `quotegate serve` process on PostgreSQL (LIVE_DATABASE_URL, default database qg_live on the local
 * server, dropped and created) holds LIVE_SUBSCRIBERS (1,000) open SSE streams (`GET /prices/changes/stream`,
 * 100 accounts x 10, the default per-account cap): each follows LIVE_FOLLOWED (100) items (both sides), and
 * LIVE_FIREHOSE (10) of them follow everything. This process then ingests one 10,000-row batch (5,000 items x ask and bid, every price changed)
 * and reads every stream until each subscriber has all of its events. The clients record only each event's `id`
 * and arrival while they are timed (they share the two cores with the server); afterwards every seq is matched
 * to its quote through the change sequence, and three sampled subscribers' event data are checked in full.
 *
 * Reports: events expected and delivered per subscriber (any missing or repeated fails the run), delivery
 * latency from the batch's commit to each event's arrival (p50, p99, max; target p99 <= 1 s), and the server's
 * memory per idle subscriber (heap and RSS before and after opening them, /metrics; target <= 50 KB). Writes
 * bench/results/live-*.json. Exit code 1 when a target is missed.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import cliProgress from 'cli-progress';
import { openDatabase } from '../src/db/client.js';
import { importCatalogue } from '../src/catalogue/import.js';
import { createAccount } from '../src/accounts/accounts.js';
import { ingestBatch } from '../src/quotes/ingestion.js';
import type { QuoteObservation } from '../src/validation/ingest.js';
import { toMoney } from '../src/lib/money.js';
import { serviceNodeFlags } from '../scripts/build.mjs';
import { projectRoot } from '../src/lib/paths.js';
import { startServerProcess } from '../test/helpers/server.js';
import { collectGarbage, inspectorUrlOf, openInspector } from './inspector.js';

const DB_URL = process.env.LIVE_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/qg_live';
const SUBSCRIBERS = Number(process.env.LIVE_SUBSCRIBERS ?? 1000);
const ITEMS = 5000;
/** Items each subscriber follows (both sides), and how many subscribers follow every item instead. */
const FOLLOWED = Number(process.env.LIVE_FOLLOWED ?? 100);
const FIREHOSE = Number(process.env.LIVE_FIREHOSE ?? 10);
/**
 * LIVE_FACE: `rest` (default): GET /prices/changes/stream; `graphql`: the `quoteChanged` subscription over SSE
 * (POST /graphql, Accept: text/event-stream; each event's selection executed once for all, src/plugins/live-results.ts), with the ChangeOut fields.
 */
const FACE = process.env.LIVE_FACE === 'graphql' ? 'graphql' : 'rest';
const SUBSCRIPTION = `subscription Live($names: [String!]) { quoteChanged(marketHashNames: $names) { seq marketHashName marketCode side
  quote { marketCode providerCode side marketCurrencyCode marketPriceAmount quantity isQuantityMinimum isAllItemsSamePrice changedAt observedAt delistedAt freshAt } } }`;
const METRICS_TOKEN = 'live-bench-metrics-token-0123456789';

/** The server's node flags for LIVE_PROFILE (see where the server starts). */
function profileFlags(kind: string | undefined): string[] {
  const dir = path.join(projectRoot, 'bench', 'results');
  if (!kind || kind === 'heap') return [];
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

const name = (i: number) => `Live bench item ${String(i).padStart(5, '0')}`;
const observation = (i: number, side: 'ask' | 'bid', price: string, at: Date): QuoteObservation => ({
  appId: '730',
  marketHashName: name(i),
  marketCode: 'BUFF163',
  providerCode: 'BUFF163',
  side,
  currencyCode: 'CNY',
  price: toMoney(price),
  quantity: 3,
  isQuantityMinimum: false,
  isAllItemsSamePrice: false,
  observedAt: at,
});

// 1. A fresh database: the catalogue and the 5,000 items' first quotes.
{
  const admin = new URL(DB_URL);
  const db = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const c = new pg.Client({ connectionString: admin.toString() });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await c.query(`CREATE DATABASE ${db}`);
  await c.end();
}
const db = await openDatabase({ url: DB_URL });
await importCatalogue(db.prisma, path.join(projectRoot, 'data'));
const first = new Date('2026-11-24T00:00:00Z');
await ingestBatch(
  db,
  Array.from({ length: ITEMS }, (_, i) => [observation(i, 'ask', '10.00', first), observation(i, 'bid', '9.00', first)]).flat(),
);
const accounts = await Promise.all(Array.from({ length: Math.ceil(SUBSCRIBERS / 10) }, () => createAccount(db, { credits: 1_000_000n })));
const warmAccount = await createAccount(db, { credits: 1000n });

// 2. The server (one replica) as `npm start` runs it (compiled: npm run bench:live builds dist first; production
// mode, `npm start`'s heap flags), its memory before any subscriber.
const server = await startServerProcess({
  NODE_ENV: 'production',
  DATABASE_URL: DB_URL,
  LOG_LEVEL: 'warn',
  METRICS_TOKEN,
  VALUATION_JOB: 'off',
  EXPORT_INTERVAL_SECONDS: '0',
  STATUS_PROBE_INTERVAL_SECONDS: '0',
  // LIVE_PROFILE=1: a CPU profile of the server (node --cpu-prof) in bench/results, for bench/profile-summary.ts;
  // LIVE_PROFILE=heap: a sampling allocation profile of the delivery instead (the inspector's HeapProfiler, below).
  // The inspector on a free loopback port: the memory figures are read right after a full collection.
}, [...serviceNodeFlags(), '--inspect=127.0.0.1:0', ...profileFlags(process.env.LIVE_PROFILE)], { compiled: true });
// A run that fails half-way must not leave the server behind (the signal is sent at once, synchronously).
process.once('exit', () => void server.kill('SIGKILL'));
const inspectorUrl = inspectorUrlOf(server.output());
const base = new URL(server.url);
/** The server's CPU seconds so far (/metrics). */
async function serverCpu(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(text.split('\n').find((l) => l.startsWith('quotegate_process_cpu_seconds_total '))?.split(' ')[1] ?? NaN);
}
async function memory(): Promise<{ rss: number; heap: number }> {
  // Right after a full collection: the heap is the live set.
  await collectGarbage(inspectorUrl);
  const text = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const value = (metric: string) => Number(text.split('\n').find((l) => l.startsWith(`${metric} `))?.split(' ')[1] ?? NaN);
  return { rss: value('quotegate_process_resident_memory_bytes'), heap: value('quotegate_nodejs_heap_size_used_bytes') };
}
// Warm the paths once (a stream opened and closed), so the first subscriber does not pay for module loading.
await new Promise<void>((resolve) => {
  const req = http.get({ host: base.hostname, port: base.port, path: '/prices/changes/stream', headers: { 'X-API-Key': warmAccount.key } }, (res) => {
    res.once('data', () => {
      req.destroy();
      resolve();
    });
  });
});
await new Promise((r) => setTimeout(r, 1500));
const before = await memory();

// 3. The subscribers: raw node:http streams (one socket each). While the batch is delivered each records only
// the `id` (seq) of every event and its arrival time, from the raw bytes: the 1,000 clients share this machine's
// two cores with the server, so they do as little as a client can. Which quote each seq is, and the events' data
// (sampled subscribers), are checked after the timing (step 5).
interface Subscriber {
  index: number;
  expected: Set<string>;
  seqs: bigint[];
  arrivals: number[];
  /** The raw event blocks, kept for the sampled subscribers only. */
  blocks: string[] | null;
  req: http.ClientRequest;
}
const SAMPLED = new Set([0, FIREHOSE, SUBSCRIBERS - 1]);
const EVENT_ID = Buffer.from('id: ');
const SEQ_FIELD = '"seq":"';
const agent = new http.Agent({ keepAlive: true, maxSockets: SUBSCRIBERS + 10 });
const subscribers: Subscriber[] = [];
const bar = new cliProgress.SingleBar({ format: 'subscribers [{bar}] {value}/{total}' }, cliProgress.Presets.shades_classic);
bar.start(SUBSCRIBERS, 0);
for (let s = 0; s < SUBSCRIBERS; s += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, SUBSCRIBERS - s) }, (_, k) => {
      const index = s + k;
      const firehose = index < FIREHOSE;
      const items = firehose ? [] : Array.from({ length: FOLLOWED }, (_, j) => (index * 37 + j * 53) % ITEMS);
      const expected = new Set((firehose ? Array.from({ length: ITEMS }, (_, i) => i) : items).flatMap((i) => [`${name(i)}/ask`, `${name(i)}/bid`]));
      const query = items.map((i) => `market_hash_name=${encodeURIComponent(name(i))}`).join('&');
      return new Promise<void>((resolve, reject) => {
        const sub: Subscriber = { index, expected, seqs: [], arrivals: [], blocks: SAMPLED.has(index) ? [] : null, req: null as never };
        const key = accounts[Math.floor(index / 10)]!.key;
        const onResponse = (res: http.IncomingMessage) => {
          if (res.statusCode !== 200) return reject(new Error(`subscriber ${index}: status ${res.statusCode}`));
          let rest: Buffer | null = null;
          res.on('data', (chunk: Buffer) => {
            const now = performance.now();
            const buf: Buffer = rest ? Buffer.concat([rest, chunk]) : chunk;
            let from = 0;
            let end: number;
            while ((end = buf.indexOf('\n\n', from, 'latin1')) >= 0) {
              if (FACE === 'rest') {
                // An event block starts with `id: <seq>` (comments start with ':').
                if (buf[from] === EVENT_ID[0] && buf.compare(EVENT_ID, 0, 4, from, from + 4) === 0) {
                  sub.seqs.push(BigInt(buf.toString('latin1', from + 4, buf.indexOf(10, from))));
                  sub.arrivals.push(now);
                  sub.blocks?.push(buf.toString('utf8', from, end));
                }
              } else {
                // `event: next` blocks carry {"data":{"quoteChanged":{"seq":"<seq>",...}}}.
                const at = buf.indexOf(SEQ_FIELD, from, 'latin1');
                if (at >= 0 && at < end) {
                  sub.seqs.push(BigInt(buf.toString('latin1', at + SEQ_FIELD.length, buf.indexOf(34, at + SEQ_FIELD.length))));
                  sub.arrivals.push(now);
                  sub.blocks?.push(buf.toString('utf8', from, end));
                }
              }
              from = end + 2;
            }
            rest = from < buf.length ? buf.subarray(from) : null;
          });
          resolve();
        };
        if (FACE === 'rest') {
          sub.req = http.get({ host: base.hostname, port: base.port, agent, path: `/prices/changes/stream?${query}`, headers: { 'X-API-Key': key } }, onResponse);
        } else {
          sub.req = http.request(
            { host: base.hostname, port: base.port, agent, method: 'POST', path: '/graphql', headers: { 'X-API-Key': key, 'Content-Type': 'application/json', Accept: 'text/event-stream' } },
            onResponse,
          );
          sub.req.end(JSON.stringify({ query: SUBSCRIPTION, variables: { names: firehose ? null : items.map(name) } }));
        }
        sub.req.on('error', reject);
        subscribers.push(sub);
      });
    }),
  );
  bar.update(Math.min(SUBSCRIBERS, s + 50));
}
bar.stop();
await new Promise((r) => setTimeout(r, 2000));
const idle = await memory();

// 4. One 10,000-row batch, every price changed; then every stream is read until each subscriber has its events.
const second = new Date('2026-11-24T01:00:00Z');
const batch = Array.from({ length: ITEMS }, (_, i) => [observation(i, 'ask', '10.50', second), observation(i, 'bid', '9.50', second)]).flat();
const [{ seq: seqBefore }] = (await db.query<{ seq: string }>(`SELECT COALESCE(max(seq), 0)::text AS seq FROM quote_change`)) as [{ seq: string }];
// LIVE_PROFILE=heap: what the server allocates while it delivers (collected or not), for bench/profile-summary.ts.
const heapSession = process.env.LIVE_PROFILE === 'heap' ? await openInspector(inspectorUrl) : null;
if (heapSession) {
  await heapSession.post('HeapProfiler.enable');
  await heapSession.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
}
const cpuBefore = await serverCpu();
const clientCpuBefore = process.cpuUsage();
const t0 = performance.now();
await ingestBatch(db, batch);
const committed = performance.now();
const deadline = committed + 60_000;
const total = subscribers.reduce((n, s) => n + s.expected.size, 0);
const delivered = () => subscribers.reduce((n, s) => n + s.seqs.length, 0);
while (delivered() < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
const deliveredAt = performance.now();
const clientCpu = process.cpuUsage(clientCpuBefore);
const serverCpuSeconds = (await serverCpu()) - cpuBefore;
if (heapSession) {
  const { profile } = (await heapSession.post('HeapProfiler.stopSampling')) as { profile: unknown };
  heapSession.close();
  const file = path.join(projectRoot, 'bench', 'results', `live-${FACE}-${new Date().toISOString().replace(/[:.]/g, '-')}.heapprofile`);
  fs.writeFileSync(file, JSON.stringify(profile));
  console.log(`wrote ${path.relative(projectRoot, file)}`);
}
await new Promise((r) => setTimeout(r, 1000)); // anything repeated would arrive now
const after = await memory();

// 5. What each seq was (the change sequence itself), each subscriber's events against what it follows, and the
// sampled subscribers' event data against the quotes of the batch.
const keyOf = new Map<bigint, string>();
for (const r of await db.query<{ seq: string; market_hash_name: string; side: string }>(
  `SELECT c.seq::text AS seq, i.market_hash_name, c.side FROM quote_change c JOIN item i ON i.id = c.item_id WHERE c.seq > $1::bigint`,
  [seqBefore],
)) keyOf.set(BigInt(r.seq), `${r.market_hash_name}/${r.side}`);
let missing = 0;
let unexpected = 0;
let repeated = 0;
let badData = 0;
for (const s of subscribers) {
  const seen = new Set<string>();
  for (const seq of s.seqs) {
    const key = keyOf.get(seq) ?? `unknown seq ${seq}`;
    if (seen.has(key)) repeated += 1;
    else if (!s.expected.has(key)) unexpected += 1;
    seen.add(key);
  }
  for (const k of s.expected) if (!seen.has(k)) missing += 1;
  for (const block of s.blocks ?? []) {
    const data = JSON.parse(block.slice(block.indexOf('data: ') + 6)) as Record<string, unknown>;
    // The REST event's data is a ChangeOut; the GraphQL event's, {data: {quoteChanged: PriceChange}}.
    const change =
      FACE === 'rest'
        ? (data as { seq: string; market_hash_name: string; side: string; quote: { market_price_amount: string | null } | null })
        : (() => {
            const c = (data as { data: { quoteChanged: { seq: string; marketHashName: string; side: string; quote: { marketPriceAmount: string | null } | null } } }).data.quoteChanged;
            return { seq: c.seq, market_hash_name: c.marketHashName, side: c.side, quote: c.quote && { market_price_amount: c.quote.marketPriceAmount } };
          })();
    const want = change.side === 'ask' ? '10.50' : '9.50';
    if (`${change.market_hash_name}/${change.side}` !== keyOf.get(BigInt(change.seq)) || !toMoney(change.quote?.market_price_amount ?? '0').eq(want)) badData += 1;
  }
}
const sampledEvents = subscribers.reduce((n, s) => n + (s.blocks?.length ?? 0), 0);
const latencies = subscribers.flatMap((s) => s.arrivals.map((a) => a - committed)).sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
const perSubscriberKiB = { heap: (idle.heap - before.heap) / SUBSCRIBERS / 1024, rss: (idle.rss - before.rss) / SUBSCRIBERS / 1024 };
const result = {
  face: FACE,
  subscribers: SUBSCRIBERS,
  followed_items: FOLLOWED,
  firehose_subscribers: FIREHOSE,
  batch_rows: batch.length,
  ingest_ms: Math.round(committed - t0),
  deliveries_expected: total,
  deliveries: delivered(),
  missing,
  unexpected,
  repeated,
  sampled_events_checked: sampledEvents,
  sampled_events_wrong: badData,
  latency_ms: { first: Math.round(latencies[0] ?? NaN), p50: Math.round(pct(50)), p99: Math.round(pct(99)), max: Math.round(latencies.at(-1) ?? NaN) },
  memory_mib: { before: { rss: before.rss / 1048576, heap: before.heap / 1048576 }, idle: { rss: idle.rss / 1048576, heap: idle.heap / 1048576 }, after: { rss: after.rss / 1048576, heap: after.heap / 1048576 } },
  delivery_wall_ms: Math.round(deliveredAt - committed),
  cpu_seconds_during_delivery: { server: Math.round(serverCpuSeconds * 100) / 100, bench_client_and_ingest: Math.round(((clientCpu.user + clientCpu.system) / 1e6) * 100) / 100 },
  per_idle_subscriber_kib: { heap: Math.round(perSubscriberKiB.heap * 10) / 10, rss: Math.round(perSubscriberKiB.rss * 10) / 10 },
};
console.log(
  `live (${FACE === 'rest' ? 'GET /prices/changes/stream' : 'GraphQL quoteChanged over SSE'}): ${SUBSCRIBERS} SSE subscribers (${FOLLOWED} items each, ${FIREHOSE} following every item), one ${batch.length}-row batch (committed in ${result.ingest_ms} ms): ${result.deliveries}/${total} deliveries, ` +
    `${missing} missing, ${unexpected} unexpected, ${repeated} repeated, ${badData} of ${sampledEvents} sampled events wrong; commit -> delivery first ${result.latency_ms.first} ms, p50 ${result.latency_ms.p50} ms, p99 ${result.latency_ms.p99} ms, max ${result.latency_ms.max} ms; ` +
    `per idle subscriber ${result.per_idle_subscriber_kib.heap} KiB heap, ${result.per_idle_subscriber_kib.rss} KiB RSS; ` +
    `CPU during delivery: server ${result.cpu_seconds_during_delivery.server} s, this process (ingest + 1,000 clients) ${result.cpu_seconds_during_delivery.bench_client_and_ingest} s`,
);
const out = path.join(projectRoot, 'bench', 'results', `live-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2));
console.log(`wrote ${path.relative(projectRoot, out)}`);

for (const s of subscribers) s.req.destroy();
agent.destroy();
await server.stop();
await db.close();
const ok = missing === 0 && unexpected === 0 && repeated === 0 && badData === 0 && sampledEvents > 0 && result.latency_ms.p99 <= 1000 && perSubscriberKiB.heap <= 50 && perSubscriberKiB.rss <= 50;
if (!ok) console.log('bench:live: a target was missed (every event exactly once, p99 <= 1 s, <= 50 KB per idle subscriber)');
process.exit(ok ? 0 : 1);
