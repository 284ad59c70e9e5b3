import fs from 'node:fs';
const p = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8'));
const byId = new Map<number, any>();
for (const n of p.nodes) byId.set(n.id, n);
const dt = new Map<number, number>();
for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map<string, number>();
const name = (n: any) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, '')}:${n.callFrame.lineNumber}`;
for (const [id, t] of dt) {
  const seen = new Set<string>();
  let cur: number | undefined = id;
  while (cur !== undefined) { const k = name(byId.get(cur)); if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + t); } cur = parent.get(cur); }
}
const filt = process.argv[3] ? new RegExp(process.argv[3]) : null;
const rows = [...incl].filter(([k]) => !filt || filt.test(k)).sort((a, b) => b[1] - a[1]).slice(0, Number(process.argv[4] ?? 60));
for (const [k, t] of rows) console.log((t / 1000).toFixed(0).padStart(7), k);
