/**
 * The collector ingestion API (GraphQL only; no REST path): programs that scan marketplaces send source
 * quotes in batches and report completed full scans. Callable only with a `machine` service token.
 *
 * - `ingestQuotes(quotes)`: 1 to MAX_BATCH_ROWS rows, applied all-or-nothing (one transaction) by the
 *   ingestion service with the state rules of the spec (changed_at, observed_at, delisting, fresh_at)
 *   and written into the daily closes. Every invalid row is reported: 422 `validation_failed`, one
 *   detail per problem, field `quotes[<index>].<field>`; nothing is applied then.
 * - `completeMarketScan(...)`: a full scan of one market by one provider is complete: moves `fresh_at`
 *   of that market's quotes and, with `delistUnseen: true`, delists the quotes the scan did not see
 *   (last observed before `startedAt`).
 * Order of checks: credential (401/403) first, then the rows (422), so an unauthenticated caller never
 * has a 10,000-row batch validated.
 */
import { builder } from '../builder.js';
import { validationError, type ValidationDetail } from '../../lib/errors.js';
import { checkCatalogue, MAX_BATCH_ROWS, mutationLabel, parseQuoteRows, MAX_FUTURE_SECONDS, timeProblem } from '../../validation/ingest.js';
import { completeMarketScanTx, ingestBatch, marketCatalogue, type IngestResult, type ScanResult } from '../../quotes/ingestion.js';
import { marketCode as marketCodeRule } from '../../validation/params.js';
import type { Database } from '../../db/client.js';
import { authenticateToken, credentialFromHeaders, isWellFormedToken } from '../../accounts/accounts.js';

/**
 * Largest /graphql request body accepted from an authenticated `machine` caller: a full 10,000-row
 * `ingestQuotes` batch is about 2-3 MiB of JSON (names up to 255 characters make it larger), above the
 * public 2 MiB limit. Anyone else keeps the public limit.
 */
export const MAX_MACHINE_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The body limit of a /graphql request: `publicLimit`, or MAX_MACHINE_BODY_BYTES when the request
 * carries a valid (not revoked) service token. The token is looked up before any byte of the body is read.
 */
export async function graphqlBodyLimit(db: Database, headers: Headers, publicLimit: number): Promise<number> {
  const secret = credentialFromHeaders(headers);
  if (secret === null || !isWellFormedToken(secret)) return publicLimit;
  return (await authenticateToken(db, secret)) ? Math.max(publicLimit, MAX_MACHINE_BODY_BYTES) : publicLimit;
}

const QuoteInput = builder.inputType('SourceQuoteInput', {
  description:
    "One source quote as a collector saw it. Price in the market's own currency as a decimal string (never a JSON number); null when the source reports none.",
  fields: (t) => ({
    appId: t.string({ required: false, description: 'Game application id; default 730.' }),
    marketHashName: t.string({ required: true }),
    marketCode: t.string({ required: true, description: 'A market of GET /websites (not deprecated).' }),
    providerCode: t.string({ required: true, description: 'Who reported it: equal to marketCode for direct data, else the aggregator.' }),
    side: t.string({ required: true, description: 'ask (sell listing) or bid (buy order).' }),
    currencyCode: t.string({ required: true, description: "The market's own currency (WebsiteOut currency)." }),
    price: t.string({ required: false, description: 'Decimal string > 0 with at most 10 fraction digits; null = no price reported.' }),
    quantity: t.int({ required: false }),
    isQuantityMinimum: t.boolean({ required: false }),
    isAllItemsSamePrice: t.boolean({ required: false }),
    observedAt: t.field({ type: 'DateTime', required: true, description: `When the source showed it (RFC 3339); at most ${MAX_FUTURE_SECONDS} s in the future.` }),
    delisted: t.boolean({ required: false, description: 'True when the source no longer lists the item on this side.' }),
  }),
});

const IngestResultRef = builder.objectRef<IngestResult & { received: number }>('IngestResult').implement({
  description: 'What one batch did (all rows were applied in one transaction).',
  fields: (t) => ({
    received: t.exposeInt('received'),
    inserted: t.exposeInt('inserted', { description: 'Quotes seen for the first time.' }),
    updated: t.exposeInt('updated', { description: 'Quotes whose state moved (newer observation).' }),
    skipped: t.exposeInt('skipped', { description: 'Observations not newer than the stored one (stale or replayed): nothing changed.' }),
  }),
});

