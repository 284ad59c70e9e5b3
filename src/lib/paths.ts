/** Paths inside this checkout, the same from src/ (tsx, vitest) and from dist/ (compiled). */
import fs from 'node:fs';
import path from 'node:path';

function findRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'prisma'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`project root not found above ${start}`);
    dir = up;
  }
}

/** The folder holding package.json and prisma/. */
export const projectRoot = findRoot(import.meta.dirname);
