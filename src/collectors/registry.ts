/**
 * Every collector source the service knows (one adapter file each under src/collectors/sources/), in the order the
 * status page lists them. docs/collectors.md has one row per source.
 */
import type { CollectorSource } from './source.js';

/** All sources; the lead wires each new adapter in here. */
export const SOURCES: readonly CollectorSource[] = [];

/** The source with this id, or undefined. */
export function sourceById(id: string): CollectorSource | undefined {
  return SOURCES.find((s) => s.id === id);
}
