/**
 * Every collector source the service knows (one adapter file each under src/collectors/sources/), in the order the
 * status page lists them. docs/collectors.md has one row per source.
 *
 * Markets and their sources: BUFF163 (buff163 with BUFF163_COOKIE; csgotrader), YOUPIN, CSMONEY (csgotrader), CSFLOAT
 * (csfloat with CSFLOAT_API_KEY; csgotrader), SKINPORT (skinport; csgotrader), MARKETCSGO (marketcsgo; csgotrader's
 * csgotm), LISSKINS (lisskins; csgotrader), WAXPEER (waxpeer), STEAM (steam, the watch list), C5GAME (c5game with
 * C5GAME_APP_KEY), DMARKET, HALOSKINS, SHADOWPAY and WHITEMARKET (cs2cap, the CS2Cap aggregator, with CS2CAP_API_KEY),
 * BITSKINS (pricempire, the Pricempire aggregator, per watched item, with PRICEMPIRE_API_KEY).
 * BITSKINS has no source: no recorded response of its own or of an aggregator reporting it was found to test an adapter
 * against (docs/collectors.md, "Markets without a source").
 */
import type { CollectorSource } from './source.js';
import { buff163Source } from './sources/buff163.js';
import { c5gameSource } from './sources/c5game.js';
import { csfloatSource } from './sources/csfloat.js';
import { cs2capSource } from './sources/cs2cap.js';
import { pricempireSource } from './sources/pricempire.js';
import { CSGOTRADER_SOURCES } from './sources/csgotrader.js';
import { lisskins } from './sources/lisskins.js';
import { marketcsgo } from './sources/marketcsgo.js';
import { skinportSource } from './sources/skinport.js';
import { steamSource } from './sources/steam.js';
import { waxpeer } from './sources/waxpeer.js';

/** All sources: direct marketplace sources first, then the aggregators (CS2Cap's snapshots, csgotrader's files). */
export const SOURCES: readonly CollectorSource[] = [
  skinportSource,
  waxpeer,
  lisskins,
  marketcsgo,
  buff163Source,
  csfloatSource,
  steamSource,
  c5gameSource,
  cs2capSource,
  pricempireSource,
  ...CSGOTRADER_SOURCES,
];
