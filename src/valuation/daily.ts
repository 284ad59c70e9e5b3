/**
 * The CSCP valuation job, database side (spec: ValuationOut, MarketQuoteOut `CSCP` / `mid`): reads the
 * daily closes of the seven days before the valuation date, fits the run's model on a sample, values
 * every item with the pure code of src/valuation/, and publishes the date's valuations in one
 * transaction together with its `valuation_run` row. The CSCP quote is then served by the quotes query
 * (src/quotes/quotes.ts: the latest valuation per item), on /prices, the batch, GraphQL and the export.
 *
 * Window for date D (UTC): closes of days D-7 .. D-1. Per market and side the latest close in the
 * window is used (precedence among providers: listed, then latest day, then direct, then latest
 * confirmation); a delisted close or one without a price does not contribute. A close's age is
 * measured from its confirmation to D 00:00 UTC, so recomputing an old date gives the same answer.
 * Published: amounts in CNY (6 decimals, AMOUNT_DP), `computed_at` = computation time (the quote's changed_at and
 * fresh_at), valuation_date = D. Retention: every valuation (the CSCP history series); closes of the 10 newest
 * days, older ones once compacted into the price history (src/history/candles.ts).
 */
import { quotesChanged, signalQuotes } from '../quotes/quote-cache.js';
import { recordChanges } from '../quotes/changes.js';
import { readCurrencyRates } from '../catalogue/catalogue.js';
import { prismaSql, type Database } from '../db/client.js';
import { toMoney } from '../lib/money.js';
import { exactRuleOf } from '../fees/exact-rules.js';
import { formatDate } from '../lib/time.js';
import { compactHistory } from '../history/candles.js';
import { BIWEIGHT_C, MIN_KNOWN_FEE_MARKETS, NU0, type SideConsensus } from './consensus.js';
import { askPath, bidPath, UNKNOWN_FEE_ALLOWANCE, type FeePath } from './fee-path.js';
import { ChainError, type Chain, type Conversion, type MarketFees, type Step, type UsdRates } from '../fees/chain.js';
import { HalfSpreadTable, priceBand, type HalfSpread } from './half-spread.js';
import { itemType } from '../search/item-type.js';
import { logHalfSpread, oneSided, twoSided, valueSides, type CloseQuote, type ItemValuation, type SidesResult, type ValuationModel } from './item.js';
import { marketSigma, ModelFitter, type FittedModel, type SampleSeries } from './model.js';
import { LEARNING_WINDOW_DAYS, learnFrom, marketTerm, type DayLearning, type Learned } from './learning.js';

/** Days of closes before the valuation date that feed it (spec: "the seven days before this date"). */
export const WINDOW_DAYS = 7;
/** Newest days of closes kept (at least the 8 the job and a re-run of yesterday need); older days live on as candles. */
export const CLOSE_RETENTION_DAYS = 10;
/** Items sampled to fit the run's model. */
export const SAMPLE_ITEMS = 8000;
/** Sampled items per query (about 70k closes at 40 markets x 2 sides x 7 days). */
const SAMPLE_CHUNK = 125;
/** Item ids per page while valuing. */
const PAGE_IDS = 500;
/** Pages read at once while valuing (each one database connection). */
const PAGES_AHEAD = 3;
const DAY_MS = 86_400_000;

/**
 * The results of `read(0)` ... `read(count - 1)` in order, with up to PAGES_AHEAD reads in flight: the database
 * (its own processes, the sorts of two pages on the server's two cores) and this process work side by side
 * (bench:valuation, docs/valuation.md section 6). Reads no longer wanted are never left to reject unobserved.
 */
async function* readAhead<T>(count: number, read: (k: number) => Promise<T>): AsyncGenerator<T> {
  const reads: Promise<T>[] = [];
  const start = (k: number) => {
    if (k < count) reads[k] = read(k);
  };
  try {
    for (let k = 0; k < PAGES_AHEAD; k++) start(k);
    for (let k = 0; k < count; k++) {
      const result = await reads[k]!;
      delete reads[k];
      start(k + PAGES_AHEAD);
      yield result;
    }
  } finally {
    for (const p of reads) p?.catch(() => undefined);
  }
}

