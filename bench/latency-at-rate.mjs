/**
 * GET latency at a fixed offered rate (open loop), run as a process of its own so that the bench's other work (its
 * local upstreams sending a collector megabytes, its garbage collection) never delays the timing:
 *
 *   node bench/latency-at-rate.mjs <url> <bearer key> <rate per second> <seconds>
 *
 * Sends `rate` requests a second for `seconds`, each at its scheduled moment (to within the 1 ms timer) on a pool of
 * 16 keep-alive connections whether or not earlier ones have answered, and times each from its send to the end of its
 * body, in microseconds (autocannon's histogram has whole milliseconds, too coarse for a 1 ms p99). node:http's
 * agent, not undici: undici's own overhead on loopback here is about 1 ms a request, which would hide the service's.
 * Prints one JSON line: {"p50": ms, "p99": ms, "max": ms, "rps": achieved, "non2xx": n, "slow": [[sent ms, latency ms], ...]}
 * with `slow` the requests over 3 ms (when they come in bursts, the service stalled).
 */
import http from 'node:http';

const [url, key, rateArg, secondsArg] = process.argv.slice(2);
const rate = Number(rateArg);
const seconds = Number(secondsArg);
const u = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const total = Math.round(rate * seconds);
const lat = new Float64Array(total);
const sentAt = new Float64Array(total);
let sent = 0;
let done = 0;
let non2xx = 0;
const t0 = performance.now();
await new Promise((resolve) => {
  const finish = (i, start) => {
    lat[i] = performance.now() - start;
    sentAt[i] = start - t0;
    if (++done === total) resolve();
  };
  const send = (i) => {
    const start = performance.now();
    http
      .get({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
        res.resume();
        res.on('end', () => finish(i, start));
      })
      .on('error', () => {
        non2xx++;
        finish(i, start);
      });
  };
  const tick = () => {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    for (; sent < due; sent++) send(sent);
    if (sent < total) setTimeout(tick, 1);
  };
  tick();
});
const elapsed = (performance.now() - t0) / 1000;
agent.destroy();
const slow = [];
for (let i = 0; i < total; i++) if (lat[i] > 3) slow.push([Math.round(sentAt[i]), Number(lat[i].toFixed(1))]);
const sorted = Float64Array.from(lat).sort();
const at = (q) => Number(sorted[Math.min(total - 1, Math.floor(q * total))].toFixed(2));
process.stdout.write(`${JSON.stringify({ p50: at(0.5), p99: at(0.99), max: Number(sorted[total - 1].toFixed(2)), rps: total / elapsed, non2xx, slow })}\n`);
