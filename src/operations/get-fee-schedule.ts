/** GET /websites/{code}/fee-schedule (spec), with `as_of` (an extension, README: Extensions): the schedule in force that day; absent = today. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { FeeScheduleOut, selectionOf } from '../shapes/catalogue.js';

export default defineOperation({
  id: 'getFeeSchedule',
  kind: 'query',
  path: ['website', 'feeSchedule'],
  selection: selectionOf(FeeScheduleOut),
  params: [
    p.websiteCode(),
    p.day('as_of', 'asOf', 'The schedule in force on this UTC day; default today. A fee change makes a new version; older days keep theirs.'),
  ],
  rest: { envelope: true },
  openapi: {
    payload: FeeScheduleOut,
    statuses: [404],
    docs: {
      tag: 'Catalogue',
      summary: "A marketplace's fee schedule",
      description:
        'The official fees of a marketplace as calculation chains, one slot per purpose: `deposit` (paying money in), `sale` (what a sale pays) and `withdraw` (cashing out). A slot is null when no official chain is published for it: the fee is unknown or the purpose not offered, never free. Each chain lists its steps in order: fees (add, sub, mul, div) and conversions at official rates.\n\n' +
        '`as_of` gives the schedule in force that day: a fee change makes a new version and older days keep theirs. 404 when no marketplace has the code.',
      response: free(ex.FEE_SCHEDULE),
      parameters: { as_of: { example: '2026-07-17' } },
    },
  },
});