/** A UTC date (midnight) from `YYYY-MM-DD`; throws on anything else. */
export function parseDate(s: string): Date {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) throw new RangeError(`not a YYYY-MM-DD date: ${s}`);
  const d = new Date(`${s}T00:00:00.000Z`);
  if (Number.isNaN(d.getTime()) || formatDate(d) !== s) throw new RangeError(`not a calendar date: ${s}`);
  return d;
}

/** The UTC day (midnight) of an instant. */
export function utcDay(t: Date): Date {
  return new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS);
}

// ---------------------------------------------------------------------------------------------------
// Fees and rates

/** The official fee schedules, currencies and fee paths of one run. */
export class FeeBook {
  private readonly paths = new Map<string, FeePath | null>();
  /** Why a path could not be computed, by `MARKET/side/CURRENCY`. */
  readonly failures = new Map<string, string>();
  /**
   * `rates`: USD value per currency code; `fees`: schedules by website code; `rateDates`: the day each rate
   * was published (YYYY-MM-DD, absent = not known).
   */
  constructor(
    readonly rates: UsdRates,
    private readonly fees: ReadonlyMap<string, MarketFees>,
    readonly rateDates: ReadonlyMap<string, string> = new Map(),
  ) {}

  /** The fee schedule of a market (unknown markets: every slot null). */
  feesOf(market: string): MarketFees {
    return this.fees.get(market) ?? { deposit: null, sale: null, withdraw: null };
  }

  /** The path of a market, side and currency (cached); null when it cannot be computed. */
  path(market: string, side: 'ask' | 'bid', currency: string): FeePath | null {
    const key = `${market}/${side}/${currency}`;
    if (this.paths.has(key)) return this.paths.get(key)!;
    let p: FeePath | null = null;
    try {
      p = side === 'ask' ? askPath(this.feesOf(market), currency, this.rates) : bidPath(this.feesOf(market), currency, this.rates);
    } catch (e) {
      if (!(e instanceof ChainError)) throw e;
      this.failures.set(key, e.message);
    }
    this.paths.set(key, p);
    return p;
  }

  /** Every path computed so far, for the run's stats: key -> {a, b, unknown}. */
  summary(): Record<string, { a: string; b: string; unknown: string[] } | null> {
    const out: Record<string, { a: string; b: string; unknown: string[] } | null> = {};
    for (const [k, p] of [...this.paths.entries()].sort(([x], [y]) => (x < y ? -1 : 1))) out[k] = p && { a: p.a.toFixed(), b: p.b.toFixed(), unknown: p.unknown };
    return out;
  }
}

/**
 * Loads currencies, the official slots in force on the UTC day of `asOf` (default now: for each website
 * and purpose the version with the latest `valid_from` on or before it) and their chains into a FeeBook.
 */
