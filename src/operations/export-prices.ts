/** GET /prices/export (spec): every quote of a game in one gzip file, a snapshot rebuilt every few minutes (docs/export.md); `format` an extension. */
import { defineOperation, type RespondContext, type RespondReply } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import * as v from '../validation/params.js';
import { ExportOut, ExportQuoteLine } from '../shapes/quote.js';
import { EXPORT_CONTENT_TYPES, snapshotStream, type ExportFormat } from '../exports/exports.js';
import { refundCredits } from '../accounts/billing.js';
import { deliveryStream } from '../lib/delivery.js';

export default defineOperation({
  id: 'exportPrices',
  kind: 'query',
  path: ['priceExport'],
  selection: 'snapshotId format etag generatedAt changeSeq byteSize notModified',
  params: [
    p.appId(),
    p.side('ask', 'ask (default), bid, mid (only the valuations: a much smaller file) or all.', 'mid'),
    p.single({
      name: 'format',
      arg: 'format',
      openapi: v.exportFormat.optional().meta({
        description:
          'Extension. json (default): the ExportOut document; ndjson: one quote per line (ExportQuoteLine), the same quotes. Each format has its own ETag; If-None-Match, 304, billing and the rate limit are the same.',
      }),
      absent: 'json',
      read: (raw, problems) => problems.check('query', 'format', v.exportFormat, raw),
      graphql: { type: 'ExportFormat', required: true, defaultValue: 'json', description: 'The file whose snapshot is described: each format has its own ETag and size.' },
    }),
    p.single({
      in: 'header',
      name: 'If-None-Match',
      arg: 'ifNoneMatch',
      openapi: v.ifNoneMatch.optional(),
      absent: null,
      read: (raw, problems) => problems.check('header', 'If-None-Match', v.ifNoneMatch, raw),
      graphql: { type: 'String', required: false, description: 'An If-None-Match value: ETags, W/ forms, lists or *.', rule: v.ifNoneMatch },
    }),
  ],
  rest: { envelope: false, respond: exportReply },
  billing: { paidOnDelivery: true, headOutsideLimit: true },
  openapi: {
    payload: ExportOut,
    description:
      'The export file, gzip-compressed: the ExportOut document (format=json, application/json) or one ExportQuoteLine per line (format=ndjson, application/x-ndjson). Headers: ETag (per format), Last-Modified, X-Export-Generated-At, X-Change-Sequence, X-Billable, X-Credit-Cost, X-Credit-Remaining. HEAD answers the same headers without the file: never billed and not counted towards the rate limit.',
    otherMedia: { 'application/x-ndjson': ExportQuoteLine },
    statuses: [304, 404],
    docs: {
      tag: 'Prices',
      summary: 'Download every quote of a game',
      description:
        'One file with every item that has a quote on the requested side (default `ask`; `mid` exports only the valuations), ordered by market hash name: a snapshot rebuilt every few minutes, sent gzip-compressed and not enveloped. Billing travels in headers (`X-Billable`, `X-Credit-Cost`, `X-Credit-Remaining`).\n\n' +
        'Send the received `ETag` back as `If-None-Match`: while the snapshot is unchanged the answer is 304 without a body, never billed. Every 200 costs 10 credits. `change_seq` (also header `X-Change-Sequence`) is where to start following GET /prices/changes. 503 `dependency_unavailable`: the first snapshot is not built yet; retry in a minute.\n\n' +
        'Extension: `format=ndjson` sends the same quotes one per line (ExportQuoteLine), with its own ETag. A HEAD answers the headers only: never billed and not counted towards the rate limit.',
      response: ex.EXPORT,
      parameters: {
        side: {
          example: 'mid',
          description: 'ask (default), bid, mid (only the valuations: a much smaller file) or all.',
        },
        format: { example: 'ndjson' },
        'if-none-match': {
          example: ex.EXPORT_ETAG,
          description: 'The ETag of the file received last: 304 (not billed) while the snapshot is unchanged.',
        },
      },
    },
  },
});

/**
 * The REST answer: the snapshot's headers (ETag, Last-Modified, the change sequence, billing), a 304 when
 * If-None-Match named the current snapshot, else the gzip file streamed from the database. Paid on delivery (README,
 * Billing): a file that fails or is cut off before its last byte is refunded.
 */
function exportReply(payload: unknown, { db, state, signal, logger }: RespondContext): RespondReply {
  const s = payload as {
    snapshotId: string;
    format: ExportFormat;
    etag: string;
    generatedAt: string;
    changeSeq: string;
    byteSize: number;
    notModified: boolean;
  };
  const billing = state.billing;
  const headers: Record<string, string> = {
    ETag: s.etag,
    'Last-Modified': new Date(s.generatedAt).toUTCString(),
    'X-Export-Generated-At': s.generatedAt,
    'X-Change-Sequence': s.changeSeq,
    'Cache-Control': 'private, no-cache',
    'X-Billable': String(Boolean(billing?.billable)),
  };
  if (s.notModified) return { status: 304, headers, body: null };
  if (billing?.billable) {
    headers['X-Credit-Cost'] = billing.cost.toString();
    headers['X-Credit-Remaining'] = billing.remaining.toString();
  }
  const fileHeaders = {
    ...headers,
    'Content-Type': EXPORT_CONTENT_TYPES[s.format],
    'Content-Encoding': 'gzip',
    'Content-Length': String(s.byteSize),
  };
  if (!state.delivery.body) return { status: 200, headers: fileHeaders, body: null };
  // Paid on delivery (README, Billing): a file that fails or is cut off before its last byte is refunded.
  const charge = billing?.charge;
  const file = snapshotStream(db, s.snapshotId);
  const body = charge
    ? deliveryStream(
        file,
        signal,
        async (reason) => {
          const refunded = await refundCredits(db, charge);
          logger?.warn({ reason, refunded, credits: charge.cost.toString() }, 'export not delivered: charge refunded');
        },
        s.byteSize,
      )
    : file;
  return { status: 200, headers: fileHeaders, body: null, stream: body };
}
