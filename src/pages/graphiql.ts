/**
 * GraphiQL at `GET /graphql` (from a browser), served entirely by this service. Yoga's own page loads
 * the editor from a public CDN; this one loads the same editor (`@graphql-yoga/graphiql`, pinned in
 * package.json) and its Monaco workers from `/assets/vendor/...` (assets.ts), so it works offline.
 * Yoga calls `renderGraphiQLPage` with the options given to `createYoga({ graphiql })`.
 */
import type { GraphiQLOptions } from 'graphql-yoga';
import { escapeHtml } from './layout.js';

/** Where the editor's files are served. */
export interface GraphiQLAssets {
  /** URL path of the folder holding `yoga-graphiql.umd.js`, `graphiql.css` and `monacoeditorwork/`. */
  base: string;
}

/**
 * Reads the options embedded in the page, points Monaco's web workers at this origin and starts the
 * editor (served at `/assets/graphiql.js`; external so the CSP needs no inline script).
 */
export function graphiqlScript(assets: GraphiQLAssets): string {
  const base = JSON.stringify(assets.base);
  return `(function () {
  'use strict';
  var base = ${base};
  var workers = {
    editorWorkerService: base + '/monacoeditorwork/editor.worker.bundle.js',
    json: base + '/monacoeditorwork/json.worker.bundle.js',
    graphql: base + '/monacoeditorwork/graphql.worker..bundle.js'
  };
  self.MonacoEnvironment = {
    globalAPI: false,
    getWorkerUrl: function (_moduleId, label) { return workers[label] || workers.editorWorkerService; }
  };
  var optionsElement = document.getElementById('graphiql-options');
  var options = optionsElement ? JSON.parse(optionsElement.textContent || '{}') : {};
  var root = document.getElementById('root');
  root.textContent = '';
  window.YogaGraphiQL.renderYogaGraphiQL(root, options);
})();
`;
}

/** JSON safe inside a `<script type="application/json">` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/**
 * The options handed to the editor. This editor build opens `query` (or the query in the page URL,
 * where it keeps the reader's edits) and otherwise its own welcome text: it does not read
 * `defaultQuery`, so the default query is passed as `query`. No favicon URL (the default is remote).
 */
function editorOptions(options: GraphiQLOptions): Record<string, unknown> {
  const { favicon: _favicon, ...rest } = options;
  return { ...rest, query: (options as { query?: string }).query ?? options.defaultQuery };
}

/** The GraphiQL page for Yoga's `renderGraphiQL` option. */
export function renderGraphiQLPage(options: GraphiQLOptions, assets: GraphiQLAssets): string {
  const title = options.title ?? 'GraphiQL';
  const base = escapeHtml(assets.base);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}/graphiql.css">
</head>
<body id="body" class="no-focus-outline">
<div id="root">Loading ${escapeHtml(title)}…<noscript> GraphiQL needs JavaScript; POST queries to this URL instead.</noscript></div>
<script type="application/json" id="graphiql-options">${scriptJson(editorOptions(options))}</script>
<script src="${base}/yoga-graphiql.umd.js"></script>
<script src="/assets/graphiql.js"></script>
</body>
</html>
`;
}
