/**
 * The published-accuracy shapes (issue: a valuation that earns trust, point 1), defined once: the OpenAPI
 * document serves them, the REST document of GET /valuation/accuracy selects its fields from them
 * (`selectionOf`), the GraphQL types take their fields from them (src/graphql/types/valuation-accuracy.ts),
 * and the tests take their key lists from them. Errors are natural-log ratios |ln(target / valuation)|;
 * calibration is a share (0-1) of targets inside valuation x e^(+-uncertainty) (the `target` segments: inside the
 * side's amount x e^(+-its own uncertainty), GraphQL Valuation.askUncertainty / bidUncertainty).
 */
import { z } from 'zod';
import { day } from './quote.js';

/** One segment of one day's figures (valuation/accuracy.ts). */
export const AccuracySegmentOut = z
  .strictObject({
    segment: z.enum(['all', 'target', 'sides', 'band', 'type']),
    value: z.string().meta({
      description:
        "all; target: ask, bid, and ask_only_input, bid_only_input (targets of the market that was the side's only input: they measure that market's move over a day, not the consensus, and are in no other segment); sides: one_sided, two_sided; band (mid, CNY): under_1, 1_10, 10_100, over_100; type: weapon, knife, gloves, sticker, container, agent, ...",
    }),
    items: z.int().min(0),
    targets: z.int().min(0),
    median_error: z.number().min(0),
    p90_error: z.number().min(0),
    calibration: z.number().min(0).max(1).meta({ description: "Share of targets inside valuation x e^(+-uncertainty); for segment target, inside that side's amount x e^(+-its own uncertainty)." }),
  })
  .meta({ id: 'AccuracySegmentOut' });

/** One scored valuation day. */
export const AccuracyDayOut = z
  .strictObject({
    date: day,
    source: z.enum(['published', 'recomputed']).meta({
      description: "published: the valuations the service published that day; recomputed: a day before it published any, valued as the job would have (closes before the day only).",
    }),
    segments: z.array(AccuracySegmentOut),
  })
  .meta({ id: 'AccuracyDayOut' });

/** GET /valuation/accuracy: the accuracy series over a range of days. */
export const ValuationAccuracyOut = z
  .strictObject({
    from: day,
    to: day,
    calibration_target: z.number().meta({ description: 'The share of targets the uncertainty promises inside valuation x e^(+-u): 0.6827 (one sigma).' }),
    days: z.array(AccuracyDayOut),
  })
  .meta({ id: 'ValuationAccuracyOut' });
