/**
 * The item search's shapes (issue 44, point 1; docs/search.md: GET /catalogue/items), defined once: the OpenAPI
 * document serves them and the tests take their key lists from them. A hit's `cscp` is the spec's MarketQuoteOut of
 * the item's CSCP valuation, as GET /prices serves it.
 */
import { z } from 'zod';
import { MarketQuoteOut } from './quote.js';
import { ITEM_TYPES } from '../search/item-type.js';

/** One hit: an item of the catalogue, its kind and its current CSCP quote. */
export const ItemHitOut = z
  .strictObject({
    market_hash_name: z.string(),
    type: z.enum(ITEM_TYPES).meta({ description: "The item's kind by its market hash name (the Steam market's naming): weapon skins, knives (★), gloves (★), stickers, patches, graffiti, charms, music kits, containers (cases, capsules, packages, keys, passes, pins), agents, other." }),
    cscp: MarketQuoteOut.nullable().meta({ description: "The item's CSCP quote (side mid, CNY: the consensus valuation, its details in `valuation`) as GET /prices serves it; null before the item was first valued." }),
  })
  .meta({ id: 'ItemHitOut' });

/** GET /catalogue/items: one page of hits. */
export const ItemSearchOut = z
  .strictObject({
    app_id: z.string(),
    q: z.string().meta({ description: 'The query, echoed.' }),
    words: z.array(z.string()).meta({ description: "The words every hit's name holds, as the search read the query: lower case, without punctuation, abbreviations spelled out (ft -> fieldtested, st -> stattrak, ★ -> star), longest first." }),
    items: z.array(ItemHitOut).meta({ description: 'The hits: shortest name (letters and digits) first, then by name (code point order).' }),
    next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` (with the same q and app_id) for the next page; null on the last page.' }),
    has_more: z.boolean().meta({ description: 'True when more hits follow next_cursor.' }),
  })
  .meta({ id: 'ItemSearchOut' });
