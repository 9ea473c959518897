import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { Metrics } from '../../src/metrics/index.js';

const root = new URL('../../', import.meta.url);
const registered = new Set((new Metrics(false).registry.getMetricsAsArray() as Array<{ name: string }>).map((m) => m.name));

/** spec_guard_* names used in PromQL, histogram suffixes mapped to their metric. */
function specGuardMetrics(expr: string): string[] {
  return [...expr.matchAll(/spec_guard_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));
}

describe('alert rules and dashboard', () => {
  const rules = parse(readFileSync(new URL('manifests/optional/prometheusrule.yaml', root), 'utf8'));
  const alerts = rules.spec.groups.flatMap((g: { rules: Array<{ alert: string; expr: string }> }) => g.rules);
  const dashboard = JSON.parse(readFileSync(new URL('manifests/optional/grafana-dashboard.json', root), 'utf8'));
  const panelExprs: string[] = dashboard.panels.flatMap((p: { targets: Array<{ expr: string }> }) => p.targets.map((t) => t.expr));

  it('alert on what the issue lists', () => {
    expect(alerts.map((a: { alert: string }) => a.alert)).toEqual([
      'SpecGuardWebhookErrors',
      'SpecGuardAdmissionSlow',
      'SpecGuardDriftNotReverted',
      'SpecGuardCertificateExpiring',
      'SpecGuardNoLeader',
      'SpecGuardAdmissionOverloaded',
      'SpecGuardTombstonesNearBudget',
      'SpecGuardRevertFight',
      'SpecGuardAdmissionObjectRepaired',
      'SpecGuardBlindWindow',
      'SpecGuardUnattributedChanges',
      'SpecGuardStoreNearlyFull',
      'SpecGuardStampWebhookFailingOpen',
      'SpecGuardBreakGlass',
      'SpecGuardTrustedIdentityMissing',
      'SpecGuardSelfUntrusted',
    ]);
  });

  it('the dashboard has cluster and namespace variables, every spec-guard series scoped by them, and panels for certificate expiry, webhook errors and repairs', () => {
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toEqual(['datasource', 'cluster', 'namespace']);
    for (const expr of panelExprs) {
      for (const m of expr.matchAll(/spec_guard_[a-z_]+(\{[^}]*\})?/g)) expect(m[1]).toContain('cluster=~"$cluster", namespace=~"$namespace"');
    }
    const titles = dashboard.panels.map((p: { title: string }) => p.title).join('\n');
    expect(titles).toMatch(/certificate/i);
    expect(titles).toMatch(/webhook errors/i);
    expect(titles).toMatch(/repaired/i);
    expect(panelExprs.join('\n')).toContain('apiserver_admission_webhook_fail_open_count');
  });

  it('every alert has a runbook: its runbook_url names a section of docs/runbooks.md', () => {
    const runbooks = readFileSync(new URL('docs/runbooks.md', root), 'utf8');
    const sections = new Set([...runbooks.matchAll(/^## (\w+)$/gm)].map((m) => m[1]!.toLowerCase()));
    for (const alert of alerts as Array<{ alert: string; annotations: { runbook_url?: string } }>) {
      expect(alert.annotations.runbook_url).toBe(`https://github.com/spec-guard/spec-guard/blob/main/docs/runbooks.md#${alert.alert.toLowerCase()}`);
      expect(sections.has(alert.alert.toLowerCase())).toBe(true);
    }
    expect(sections.size).toBe(alerts.length);
  });

  it('only use metrics spec-guard defines', () => {
    const used = [...alerts.map((a: { expr: string }) => a.expr), ...panelExprs].flatMap(specGuardMetrics);
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !registered.has(name))).toEqual([]);
  });

  it('follow the Prometheus naming rules, with no unbounded labels', () => {
    const metrics = new Metrics(false).registry.getMetricsAsArray() as unknown as Array<{ name: string; type: string; labelNames?: string[] }>;
    for (const m of metrics) {
      expect(m.name).toMatch(/^spec_guard_[a-z_]+$/);
      if (m.type === 'counter') expect(m.name).toMatch(/_total$/);
      for (const label of m.labelNames ?? []) expect(['name', 'namespace', 'user', 'uid', 'object']).not.toContain(label);
    }
    const histogram = metrics.find((m) => m.name === 'spec_guard_admission_duration_seconds') as unknown as { upperBounds: number[] };
    expect(histogram.upperBounds[0]).toBe(0.0005);
    expect(histogram.upperBounds.at(-1)).toBe(2.5);
  });
});
