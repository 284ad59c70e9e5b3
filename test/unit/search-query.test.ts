/** The item search's text rules (src/search/query.ts; docs/search.md): keys, query words, cursors, refusals. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/lib/paths.js';
import { ITEM_TYPES } from '../../src/search/item-type.js';
import { itemType } from '../../src/search/item-type.js';
import { decodeSearchCursor, encodeSearchCursor, MAX_QUERY_WORDS, queryProblem, searchKey, searchWords } from '../../src/search/query.js';

describe('searchKey', () => {
  it('lower-cases ASCII letters, spells the star, drops punctuation, spaces and the typographic marks, keeps other characters', () => {
    expect(searchKey('StatTrak™ AK-47 | Redline (Field-Tested)')).toBe('stattrakak47redlinefieldtested');
    expect(searchKey('★ Karambit | Doppler (Factory New)')).toBe('starkarambitdopplerfactorynew');
    expect(searchKey("'Blueberries' Buckshot | NSWC SEAL")).toBe('blueberriesbuckshotnswcseal');
    expect(searchKey('Sticker | Team Liquid (Holo) | Katowice 2019')).toBe('stickerteamliquidholokatowice2019');
    expect(searchKey('#CSGO_crate_musickit_masterminds2_capsule')).toBe('csgocratemusickitmasterminds2capsule');
    expect(searchKey('Sticker | ö龍♥ — “quoted” l’art…')).toBe('stickerö龍♥quotedlart');
    expect(searchKey('Ö')).toBe('Ö'); // non-ASCII letters keep their case (the SQL rule cannot lower them alike on every locale)
    expect(searchKey('|||  -()')).toBe('');
  });
});

describe('searchWords', () => {
  it('keys each word, spells out the abbreviations, longest first, in any order the same list', () => {
    expect(searchWords('ak-47 redline ft')).toEqual(['fieldtested', 'redline', 'ak47']);
    expect(searchWords('Redline AK47  (Field-Tested)')).toEqual(['fieldtested', 'redline', 'ak47']);
    expect(searchWords('ST ★ karambit FN')).toEqual(['factorynew', 'karambit', 'stattrak', 'star']);
    expect(searchWords('mw ww bs sv souv stattrack')).toEqual(['battlescarred', 'minimalwear', 'souvenir', 'stattrak', 'wellworn']);
  });

  it('drops empty words, repeats and words inside a longer word', () => {
    expect(searchWords(' | - ak ak47 AK47 47 ')).toEqual(['ak47']);
    expect(searchWords('st stattrak')).toEqual(['stattrak']);
    expect(searchWords('   ')).toEqual([]);
  });
});

describe('queryProblem', () => {
  it('accepts 1-255 characters with a letter or digit and at most 32 words; says why otherwise', () => {
    expect(queryProblem('ak')).toBeNull();
    expect(queryProblem('★')).toBeNull();
    expect(queryProblem('a'.repeat(255))).toBeNull();
    expect(queryProblem('')).toBe('must be 1-255 characters long');
    expect(queryProblem('a'.repeat(256))).toBe('must be 1-255 characters long');
    expect(queryProblem('ak\u000047')).toBe('must not contain NUL characters');
    expect(queryProblem('| - ()')).toBe('must contain a letter or a digit');
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}x`).join(' ');
    expect(queryProblem(words(MAX_QUERY_WORDS))).toBeNull();
    expect(queryProblem(words(MAX_QUERY_WORDS + 1))).toBe('must have at most 32 words');
  });
});

describe('search cursors', () => {
  const words = searchWords('redline ak47');
  it('round-trip a position, including names with any characters', () => {
    for (const at of [{ keyLength: 22, name: 'AK-47 | Redline (Field-Tested)' }, { keyLength: 0, name: '' }, { keyLength: 9, name: 'Sticker | 龍王 ★ "quoted" \\ ' }]) {
      const c = encodeSearchCursor('730', words, at);
      expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeSearchCursor(c, '730', words)).toEqual(at);
      expect(encodeSearchCursor('730', words, at)).toBe(c);
    }
  });

  it('belong to one search: other words or another app id are refused, and so is anything not made by encodeSearchCursor', () => {
    const c = encodeSearchCursor('730', words, { keyLength: 22, name: 'AK-47 | Redline (Field-Tested)' });
    expect(decodeSearchCursor(c, '730', searchWords('ak47 redline'))).toEqual({ keyLength: 22, name: 'AK-47 | Redline (Field-Tested)' });
    expect(decodeSearchCursor(c, '730', searchWords('redline awp'))).toMatch(/belongs to another search/);
    expect(decodeSearchCursor(c, '570', words)).toMatch(/belongs to another search/);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const bad of ['', 'x y', '!!!', c + '$', b64([2, 'x', 1, 'y']), b64([1, 'x', -1, 'y']), b64([1, 'x', 1.5, 'y']), b64([1, 'x', 1]), b64({ a: 1 }), b64([1, 'x', 1, 'a'.repeat(256)]), 'A'.repeat(2000)]) {
      expect(decodeSearchCursor(bad, '730', words), bad).toMatch(/is not a cursor of this service/);
    }
  });
});

describe('hit types', () => {
  it('every name of data/items has one of the documented types (the GraphQL enum ItemType, the REST enum)', () => {
    const names = fs.readFileSync(path.join(projectRoot, 'data', 'items', 'market_hash_names.txt'), 'utf8').split('\n').filter(Boolean);
    const counts = new Map<string, number>();
    for (const n of names) counts.set(itemType(n), (counts.get(itemType(n)) ?? 0) + 1);
    expect([...counts.keys()].filter((k) => !(ITEM_TYPES as readonly string[]).includes(k))).toEqual([]);
    expect(itemType('★ Karambit | Doppler (Factory New)')).toBe('knife');
    expect(itemType('★ Sport Gloves | Vice (Well-Worn)')).toBe('gloves');
    expect(itemType('Recoil Case')).toBe('container');
  });
});
