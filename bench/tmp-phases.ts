import fs from 'node:fs';
import { startUpstream } from '../test/collectors/upstream.js';
import { NAMES_FILE } from './scale-data.js';
import { benchBodies, sources } from './collect-sources.js';
import { QuoteBuffer } from '../src/collectors/rows.js';
import { toMoney } from '../src/lib/money.js';
const names = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
const bodies = benchBodies(names.slice(0, 30000), names.slice(0, 36000));
const up = await startUpstream(bodies.map((b) => ({ path: b.path, body: b.body })));
const markets = new Map(['BUFF163','YOUPIN','CSFLOAT','SKINPORT','CSMONEY','STEAM','BITSKINS','WAXPEER'].map((m) => [m, { currencyCode: ['BUFF163','YOUPIN'].includes(m) ? 'CNY' : m === 'SKINPORT' ? 'EUR' : 'USD', isDeprecated: false }]));
const rates = new Map([['USD', toMoney('1')], ['CNY', toMoney('0.14')], ['EUR', toMoney('1.1')]]);
const mem = () => { const m = process.memoryUsage(); return `rss ${(m.rss/1048576).toFixed(0)} heap ${(m.heapUsed/1048576).toFixed(0)} ext ${(m.external/1048576).toFixed(0)} ab ${(m.arrayBuffers/1048576).toFixed(0)}`; };
let peak = 0; const iv = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
for (const s of sources) {
  const buffer = new QuoteBuffer({ markets, sourceMarkets: s.markets, usdRates: rates });
  const t0 = performance.now();
  let n = 0;
  for await (const row of s.collect({ baseUrl: up.url, credential: null, watchlist: [], signal: new AbortController().signal, now: new Date(), fetch: (p: string) => fetch(up.url + p) })) { buffer.add(row); n++; }
  console.log(s.id, n, buffer.size, `${(performance.now() - t0).toFixed(0)} ms`, mem());
  const t1 = performance.now();
  let k = 0; for (const c of buffer.observations('X', new Date(), 5000)) k += c.length;
  console.log('  observations', k, `${(performance.now() - t1).toFixed(0)} ms`, mem());
}
clearInterval(iv); console.log('peak rss', (peak/1048576).toFixed(0));
await up.close();
