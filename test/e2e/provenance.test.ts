import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';
import {
  admin,
  AGENT,
  ALICE,
  eventsFor,
  inCluster,
  installLayers,
  kubectl,
  kubectlOk,
  layerIntact,
  LAYER_KINDS,
  policyInForce,
  POLICY_DENIED,
  readApplication,
  realAgent,
  startSpecGuard,
  unregister,
  waitFor,
  waitForRevision,
  type SpecGuard,
} from './harness.js';

// Issue #17: provenance that cannot be forged, replayed or confused. Each scenario is an
// attack (or bad luck) that broke a promise before stamps carried a sequence and before
// managedFields stopped counting as evidence. The agent writes as the real argocd-agent does.
jest.setTimeout(180_000);

const NS = 'argocd';
const APPS = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications`;
const dir = mkdtempSync(join(tmpdir(), 'spec-guard-provenance-'));
const config = join(dir, 'config.yaml');
writeFileSync(config, `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [${NS}]\n    normalizer: argocd-application\nstore:\n  type: file\n  path: ${join(dir, 'state.json')}\n`);

let sg: SpecGuard | undefined;
async function restart(extra: string[] = []): Promise<SpecGuard> {
  await sg?.stop();
  kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
  sg = await startSpecGuard(config, ['--lease-duration', '3', ...extra]);
  await sg.waitForLog(/became the leader/);
  return sg;
}
async function stop(): Promise<void> {
  await sg?.stop();
  sg = undefined;
}

const revisionOf = async (name: string) => (await readApplication(NS, name))?.spec?.source?.targetRevision as string | undefined;
const stampOf = async (name: string) => (await readApplication(NS, name))?.metadata?.annotations?.[STAMP_ANNOTATION] as string | undefined;
const source = (targetRevision: string) => ({ source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision, path: 'guestbook' } });

/** A write as alice with her ordinary edit rights, through the REST API (kubectl cannot set managedFields). */
async function aliceRequest(method: string, path: string, body: unknown, contentType = 'application/merge-patch+json'): Promise<Record<string, any>> {
  return (await admin()).request(method, path, { body, contentType, headers: { 'Impersonate-User': 'alice', 'Impersonate-Group': 'developers' } });
}

const describeLocal = inCluster ? describe.skip : describe;

describeLocal('provenance (issue #17)', () => {
  beforeAll(() => {
    unregister();
    kubectl([], ['delete', 'applications', '--all', '-n', NS]);
  });

  afterAll(async () => {
    await stop();
    unregister();
    kubectl([], ['delete', 'applications', '--all', '-n', NS, '--wait=false']);
  });

  it('4a. an older spec written back with its older stamp, after the agent wrote a newer one, is reverted', async () => {
    const guard = await restart(['--no-register']);
    installLayers(config, guard, LAYER_KINDS.stamp);
    await realAgent.create('replay', NS, source('v1'));
    await waitFor('stamped v1', () => stampOf('replay'));
    const saved = (await readApplication(NS, 'replay'))!;
    await realAgent.update('replay', NS, source('v2'));
    await waitFor('stamped v2', async () => (await stampOf('replay')) !== saved.metadata.annotations[STAMP_ANNOTATION] && (await stampOf('replay')));
    // Behind admission: alice writes back v1 with v1's stamp.
    unregister();
    await aliceRequest('PATCH', `${APPS}/replay`, { metadata: { annotations: { [STAMP_ANNOTATION]: saved.metadata.annotations[STAMP_ANNOTATION] } }, spec: saved.spec });
    expect(await waitForRevision(NS, 'replay', 'v2', 3000)).toBeLessThan(3000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await revisionOf('replay')).toBe('v2');
  });

  // Issue #26: argocd-agent replaces the annotations on every update, so each one dropped the
  // stamp and got a new one: an update that changed nothing became a new version, a watch
  // event and a store write. The old stamp is put back, and the apiserver sees a no-op.
  it('an agent update that changes nothing keeps its stamp and stays a no-op: no new version; a change is stamped anew', async () => {
    const guard = await restart(['--no-register']);
    installLayers(config, guard, LAYER_KINDS.stamp);
    await realAgent.create('unchanged', NS, source('v1'));
    await waitFor('stamped v1', () => stampOf('unchanged'));
    const created = (await readApplication(NS, 'unchanged'))!;
    // The first update adds the agent's field manager to managedFields: a new version, with the stamp kept.
    const first = await realAgent.update('unchanged', NS, source('v1'));
    expect(first.metadata.annotations[STAMP_ANNOTATION]).toBe(created.metadata.annotations[STAMP_ANNOTATION]);
    for (let i = 0; i < 3; i++) {
      const again = await realAgent.update('unchanged', NS, source('v1'));
      expect(again.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
      expect(again.metadata.annotations[STAMP_ANNOTATION]).toBe(created.metadata.annotations[STAMP_ANNOTATION]);
    }
    const changed = await realAgent.update('unchanged', NS, source('v2'));
    expect(changed.metadata.annotations[STAMP_ANNOTATION]).not.toBe(created.metadata.annotations[STAMP_ANNOTATION]);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await revisionOf('unchanged')).toBe('v2');
  });

  it('4b. a deleted object recreated from a saved copy, stamp included, is not canonical: an untrusted delete of it is not undone', async () => {
    const guard = await restart(['--no-register']);
    installLayers(config, guard, [...LAYER_KINDS.stamp, ...LAYER_KINDS.validating]);
    await layerIntact(guard, 'tombstone');
    await realAgent.create('resurrect', NS, source('v1'));
    await waitFor('stamped', () => stampOf('resurrect'));
    const saved = (await readApplication(NS, 'resurrect'))!;
    await realAgent.delete('resurrect', NS);
    await waitFor('deleted', async () => !(await readApplication(NS, 'resurrect')));
    // Behind admission, alice recreates it from her saved copy, stamp included, then deletes it.
    unregister();
    const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, managedFields: _mf, generation: _g, ...metadata } = saved.metadata;
    await aliceRequest('POST', APPS, { ...saved, metadata }, 'application/json');
    await new Promise((r) => setTimeout(r, 1500));
    kubectlOk(ALICE, ['delete', 'application', '-n', NS, 'resurrect']);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await readApplication(NS, 'resurrect')).toBeUndefined();
    expect(guard.logs()).not.toMatch(/deleted object recreated.*resurrect/);
  });

  it('5a/5b. with the stamp layer present, an untrusted removal-only edit is reverted, also after alice planted a managedFields entry of the agent dated 2099', async () => {
    const guard = await restart(['--no-register']);
    installLayers(config, guard, LAYER_KINDS.stamp);
    await layerIntact(guard, 'stamp');
    await realAgent.create('removal', NS, { ...source('v1'), syncPolicy: { syncOptions: ['CreateNamespace=true'] } });
    await waitFor('stamped', () => stampOf('removal'));
    // (a) Removal only: no managedFields entry of alice's own.
    await aliceRequest('PATCH', `${APPS}/removal`, { spec: { syncPolicy: null } });
    await waitFor('the removal reverted', async () => (await readApplication(NS, 'removal'))?.spec?.syncPolicy?.syncOptions?.[0] === 'CreateNamespace=true', 3000, 20);
    // (b) A metadata-only write that plants an argocd-agent entry over the spec, dated 2099.
    const current = (await readApplication(NS, 'removal'))!;
    const planted = [...current.metadata.managedFields, { manager: 'argocd-agent', operation: 'Update', apiVersion: 'argoproj.io/v1alpha1', time: '2099-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:source': { 'f:targetRevision': {} }, 'f:syncPolicy': {} } } }];
    await aliceRequest('PATCH', `${APPS}/removal`, { metadata: { managedFields: planted } });
    expect((await readApplication(NS, 'removal'))!.metadata.managedFields.some((m: { time?: string }) => m.time === '2099-01-01T00:00:00Z')).toBe(true);
    await aliceRequest('PATCH', `${APPS}/removal`, { spec: { source: { targetRevision: 'evil' } } });
    expect(await waitForRevision(NS, 'removal', 'v1', 3000)).toBeLessThan(3000);
    await new Promise((r) => setTimeout(r, 500));
    expect(await revisionOf('removal')).toBe('v1');
  });

  it('5c. the agent’s removal-only write right after a revert, made while spec-guard is down under the policy, is kept', async () => {
    // The revert just before left spec-guard's managedFields entry newest over the spec.
    const guard = await restart();
    await layerIntact(guard, 'guard');
    await waitFor('removal in sync', async () => (await readApplication(NS, 'removal'))?.spec?.syncPolicy);
    await stop();
    // Removal only: no managedFields entry of the agent's own; spec-guard's revert entry stays the newest.
    await (await admin()).request('PATCH', `${APPS}/removal`, {
      body: [{ op: 'remove', path: '/spec/syncPolicy' }],
      contentType: 'application/json-patch+json',
      query: { fieldManager: 'argocd-agent' },
      headers: { 'Impersonate-User': realAgent.user },
    });
    expect((await readApplication(NS, 'removal'))!.spec.syncPolicy).toBeUndefined();
    const back = await restart();
    await waitFor('the agent’s write stamped anew', () => stampOf('removal'), 10_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await readApplication(NS, 'removal'))!.spec.syncPolicy).toBeUndefined();
    expect(back.logs()).not.toMatch(/drift reverted.*removal/);
  });

  it('5d. an object the real agent creates (as foo, with the principal’s managedFields) while spec-guard is down is learned; a later change behind admission is reverted', async () => {
    const guard = await restart();
    await layerIntact(guard, 'guard');
    await stop();
    const created = await realAgent.create('created-while-down', NS, source('v1'));
    expect(created.metadata.annotations?.[STAMP_ANNOTATION]).toBeUndefined();
    expect(created.metadata.managedFields.map((m: { manager: string }) => m.manager)).toEqual(expect.arrayContaining(['foo', 'argocd-server']));
    const back = await restart();
    await waitFor('learned and stamped', () => stampOf('created-while-down'), 10_000);
    // Behind admission (the layers removed and spec-guard restarted without registering).
    await back.stop();
    sg = undefined;
    unregister();
    await restart(['--no-register']);
    kubectlOk(ALICE, ['patch', 'application', '-n', NS, 'created-while-down', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
    expect(await waitForRevision(NS, 'created-while-down', 'v1', 3000)).toBeLessThan(3000);
  });

  it('7. with --no-register and no webhooks, the agent’s delete (the principal deleted it) is final by default, and reported', async () => {
    const guard = await restart(['--no-register']);
    installLayers(config, guard, LAYER_KINDS.stamp);
    await realAgent.create('deleted-upstream', NS, source('v1'));
    await waitFor('stamped', () => stampOf('deleted-upstream'));
    await new Promise((r) => setTimeout(r, 300));
    unregister();
    await realAgent.delete('deleted-upstream', NS);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await readApplication(NS, 'deleted-upstream')).toBeUndefined();
    await waitFor('the UnattributedChange event', () => eventsFor(NS, 'deleted-upstream', 'UnattributedChange').length > 0, 10_000, 250);
    const samples = parsePrometheusText(await guard.metrics());
    expect(metricValue(samples, 'spec_guard_unattributed_changes_total', { resource: 'applications.argoproj.io', change: 'delete', action: 'keep-deleted' })).toBe(1);
    expect(metricValue(samples, 'spec_guard_admission_layer_intact', { layer: 'tombstone' })).toBe(0);
  });

  it('the policy refuses alice throughout while it is registered (continuity rests on it)', async () => {
    await restart();
    await policyInForce();
    await realAgent.create('policy-holds', NS, source('v1')).catch(() => undefined);
    expect(kubectl(ALICE, ['patch', 'application', '-n', NS, 'policy-holds', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']).stderr).toContain(POLICY_DENIED);
    expect(kubectl(AGENT, ['patch', 'application', '-n', NS, 'policy-holds', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"v2"}}}']).code).toBe(0);
  });
});
