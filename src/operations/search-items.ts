/** GET /catalogue/items (an extension; docs/search.md): the item catalogue search. Its own path: the HTML pages own /items. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import { z } from 'zod';
import * as v from '../validation/params.js';
import { DEFAULT_SEARCH_PAGE, MAX_CURSOR_CHARS, MAX_SEARCH_PAGE } from '../search/query.js';
import { ItemSearchOut } from '../shapes/item-search.js';

export default defineOperation({
  id: 'searchItems',
  kind: 'query',
  path: ['items'],
  selection: 'app_id: appId q: search words items: hits { market_hash_name: marketHashName type cscp: cscpJson } next_cursor: nextCursor has_more: hasMore',
  params: [
    p.single({
      name: 'q',
      arg: 'search',
      openapi: v.searchText.meta({
        description:
          "The words to find, 1-255 characters: every word must appear in the item's name, in any order; case, punctuation and spaces inside a word are ignored. FN, MW, FT, WW, BS (exteriors), ST (StatTrak™), SV (Souvenir) and ★ or star are understood. At least one letter or digit, at most 32 words.",
      }),
      absent: p.REQUIRED,
      read: (raw, problems) => problems.check('query', 'q', v.searchText, raw),
      graphql: { type: 'String', required: true, description: '1-255 characters, at least one letter or digit, at most 32 words.', rule: v.searchText },
    }),
    p.appId(),
    p.count('limit', 'first', {
      digits: 3,
      min: 1,
      max: MAX_SEARCH_PAGE,
      absent: DEFAULT_SEARCH_PAGE,
      description: `Hits per page, 1-${MAX_SEARCH_PAGE} (default ${DEFAULT_SEARCH_PAGE}).`,
      graphqlDescription: `Hits per page, 1-${MAX_SEARCH_PAGE}.`,
    }),
    p.single({
      name: 'cursor',
      arg: 'after',
      openapi: z
        .string()
        .regex(/^[A-Za-z0-9_-]+$/)
        .max(MAX_CURSOR_CHARS)
        .optional()
        .meta({
          description: "The previous page's next_cursor, with the same q and app_id (else 422).",
        }),
      absent: null,
      read: (raw) => raw,
      graphql: { type: 'String', required: false, description: 'The nextCursor of the previous page of this search.' },
    }),
  ],
  check: (vars, problems) => {
    // A cursor continues only the search (words and app id) that made it.
    const { after, search, appId } = vars as {
      after: string | null;
      search?: string;
      appId?: string;
    };
    if (after === null || search === undefined || appId === undefined) return;
    const problem = v.searchCursorProblem(after, search, appId);
    if (problem !== null) problems.add('query', 'cursor', problem);
  },
  refineArgs: (args, ctx) => {
    if (typeof args.after !== 'string' || typeof args.search !== 'string' || typeof args.appId !== 'string') return;
    const problem = v.searchCursorProblem(args.after, args.search, args.appId);
    if (problem !== null) ctx.addIssue({ code: 'custom', path: ['after'], message: problem });
  },
  rest: { envelope: true },
  openapi: {
    payload: ItemSearchOut,
    docs: {
      tag: 'Items',
      summary: 'Search the item catalogue',
      description:
        'Items whose market hash name holds every word of `q`, in any order, ignoring case, punctuation and spacing; the usual abbreviations are spelled out (FT, MW, FN, WW, BS; ST for StatTrak; souvenir; the star). Shortest names first, then by name. Each hit has its kind and its current CSCP quote (null before its first valuation).\n\n' +
        "Page with `limit` and `cursor` (the previous page's `next_cursor`, with the same `q` and `app_id`; another search's cursor is 422). 1 credit per page, an empty one included. docs/search.md has the rules.",
      response: billed(ex.ITEM_SEARCH),
      parameters: {
        q: { example: 'ak47 redline ft' },
        limit: { example: '1' },
        cursor: { example: ex.ITEM_SEARCH.next_cursor },
      },
    },
  },
});
