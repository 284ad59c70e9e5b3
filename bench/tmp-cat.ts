import fs from 'node:fs';
const p = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8'));
const dt = new Map<number, number>(); for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
const cat = (n: any) => { const u: string = n.callFrame.url; const f: string = n.callFrame.functionName;
  if (!u) return f.startsWith('(') ? f : 'native:' + (['writev','writeUtf8String','parse','Hash','runMicrotasks'].includes(f) ? f : 'other');
  if (u.includes('node_modules/')) return 'pkg:' + u.split('node_modules/')[1]!.split('/').slice(0, u.includes('node_modules/@') ? 2 : 1).join('/');
  if (u.startsWith('node:')) return 'node:' + (/_http|http_common|llhttp/.test(u) ? 'http' : /stream|net/.test(u) ? 'net/streams' : 'other');
  return u.includes('/dist/src/') ? 'src:' + u.split('/dist/src/')[1]!.split('/')[0] : 'other:' + u.slice(-40); };
const out = new Map<string, number>();
for (const n of p.nodes) { const t = dt.get(n.id) ?? 0; const k = cat(n); out.set(k, (out.get(k) ?? 0) + t); }
const total = [...out.values()].reduce((a, b) => a + b, 0);
for (const [k, t] of [...out].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log((t / 1000).toFixed(0).padStart(6), (100 * t / total).toFixed(1).padStart(5) + '%', k);