export async function loadFeeBook(db: Pick<Database, 'query'>, asOf: Date = new Date()): Promise<FeeBook> {
  const currencies = await readCurrencyRates(db);
  const rates = new Map(currencies.map((c) => [c.code, c.usdRate]));
  const rateDates = new Map(currencies.filter((c) => c.rateDate !== null).map((c) => [c.code, c.rateDate!]));
  const codeOf = new Map(currencies.map((c) => [c.id, c.code]));
  const converts = new Map(
    (
      await db.query<{ id: number; from_currency_id: number; to_currency_id: number; mode: 'auto' | 'fixed'; rate: string | null }>(
        `SELECT id, from_currency_id, to_currency_id, mode::text AS mode, rate::text AS rate FROM convert_operator`,
      )
    ).map((r): [number, Conversion] => [
      r.id,
      { from: codeOf.get(r.from_currency_id) ?? `#${r.from_currency_id}`, to: codeOf.get(r.to_currency_id) ?? `#${r.to_currency_id}`, mode: r.mode, rate: r.rate === null ? null : toMoney(r.rate) },
    ]),
  );
  const groups = new Map<number, { rule: 'min' | 'max' | 'avg'; members: Conversion[] }>();
  for (const g of await db.query<{ id: number; rule: 'min' | 'max' | 'avg' }>(`SELECT id, rule::text AS rule FROM convert_operator_group`)) groups.set(g.id, { rule: g.rule, members: [] });
  for (const m of await db.query<{ group_id: number; convert_operator_id: number }>(`SELECT group_id, convert_operator_id FROM convert_operator_group_member ORDER BY group_id, position`)) {
    const c = converts.get(m.convert_operator_id);
    if (c) groups.get(m.group_id)?.members.push(c);
  }
  const feeOps = new Map(
    (await db.query<{ id: number; operator: 'add' | 'sub' | 'mul' | 'div'; value: string; currency_code: string | null }>(`SELECT id, operator::text AS operator, value::text AS value, currency_code FROM fee_operator`)).map(
      (r) => [r.id, r] as const,
    ),
  );
  const slots = await db.query<{ website_code: string; purpose: 'deposit' | 'sale' | 'withdraw'; chain_id: number; name: string | null; start_currency_code: string | null; exact_rule: unknown }>(
    `SELECT DISTINCT ON (s.website_code, s.purpose) s.website_code, s.purpose::text AS purpose, s.chain_id, c.name, c.start_currency_code, c.exact_rule
       FROM fee_schedule_slot s JOIN calculation_chain c ON c.id = s.chain_id
      WHERE s.valid_from <= $1::date
      ORDER BY s.website_code, s.purpose, s.valid_from DESC`,
    [formatDate(asOf)],
  );
  const steps = await db.query<{ chain_id: number; kind: Step['kind']; fee_operator_id: number | null; convert_operator_id: number | null; group_id: number | null }>(
    `SELECT chain_id, kind::text AS kind, fee_operator_id, convert_operator_id, group_id FROM chain_step ORDER BY chain_id, position`,
  );
  const chainSteps = new Map<number, Step[]>();
  for (const s of steps) {
    let list = chainSteps.get(s.chain_id);
    if (!list) chainSteps.set(s.chain_id, (list = []));
    if (s.kind === 'fee') {
      const op = feeOps.get(s.fee_operator_id!)!;
      list.push({ kind: 'fee', operator: op.operator, value: toMoney(op.value), currencyCode: op.currency_code });
    } else if (s.kind === 'convert') list.push({ kind: 'convert', convert: converts.get(s.convert_operator_id!)! });
    else list.push({ kind: 'convert_operator_group', ...groups.get(s.group_id!)! });
  }
  const fees = new Map<string, MarketFees>();
  for (const w of await db.query<{ code: string }>(`SELECT code FROM website`)) fees.set(w.code, { deposit: null, sale: null, withdraw: null });
  for (const s of slots) {
    const chain: Chain = { id: s.chain_id, name: s.name, startCurrency: s.start_currency_code, steps: chainSteps.get(s.chain_id) ?? [], exactRule: exactRuleOf(s.exact_rule) };
    fees.get(s.website_code)![s.purpose] = chain;
  }
  return new FeeBook(rates, fees, rateDates);
}

// ---------------------------------------------------------------------------------------------------
// Closes

interface CloseRow {
  item_id: number;
  market_hash_name: string;
  market_code: string;
  provider_code: string;
  side: 'ask' | 'bid';
  currency_code: string;
  price: string | null;
  delisted: boolean;
  /** confirmed_at as epoch milliseconds (a float8: cheaper to read than a timestamp text per close). */
  confirmed_ms: number;
}

