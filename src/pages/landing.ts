/**
 * `/`: what the service is, where its documentation and status are, and the two ways to call it
 * (REST with an API key, GraphQL). The endpoint table is read from the endpoint catalogue, so it
 * shows the same costs and limits as `GET /endpoints`.
 */
import { sortedEndpoints, type EndpointInfo } from '../catalogue/endpoints.js';
import { itemPath, searchForm } from './item-page.js';
import { escapeHtml, renderPage } from './layout.js';

/** The item used in the examples. */
const EXAMPLE_ITEM = 'AK-47 | Redline (Field-Tested)';

function costText(e: EndpointInfo): string {
  if (e.creditCost === 0) return 'free';
  const unit = e.unitPricing ? ` per ${e.unitPricing.unitSize} names` : '';
  return `${e.creditCost} credit${e.creditCost === 1 ? '' : 's'}${unit}`;
}

function accessText(e: EndpointInfo): string {
  if (e.roles.length === 0) return 'public';
  if (e.roles.includes('user')) return 'API key';
  return e.roles.join(', ');
}

function endpointRows(): string {
  return sortedEndpoints()
    .map((e) => {
      const limit = e.rateLimit ? `${e.rateLimit.maxRequests} / ${e.rateLimit.windowSeconds} s` : '—';
      return `<tr><td><code>${escapeHtml(e.method)} ${escapeHtml(e.path)}</code></td><td>${escapeHtml(accessText(e))}</td><td>${escapeHtml(costText(e))}</td><td>${escapeHtml(limit)}</td></tr>`;
    })
    .join('\n');
}

/**
 * The landing page. `baseUrl` is this service's public address (PUBLIC_BASE_URL, else where it listens, e.g.
 * `http://localhost:4000`; never the request's Host header); the examples use it.
 */
export function renderLanding(baseUrl: string): string {
  const base = escapeHtml(baseUrl);
  const item = encodeURIComponent(EXAMPLE_ITEM);
  const gqlBody = JSON.stringify({ query: `{ websites { code name feeSchedule { slots { sale { calculationChain { name steps { kind name } } } } } } }` });
  const body = `
<h1>Quotegate</h1>
<p class="lead">A read-only data API for Counter-Strike 2 marketplace items: current quotes from many marketplaces, a daily
consensus valuation, the marketplace catalogue, currencies and each marketplace's official fees.</p>
<ul class="links" aria-label="Start here">
  <li><a href="/items">Item prices and history</a></li>
  <li><a href="/valuation">How accurate the valuation is</a></li>
  <li><a href="/docs">API reference</a></li>
  <li><a href="/status/page">Service status</a></li>
  <li><a href="/graphql">GraphiQL (GraphQL in the browser)</a></li>
  <li><a href="/openapi.json">OpenAPI document</a></li>
</ul>

<h2 id="items">Look up an item</h2>
<p>Each item has a page with its current quotes per market (in the market's currency and in one you choose), its CSCP
valuation with its band, and a chart of its price history, e.g. <a href="${escapeHtml(itemPath(EXAMPLE_ITEM))}">${escapeHtml(EXAMPLE_ITEM)}</a>.</p>
${searchForm('', 'landing-search')}

<h2>What it serves</h2>
<ul class="cards">
  <li><strong>Quotes per marketplace</strong>Ask and bid of each item on each marketplace, in that marketplace's own currency, never converted.</li>
  <li><strong>CSCP valuation</strong>One daily consensus value per item (market code <code>CSCP</code>, side <code>mid</code>, in CNY): an estimate weighted across marketplaces, not a tradable offer.</li>
  <li><strong>Marketplace catalogue</strong>Every marketplace with its code, name, homepage and category.</li>
  <li><strong>Currencies</strong>The official currencies with their USD rates.</li>
  <li><strong>Official fee chains</strong>Each marketplace's deposit, sale and withdraw fees as calculation chains (fees and conversions, step by step).</li>
</ul>

<h2>Call it with REST</h2>
<p>Price endpoints need an API key (<code>qg_...</code>), sent as a bearer token:</p>
<pre><code>curl -H "Authorization: Bearer qg_..." \\
  '${base}/prices?app_id=730&amp;market_hash_name=${escapeHtml(item)}'</code></pre>
<p>or in the <code>X-API-Key</code> header:</p>
<pre><code>curl -H "X-API-Key: qg_..." \\
  '${base}/prices?app_id=730&amp;market_hash_name=${escapeHtml(item)}'</code></pre>
<p>The catalogue, currencies and fee schedules are public:</p>
<pre><code>curl '${base}/websites/BUFF163/fee-schedule'</code></pre>
<p>Answers are JSON envelopes <code>{ data, meta }</code>; errors are <code>{ error: { code, message }, meta }</code>. Every
operation, parameter and answer is described in the <a href="/docs">API reference</a>.</p>

<h2>Call it with GraphQL</h2>
<p>The same data is one <code>POST ${base}/graphql</code> away, with the same API key for prices. In a browser,
<a href="/graphql">${base}/graphql</a> opens GraphiQL with an example that fetches every marketplace with its full fee schedule.</p>
<pre><code>curl -H 'Content-Type: application/json' \\
  -d '${escapeHtml(gqlBody)}' \\
  ${base}/graphql</code></pre>

<h2>Endpoints</h2>
<p class="muted small">From the endpoint catalogue (<code>GET /endpoints</code>). Rate limits are per account, shared by all its keys.</p>
<table>
<thead><tr><th>Endpoint</th><th>Access</th><th>Cost</th><th>Rate limit</th></tr></thead>
<tbody>
${endpointRows()}
</tbody>
</table>
`;
  return renderPage({
    title: 'CS2 marketplace quotes API',
    path: '/',
    body,
    description: 'Quotegate: CS2 marketplace quotes, daily CSCP valuation, marketplace catalogue, currencies and official fee chains as a REST and GraphQL API.',
  });
}
