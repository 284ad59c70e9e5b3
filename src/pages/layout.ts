/**
 * The shared frame of the server-rendered pages (`/`, `/status/page`, and the header of `/docs`):
 * HTML escaping, the site header and footer, and the response headers every page carries.
 * Pages are plain HTML with one stylesheet (`/assets/site.css`); nothing is loaded from another origin.
 */
import zlib from 'node:zlib';

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The links of the site header, in order. */
const NAV_LINKS: ReadonlyArray<{ href: string; label: string }> = [
  { href: '/docs', label: 'API reference' },
  { href: '/status/page', label: 'Status' },
  { href: '/graphql', label: 'GraphiQL' },
  { href: '/openapi.json', label: 'OpenAPI' },
];

/** The site header: the name (a link to `/`) and the navigation, the current page marked. */
export function siteHeader(currentPath: string): string {
  const links = NAV_LINKS.map(
    (l) => `<a href="${l.href}"${l.href === currentPath ? ' aria-current="page"' : ''}>${escapeHtml(l.label)}</a>`,
  ).join('');
  return `<header class="site-header"><div class="wrap"><a class="brand" href="/">Quotegate</a><nav aria-label="Site">${links}</nav></div></header>`;
}

/** What a page puts into the frame. */
export interface PageParts {
  /** Document title (the site name is appended). */
  title: string;
  /** The path of this page (marks the current navigation link). */
  path: string;
  /** The `<main>` content, already HTML. */
  body: string;
  /** Extra `<head>` elements, already HTML. */
  head?: string;
  /** A short description for `<meta name="description">`. */
  description?: string;
}

/** A complete HTML document in the site frame. */
export function renderPage(parts: PageParts): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(parts.title)} · Quotegate</title>
${parts.description ? `<meta name="description" content="${escapeHtml(parts.description)}">\n` : ''}<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/site.css">
${parts.head ?? ''}</head>
<body>
${siteHeader(parts.path)}
<main class="wrap">
${parts.body}
</main>
<footer class="site-footer"><div class="wrap">Quotegate: read-only CS2 marketplace quotes, valuations and fee schedules. <a href="/openapi.json">OpenAPI document</a> · <a href="/status">/status as JSON</a></div></footer>
</body>
</html>
`;
}

/**
 * Content-Security-Policy of the server-rendered pages: everything from this origin only, no inline
 * scripts or styles.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Content-Security-Policy of the API reference and GraphiQL: same origin only, but the renderers set
 * inline styles and start web workers (from this origin or from blobs they build).
 */
export const APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Pages larger than this are sent gzip-compressed to clients that accept it (the status page is ~250 kB of SVG). */
const GZIP_FROM_BYTES = 8 * 1024;

/**
 * An HTML response with the page headers (the app adds X-Request-ID). With `request`, a large page is
 * gzip-compressed when the client accepts it, and a HEAD request gets the headers only.
 */
export function htmlResponse(html: string, init: { status?: number; csp?: string; headers?: Record<string, string>; request?: Request } = {}): Response {
  const headers: Record<string, string> = {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': init.csp ?? PAGE_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'Cache-Control': 'no-cache',
    Vary: 'Accept-Encoding',
    ...init.headers,
  };
  let body: Buffer = Buffer.from(html, 'utf8');
  if (body.length >= GZIP_FROM_BYTES && /\bgzip\b/.test(init.request?.headers.get('accept-encoding') ?? '')) {
    body = zlib.gzipSync(body, { level: 6 });
    headers['Content-Encoding'] = 'gzip';
  }
  headers['Content-Length'] = String(body.length);
  return new Response(init.request?.method === 'HEAD' ? null : new Uint8Array(body), { status: init.status ?? 200, headers });
}