const WINDOW_SQL = `
WITH per_provider AS (
  SELECT DISTINCT ON (c.item_id, c.market_code, c.provider_code, c.side)
         c.item_id, c.market_code, c.provider_code, c.side, c.currency_code, c.price, c.delisted, c.day, c.confirmed_at
    FROM daily_close c
   WHERE c.item_id BETWEEN $1 AND $2 AND c.day >= $3::date AND c.day < $4::date
   ORDER BY c.item_id, c.market_code, c.provider_code, c.side, c.day DESC
)
SELECT DISTINCT ON (p.item_id, p.market_code, p.side)
       p.item_id, i.market_hash_name, p.market_code, p.provider_code, p.side::text AS side, p.currency_code,
       p.price::text AS price, p.delisted, (extract(epoch FROM p.confirmed_at) * 1000)::float8 AS confirmed_ms
  FROM per_provider p JOIN item i ON i.id = p.item_id
 ORDER BY p.item_id, p.market_code, p.side, p.delisted, p.day DESC, (p.provider_code = p.market_code) DESC,
          p.confirmed_at DESC, p.provider_code`;

/** The latest usable close per market and side of each item with ids in [lo, hi], for date D. */
export async function windowCloses(db: Pick<Database, 'query'>, lo: number, hi: number, date: Date): Promise<Map<number, { name: string; closes: CloseQuote[] }>> {
  const from = new Date(date.getTime() - WINDOW_DAYS * DAY_MS);
  const rows = await db.query<CloseRow>(WINDOW_SQL, [lo, hi, formatDate(from), formatDate(date)]);
  const out = new Map<number, { name: string; closes: CloseQuote[] }>();
  for (const r of rows) {
    if (r.delisted || r.price === null) continue;
    const price = toMoney(r.price);
    if (!price.gt(0)) continue;
    let item = out.get(r.item_id);
    if (!item) out.set(r.item_id, (item = { name: r.market_hash_name, closes: [] }));
    item.closes.push({
      market: r.market_code,
      provider: r.provider_code,
      side: r.side,
      currency: r.currency_code,
      price,
      ageDays: Math.max(0, (date.getTime() - Number(r.confirmed_ms)) / DAY_MS),
    });
  }
  return out;
}

/**
 * Fits the run's model on a sample of items (every k-th item in market hash name order, up to SAMPLE_ITEMS, so
 * the sample, and so the valuation, depends on the data only, not on the order it was imported in), read
 * SAMPLE_CHUNK items at a time and handed to the fitter item by item, so memory stays small at any scale. The
 * order names are sorted in is app id, then market hash name in the "C" collation (code points), so the sample
 * does not depend on the database's locale either. The fitter's result does not depend on the order items reach
 * it (a chunk's rows come in item id order): each item's residuals are its own, and every fitted figure is a
 * percentile of a multiset (model.ts). One close per market, side and day (direct first), listed only.
 * Statistics only: log cash amounts in floating point (ln(a x price + b) with the path's coefficients as floats).
 * Exported for test/integration/real-data.test.ts (the same data renumbered fits the same model).
 */
