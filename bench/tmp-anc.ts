import fs from 'node:fs';
const p = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8'));
const target = new RegExp(process.argv[3]!);
const byId = new Map<number, any>(); for (const n of p.nodes) byId.set(n.id, n);
const parent = new Map<number, number>(); for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const dt = new Map<number, number>(); for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
const name = (n: any) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, '')}:${n.callFrame.lineNumber}`;
const out = new Map<string, number>();
for (const [id, t] of dt) {
  let cur: number | undefined = id; let hit = false; const chain: string[] = [];
  while (cur !== undefined) { const k = name(byId.get(cur)); if (target.test(k)) hit = true; if (hit && k.includes('src/')) { chain.push(k); if (chain.length >= 3) break; } cur = parent.get(cur); }
  if (hit) { const k = chain.join(' <- ') || '(none)'; out.set(k, (out.get(k) ?? 0) + t); }
}
for (const [k, t] of [...out].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log((t / 1000).toFixed(0).padStart(7), k);
