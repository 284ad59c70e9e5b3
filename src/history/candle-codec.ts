/**
 * The compact encoding of one month of daily candles of one series (issue: price history, point 2;
 * figures in docs/history.md). A `candle_month` row holds a month of one (item, market, provider, series)
 * as one `bytea`, so PostgreSQL's per-row cost (about 40 bytes with its index entry) is paid once a month
 * rather than once a day, and a candle costs about 6-12 bytes.
 *
 * Prices are exact: every amount is written as a scaled integer (BigInt) with the row's decimal scale
 * (0-10 places, the most any of its amounts needs), never through a float.
 *
 * Layout: blocks, each a header byte `0x80 + scale` then records, each
 *   `dayOfMonth(1) flags(1) [close - previous close: zigzag varint] [open-close, high-max(o,c), min(o,c)-low:
 *    varints] observations: varint [quantity - previous quantity: zigzag varint]`
 * (the previous close and quantity start at 0 in each block), so a flat day costs 5 bytes.
 * flags: bit0 delisted, bit1 has price, bit2 has quantity, bit3 open/high/low differ from close.
 * Records are appended in write order; a later record for the same day replaces an earlier one (a day
 * re-compacted after a late observation appends its new state). `decodeMonth` returns one candle per day,
 * in day order.
 */

/** One daily candle as stored: amounts are exact decimal strings in the series' currency. */
export interface StoredCandle {
  /** Day of the month, 1-31. */
  day: number;
  open: string | null;
  high: string | null;
  low: string | null;
  close: string | null;
  /** Observations applied that day (0: the day's state was only confirmed by a full scan). */
  observations: number;
  /** Last quantity of the day (listings; for `sales`, units sold that day). */
  quantity: number | null;
  /** The quote ended the day delisted. */
  delisted: boolean;
}

/** A block header is BLOCK + scale (0x80-0x8a): never a day of the month (1-31). */
const BLOCK = 0x80;
const F_DELISTED = 1;
const F_PRICE = 2;
const F_QUANTITY = 4;
const F_RANGE = 8;

/** Decimal places of an amount string (`"87.50"` -> 2). Throws on a string that is not a plain decimal. */
function placesOf(amount: string): number {
  if (!/^-?\d+(\.\d+)?$/.test(amount)) throw new Error(`not a plain decimal amount: ${amount}`);
  const dot = amount.indexOf('.');
  if (dot < 0) return 0;
  let end = amount.length;
  while (end > dot + 1 && amount[end - 1] === '0') end--;
  return end - dot - 1;
}

/** `amount` x 10^scale as a BigInt (exact: scale is at least its decimal places). */
function scaled(amount: string, scale: number): bigint {
  const neg = amount.startsWith('-');
  const body = neg ? amount.slice(1) : amount;
  const [whole, frac = ''] = body.split('.');
  const digits = whole + (frac + '0'.repeat(scale)).slice(0, scale);
  const v = BigInt(digits);
  return neg ? -v : v;
}

/** The decimal string of `v / 10^scale`, without trailing zeros beyond the point. */
function unscaled(v: bigint, scale: number): string {
  const neg = v < 0n;
  let s = (neg ? -v : v).toString();
  if (scale > 0) {
    s = s.padStart(scale + 1, '0');
    const frac = s.slice(s.length - scale).replace(/0+$/, '');
    s = s.slice(0, s.length - scale) + (frac ? `.${frac}` : '');
  }
  return neg ? `-${s}` : s;
}

