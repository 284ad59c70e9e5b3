/** Figures of the fault runs for docs/reliability.md: written to test-output/faults/<name>.json and printed. */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/lib/paths.js';

/** Writes `figures` as test-output/faults/<name>.json and prints them on one line. */
export function writeFigures(name: string, figures: unknown): void {
  const dir = path.join(projectRoot, 'test-output', 'faults');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(figures, null, 2));
  console.log(name, JSON.stringify(figures));
}