export async function fitSample(db: Pick<Database, 'query'>, date: Date, book: FeeBook): Promise<FittedModel> {
  const from = new Date(date.getTime() - WINDOW_DAYS * DAY_MS);
  // Items with quotes (an item known only from imported history has no closes and would thin the sample).
  const ids = (
    await db.query<{ id: number }>(
      `SELECT i.id FROM item i WHERE EXISTS (SELECT 1 FROM source_quote q WHERE q.item_id = i.id)
        ORDER BY i.app_id COLLATE "C", i.market_hash_name COLLATE "C"`,
    )
  ).map((r) => r.id);
  const step = Math.max(1, Math.ceil(ids.length / SAMPLE_ITEMS));
  const sample = ids.filter((_, i) => i % step === 0);
  const fitter = new ModelFitter();
  const floats = new Map<string, { a: number; b: number } | null>();
  const coefficients = (market: string, side: 'ask' | 'bid', currency: string) => {
    const key = `${market}/${side}/${currency}`;
    if (!floats.has(key)) {
      const p = book.path(market, side, currency);
      floats.set(key, p && { a: p.a.toNumber(), b: p.b.toNumber() });
    }
    return floats.get(key)!;
  };
  const chunk = (i: number) =>
    db.query<{ item_id: number; market_code: string; side: 'ask' | 'bid'; currency_code: string; p: number; day: string }>(
      `SELECT DISTINCT ON (c.item_id, c.market_code, c.side, c.day)
              c.item_id, c.market_code, c.side::text AS side, c.currency_code, c.price::float8 AS p, c.day::text AS day
         FROM daily_close c
        WHERE c.item_id = ANY($1::int[]) AND c.day >= $2::date AND c.day < $3::date AND NOT c.delisted AND c.price IS NOT NULL
        ORDER BY c.item_id, c.market_code, c.side, c.day, (c.provider_code = c.market_code) DESC, c.confirmed_at DESC`,
      [sample.slice(i, i + SAMPLE_CHUNK), formatDate(from), formatDate(date)],
    );
  /** Day numbers (days since the epoch) by their YYYY-MM-DD text: the window has seven. */
  const dayNumbers = new Map<string, number>();
  for await (const rows of readAhead(Math.ceil(sample.length / SAMPLE_CHUNK), (k) => chunk(k * SAMPLE_CHUNK))) {
    let current = -1;
    let series = new Map<string, SampleSeries>();
    const flush = () => {
      if (series.size > 0) fitter.addItem([...series.values()]);
      series = new Map();
    };
    for (const r of rows) {
      if (r.item_id !== current) {
        flush();
        current = r.item_id;
      }
      const k = coefficients(r.market_code, r.side, r.currency_code);
      const cash = k ? k.a * Number(r.p) + k.b : NaN;
      if (!(cash > 0)) continue;
      const key = `${r.market_code}/${r.side}`;
      let s = series.get(key);
      if (!s) series.set(key, (s = { market: r.market_code, side: r.side, closes: [] }));
      let day = dayNumbers.get(r.day);
      if (day === undefined) dayNumbers.set(r.day, (day = parseDate(r.day).getTime() / DAY_MS));
      s.closes.push({ day, y: Math.log(cash) });
    }
    flush();
  }
  return fitter.result();
}

// ---------------------------------------------------------------------------------------------------
// The run

/** One item's valuation with what the docs and `valuation explain` show. */
export interface ValuedItem extends ItemValuation {
  itemId: number;
  marketHashName: string;
  /** The closes it was valued from (only with `keepCloses`, for the backtest). */
  closes?: CloseQuote[];
}

/** Per-source detail of an explained item. */
export interface ExplainedItem {
  marketHashName: string;
  closes: (CloseQuote & { path: { a: string; b: string; unknown: string[] } | null })[];
  sides: SidesResult | null;
  valuation: ItemValuation | null;
}

/**
 * What the valuation of `date` learns from (valuation/learning.ts): the stored learning of the scored days in
 * [date - LEARNING_WINDOW_DAYS, date - 1] (valuation/accuracy.ts writes one per scored day).
 */
export async function loadLearned(db: Pick<Database, 'query'>, date: Date): Promise<Learned> {
  const rows = await db.query<{ stats: DayLearning }>(
    `SELECT stats FROM valuation_learning WHERE valuation_date < $1::date AND valuation_date >= $1::date - $2::int ORDER BY valuation_date`,
    [formatDate(date), LEARNING_WINDOW_DAYS],
  );
  return learnFrom(rows.map((r) => r.stats));
}

/** What a computation produced (not yet stored). */
export interface ValuationComputation {
  date: Date;
  items: ValuedItem[];
  stats: {
    window: { from: string; to: string };
    model: FittedModel;
    halfSpreads: ReturnType<HalfSpreadTable['summary']>;
    feePaths: ReturnType<FeeBook['summary']>;
    constants: Record<string, unknown>;
    /** The calibration factors and market accuracies it used (valuation/learning.ts). */
    learned: Learned;
    counts: { items: number; twoSided: number; oneSided: number; crossedBids: number; unpriced: number };
  };
  explained: ExplainedItem[];
}