class Writer {
  private bytes: number[] = [];
  byte(b: number): void {
    this.bytes.push(b & 0xff);
  }
  uvarint(v: bigint): void {
    if (v < 0n) throw new Error('negative unsigned varint');
    while (v >= 0x80n) {
      this.bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.bytes.push(Number(v));
  }
  svarint(v: bigint): void {
    this.uvarint(v >= 0n ? v << 1n : ((-v) << 1n) - 1n);
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly bytes: Uint8Array) {}
  get more(): boolean {
    return this.at < this.bytes.length;
  }
  byte(): number {
    if (this.at >= this.bytes.length) throw new Error('candle record truncated');
    return this.bytes[this.at++]!;
  }
  uvarint(): bigint {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  }
  svarint(): bigint {
    const u = this.uvarint();
    return (u & 1n) === 0n ? u >> 1n : -((u + 1n) >> 1n);
  }
}

/** The scale a set of candles needs (most decimal places of any amount, at most 10). */
function scaleOf(candles: readonly StoredCandle[]): number {
  let scale = 0;
  for (const c of candles) for (const a of [c.open, c.high, c.low, c.close]) if (a !== null) scale = Math.max(scale, placesOf(a));
  if (scale > 10) throw new Error('amounts with more than 10 decimal places');
  return scale;
}

/** The running values a record is written against (reset at each block): the previous close and quantity. */
interface Prev {
  close: bigint;
  quantity: bigint;
}

function writeRecord(w: Writer, c: StoredCandle, scale: number, prev: Prev): void {
  if (!Number.isInteger(c.day) || c.day < 1 || c.day > 31) throw new Error(`day of month out of range: ${c.day}`);
  const hasPrice = c.close !== null;
  const close = hasPrice ? scaled(c.close!, scale) : 0n;
  const open = hasPrice ? scaled(c.open ?? c.close!, scale) : 0n;
  const high = hasPrice ? scaled(c.high ?? c.close!, scale) : 0n;
  const low = hasPrice ? scaled(c.low ?? c.close!, scale) : 0n;
  const range = hasPrice && (open !== close || high !== close || low !== close);
  w.byte(c.day);
  w.byte((c.delisted ? F_DELISTED : 0) | (hasPrice ? F_PRICE : 0) | (c.quantity !== null ? F_QUANTITY : 0) | (range ? F_RANGE : 0));
  if (hasPrice) {
    w.svarint(close - prev.close);
    prev.close = close;
    if (range) {
      const top = open > close ? open : close;
      const bottom = open < close ? open : close;
      if (high < top || low > bottom) throw new Error(`inconsistent candle on day ${c.day}: high below open/close or low above`);
      w.svarint(open - close);
      w.uvarint(high - top);
      w.uvarint(bottom - low);
    }
  }
  if (c.observations < 0) throw new Error(`negative observation count on day ${c.day}`);
  w.uvarint(BigInt(c.observations));
  if (c.quantity !== null) {
    if (c.quantity < 0) throw new Error(`negative quantity on day ${c.day}`);
    w.svarint(BigInt(c.quantity) - prev.quantity);
    prev.quantity = BigInt(c.quantity);
  }
}

/**
 * Encodes candles (any order; one per day) as one block: the bytes of a new month row, or the bytes a
 * compaction appends to an existing row (`data = data || block`; each block carries its own scale).
 * Throws on a day outside 1-31, a negative quantity or count, an amount that is not a plain decimal, or
 * high/low inconsistent with open/close.
 */
export function encodeMonth(candles: readonly StoredCandle[]): Uint8Array {
  const w = new Writer();
  const scale = scaleOf(candles);
  w.byte(BLOCK + scale);
  const prev: Prev = { close: 0n, quantity: 0n };
  for (const c of [...candles].sort((a, b) => a.day - b.day)) writeRecord(w, c, scale, prev);
  return w.done();
}

/** Thrown by the number decoder when a value leaves the safe-integer range; the BigInt decoder takes over. */
class Unsafe extends Error {}

/** The decimal string of `v / 10^scale` for a safe integer `v` (the number twin of `unscaled`). */
function unscaledNumber(v: number, scale: number): string {
  const neg = v < 0;
  let s = String(neg ? -v : v);
  if (scale > 0) {
    if (s.length <= scale) s = '0'.repeat(scale + 1 - s.length) + s;
    let end = s.length;
    while (end > s.length - scale && s.charCodeAt(end - 1) === 48) end--;
    const point = s.length - scale;
    s = end > point ? `${s.slice(0, point)}.${s.slice(point, end)}` : s.slice(0, point);
  }
  return neg ? `-${s}` : s;
}

/**
 * The read path's decoder: the same records as `visitBig`, with every integer held in a JS number. Exact
 * while every value is a safe integer (|v| < 2^53, e.g. 900,719.9254740991 at 10 places); throws `Unsafe`
 * as soon as one is not, so the caller falls back to BigInt. Measured: several times faster than BigInt
 * (docs/history.md, read path).
 */
function visitNumber(bytes: Uint8Array, visit: CandleVisitor): void {
  const n = bytes.length;
  let at = 0;
  let scale = -1;
  let prevClose = 0;
  let prevQuantity = 0;
  const uvarint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (at >= n) throw new Error('candle record truncated');
      const b = bytes[at++]!;
      v += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) break;
      mul *= 128;
      if (mul > 2 ** 49) throw new Unsafe();
    }
    if (v > Number.MAX_SAFE_INTEGER) throw new Unsafe();
    return v;
  };
  const svarint = (): number => {
    const u = uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  };
  const safe = (v: number): number => {
    if (!Number.isSafeInteger(v)) throw new Unsafe();
    return v;
  };
  while (at < n) {
    const first = bytes[at++]!;
    if (first >= BLOCK && first <= BLOCK + 10) {
      scale = first - BLOCK;
      prevClose = 0;
      prevQuantity = 0;
      continue;
    }
    if (scale < 0 || first < 1 || first > 31) throw new Error(`corrupt candle month: byte ${first}`);
    if (at >= n) throw new Error('candle record truncated');
    const flags = bytes[at++]!;
    let close: string | null = null;
    let open: string | null = null;
    let high: string | null = null;
    let low: string | null = null;
    if (flags & F_PRICE) {
      const c = safe(prevClose + svarint());
      prevClose = c;
      close = unscaledNumber(c, scale);
      if (flags & F_RANGE) {
        const o = safe(c + svarint());
        const h = safe((o > c ? o : c) + uvarint());
        const l = safe((o < c ? o : c) - uvarint());
        open = unscaledNumber(o, scale);
        high = unscaledNumber(h, scale);
        low = unscaledNumber(l, scale);
      } else {
        open = close;
        high = close;
        low = close;
      }
    }
    const observations = uvarint();
    let quantity: number | null = null;
    if (flags & F_QUANTITY) {
      prevQuantity = safe(prevQuantity + svarint());
      quantity = prevQuantity;
    }
    visit(first, open, high, low, close, observations, quantity, (flags & F_DELISTED) !== 0);
  }
}

