/**
 * Event-loop delay of the process it is loaded into (`node --import ./bench/loop-delay-probe.mjs ...`), measured with
 * perf_hooks.monitorEventLoopDelay at 1 ms resolution. On SIGUSR2 it writes one line to stderr,
 * `loop-delay {"p50":ms,"p99":ms,"max":ms,"count":n}` over the time since the previous SIGUSR2 (or the start), and
 * starts a new window. `npm run bench:replay` loads it into the service.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
process.on('SIGUSR2', () => {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  const report = { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max), count: histogram.count };
  process.stderr.write(`loop-delay ${JSON.stringify(report)}\n`);
  histogram.reset();
});