/**
 * Values every item with closes in the window of `date` (nothing is stored). `explain` names items whose
 * sources are returned in detail; `biweightC` replaces the biweight constant and `learned` what the scored days
 * before taught (default: loadLearned; the backtests pass their own). Reads in pages of item ids, so memory
 * stays bounded by one page plus the results.
 */
export async function computeValuations(
  db: Pick<Database, 'query'>,
  date: Date,
  opts: { explain?: string[]; keepCloses?: boolean; biweightC?: number; learned?: Learned; stopped?: () => boolean } = {},
): Promise<ValuationComputation> {
  const cancelled = () => {
    if (opts.stopped?.()) throw new ValuationCancelled();
  };
  const book = await loadFeeBook(db, date); // the schedules in force on the day it values
  const fitted = await fitSample(db, date, book);
  cancelled();
  const learned = opts.learned ?? (await loadLearned(db, date));
  const biweightC = opts.biweightC ?? BIWEIGHT_C;
  const model: ValuationModel = {
    marketSigma: (market, side) => marketTerm(marketSigma(fitted, market, side), learned.markets[`${market}/${side}`]?.accuracy),
    tau: fitted.tau,
    path: (market, side, currency) => book.path(market, side, currency),
    biweightC,
  };
  const explainSet = new Set(opts.explain ?? []);
  const explained: ExplainedItem[] = [];
  const items: ValuedItem[] = [];
  const pending: { itemId: number; name: string; ask: SideConsensus; type: string; band: number; closes: CloseQuote[] }[] = [];
  const table = new HalfSpreadTable();
  let crossedBids = 0;
  let unpriced = 0;
  const [{ lo, hi }] = (await db.query<{ lo: number | null; hi: number | null }>(`SELECT min(id) AS lo, max(id) AS hi FROM item`)) as [{ lo: number | null; hi: number | null }];
  const first = lo ?? 1;
  const pages = hi === null ? 0 : Math.ceil((hi - first + 1) / PAGE_IDS);
  for await (const page of readAhead(pages, (k) => windowCloses(db, first + k * PAGE_IDS, first + (k + 1) * PAGE_IDS - 1, date))) {
    cancelled();
    for (const [itemId, { name, closes }] of page) {
      const sides = valueSides(closes, model);
      const explain = explainSet.has(name) ? { marketHashName: name, closes: closes.map((c) => ({ ...c, path: pathJson(book.path(c.market, c.side, c.currency)) })), sides, valuation: null as ItemValuation | null } : null;
      if (explain) explained.push(explain);
      if (!sides) continue;
      crossedBids += sides.crossed.length;
      unpriced += sides.unpriced.length;
      if (sides.bid) {
        const v = twoSided(sides, learned.factors);
        items.push({ itemId, marketHashName: name, ...v, ...(opts.keepCloses ? { closes } : {}) });
        table.add(itemType(name), priceBand(v.askAmount), logHalfSpread(v));
        if (explain) explain.valuation = v;
      } else {
        // Its closes are kept only when asked for (the backtest): at full scale they are most of the run's memory.
        pending.push({ itemId, name, ask: sides.ask, type: itemType(name), band: priceBand(sides.ask.amount), closes: opts.keepCloses ? closes : [] });
      }
    }
  }
  const twoSidedCount = items.length;
  for (const p of pending) {
    const hs: HalfSpread = table.lookup(p.type, p.band);
    const v = oneSided(p.ask, hs, learned.factors);
    items.push({ itemId: p.itemId, marketHashName: p.name, ...v, ...(opts.keepCloses ? { closes: p.closes } : {}) });
    const ex = explained.find((e) => e.marketHashName === p.name);
    if (ex) ex.valuation = v;
  }
  return {
    date,
    items,
    explained,
    stats: {
      window: { from: formatDate(new Date(date.getTime() - WINDOW_DAYS * DAY_MS)), to: formatDate(new Date(date.getTime() - DAY_MS)) },
      model: fitted,
      halfSpreads: table.summary(),
      feePaths: book.summary(),
      constants: {
        biweight_c: biweightC,
        nu0: NU0,
        min_known_fee_markets: MIN_KNOWN_FEE_MARKETS,
        unknown_fee_allowance: Object.fromEntries(Object.entries(UNKNOWN_FEE_ALLOWANCE).map(([k, v]) => [k, v.toFixed()])),
      },
      learned,
      counts: { items: items.length, twoSided: twoSidedCount, oneSided: items.length - twoSidedCount, crossedBids, unpriced },
    },
  };
}

