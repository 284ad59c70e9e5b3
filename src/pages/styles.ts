/**
 * The one stylesheet of the server-rendered pages, served at `/assets/site.css`. Kept as a string so
 * the compiled service needs no file copying; system fonts only (nothing is fetched from elsewhere).
 */
export const SITE_CSS = `
:root {
  --fg: #1d2330; --muted: #5b6472; --line: #e3e6ec; --bg: #ffffff; --panel: #f6f7f9; --accent: #2356c5;
  --up: #2e9d63; --degraded: #e0a019; --down: #d2433f; --nodata: #c5cad3;
  --font: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.55 var(--font); color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:hover { text-decoration-thickness: 2px; }
.wrap { max-width: 1040px; margin: 0 auto; padding: 0 20px; }
h1 { font-size: 2rem; line-height: 1.2; margin: 1.6rem 0 .6rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .7rem; padding-top: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p { margin: .5rem 0 .9rem; }
code, pre { font-family: var(--mono); font-size: .88em; }
code { background: var(--panel); padding: .1em .3em; border-radius: 4px; }
pre { background: #151a24; color: #e8ecf3; padding: 14px 16px; border-radius: 8px; overflow-x: auto; line-height: 1.45; }
pre code { background: none; padding: 0; color: inherit; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: var(--muted); }
.small { font-size: .85rem; }

.site-header { border-bottom: 1px solid var(--line); background: var(--bg); }
.site-header .wrap { display: flex; align-items: center; gap: 24px; min-height: 52px; flex-wrap: wrap; }
.brand { font-weight: 700; font-size: 1.1rem; color: var(--fg); text-decoration: none; }
.site-header nav { display: flex; gap: 18px; flex-wrap: wrap; }
.site-header nav a { color: var(--muted); text-decoration: none; }
.site-header nav a:hover, .site-header nav a[aria-current="page"] { color: var(--fg); }
.site-footer { margin-top: 3rem; border-top: 1px solid var(--line); padding: 18px 0 28px; color: var(--muted); font-size: .85rem; }

.lead { font-size: 1.15rem; color: var(--muted); max-width: 46rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap: 14px; margin: 1rem 0; padding: 0; list-style: none; }
.cards li { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; background: var(--panel); }
.cards strong { display: block; margin-bottom: .2rem; }
.links { display: flex; flex-wrap: wrap; gap: 10px; margin: 1rem 0; padding: 0; list-style: none; }
.links a { display: inline-block; border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; text-decoration: none; }
.links a:hover { border-color: var(--accent); }

body.docs { --scalar-custom-header-height: 53px; }
.docs-header { position: sticky; top: 0; z-index: 1000; height: 53px; background: var(--bg); }
.docs-header .wrap { max-width: none; }
.docs-fallback { padding: 2rem 0; }

.banner { border-radius: 8px; padding: 14px 18px; margin: 1rem 0 1.4rem; font-weight: 600; color: #fff; }
.banner p { margin: .2rem 0 0; font-weight: 400; }
.banner.up { background: var(--up); }
.banner.degraded { background: var(--degraded); color: #2b2100; }
.banner.down { background: var(--down); }
.banner.nodata { background: var(--panel); color: var(--fg); border: 1px solid var(--line); }
.panel { border: 1px solid var(--line); border-radius: 8px; margin: .6rem 0 1rem; }
.component { padding: 14px 16px; border-top: 1px solid var(--line); }
.component:first-child { border-top: none; }
.component-head { display: flex; justify-content: space-between; gap: 12px; flex-wrap: wrap; align-items: baseline; }
.component-name { font-weight: 600; }
.state { font-size: .88rem; font-weight: 600; }
.state.up { color: var(--up); }
.state.degraded { color: #a8740a; }
.state.down { color: var(--down); }
.state.nodata { color: var(--muted); }
.bars { display: block; width: 100%; height: 34px; margin: 8px 0 2px; }
.bars rect.up { fill: var(--up); }
.bars rect.degraded { fill: var(--degraded); }
.bars rect.down { fill: var(--down); }
.bars rect.nodata { fill: var(--nodata); }
.bars rect:hover { opacity: .7; }
.axis { display: flex; justify-content: space-between; font-size: .78rem; color: var(--muted); }
.axis span:nth-child(2) { flex: 1; text-align: center; border-bottom: 1px solid var(--line); margin: 0 10px .55em; height: 0; }
.legend { display: flex; flex-wrap: wrap; gap: 16px; font-size: .85rem; color: var(--muted); margin: .3rem 0 .6rem; padding: 0; list-style: none; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.swatch.up { background: var(--up); }
.swatch.degraded { background: var(--degraded); }
.swatch.down { background: var(--down); }
.swatch.nodata { background: var(--nodata); }
.swatch.activity { background: var(--accent); }

.scores { overflow-x: auto; }
.scores table { font-size: .78rem; min-width: 760px; }
.scores th, .scores td { padding: 4px 2px; text-align: center; border-bottom: none; }
.scores th.area { text-align: left; padding-right: 8px; white-space: nowrap; font-size: .88rem; }
.scores .mean { padding-left: 8px; white-space: nowrap; font-size: .88rem; text-align: right; }
.scores td.cell { border: 2px solid var(--bg); border-radius: 4px; font-variant-numeric: tabular-nums; }
.scores td.up { background: #d9f1e3; color: #155c37; }
.scores td.degraded { background: #fbecc7; color: #6d4c00; }
.scores td.down { background: #f8d6d5; color: #8a1d1a; }
.scores td.nodata { background: var(--panel); color: var(--muted); }

.chart { display: block; width: 100%; height: auto; margin: .4rem 0; }
.chart .bar { fill: var(--accent); }
.chart .gridline { stroke: var(--line); stroke-width: 1; }
.chart text { font: 11px var(--font); fill: var(--muted); }
.chart .nodata-mark { fill: var(--nodata); }
.spark { display: block; width: 100%; min-width: 160px; height: 26px; }
.spark .bar { fill: var(--accent); }
.spark .nodata-mark { fill: var(--nodata); }
.unavailable { border: 1px solid var(--down); background: #fdf0ef; border-radius: 8px; padding: 18px 20px; margin: 1.2rem 0; }
.unavailable h1 { margin-top: 0; font-size: 1.5rem; }
`;

