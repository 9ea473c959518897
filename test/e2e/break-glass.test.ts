import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';
import { AGENT, ALICE, agentApply, expireLease, fixture, inCluster, kubectl, layerIntact, policyInForce, readApplication, startSpecGuard, targetRevision, unregister, type SpecGuard } from './harness.js';

// The emergency path: a member of a break-glass group (trust.breakGlassGroups) edits a guarded
// object within seconds, with the admission policy and webhooks in force; the edit is the
// source of truth's until it syncs again (nothing reverts it), and it is loud.
jest.setTimeout(120_000);

const NS = 'argocd';
const GROUP = 'spec-guard:break-glass';
// The e2e configuration names the group; nobody else is in it.
const config = fixture('config.yaml');
const ONCALL = ['--as=alice', '--as-group=developers', `--as-group=${GROUP}`];

(inCluster ? describe.skip : describe)('break glass', () => {
  let sg: SpecGuard;

  beforeAll(async () => {
    unregister();
    expireLease();
    sg = await startSpecGuard(config);
    await policyInForce();
    await layerIntact(sg, 'guard');
    agentApply('glass', NS);
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'application', '-n', NS, 'glass', '--ignore-not-found', '--wait=false']);
  });

  it('is the e2e configuration’s break-glass group', () => {
    expect(readFileSync(config, 'utf8')).toContain(`breakGlassGroups: [${GROUP}]`);
  });

  it('the on-call edit passes every layer with a warning, is stamped, and nothing reverts it; alice alone is still refused', async () => {
    expect(kubectl(ALICE, ['patch', 'application', '-n', NS, 'glass', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"alice"}}}']).code).not.toBe(0);
    const edit = kubectl(ONCALL, ['patch', 'application', '-n', NS, 'glass', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"hotfix"}}}']);
    expect(edit.code).toBe(0);
    expect(edit.stderr).toMatch(/Warning: spec-guard: break-glass UPDATE of Application argocd\/glass by alice/);
    expect((await readApplication(NS, 'glass'))!.metadata.annotations['spec-guard.io/stamp']).toMatch(/^v2\./);
    await new Promise((r) => setTimeout(r, 2000));
    expect(targetRevision('glass', NS)).toBe('hotfix');
    expect(sg.logs()).not.toMatch(/drift reverted[^\n]*glass/);
    await sg.waitForLog(/admission decision: break glass[^\n]*glass/, 5000);
    const samples = parsePrometheusText(await sg.metrics());
    expect(metricValue(samples, 'spec_guard_admission_requests_total', { webhook: 'mutate', operation: 'UPDATE', resource: 'applications.argoproj.io', decision: 'break-glass' })).toBe(1);
    // The source of truth's next sync overwrites it.
    agentApply('glass', NS);
    expect(targetRevision('glass', NS)).toBe('HEAD');
    expect(kubectl(AGENT, ['get', 'application', '-n', NS, 'glass']).code).toBe(0);
  });
});
