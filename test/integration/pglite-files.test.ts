/**
 * The embedded database's files are owner-only (issue 41, point 10): PGlite unpacked its files with mode 0666, so
 * any local user could write `postgresql.conf`, `pg_hba.conf` or the data files. A new data directory, and at start
 * one made before, have every directory 0700 and every file 0600, open and after closing. (About the embedded
 * database, so it opens a PGlite directory in either suite.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-pglite-files-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Every entry under `dir` (itself included) whose mode is not owner-only, as `mode path`. */
function wider(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    const st = fs.lstatSync(p);
    const mode = st.mode & 0o777;
    if (st.isDirectory()) {
      if (mode !== 0o700) out.push(`${mode.toString(8)} ${p}`);
      for (const name of fs.readdirSync(p)) walk(path.join(p, name));
    } else if (!st.isSymbolicLink() && mode !== 0o600) out.push(`${mode.toString(8)} ${p}`);
  };
  walk(dir);
  return out;
}

/** Every file and directory under `dir` (itself included). */
function entries(dir: string): { path: string; dir: boolean }[] {
  const out = [{ path: dir, dir: true }];
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isSymbolicLink()) out.push({ path: path.join(e.parentPath, e.name), dir: e.isDirectory() });
  }
  return out;
}

describe('the embedded database directory', () => {
  const dir = path.join(root, 'pglite');

  it('is owner-only when made: directories 0700, files 0600, while open and after closing', async () => {
    const db = await openDatabase({ pgliteDir: dir });
    try {
      expect(entries(dir).length).toBeGreaterThan(100); // a real data directory (postgresql.conf, base/, pg_wal/, ...)
      expect(fs.existsSync(path.join(dir, 'postgresql.conf'))).toBe(true);
      await db.query(`CREATE TABLE files_probe (x int)`);
      await db.query(`INSERT INTO files_probe SELECT generate_series(1, 1000)`);
      expect(wider(dir)).toEqual([]);
    } finally {
      await db.close();
    }
    expect(wider(dir)).toEqual([]);
  });

  it('fixes a directory made with world-writable modes when it opens', async () => {
    // As an install before the fix left it: files 0666, directories 0777.
    for (const e of entries(dir)) fs.chmodSync(e.path, e.dir ? 0o777 : 0o666);
    expect(wider(dir).length).toBeGreaterThan(100);
    const db = await openDatabase({ pgliteDir: dir });
    try {
      expect(wider(dir)).toEqual([]);
      expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM files_probe`))[0]!.n).toBe(1000); // the data are intact
    } finally {
      await db.close();
    }
    expect(wider(dir)).toEqual([]);
  });
});
