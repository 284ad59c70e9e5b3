import fs from 'node:fs';
const p = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8'));
const target = process.argv[3]!;
const byId = new Map<number, any>(p.nodes.map((n: any) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const hits = new Map<number, number>();
for (const id of p.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
const dt = (p.endTime - p.startTime) / p.samples.length / 1000;
const callers = new Map<string, number>();
for (const n of p.nodes) {
  if (n.callFrame.functionName !== target) continue;
  const h = (hits.get(n.id) ?? 0) * dt;
  let chain: string[] = []; let id = parent.get(n.id);
  for (let k = 0; k < 3 && id !== undefined; k++) { const f = byId.get(id).callFrame; chain.push(`${f.functionName}:${f.url.split('/').pop()}:${f.lineNumber}`); id = parent.get(id); }
  const key = chain.join(' < ');
  callers.set(key, (callers.get(key) ?? 0) + h);
}
for (const [k, v] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(v.toFixed(0).padStart(6), k);
