/**
 * `npm run bench:search`: the item catalogue search (issue 44, point 1; docs/search.md) over the full catalogue, the
 * 36,307 real names of data/items/market_hash_names.txt (data/items/PROVENANCE.md). Target: p99 <= 20 ms.
 *
 * 1. The catalogue: every name through the ingestion service's `ensureItems` (the path that writes search keys; timed),
 *    then a CSCP valuation for 4 items in 5 (synthetic mids, so hits carry their quote as in production), then
 *    `ANALYZE item` (what the importers run after an import). Embedded PGlite in memory by default; with
 *    DATABASE_URL, a fresh database `qg_bench_search` on that PostgreSQL server (dropped afterwards).
 * 2. SEARCH_QUERIES (default 2,000) queries made from the catalogue, seeded (SEARCH_SEED): names as people type them
 *    (words shuffled, case changed, punctuation dropped, exteriors and StatTrak™ abbreviated, a word left out),
 *    one or two words or a word's first letters (typing ahead), broad words (`sticker`, `case`, `★`, `st`, ...), the
 *    second and third pages of broad queries (cursors), and misses (made-up words, and common words that never meet,
 *    such as `souvenir ★`, the slowest kind). Each runs once to warm up, then once timed: `searchItems`, the
 *    service call both faces make (its two statements at most and the CSCP read), p50/p90/p99/max of the wall time
 *    overall and per kind, and of the process's CPU time per search (on PGlite the database runs in this process, so
 *    that is what a search costs, however busy the machine is).
 * 3. The same queries through the REST face (GET /catalogue/items on the app, in process: credential, metering,
 *    billing, the answer's JSON), timed the same way.
 * 4. SEARCH_SUGGESTIONS (default 300) unknown names (a real name misspelt, or in other case and punctuation): the
 *    suggestions a 404 of GET /prices gives (`suggestNames`), p50/p99.
 * SEARCH_NAMES takes the first n names only (a quick check of the script, not a measurement).
 * Writes bench/results/search-<engine>-<time>.json. Run it niced beside other work: the figures are then pessimistic.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../src/db/client.js';
import { createApp } from '../src/app.js';
import { createAccount } from '../src/accounts/accounts.js';
import { ensureItems } from '../src/quotes/ingestion.js';
import { searchItems, suggestNames } from '../src/quotes/item-search.js';
import { createRateLimiter } from '../src/limits/rate-limiter.js';
import { decodeSearchCursor, searchWords } from '../src/search/query.js';
import { projectRoot } from '../src/lib/paths.js';
import { dropPostgresDatabase, freshPostgresDatabase } from './scale-data.js';

const QUERIES = Number(process.env.SEARCH_QUERIES ?? 2000);
const SUGGESTIONS = Number(process.env.SEARCH_SUGGESTIONS ?? 300);
const SEED = Number(process.env.SEARCH_SEED ?? 44);
const SERVER = process.env.DATABASE_URL;
const DB_NAME = 'qg_bench_search';
const PAGE = 20;
const log = (s: string) => console.log(s);

/** A seeded PRNG (mulberry32): the same queries every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const r = rng(SEED);
const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
const shuffle = <T>(list: T[]): T[] => {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
};

/** The catalogue: every name of data/items, or the first SEARCH_NAMES of them (a quick check of this script). */
const NAMES = fs
  .readFileSync(path.join(projectRoot, 'data', 'items', 'market_hash_names.txt'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .slice(0, process.env.SEARCH_NAMES ? Number(process.env.SEARCH_NAMES) : undefined);
const EXTERIORS: Record<string, string> = { 'Factory New': 'fn', 'Minimal Wear': 'mw', 'Field-Tested': 'ft', 'Well-Worn': 'ww', 'Battle-Scarred': 'bs' };
const BROAD = ['sticker', 'case', 'knife', '★', 'st', 'fn', 'souvenir', 'capsule', 'gloves', 'ak47', 'awp', 'fade', 'doppler', '2020', 'holo', 'foil', 'patch', 'music kit', 'graffiti', 'pin', 'a', 'e'];
const NEVER_MEET = ['souvenir ★', 'stattrak sticker', 'souvenir knife', 'st graffiti', 'capsule fn', 'gloves st', 'patch souvenir', 'music kit ft'];

/** A name as someone types it: words shuffled, case changed, punctuation dropped, exteriors abbreviated, maybe a word left out. */
function typed(name: string): string {
  let text = name;
  for (const [long, short] of Object.entries(EXTERIORS)) if (text.includes(long) && r() < 0.5) text = text.replace(long, short);
  if (text.startsWith('StatTrak™ ') && r() < 0.5) text = 'st ' + text.slice(10);
  let words = text.split(/[\s|()]+/).filter(Boolean);
  if (r() < 0.5) words = words.map((w) => w.replace(/[^\p{L}\p{N}★]/gu, ''));
  if (r() < 0.6) words = words.map((w) => w.toLowerCase());
  if (r() < 0.5) shuffle(words);
  if (words.length > 2 && r() < 0.3) words.splice(Math.floor(r() * words.length), 1);
  return words.filter(Boolean).join(' ') || name;
}

/** A word or two of a name, or a word's first letters. */
function partial(name: string): string {
  const words = name.split(/[\s|()]+/).filter((w) => w.replace(/[^\p{L}\p{N}]/gu, '').length >= 3);
  if (words.length === 0) return name;
  const w = pick(words);
  if (r() < 0.4) return w.slice(0, 3 + Math.floor(r() * 4));
  return r() < 0.5 ? w : `${w} ${pick(words)}`;
}

interface Query {
  kind: 'typed' | 'partial' | 'broad' | 'page' | 'miss';
  q: string;
  /** Pages to skip (a cursor): 0 for the first page. */
  skip: number;
}

function queries(n: number): Query[] {
  const out: Query[] = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    if (x < 0.4) out.push({ kind: 'typed', q: typed(pick(NAMES)), skip: 0 });
    else if (x < 0.65) out.push({ kind: 'partial', q: partial(pick(NAMES)), skip: 0 });
    else if (x < 0.8) out.push({ kind: 'broad', q: pick(BROAD), skip: 0 });
    else if (x < 0.9) out.push({ kind: 'page', q: pick(BROAD), skip: 1 + Math.floor(r() * 2) });
    else out.push({ kind: 'miss', q: r() < 0.5 ? pick(NEVER_MEET) : `${pick(['xq', 'zv', 'qj', 'vzx'])}${Math.floor(r() * 1000)} ${pick(BROAD)}`, skip: 0 });
  }
  return out;
}

/** A real name misspelt (a letter changed, dropped or doubled), or in other case and punctuation. */
function misspelt(name: string): string {
  if (r() < 0.3) return name.toLowerCase().replace(/[|()-]/g, ' ');
  const chars = [...name];
  const letters = chars.map((c, i) => (/[a-z]/i.test(c) ? i : -1)).filter((i) => i >= 0);
  if (letters.length === 0) return name + 'x';
  const i = pick(letters);
  const y = r();
  if (y < 0.33) chars[i] = chars[i] === 'e' ? 'a' : 'e';
  else if (y < 0.66) chars.splice(i, 1);
  else chars.splice(i, 0, chars[i]!);
  return chars.join('');
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
function summary(ms: number[]): { n: number; p50: number; p90: number; p99: number; max: number } {
  const s = [...ms].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return { n: s.length, p50: round(pct(s, 50)), p90: round(pct(s, 90)), p99: round(pct(s, 99)), max: round(s.at(-1) ?? 0) };
}
const line = (label: string, s: ReturnType<typeof summary>) =>
  `${label.padEnd(22)} n=${String(s.n).padStart(5)}  p50 ${s.p50.toFixed(2).padStart(7)} ms  p90 ${s.p90.toFixed(2).padStart(7)} ms  p99 ${s.p99.toFixed(2).padStart(7)} ms  max ${s.max.toFixed(2).padStart(7)} ms`;

// 1. The database and the catalogue.
let db: Database;
if (SERVER) {
  db = await openDatabase({ url: await freshPostgresDatabase(SERVER, DB_NAME) });
} else {
  db = await openDatabase({ pgliteDir: 'memory://' });
}
const engine = SERVER ? 'postgresql' : 'pglite';
log(`bench:search on ${engine}, ${NAMES.length} names, ${QUERIES} queries, ${SUGGESTIONS} suggestions, seed ${SEED}, ${os.cpus().length} CPUs, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
let t0 = performance.now();
await ensureItems(db, NAMES.map((marketHashName) => ({ appId: '730', marketHashName })));
const loadMs = performance.now() - t0;
await db.query(
  `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
   SELECT id, '2026-07-17', m, m * 1.02, m * 0.98, 0.05, true, 4, 2, '2026-07-17T00:05:00Z'
   FROM (SELECT id, round((abs(hashtext(market_hash_name)) % 1000000) / 100.0 + 0.03, 2) AS m FROM item WHERE abs(hashtext(market_hash_name)) % 5 <> 0) x`,
);
await db.query(`ANALYZE item`);
await db.query(`ANALYZE valuation`);
log(`catalogue: ${NAMES.length} items through ensureItems in ${(loadMs / 1000).toFixed(1)} s`);

// 2. The service call.
const list = queries(QUERIES);
/** The request of a query: its words, and the cursor after `skip` pages (found in the warm-up pass). */
const cursors = new Map<Query, string | null>();
async function runSearch(q: Query): Promise<{ hits: number }> {
  const words = searchWords(q.q);
  let after = null;
  const cursor = cursors.get(q);
  if (cursor) {
    const at = decodeSearchCursor(cursor, '730', words);
    if (typeof at === 'string') throw new Error(at);
    after = at;
  }
  const page = await searchItems(db, { appId: '730', words, limit: PAGE, after });
  return { hits: page.hits.length };
}
// Warm-up: also finds each paged query's cursor (the pages before it).
for (const q of list) {
  if (q.skip > 0) {
    let cursor: string | null = null;
    for (let i = 0; i < q.skip; i++) {
      const words = searchWords(q.q);
      const at = cursor ? decodeSearchCursor(cursor, '730', words) : null;
      const page = await searchItems(db, { appId: '730', words, limit: PAGE, after: typeof at === 'string' ? null : at });
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    cursors.set(q, cursor);
  }
  await runSearch(q);
}
const byKind = new Map<string, number[]>();
const all: number[] = [];
const cpu: number[] = [];
let hits = 0;
let slowest: { ms: number; q: string } = { ms: 0, q: '' };
t0 = performance.now();
for (const q of list) {
  const c = process.cpuUsage();
  const s = performance.now();
  hits += (await runSearch(q)).hits;
  const ms = performance.now() - s;
  const used = process.cpuUsage(c);
  cpu.push((used.user + used.system) / 1000);
  all.push(ms);
  (byKind.get(q.kind) ?? byKind.set(q.kind, []).get(q.kind)!).push(ms);
  if (ms > slowest.ms) slowest = { ms, q: q.q };
}
const serviceWall = performance.now() - t0;
const service = {
  all: summary(all),
  kinds: Object.fromEntries([...byKind].map(([k, v]) => [k, summary(v)])),
  // On PGlite the database runs in this process: its CPU time per search is what the search costs, whatever else
  // competes for the machine (on PostgreSQL the server's share is not in it).
  cpu: summary(cpu),
  mean_hits: hits / list.length,
  slowest,
};
log('\nsearchItems (service call: match statements + CSCP read), wall time');
log(line('all', service.all));
for (const [k, s] of Object.entries(service.kinds)) log(line(`  ${k}`, s));
log(line(`CPU time${SERVER ? ' (client only)' : ''}`, service.cpu));
log(`  mean hits per page ${service.mean_hits.toFixed(1)}; slowest ${slowest.ms.toFixed(1)} ms: ${JSON.stringify(slowest.q)}; ${(list.length / (serviceWall / 1000)).toFixed(0)} searches/s in sequence`);

// 3. Through the REST face (in process).
const app = createApp({ db, rateLimiter: createRateLimiter({ enabled: false }) });
const { key } = await createAccount(db, { credits: 10_000_000n });
const auth = { Authorization: `Bearer ${key}` };
const url = (q: Query) => `http://bench/catalogue/items?${new URLSearchParams({ q: q.q, limit: String(PAGE), ...(cursors.get(q) ? { cursor: cursors.get(q)! } : {}) })}`;
for (const q of list) {
  const res = await app.fetch(new Request(url(q), { headers: auth }));
  if (res.status !== 200) throw new Error(`${res.status} for ${url(q)}: ${await res.text()}`);
  await res.arrayBuffer();
}
const rest: number[] = [];
for (const q of list) {
  const s = performance.now();
  const res = await app.fetch(new Request(url(q), { headers: auth }));
  await res.arrayBuffer();
  rest.push(performance.now() - s);
}
const restSummary = summary(rest);
log('\nGET /catalogue/items (REST face in process: credential, metering, billing, JSON)');
log(line('all', restSummary));
await app.close();

// 4. Suggestions of a 404.
const unknown = Array.from({ length: SUGGESTIONS }, () => misspelt(pick(NAMES))).filter((n) => !NAMES.includes(n));
for (const n of unknown) await suggestNames(db, '730', n);
const sugg: number[] = [];
let found = 0;
for (const n of unknown) {
  const s = performance.now();
  found += (await suggestNames(db, '730', n)).length > 0 ? 1 : 0;
  sugg.push(performance.now() - s);
}
const suggestSummary = summary(sugg);
log('\nsuggestNames (404 of GET /prices)');
log(line('all', suggestSummary));
log(`  ${found} of ${unknown.length} unknown names got at least one suggestion`);

const target = 20;
log(`\np99 of searchItems ${service.all.p99.toFixed(2)} ms wall (${service.cpu.p99.toFixed(2)} ms CPU): ${service.all.p99 <= target ? 'within' : 'OVER'} the ${target} ms target (load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs)`);
const result = {
  bench: 'search',
  engine,
  at: new Date().toISOString(),
  host: { cpus: os.cpus().length, loadavg: os.loadavg() },
  seed: SEED,
  names: NAMES.length,
  names_sha256: crypto.createHash('sha256').update(fs.readFileSync(path.join(projectRoot, 'data', 'items', 'market_hash_names.txt'))).digest('hex'),
  ensure_items_ms: Math.round(loadMs),
  service,
  rest: restSummary,
  suggestions: { ...suggestSummary, found, asked: unknown.length },
};
const dir = path.join(projectRoot, 'bench', 'results');
fs.mkdirSync(dir, { recursive: true });
const out = path.join(dir, `search-${engine}-${result.at.replace(/[:.]/g, '-')}.json`);
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
log(`wrote ${path.relative(projectRoot, out)}`);
await db.close();
if (SERVER) {
  await dropPostgresDatabase(SERVER, DB_NAME);
}
