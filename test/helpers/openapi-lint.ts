/**
 * Lints an OpenAPI document with the two linters people point at published API descriptions, both run in-process
 * and offline: Redocly (`@redocly/openapi-core`, its built-in `recommended` ruleset) and Spectral
 * (`@stoplight/spectral-core` with the `spectral:oas` ruleset from `@stoplight/spectral-rulesets`). Neither
 * needs the network for a document without external `$ref`s: the rulesets ship inside the packages.
 */
import { BaseResolver, createConfig, lintDocument, makeDocumentFromString } from '@redocly/openapi-core';
import spectralCore from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import spectralRulesets from '@stoplight/spectral-rulesets';

/** One finding of either linter: which linter, its rule, severity, where (a JSON pointer) and what it says. */
export interface LintFinding {
  linter: 'redocly' | 'spectral';
  rule: string;
  severity: 'error' | 'warn' | 'info' | 'hint';
  at: string;
  message: string;
}

/** Redocly's `recommended` ruleset over `doc`: every error and warning (its `info`-level notes included). */
export async function redoclyFindings(doc: unknown): Promise<LintFinding[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const document = makeDocumentFromString(JSON.stringify(doc), '/openapi.json');
  const problems = await lintDocument({ document, config, externalRefResolver: new BaseResolver() });
  return problems.map((p) => ({
    linter: 'redocly',
    rule: p.ruleId,
    severity: p.severity,
    at: p.location.map((l) => l.pointer ?? '').join(' '),
    message: p.message,
  }));
}

const SPECTRAL_SEVERITY = ['error', 'warn', 'info', 'hint'] as const;

/** Spectral's `spectral:oas` ruleset over `doc`: every finding, hints included. */
export async function spectralFindings(doc: unknown): Promise<LintFinding[]> {
  const spectral = new spectralCore.Spectral();
  spectral.setRuleset(spectralRulesets.oas as never);
  const document = new spectralCore.Document(JSON.stringify(doc, null, 2), spectralParsers.Json, '/openapi.json');
  const results = await spectral.run(document);
  return results.map((r) => ({
    linter: 'spectral',
    rule: String(r.code),
    severity: SPECTRAL_SEVERITY[r.severity] ?? 'error',
    at: ['#', ...r.path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1'))].join('/'),
    message: r.message,
  }));
}

/** One line per finding, for a failing assertion's message. */
export function formatFindings(findings: LintFinding[]): string {
  return findings.map((f) => `${f.linter} ${f.severity} ${f.rule} at ${f.at}: ${f.message}`).join('\n');
}