function pathJson(p: FeePath | null): { a: string; b: string; unknown: string[] } | null {
  return p && { a: p.a.toFixed(), b: p.b.toFixed(), unknown: p.unknown };
}

/** What a stored run published. */
export interface ValuationRunResult {
  date: string;
  items: number;
  twoSided: number;
  oneSided: number;
  durationMs: number;
  computedAt: Date;
}

const INSERT_SQL = `
INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided,
                       ask_quote_count, bid_quote_count, computed_at, ask_uncertainty, bid_uncertainty)
SELECT t.item_id, $2::date, t.mid, t.ask, t.bid, t.u, t.two, t.na, t.nb, $3::timestamptz, t.ua, t.ub
  FROM unnest($1::int[], $4::numeric[], $5::numeric[], $6::numeric[], $7::float8[], $8::bool[], $9::int[], $10::int[], $11::float8[], $12::float8[])
    AS t(item_id, mid, ask, bid, u, two, na, nb, ua, ub)`;

/**
 * Publishes a computation: in one transaction replaces the date's valuations and writes its
 * valuation_run row (the caller then compacts history and prunes old closes: pruneValuationData).
 */
export async function storeValuations(db: Database, c: ValuationComputation, computedAt: Date, durationMs: number): Promise<ValuationRunResult> {
  const day = formatDate(c.date);
  const stats = JSON.stringify(c.stats);
  await db.prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`DELETE FROM valuation WHERE valuation_date = $1::date`, day);
      for (let i = 0; i < c.items.length; i += 5000) {
        const part = c.items.slice(i, i + 5000);
        await tx.$executeRawUnsafe(
          INSERT_SQL,
          part.map((v) => v.itemId),
          day,
          computedAt.toISOString(),
          part.map((v) => v.mid.toFixed()),
          part.map((v) => v.askAmount.toFixed()),
          part.map((v) => (v.bidAmount === null ? null : v.bidAmount.toFixed())),
          part.map((v) => v.uncertainty),
          part.map((v) => v.isTwoSided),
          part.map((v) => v.askQuoteCount),
          part.map((v) => v.bidQuoteCount),
          part.map((v) => v.askUncertainty),
          part.map((v) => v.bidUncertainty),
        );
      }
      await tx.$executeRawUnsafe(
        `INSERT INTO valuation_run (valuation_date, computed_at, duration_ms, item_count, two_sided_count, stats)
         VALUES ($1::date, $2::timestamptz, $3, $4, $5, $6::jsonb)
         ON CONFLICT (valuation_date) DO UPDATE SET computed_at = EXCLUDED.computed_at, duration_ms = EXCLUDED.duration_ms,
           item_count = EXCLUDED.item_count, two_sided_count = EXCLUDED.two_sided_count, stats = EXCLUDED.stats`,
        day,
        computedAt.toISOString(),
        durationMs,
        c.items.length,
        c.stats.counts.twoSided,
        stats,
      );
      await signalQuotes(prismaSql(tx), '*', { valuationsOnly: true }); // the CSCP quotes change when this commits (quotes/quote-cache.ts)
      // Last: one change per valued item (quotes/changes.ts); the change lock is held to the commit.
      await recordChanges(
        prismaSql(tx),
        c.items.map((v) => ({ itemId: v.itemId, marketCode: 'CSCP', side: 'mid' as const })),
      );
    },
    { maxWait: 30_000, timeout: 600_000 },
  );
  quotesChanged();
  return { date: day, items: c.items.length, twoSided: c.stats.counts.twoSided, oneSided: c.stats.counts.oneSided, durationMs, computedAt };
}

