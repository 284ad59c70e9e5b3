/**
 * The valuation's published accuracy in GraphQL (issue: a valuation that earns trust, point 1;
 * src/valuation/accuracy.ts): the root field `valuationAccuracy(from, to)`, which is
 * GET /valuation/accuracy (catalogue row `getValuationAccuracy`: public and free, like /status).
 */
import { builder, listComplexity } from '../builder.js';
import { paramArgs } from '../args.js';
import { operationArgsRule } from '../../operations/operation.js';
import getValuationAccuracyOp from '../../operations/get-valuation-accuracy.js';
import { MAX_ACCURACY_SPAN_DAYS, readValuationAccuracy, resolveAccuracyRange, type AccuracyDay, type AccuracySegment } from '../../valuation/accuracy.js';
import { shapeFields } from '../shape-fields.js';
import { AccuracyDayOut, AccuracySegmentOut, ValuationAccuracyOut } from '../../shapes/valuation-accuracy.js';

/** One sigma of a normal distribution: the share inside e^(+-u) the uncertainty promises. */
export const CALIBRATION_TARGET = 0.6827;
/** Cost-limit bound of a day's segment list: all, 4 targets (ask, bid and each side's only-input targets), 2 sidednesses, 4 bands and the item types. */
const MAX_SEGMENTS = 1 + 4 + 2 + 4 + 12;

const asDate = (d: string) => new Date(`${d}T00:00:00Z`);

interface AccuracyRange {
  from: string;
  to: string;
  days: AccuracyDay[];
}

const AccuracySegmentKindEnum = builder.enumType('AccuracySegmentKind', { values: ['all', 'target', 'sides', 'band', 'type'] as const });
const AccuracySourceEnum = builder.enumType('AccuracySource', { values: ['published', 'recomputed'] as const });

const AccuracySegmentRef = builder.objectRef<AccuracySegment>('AccuracySegment').implement({
  description: "One segment of a valuation day's accuracy (REST: AccuracySegmentOut); errors are |ln(target / valuation)|.",
  fields: (t) => shapeFields(t, AccuracySegmentOut, { refs: { segment: { type: AccuracySegmentKindEnum } } }),
});

const AccuracyDayRef = builder.objectRef<AccuracyDay>('AccuracyDay').implement({
  description: 'One scored valuation day (REST: AccuracyDayOut).',
  fields: (t) => {
    const fields = shapeFields(t, AccuracyDayOut, {
      read: { date: (d) => asDate(d.date) },
      refs: { source: { type: AccuracySourceEnum }, segments: { type: [AccuracySegmentRef] } },
    });
    return { ...fields, segments: t.field({ type: [AccuracySegmentRef], extensions: listComplexity(MAX_SEGMENTS), resolve: (d) => d.segments }) };
  },
});

const ValuationAccuracyRef = builder.objectRef<AccuracyRange>('ValuationAccuracy').implement({
  description: "The CSCP valuation's accuracy, day by day, scored against what the markets showed (REST: ValuationAccuracyOut).",
  fields: (t) => {
    const fields = shapeFields(t, ValuationAccuracyOut, {
      read: { from: (r) => asDate(r.from), to: (r) => asDate(r.to), calibration_target: () => CALIBRATION_TARGET },
      refs: { days: { type: [AccuracyDayRef] } },
    });
    return { ...fields, days: t.field({ type: [AccuracyDayRef], extensions: listComplexity(MAX_ACCURACY_SPAN_DAYS), resolve: (r) => r.days }) };
  },
});

builder.queryFields((t) => ({
  valuationAccuracy: t.field({
    type: ValuationAccuracyRef,
    description:
      "The CSCP valuation's published accuracy per day and segment (REST: GET /valuation/accuracy; public and free). Default range (neither from nor to): the 90 days ending at the last scored day (yesterday when none is scored yet); at most 366 days.",
    args: paramArgs(t.arg, getValuationAccuracyOp.params),
    validate: operationArgsRule(getValuationAccuracyOp),
    resolve: async (_r, args, ctx) => {
      const range = await resolveAccuracyRange(ctx.db, args.from, args.to, ctx.now);
      return { ...range, days: await readValuationAccuracy(ctx.db, range.from, range.to) };
    },
  }),
}));
