/**
 * `/docs`: the API reference, rendered in the browser from `/openapi.json` by Scalar's standalone
 * bundle (`@scalar/api-reference`, pinned in package.json), served by this service from node_modules
 * (see assets.ts): the page works offline. Scalar's default web fonts, telemetry, AI agent and MCP
 * links are switched off, so the page makes no request to another origin.
 */
import { escapeHtml, siteHeader } from './layout.js';

/** The pinned renderer's bundle, as served by this service. */
export interface DocsAssets {
  /** URL path of Scalar's standalone script. */
  scalarScript: string;
}

/**
 * Starts Scalar on `#docs-app` once its bundle has loaded (served at `/assets/docs.js`; an
 * external file so the page's CSP needs no inline script). The element must not be called
 * `api-reference`: the bundle would read that element's text as an embedded OpenAPI document. The servers entry is this page's origin,
 * so the examples and "Test Request" call the service the reader is looking at.
 */
export const DOCS_SCRIPT = `(function () {
  'use strict';
  var target = document.getElementById('docs-app');
  if (!target || !window.Scalar) return;
  target.textContent = '';
  window.Scalar.createApiReference(target, {
    url: '/openapi.json',
    servers: [{ url: window.location.origin, description: 'This service' }],
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    hideClientButton: false,
    documentDownloadType: 'json',
    metaData: { title: 'Quotegate API reference' }
  });
})();
`;

/** The `/docs` page: the site header, a no-JavaScript fallback, then the renderer's bundle. */
export function renderDocs(assets: DocsAssets): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Quotegate</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/site.css">
</head>
<body class="docs">
<div class="docs-header">${siteHeader('/docs')}</div>
<div id="docs-app">
  <div class="wrap docs-fallback">
    <h1>API reference</h1>
    <p>The interactive reference is drawn from the <a href="/openapi.json">OpenAPI document</a> by a script served by this
    service. <noscript>It needs JavaScript; without it, read <a href="/openapi.json">/openapi.json</a> directly.</noscript></p>
  </div>
</div>
<script src="${escapeHtml(assets.scalarScript)}"></script>
<script src="/assets/docs.js"></script>
</body>
</html>
`;
}