/**
 * Compacts the closed days' candles into the price history (src/history/candles.ts `compactHistory`), then
 * keeps the closes of the CLOSE_RETENTION_DAYS newest close days (an older close is deleted only once
 * compacted). Valuations are not pruned: they are the CSCP history series (issue: price history).
 * `today` (UTC) bounds the closed days; default the clock.
 */
export async function pruneValuationData(db: Database, today: Date = new Date()): Promise<void> {
  await compactHistory(db, today);
  await db.query(`DELETE FROM daily_close WHERE compacted AND day < (SELECT max(day) FROM daily_close) - $1::int`, [CLOSE_RETENTION_DAYS - 1]);
}

/**
 * Thrown by computeValuations (and so runValuation) when its `stopped` answers true between two pages of items: a
 * stopping service does not wait for the rest of a run (the first one on the bundled data computes for half a minute
 * or more). Nothing was written; the next start's catch-up runs the date again.
 */
export class ValuationCancelled extends Error {
  constructor() {
    super('valuation run cancelled: the service is stopping');
    this.name = 'ValuationCancelled';
  }
}

/**
 * Computes and publishes the valuations of `date` (the caller holds the job lock). `stopped` is asked between pages
 * of the computation: when it answers true, ValuationCancelled is thrown and nothing is written.
 */
export async function runValuation(db: Database, date: Date, opts: { now?: () => Date; stopped?: () => boolean } = {}): Promise<ValuationRunResult> {
  const started = performance.now();
  let c: ValuationComputation | null = await computeValuations(db, date, { stopped: opts.stopped });
  const computedAt = opts.now ? opts.now() : new Date();
  const result = await storeValuations(db, c, computedAt, Math.round(performance.now() - started));
  // eslint-disable-next-line no-useless-assignment -- drops the reference on purpose
  c = null; // unreachable once published: the compaction after it runs without the computation's memory
  await pruneValuationData(db, computedAt);
  return result;
}

/**
 * The latest date that can be valued: min(today, newest close day + 1), or null without closes. With
 * the bundled data (closes up to 2026-07-16) that is 2026-07-17; on a live feed it is today.
 */
export async function latestValuableDate(db: Pick<Database, 'query'>, today: Date): Promise<Date | null> {
  const [row] = await db.query<{ newest: string | null }>(`SELECT max(day)::text AS newest FROM daily_close`);
  if (!row?.newest) return null;
  const next = new Date(parseDate(row.newest).getTime() + DAY_MS);
  return next.getTime() < utcDay(today).getTime() ? next : utcDay(today);
}

/** The date a start-up catch-up should value: latestValuableDate when it has no run yet, else null. */
export async function catchUpDate(db: Pick<Database, 'query'>, today: Date): Promise<Date | null> {
  const target = await latestValuableDate(db, today);
  if (!target) return null;
  const done = await db.query(`SELECT 1 FROM valuation_run WHERE valuation_date = $1::date`, [formatDate(target)]);
  return done.length > 0 ? null : target;
}

/** The money amounts of a valued item as wire strings (for logs and the CLI). */
export function valuationJson(v: ItemValuation): Record<string, unknown> {
  return {
    is_two_sided: v.isTwoSided,
    mid: v.mid.toFixed(),
    ask_amount: v.askAmount.toFixed(),
    bid_amount: v.bidAmount === null ? null : v.bidAmount.toFixed(),
    uncertainty: v.uncertainty,
    credibility: Math.exp(-v.uncertainty),
    ask_uncertainty: v.askUncertainty,
    bid_uncertainty: v.bidUncertainty,
    raw_uncertainty: v.raw,
    ask_quote_count: v.askQuoteCount,
    bid_quote_count: v.bidQuoteCount,
  };
}