/**
 * The few rules the item pages (src/pages/item/view.ts) need beyond SITE_CSS, sent as one inline <style> in those
 * pages only, which their CSP allows by its sha256 hash (the pages' CSP has no 'unsafe-inline').
 */
export const ITEM_CSS = `
.search-form, .controls { display: flex; flex-wrap: wrap; gap: 10px 14px; align-items: flex-end; margin: .8rem 0 1rem; }
.search-form { align-items: center; }
.search-form input[type=search] { min-width: 22rem; max-width: 100%; }
.controls label, .search-form label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); gap: 2px; }
.controls input, .controls select, .search-form input, .controls button, .search-form button { font: inherit; font-size: .95rem; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
.controls button, .search-form button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
.ranges { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: .2rem 0 .8rem; padding: 0; list-style: none; font-size: .9rem; }
.cscp-box { border: 1px solid var(--line); border-radius: 8px; background: var(--panel); padding: 12px 16px; margin: .6rem 0 1rem; }
.cscp-box table { width: auto; min-width: 28rem; }
.cscp-box .figure { font-size: 1.35rem; font-weight: 600; }
.history-chart { display: block; width: 100%; height: auto; margin: .4rem 0; }
.history-chart text { font: 12px var(--font); fill: var(--muted); }
.history-chart .axis-title { fill: var(--fg); font-weight: 600; }
.history-chart .gridline { stroke: var(--line); stroke-width: 1; }
.history-chart .axis-line { stroke: #9aa2ae; stroke-width: 1; }
.legend svg { vertical-align: middle; margin-right: 6px; }
caption { text-align: left; padding: 2px 0 6px; }
td.date, th.date { white-space: nowrap; }
.results { padding-left: 1.2rem; }
.results li { margin: .15rem 0; }
.scroll { overflow-x: auto; }
details { margin: .3rem 0; }
tr.stale td { background: #fff6e0; }
.stale-mark, .stale-note strong { color: #a15c00; }
summary { cursor: pointer; }
`;