const ScanResultRef = builder.objectRef<ScanResult>('MarketScanResult').implement({
  fields: (t) => ({
    freshened: t.exposeInt('freshened', { description: 'Quotes whose fresh_at moved to the completion time.' }),
    delisted: t.exposeInt('delisted', { description: 'Quotes delisted because the scan did not see them.' }),
  }),
});

builder.mutationFields((t) => ({
  ingestQuotes: t.field({
    type: IngestResultRef,
    description: `Applies a batch of 1-${MAX_BATCH_ROWS} source quotes all-or-nothing (machine service token only). Invalid rows: validation_failed with details naming quotes[i].field.`,
    args: { quotes: t.arg({ type: [QuoteInput], required: true }) },
    resolve: async (_r, args, ctx) => {
      await ctx.requireMachine();
      const rows = args.quotes;
      if (rows.length === 0 || rows.length > MAX_BATCH_ROWS) {
        throw validationError([{ location: 'argument', field: 'quotes', message: `must hold 1-${MAX_BATCH_ROWS} quotes` }]);
      }
      const checked = parseQuoteRows(rows, mutationLabel, 'argument', ctx.now);
      if (checked.details.length > 0) throw validationError(checked.details);
      const catalogueDetails = checkCatalogue(checked.observations, await marketCatalogue(ctx.db), mutationLabel, 'argument');
      if (catalogueDetails.length > 0) throw validationError(catalogueDetails);
      const result = await ingestBatch(ctx.db, checked.observations, { now: ctx.now });
      return { received: rows.length, ...result };
    },
  }),
  completeMarketScan: t.field({
    type: ScanResultRef,
    description:
      'Reports a full scan of one market by one provider as complete (machine service token only): moves fresh_at of its quotes; with delistUnseen, delists the quotes the scan did not see (last observed before startedAt).',
    args: {
      marketCode: t.arg.string({ required: true }),
      providerCode: t.arg.string({ required: true }),
      startedAt: t.arg({ type: 'DateTime', required: true }),
      completedAt: t.arg({ type: 'DateTime', required: true }),
      delistUnseen: t.arg.boolean({ required: true, defaultValue: false, description: 'Delist the quotes this scan did not see. Default false.' }),
    },
    resolve: async (_r, args, ctx) => {
      await ctx.requireMachine();
      const details: ValidationDetail[] = [];
      const bad = (field: string, message: string) => details.push({ location: 'argument', field, message });
      for (const field of ['marketCode', 'providerCode'] as const) {
        if (!marketCodeRule.safeParse(args[field]).success) bad(field, 'must be 1-32 uppercase letters, digits or underscores');
      }
      const when = (field: 'startedAt' | 'completedAt') => {
        const s = args[field];
        const d = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s) ? new Date(s) : new Date(NaN);
        if (Number.isNaN(d.getTime())) bad(field, 'must be an RFC 3339 timestamp');
        return d;
      };
      const startedAt = when('startedAt');
      const completedAt = when('completedAt');
      if (details.length === 0) {
        const latest = ctx.now.getTime() + MAX_FUTURE_SECONDS * 1000;
        for (const [field, t] of [['startedAt', startedAt], ['completedAt', completedAt]] as const) {
          const problem = timeProblem(t, latest);
          if (problem) bad(field, problem);
        }
        if (startedAt.getTime() > completedAt.getTime()) bad('startedAt', 'must not be after completedAt');
        const market = (await marketCatalogue(ctx.db)).get(args.marketCode);
        if (!market) bad('marketCode', `unknown market ${args.marketCode} (see GET /websites)`);
      }
      if (details.length > 0) throw validationError(details);
      return completeMarketScanTx(ctx.db, {
        marketCode: args.marketCode,
        providerCode: args.providerCode,
        startedAt,
        completedAt,
        delistUnseen: args.delistUnseen,
      });
    },
  }),
}));
