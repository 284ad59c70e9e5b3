/** The export snapshot as a GraphQL field (REST: GET /prices/export, which streams the file itself). */
import { builder } from '../builder.js';
import { paramArgs } from '../args.js';
import exportPricesOp from '../../operations/export-prices.js';
import { ExportFormatEnum, SideFilterEnum } from '../arg-types.js';
import { dependencyUnavailable, notFound } from '../../lib/errors.js';
import { anySnapshot, currentSnapshot, ifNoneMatchHits, type Snapshot } from '../../exports/exports.js';

interface PriceExportShape extends Snapshot {
  notModified: boolean;
}



const PriceExportRef = builder.objectRef<PriceExportShape>('PriceExport').implement({
  description: 'The current export snapshot of one app id and side. The gzip file is served by GET /prices/export.',
  fields: (t) => ({
    snapshotId: t.exposeString('buildId', { description: 'Identifies the stored build.' }),
    appId: t.exposeString('appId'),
    side: t.field({ type: SideFilterEnum, resolve: (s) => s.side }),
    format: t.field({ type: ExportFormatEnum, resolve: (s) => s.format }),
    etag: t.exposeString('etag', { description: 'Strong validator (quoted), as in the ETag header.' }),
    generatedAt: t.field({ type: 'DateTime', resolve: (s) => s.generatedAt }),
    changeSeq: t.exposeString('changeSeq', {
      description: 'The change sequence the snapshot was built at (decimal string; REST header X-Change-Sequence, field change_seq): follow GET /prices/changes?since=<it> to keep a copy current.',
    }),
    byteSize: t.exposeInt('byteSize', { description: 'Size of the gzip file in bytes.' }),
    itemCount: t.exposeInt('itemCount'),
    quoteCount: t.exposeInt('quoteCount', { description: 'Quotes in the file (ndjson: its lines).' }),
    notModified: t.exposeBoolean('notModified', { description: 'True when ifNoneMatch named this snapshot: not billed.' }),
  }),
});

builder.queryFields((t) => ({
  priceExport: t.field({
    type: PriceExportRef,
    description:
      'The current export snapshot (REST: GET /prices/export; needs an API key; billed and rate limited as the export, except when ifNoneMatch names the current ETag). Error `dependency_unavailable` before the first snapshot.',
    args: paramArgs(t.arg, exportPricesOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx, info) => {
      await ctx.requireUser('exportPrices');
      const snapshot = ctx.snapshots ? await ctx.snapshots.current(args.appId, args.side, args.format) : await currentSnapshot(ctx.db, args.appId, args.side, args.format);
      if (!snapshot) {
        if (await anySnapshot(ctx.db, args.side, args.format)) throw notFound(`No export for app id ${JSON.stringify(args.appId)}: it has no priced items.`);
        throw dependencyUnavailable('The first export snapshot is not built yet; retry in a minute.', 60);
      }
      const notModified = ifNoneMatchHits(args.ifNoneMatch, snapshot.etag);
      if (notModified) (ctx.state.waived ??= new Set()).add(info.path.key as string);
      return { ...snapshot, notModified };
    },
  }),
}));
