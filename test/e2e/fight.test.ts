import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { admin, agentApply, eventsFor, fixture, inCluster, installLayers, kubectl, layerIntact, LAYER_KINDS, readApplication, startSpecGuard, unregister, waitFor, type SpecGuard } from './harness.js';

// A controller that fights the revert (writes the spec back as soon as spec-guard restores
// it) gets a few reverts, then ever longer waits: never unbounded load on the apiserver.
jest.setTimeout(120_000);

const NS = 'argocd';
const describeLocal = inCluster ? describe.skip : describe;

describeLocal('a writer that fights the revert', () => {
  let sg: SpecGuard;

  beforeAll(async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    sg = await startSpecGuard(fixture('config.yaml'), ['--no-register']);
    await sg.waitForLog(/became the leader/);
    // Only the stamp webhook: the fighter's writes are stored, and known as untrusted.
    installLayers(fixture('config.yaml'), sg, LAYER_KINDS.stamp);
    await layerIntact(sg, 'stamp');
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'application', '-n', NS, 'fight', '--ignore-not-found', '--wait=false']);
  });

  it('gets a handful of reverts and a SpecDriftFight Event, not one revert per write', async () => {
    agentApply('fight', NS);
    await waitFor('stamped', async () => (await readApplication(NS, 'fight'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    const kube = await admin();
    const path = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/fight`;
    const reverts = async () => Number(/spec_guard_reverts_total\{resource="applications\.argoproj\.io",result="reverted"\} (\d+)/.exec(await sg.metrics())?.[1] ?? 0);
    const before = await reverts();
    // 8 s of a controller writing its own targetRevision back, as fast as it can (behind admission).
    const until = Date.now() + 8000;
    let writes = 0;
    while (Date.now() < until) {
      await kube.request('PATCH', path, { body: { spec: { source: { targetRevision: 'fighter' } } }, contentType: 'application/merge-patch+json', headers: { 'Impersonate-User': 'alice', 'Impersonate-Group': 'developers' } }).catch(() => undefined);
      writes++;
      await new Promise((r) => setTimeout(r, 25));
    }
    const made = (await reverts()) - before;
    expect(writes).toBeGreaterThan(100);
    expect(made).toBeGreaterThanOrEqual(5);
    expect(made).toBeLessThan(15);
    await waitFor('the SpecDriftFight Event', () => eventsFor(NS, 'fight', 'SpecDriftFight').length > 0, 10_000, 250);
    // The reverts' Events are one series: created once, then its count raised by PATCHes
    // whose answers the apiserver sends as metadata only.
    await waitFor('the reverts counted in one Event', () => eventsFor(NS, 'fight', 'SpecDriftReverted').some((e) => e.count >= made), 15_000, 250);
    expect(eventsFor(NS, 'fight', 'SpecDriftReverted')).toHaveLength(1);
    expect(await sg.metrics()).toMatch(/spec_guard_revert_backoffs_total\{resource="applications\.argoproj\.io"\} 1/);
  });
});