/** The exact decoder for any value (BigInt arithmetic): the fallback of `visitMonth`. */
function visitBig(bytes: Uint8Array, visit: CandleVisitor): void {
  const r = new Reader(bytes);
  let scale = -1;
  const prev: Prev = { close: 0n, quantity: 0n };
  while (r.more) {
    const first = r.byte();
    if (first >= BLOCK && first <= BLOCK + 10) {
      scale = first - BLOCK;
      prev.close = 0n;
      prev.quantity = 0n;
      continue;
    }
    if (scale < 0 || first < 1 || first > 31) throw new Error(`corrupt candle month: byte ${first}`);
    const day = first;
    const flags = r.byte();
    let close: string | null = null;
    let open: string | null = null;
    let high: string | null = null;
    let low: string | null = null;
    if (flags & F_PRICE) {
      const c = prev.close + r.svarint();
      prev.close = c;
      let o = c;
      let h = c;
      let l = c;
      if (flags & F_RANGE) {
        o = c + r.svarint();
        h = (o > c ? o : c) + r.uvarint();
        l = (o < c ? o : c) - r.uvarint();
      }
      close = unscaled(c, scale);
      open = unscaled(o, scale);
      high = unscaled(h, scale);
      low = unscaled(l, scale);
    }
    const observations = Number(r.uvarint());
    let quantity: number | null = null;
    if (flags & F_QUANTITY) {
      prev.quantity += r.svarint();
      quantity = Number(prev.quantity);
    }
    visit(day, open, high, low, close, observations, quantity, (flags & F_DELISTED) !== 0);
  }
}

/**
 * Called once per stored record of a month row, in write order: a day may come more than once (an appended
 * re-compaction), and the last call for a day is its state. Amounts are exact decimal strings.
 */
export type CandleVisitor = (
  day: number,
  open: string | null,
  high: string | null,
  low: string | null,
  close: string | null,
  observations: number,
  quantity: number | null,
  delisted: boolean,
) => void;

/**
 * Calls `visit` for each record of a month row's bytes (one or more blocks), without building a candle
 * object: the read path builds its own answer objects from them. Exact for any stored value: plain numbers
 * while every integer is safe; otherwise the records are visited again from the start in BigInt (so every
 * day's last call still carries its final state). Throws on corrupt or truncated bytes.
 */
export function visitMonth(bytes: Uint8Array, visit: CandleVisitor): void {
  try {
    visitNumber(bytes, visit);
  } catch (e) {
    if (!(e instanceof Unsafe)) throw e;
    visitBig(bytes, visit);
  }
}

/**
 * Decodes a month row's bytes (one or more blocks) to one candle per day, in day order; the last record of a
 * day wins. Exact for any stored value (`visitMonth`). Throws on corrupt or truncated bytes.
 */
export function decodeMonth(bytes: Uint8Array): StoredCandle[] {
  const slots: (StoredCandle | undefined)[] = new Array(32);
  visitMonth(bytes, (day, open, high, low, close, observations, quantity, delisted) => {
    slots[day] = { day, open, high, low, close, observations, quantity, delisted };
  });
  const out: StoredCandle[] = [];
  for (let d = 1; d <= 31; d++) if (slots[d] !== undefined) out.push(slots[d]!);
  return out;
}
