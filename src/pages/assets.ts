/**
 * Static files of the pages, all from this origin: the site stylesheet and the two small start-up
 * scripts (strings in this package), and the pinned browser bundles of the API reference (Scalar)
 * and of GraphiQL, read from node_modules. Vendor URLs carry the package version, so they are cached
 * for a year; the others for five minutes. Bodies are read once and kept (gzip too, when asked).
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import crypto from 'node:crypto';
import { DOCS_SCRIPT } from './docs.js';
import { graphiqlScript } from './graphiql.js';
import { SITE_CSS } from './styles.js';

const gzip = promisify(zlib.gzip);
const require = createRequire(import.meta.url);

interface AssetSource {
  type: string;
  /** Fixed content, or a file read on first use. */
  content?: string;
  file?: string;
  immutable: boolean;
}

interface LoadedAsset {
  body: Buffer;
  gzipped?: Buffer;
  etag: string;
}

/** A package's folder in node_modules (found by Node's own resolution, so hoisting does not matter). */
function packageDir(name: string, entry: string): string {
  let dir = path.dirname(require.resolve(entry));
  while (!dir.endsWith(path.join('node_modules', name))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`package ${name} not found`);
    dir = up;
  }
  return dir;
}

function packageVersion(dir: string): string {
  return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The URL paths the pages refer to. */
export interface AssetUrls {
  scalarScript: string;
  graphiqlBase: string;
}

/** The asset table and its URLs. */
export interface Assets {
  urls: AssetUrls;
  /** The asset at `pathname`, or null when there is none. */
  respond(request: Request, pathname: string): Promise<Response | null>;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** Builds the asset table (reads the two vendor package versions; files are read on first request). */
export function createAssets(): Assets {
  const scalarDir = packageDir('@scalar/api-reference', '@scalar/api-reference');
  const graphiqlDir = packageDir('@graphql-yoga/graphiql', '@graphql-yoga/graphiql/package.json');
  const scalarBase = `/assets/vendor/scalar-api-reference-${packageVersion(scalarDir)}`;
  const graphiqlBase = `/assets/vendor/graphql-yoga-graphiql-${packageVersion(graphiqlDir)}`;
  const urls: AssetUrls = { scalarScript: `${scalarBase}/standalone.js`, graphiqlBase };
  const table = new Map<string, AssetSource>([
    ['/assets/site.css', { type: CSS, content: SITE_CSS, immutable: false }],
    ['/assets/docs.js', { type: JS, content: DOCS_SCRIPT, immutable: false }],
    ['/assets/graphiql.js', { type: JS, content: graphiqlScript({ base: graphiqlBase }), immutable: false }],
    [urls.scalarScript, { type: JS, file: path.join(scalarDir, 'dist/browser/standalone.js'), immutable: true }],
    [`${graphiqlBase}/yoga-graphiql.umd.js`, { type: JS, file: path.join(graphiqlDir, 'dist/yoga-graphiql.umd.js'), immutable: true }],
    [`${graphiqlBase}/graphiql.css`, { type: CSS, file: path.join(graphiqlDir, 'dist/graphiql.css'), immutable: true }],
    ...['editor.worker.bundle.js', 'json.worker.bundle.js', 'graphql.worker..bundle.js'].map(
      (name) => [`${graphiqlBase}/monacoeditorwork/${name}`, { type: JS, file: path.join(graphiqlDir, 'dist/monacoeditorwork', name), immutable: true }] as const,
    ),
  ]);
  const loaded = new Map<string, Promise<LoadedAsset>>();

  const load = (pathname: string, source: AssetSource): Promise<LoadedAsset> => {
    let p = loaded.get(pathname);
    if (!p) {
      p = (async () => {
        const body = source.content !== undefined ? Buffer.from(source.content, 'utf8') : await fs.readFile(source.file!);
        const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
        return { body, etag };
      })();
      p.catch(() => loaded.delete(pathname));
      loaded.set(pathname, p);
    }
    return p;
  };

  return {
    urls,
    async respond(request, pathname) {
      const source = table.get(pathname);
      if (!source) return null;
      const asset = await load(pathname, source);
      const headers: Record<string, string> = {
        'Content-Type': source.type,
        'Cache-Control': source.immutable ? 'public, max-age=31536000, immutable' : 'public, max-age=300',
        ETag: asset.etag,
        'X-Content-Type-Options': 'nosniff',
        Vary: 'Accept-Encoding',
      };
      const inm = request.headers.get('if-none-match');
      if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === asset.etag)) return new Response(null, { status: 304, headers });
      let body = asset.body;
      if (/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '') && body.length > 1024) {
        asset.gzipped ??= await gzip(body);
        body = asset.gzipped;
        headers['Content-Encoding'] = 'gzip';
      }
      headers['Content-Length'] = String(body.length);
      return new Response(request.method === 'HEAD' ? null : new Uint8Array(body), { status: 200, headers });
    },
  };
}
