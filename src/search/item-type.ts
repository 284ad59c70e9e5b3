/**
 * The kind of an item by its market hash name (the Steam market's naming rules): shown by the item search and used
 * by the valuation to group comparable items (src/valuation/half-spread.ts).
 */

/** Item kinds by their market hash name (`itemType`, the Steam market's naming). */
export const ITEM_TYPES = ['weapon', 'knife', 'gloves', 'sticker', 'patch', 'graffiti', 'charm', 'music_kit', 'container', 'agent', 'other'] as const;
/** One of ITEM_TYPES. */
export type ItemType = (typeof ITEM_TYPES)[number];

/** Item type from a CS2 market hash name (the naming rules of the Steam market). */
export function itemType(name: string): string {
  const prefix = name.split(' | ')[0]!;
  if (name.startsWith('Sticker |') || name.startsWith('Sticker Slab |')) return 'sticker';
  if (name.startsWith('Patch |')) return 'patch';
  if (name.startsWith('Sealed Graffiti |') || name.startsWith('Graffiti |')) return 'graffiti';
  if (name.startsWith('Charm |') || name.startsWith('Souvenir Charm |')) return 'charm';
  if (name.startsWith('Music Kit |') || name.startsWith('StatTrak™ Music Kit |')) return 'music_kit';
  if (name.startsWith('★')) return /Gloves|Hand Wraps/.test(prefix) ? 'gloves' : 'knife';
  if (/\((Factory New|Minimal Wear|Field-Tested|Well-Worn|Battle-Scarred)\)$/.test(name)) return 'weapon';
  if (/ (Case|Capsule|Package|Terminal|Collection)$|Case Key$| Key$|Pass$|Pin$|Autograph Capsule/.test(name)) return 'container';
  if (name.includes(' | ')) return 'agent';
  return 'other';
}
