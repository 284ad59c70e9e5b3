/**
 * Trade-hold days per market (issue 44, point 3; data/trade-holds.json with its PROVENANCE note): how many days an
 * item bought on a market stays locked before it can be traded to another market and sold there. Read once at
 * start and validated (zod); a market the file does not list, or lists with `hold_days: null`, has an unknown hold.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../lib/paths.js';

/** One market's hold: `days` null = unknown; `source` where the figure comes from; `note` what it covers or why unknown. */
export interface TradeHold {
  marketCode: string;
  days: number | null;
  source: string | null;
  note: string;
}

const fileSchema = z.strictObject({
  description: z.string(),
  as_of: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  holds: z.array(
    z.strictObject({ market_code: z.string().min(1), hold_days: z.int().min(0).max(365).nullable(), source: z.string().nullable(), note: z.string() }),
  ),
});

/** Where the holds live. */
export const TRADE_HOLDS_FILE = path.join(projectRoot, 'data', 'trade-holds.json');

/** Reads and validates the file; throws at start when it breaks its shape or lists a market twice. */
export function loadTradeHolds(file = TRADE_HOLDS_FILE): ReadonlyMap<string, TradeHold> {
  const doc = fileSchema.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  const out = new Map<string, TradeHold>();
  for (const h of doc.holds) {
    if (out.has(h.market_code)) throw new Error(`${file}: ${h.market_code} appears twice`);
    out.set(h.market_code, { marketCode: h.market_code, days: h.hold_days, source: h.source, note: h.note });
  }
  return out;
}

let cached: ReadonlyMap<string, TradeHold> | null = null;

/** The bundled holds, read on first use. */
export function tradeHolds(): ReadonlyMap<string, TradeHold> {
  return (cached ??= loadTradeHolds());
}

/** The hold of buying on `marketCode`: the file's row, or an unknown hold when the market is not listed. */
export function holdOf(marketCode: string, holds: ReadonlyMap<string, TradeHold> = tradeHolds()): TradeHold {
  return holds.get(marketCode) ?? { marketCode, days: null, source: null, note: 'Unknown: the market is not listed in data/trade-holds.json.' };
}
