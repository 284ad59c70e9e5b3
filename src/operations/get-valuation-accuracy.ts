/** GET /valuation/accuracy (an extension; docs/valuation.md): the CSCP valuation's published accuracy per day. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { selectionOf } from '../shapes/catalogue.js';
import { ValuationAccuracyOut } from '../shapes/valuation-accuracy.js';

export default defineOperation({
  id: 'getValuationAccuracy',
  kind: 'query',
  path: ['valuationAccuracy'],
  selection: selectionOf(ValuationAccuracyOut),
  params: [
    p.day('from', 'from', 'First valuation day (UTC); default 89 days before `to`.', '2026-07-10', 'First valuation day (UTC); default 89 days before `to`.'),
    p.day(
      'to',
      'to',
      'Last valuation day (UTC); default: the last scored day when `from` is absent too (the 90 days ending there), else yesterday. `from` after `to`, or a range over 366 days, is 422.',
      '2026-07-17',
      'Last valuation day (UTC); default the last scored day when `from` is absent too, else yesterday.',
    ),
  ],
  rest: { envelope: true },
  openapi: {
    payload: ValuationAccuracyOut,
    docs: {
      tag: 'Valuation',
      summary: 'Accuracy of the CSCP valuation',
      description:
        "Each valuation day, scored once it has passed against that day's closes (fees included), per segment: all items; by target side; one- or two-sided; by price band; by item type. For each: the items and targets scored, the median and 90th-percentile error |ln(target / valuation)| and the calibration, the share of targets inside valuation x e^(+-uncertainty), which the uncertainty promises to be 0.6827.\n\n" +
        "A target scored against its side's only input (a side valued from one market, scored against that market's own close) measures that market's move over a day, not the consensus: such targets have their own segments, target `ask_only_input` and `bid_only_input`, and are left out of every other figure.\n\n" +
        "`source` says whether the day's published valuations were scored or, before the service published any, the valuations it would have published from the closes before that day. Default range (neither `from` nor `to`): the 90 days ending at the last scored day; at most 366 days. Public and free.",
      response: free(ex.VALUATION_ACCURACY),
    },
  },
});
