import pg from 'pg';
import { STORED_QUOTE_TEXTS_SQL, QUOTE_TEXTS_SQL } from '../dist/src/quotes/quotes.js';
const c = new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1:5432/qg_scale' });
await c.connect();
const names = (await c.query(`select i.market_hash_name from item i join quote_answer a on a.item_id=i.id where app_id='730'`)).rows.map(r=>r.market_hash_name);
const pid = (await c.query('select pg_backend_pid() p')).rows[0].p;
const fs = await import('node:fs');
const cpu = () => { const f = fs.readFileSync(`/proc/${pid}/stat`,'utf8').split(') ')[1].split(' '); return (Number(f[11])+Number(f[12]))*10; };
const V = `SELECT i.market_hash_name, a.head, a.tail, v.* FROM item i JOIN quote_answer a ON a.item_id = i.id
LEFT JOIN LATERAL (SELECT v.mid_amount::text AS price, v.valuation_date FROM valuation v WHERE v.item_id = i.id ORDER BY v.valuation_date DESC LIMIT 1) v ON true
WHERE i.app_id=$1 AND i.market_hash_name = ANY($2::text[])
 AND a.epoch = (SELECT epoch FROM quote_answer_epoch WHERE id=1)
 AND a.seq >= COALESCE((SELECT pruned_through FROM quote_change_horizon WHERE id=1),0)
 AND NOT EXISTS (SELECT 1 FROM quote_change c WHERE c.item_id=i.id AND c.seq > a.seq AND c.market_code <> 'CSCP')`;
for (const [label, text, k] of [['valid x1', V, 1], ['valid x10', V, 10], ['render x1', QUOTE_TEXTS_SQL, 1], ['stored x1', STORED_QUOTE_TEXTS_SQL, 1], ['stored x10', STORED_QUOTE_TEXTS_SQL, 10], ['plain x1', `select a.head, a.tail from quote_answer a join item i on i.id=a.item_id where i.app_id=$1 and i.market_hash_name = any($2::text[])`, 1], ['stored x1', STORED_QUOTE_TEXTS_SQL, 1]]) {
  const n = 1000; const c0 = cpu(); const t0 = performance.now();
  for (let i = 0; i < n; i++) await c.query({ name: label.replace(/ .*/, '')+k, text, values: ['730', Array.from({length:k}, () => names[Math.floor(Math.random()*names.length)])] });
  console.log(label, 'wall us/stmt', ((performance.now()-t0)/n*1000).toFixed(0), 'pg cpu us/stmt', ((cpu()-c0)/n*1000).toFixed(0));
}
await c.end();
