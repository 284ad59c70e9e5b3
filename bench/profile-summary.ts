/**
 * `node --import tsx bench/profile-summary.ts <file.cpuprofile|file.heapprofile> [top=25] [--by=function|url]`: the
 * functions (or script URLs) with the most self time in a V8 CPU profile (what `node --cpu-prof` and
 * `BENCH_PROFILE=1 npm run bench` write), as a table of milliseconds and shares of all samples; for a sampling
 * heap profile (`BENCH_PROFILE=heap npm run bench`), the bytes each function allocated (collected or not).
 * Idle and GC time are listed as V8 names them (`(idle)`, `(garbage collector)`, `(program)`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/lib/paths.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** One row of the summary: self time of a function (or script) in milliseconds and as a share of the profile. */
export interface SelfTimeRow {
  name: string;
  ms: number;
  share: number;
}

/** A short, stable label for a script URL: relative to the project, `node_modules/<package>/...` kept. */
function shortUrl(url: string): string {
  if (!url) return '';
  const file = url.startsWith('file://') ? url.slice('file://'.length) : url;
  const nm = file.lastIndexOf('node_modules/');
  if (nm >= 0) return file.slice(nm + 'node_modules/'.length);
  return file.startsWith(projectRoot) ? path.relative(projectRoot, file) : file;
}

/**
 * Self time per function (`name url:line`) or per script (`by: 'url'`), largest first. Each sample's
 * time is the delta to the next sample (V8's `timeDeltas`), so the shares add up to the profile's span.
 */
export function summarizeSelfTime(profile: CpuProfile, by: 'function' | 'url' = 'function'): SelfTimeRow[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    // timeDeltas[i] is the time before sample i; the time spent *in* sample i is the next delta.
    const us = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + us);
  }
  const totals = new Map<string, number>();
  let all = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = by === 'url' ? shortUrl(url) || functionName || '(anonymous)' : `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
    totals.set(key, (totals.get(key) ?? 0) + us);
    all += us;
  }
  return [...totals]
    .map(([name, us]) => ({ name, ms: us / 1000, share: all > 0 ? us / all : 0 }))
    .sort((a, b) => b.ms - a.ms);
}

/** A node of a V8 sampling heap profile (`HeapProfiler.stopSampling`): bytes allocated by the frame itself. */
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Bytes allocated per function (`name url:line`) or per script in a sampling heap profile, largest first (`ms` holds MiB). */
export function summarizeAllocations(profile: { head: HeapNode }, by: 'function' | 'url' = 'function'): SelfTimeRow[] {
  const totals = new Map<string, number>();
  let all = 0;
  const walk = (n: HeapNode) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const key = by === 'url' ? shortUrl(url) || functionName || '(anonymous)' : `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
    totals.set(key, (totals.get(key) ?? 0) + n.selfSize);
    all += n.selfSize;
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  return [...totals].map(([name, b]) => ({ name, ms: b / 1048576, share: all > 0 ? b / all : 0 })).sort((a, b) => b.ms - a.ms);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(projectRoot, 'bench', 'profile-summary.ts')) {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
  if (!file) {
    console.error('usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [top] [--by=function|url]');
    process.exit(2);
  }
  const top = Number(args.find((a) => /^\d+$/.test(a)) ?? 25);
  const by = args.includes('--by=url') ? 'url' : 'function';
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile | { head: HeapNode };
  if ('head' in parsed) {
    const rows = summarizeAllocations(parsed, by);
    console.log(`${file}: ${rows.reduce((n, r) => n + r.ms, 0).toFixed(0)} MiB allocated (sampled)`);
    console.table(rows.slice(0, top).map((r) => ({ MiB: Math.round(r.ms), share: `${(r.share * 100).toFixed(1)}%`, [by]: r.name })));
    process.exit(0);
  }
  const profile = parsed;
  const rows = summarizeSelfTime(profile, by);
  console.log(`${file}: ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s profiled`);
  console.table(rows.slice(0, top).map((r) => ({ self_ms: Math.round(r.ms), share: `${(r.share * 100).toFixed(1)}%`, [by]: r.name })));
}
