/**
 * Buff163 `/api/market/goods` items to quotes: one pure mapping shared by the file importer
 * (collectors/importers.ts readBuffGoods, the bundled data/prices/buff163_goods_2026-04-27 pages) and the live
 * collector (collectors/sources/buff163.ts), so both read Buff163's format by the same rules.
 *
 * Rules (README "Data choices"): ask = `sell_min_price` with quantity `sell_num`, bid = `buy_max_price` with
 * quantity `buy_num`, in CNY; a side is reported only when its count is above 0 and its price above 0 (Buff163
 * sends "0" for an empty side). Prices stay the upstream's decimal strings ("2349", "1.29").
 */
import { toMoney } from '../lib/money.js';

/** The fields of one Buff163 goods item that the mapping reads (the upstream sends many more; they are ignored). */
export interface BuffGoodsItem {
  /** Steam app id (730 for CS2). */
  appid: number;
  market_hash_name: string;
  /** Lowest sell listing, CNY, decimal string. */
  sell_min_price: string;
  /** Number of sell listings. */
  sell_num: number;
  /** Highest buy order, CNY, decimal string ("0" when none). */
  buy_max_price: string;
  /** Number of buy orders. */
  buy_num: number;
}

/** One side of one Buff163 item: best price (CNY decimal string) and exact count. */
export interface BuffSideQuote {
  side: 'ask' | 'bid';
  price: string;
  quantity: number;
}

/** A Buff163 goods item that lacks a required field or has one of the wrong type (a renamed or changed format). */
export class BuffFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuffFormatError';
  }
}

const DECIMAL = /^\d{1,15}(\.\d{1,10})?$/;

/**
 * Checks one `data.items[]` element and returns its typed fields.
 * Throws BuffFormatError naming the field when a required field is missing or of the wrong type.
 */
export function parseBuffGoodsItem(raw: unknown, where = 'item'): BuffGoodsItem {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BuffFormatError(`${where}: not an object`);
  const o = raw as Record<string, unknown>;
  const str = (k: string): string => {
    const v = o[k];
    if (typeof v !== 'string') throw new BuffFormatError(`${where}: field ${k} missing or not a string`);
    return v;
  };
  const price = (k: string): string => {
    const v = str(k);
    if (!DECIMAL.test(v)) throw new BuffFormatError(`${where}: field ${k} is not a decimal string`);
    return v;
  };
  const count = (k: string): number => {
    const v = o[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new BuffFormatError(`${where}: field ${k} missing or not a count`);
    return v;
  };
  const appid = o.appid;
  if (typeof appid !== 'number' || !Number.isSafeInteger(appid)) throw new BuffFormatError(`${where}: field appid missing or not an integer`);
  return {
    appid,
    market_hash_name: str('market_hash_name'),
    sell_min_price: price('sell_min_price'),
    sell_num: count('sell_num'),
    buy_max_price: price('buy_max_price'),
    buy_num: count('buy_num'),
  };
}

/** The ask and bid of one item by the rules above (0, 1 or 2 sides). */
export function buffGoodsQuotes(item: BuffGoodsItem): BuffSideQuote[] {
  const out: BuffSideQuote[] = [];
  if (item.sell_num > 0 && toMoney(item.sell_min_price).gt(0)) out.push({ side: 'ask', price: item.sell_min_price, quantity: item.sell_num });
  if (item.buy_num > 0 && toMoney(item.buy_max_price).gt(0)) out.push({ side: 'bid', price: item.buy_max_price, quantity: item.buy_num });
  return out;
}
