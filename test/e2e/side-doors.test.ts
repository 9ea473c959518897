import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  AGENT,
  ALICE,
  CONTROLLER,
  eventsFor,
  fixture,
  inCluster,
  installLayers,
  kubectl,
  kubectlOk,
  layerIntact,
  LAYER_KINDS,
  policyInForce,
  POLICY_DENIED,
  readApplication,
  startSpecGuard,
  unregister,
  admissionObjectExists,
  expireLease,
  webhooksOnlyConfig,
  waitFor,
  type KubectlResult,
  type SpecGuard,
} from './harness.js';

// The side doors of an Argo CD Application: every write of the table, by a user with
// ordinary edit rights, against each layer alone (the policy with spec-guard down, the webhooks
// without the policy) and behind admission; the application-controller's own writes pass.
jest.setTimeout(180_000);

const NS = 'argocd';
const APP = 'doors-a';
const FINALIZER = 'resources-finalizer.argocd.argoproj.io';
const MANIFEST = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hers', namespace: 'default' }, data: { owner: 'alice' } });
const describeLocal = inCluster ? describe.skip : describe;

/** The Application as the agent writes it: with the resources finalizer. */
const agentApp = (operation?: object) =>
  JSON.stringify({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: APP, namespace: NS, finalizers: [FINALIZER] },
    spec: {
      project: 'default',
      source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'guestbook' },
    },
    ...(operation ? { operation } : {}),
  });

const agentWrites = (operation?: object) =>
  kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '--force-conflicts', '-f', '-'], { input: agentApp(operation) });

const merge = (identity: string[], body: object) => kubectl(identity, ['patch', 'application', '-n', NS, APP, '--type=merge', '-p', JSON.stringify(body)]);
const jsonPatch = (identity: string[], ops: object[]) => kubectl(identity, ['patch', 'application', '-n', NS, APP, '--type=json', '-p', JSON.stringify(ops)]);

interface Door {
  what: string;
  door: string;
  run: () => KubectlResult;
}

/** The table, row by row: alice's write and the door it goes through. */
const doors: Door[] = [
  { what: 'operation.sync.manifests: her own manifests', door: '/operation', run: () => merge(ALICE, { operation: { sync: { manifests: [MANIFEST] } } }) },
  { what: 'operation.sync.source: another repository', door: '/operation', run: () => merge(ALICE, { operation: { sync: { source: { repoURL: 'https://evil.example/r.git', path: '.', targetRevision: 'HEAD' } } } }) },
  { what: 'operation.sync.revision, prune, syncOptions', door: '/operation', run: () => merge(ALICE, { operation: { sync: { revision: 'evil', prune: true, syncOptions: ['Replace=true'] } } }) },
  { what: 'operation: {sync: {}} on a manually synced app', door: '/operation', run: () => merge(ALICE, { operation: { sync: {} } }) },
  {
    what: 'status.operationState Running with her operation',
    door: '/status',
    run: () => merge(ALICE, { status: { operationState: { phase: 'Running', startedAt: '2026-12-04T10:00:00Z', operation: { sync: { manifests: [MANIFEST] } } } } }),
  },
  { what: 'annotation skip-reconcile: "true"', door: '/metadata/annotations/argocd.argoproj.io~1skip-reconcile', run: () => kubectl(ALICE, ['annotate', 'application', '-n', NS, APP, 'argocd.argoproj.io/skip-reconcile=true']) },
  { what: 'the resources finalizer removed', door: '/metadata/finalizers', run: () => jsonPatch(ALICE, [{ op: 'remove', path: '/metadata/finalizers/0' }]) },
];

/** The application-controller's own writes: status, an auto-sync operation, clearing it. */
const controllerWrites = [
  { what: 'writes status', run: () => merge(CONTROLLER, { status: { reconciledAt: new Date().toISOString(), sync: { status: 'Synced' } } }) },
  { what: 'sets an auto-sync operation', run: () => merge(CONTROLLER, { operation: { initiatedBy: { automated: true }, sync: { revision: 'abc123' } } }) },
  { what: 'writes its operationState', run: () => merge(CONTROLLER, { status: { operationState: { phase: 'Succeeded', startedAt: '2026-12-04T10:00:00Z', operation: { sync: { revision: 'abc123' } } } } }) },
  { what: 'clears the operation it ran', run: () => merge(CONTROLLER, { operation: null }) },
];

function runDoors(): Array<{ what: string; refused: boolean; stderr: string }> {
  return doors.map((d) => {
    const r = d.run();
    return { what: d.what, refused: r.code !== 0, stderr: r.stderr };
  });
}

const expectAllRefused = (results: ReturnType<typeof runDoors>, byPolicy: boolean) => {
  for (const [i, r] of results.entries()) {
    expect({ what: r.what, refused: r.refused }).toEqual({ what: doors[i]!.what, refused: true });
    expect(r.stderr).toContain(`${doors[i]!.door} of Application ${NS}/${APP}`);
    if (byPolicy) expect(r.stderr).toContain(POLICY_DENIED);
    else expect(r.stderr).not.toContain(POLICY_DENIED);
  }
};

/** Nothing of the table stuck: no operation, no skip-reconcile, the finalizer, no operationState of hers. */
async function doorsClosed(): Promise<void> {
  const app = (await readApplication(NS, APP))!;
  expect(app.operation).toBeUndefined();
  expect(app.metadata.annotations?.['argocd.argoproj.io/skip-reconcile']).toBeUndefined();
  expect(app.metadata.finalizers).toEqual([FINALIZER]);
  expect(JSON.stringify(app.status?.operationState ?? {})).not.toContain('hers');
}

const exists = admissionObjectExists;

describeLocal('the side doors of an Application', () => {
  let sg: SpecGuard | undefined;

  beforeAll(async () => {
    unregister();
    expireLease();
    sg = await startSpecGuard(fixture('config.yaml'));
    await waitFor('the admission policy', () => exists('validatingadmissionpolicy'), 10_000);
    await policyInForce();
    agentWrites();
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['patch', 'application', '-n', NS, APP, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl([], ['delete', 'application', '-n', NS, APP, '--ignore-not-found', '--wait=false']);
  });

  it('1. with spec-guard serving, every row of the table is refused, naming its door; the controller’s own writes pass', async () => {
    const results = runDoors();
    for (const [i, r] of results.entries()) {
      expect({ what: r.what, refused: r.refused }).toEqual({ what: doors[i]!.what, refused: true });
      expect(r.stderr).toContain(`${doors[i]!.door} of Application ${NS}/${APP}`);
    }
    await doorsClosed();
    for (const w of controllerWrites) expect({ what: w.what, stderr: w.run().stderr }).toEqual({ what: w.what, stderr: '' });
    // The agent's operation is its to give; the controller then clears it.
    agentWrites({ sync: { revision: 'v2' } });
    expect((await readApplication(NS, APP))!.operation).toEqual({ sync: { revision: 'v2' } });
    expect(merge(CONTROLLER, { operation: null }).stderr).toBe('');
  });

  it('2. with every replica stopped, the admission policy alone refuses every row (no webhook call)', async () => {
    await sg!.stop('SIGKILL');
    sg = undefined;
    kubectlOk([], ['delete', 'mutatingwebhookconfiguration,validatingwebhookconfiguration', 'spec-guard']);
    await policyInForce();
    expectAllRefused(runDoors(), true);
    await doorsClosed();
    // The controller's writes need no webhook: they pass with none registered.
    for (const w of controllerWrites) expect({ what: w.what, stderr: w.run().stderr }).toEqual({ what: w.what, stderr: '' });
  });

  it('3. the webhooks alone (no admission policy) refuse every row too', async () => {
    unregister();
    expireLease();
    sg = await startSpecGuard(webhooksOnlyConfig());
    await waitFor('the webhook configurations', () => exists('validatingwebhookconfiguration'), 10_000);
    expect(exists('validatingadmissionpolicy')).toBe(false);
    expectAllRefused(runDoors(), false);
    await doorsClosed();
    for (const w of controllerWrites) expect({ what: w.what, stderr: w.run().stderr }).toEqual({ what: w.what, stderr: '' });
    await sg.stop();
    sg = undefined;
  });

  it('4. behind admission, skip-reconcile, a removed finalizer and her operation are undone within a second; the controller’s cleared operation stays cleared', async () => {
    unregister();
    expireLease();
    sg = await startSpecGuard(fixture('config.yaml'), ['--no-register']);
    await sg.waitForLog(/became the leader/);
    installLayers(fixture('config.yaml'), sg, LAYER_KINDS.stamp);
    await layerIntact(sg, 'stamp');
    agentWrites({ sync: { revision: 'v3' } });
    await waitFor('the agent’s operation stamped', async () => (await readApplication(NS, APP))?.metadata?.annotations?.['spec-guard.io/stamp'] && (await readApplication(NS, APP))?.operation);
    // Consumed by the controller: not put back (it would run again).
    expect(merge(CONTROLLER, { operation: null }).stderr).toBe('');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await readApplication(NS, APP))!.operation).toBeUndefined();
    expect(sg.logs()).not.toMatch(/drift reverted.*doors-a/);
    // Her writes: undone.
    for (const d of [doors[0]!, doors[5]!, doors[6]!]) {
      expect(d.run().code).toBe(0);
      await waitFor(`${d.what} undone`, async () => {
        const app = await readApplication(NS, APP);
        return app && !app.operation && !app.metadata.annotations?.['argocd.argoproj.io/skip-reconcile'] && app.metadata.finalizers?.[0] === FINALIZER;
      }, 2000, 20);
    }
    await waitFor('the SpecDriftReverted events', () => eventsFor(NS, APP, 'SpecDriftReverted').length > 0, 10_000, 250);
    const messages = eventsFor(NS, APP, 'SpecDriftReverted').map((e) => e.message).join('\n');
    expect(messages).toContain('/operation');
    // Her operation in progress cannot be undone before the controller resumes it: reported.
    agentWrites({ sync: { revision: 'v4' } });
    expect(doors[4]!.run().code).toBe(0);
    await waitFor('the ForgedOperationState event', () => eventsFor(NS, APP, 'ForgedOperationState').length > 0, 10_000, 250);
    expect(eventsFor(NS, APP, 'ForgedOperationState')[0]!.message).toContain('status.operationState');
  });

  it('5. the agent’s Foreground delete completes: the garbage collector removes its finalizer, the controller its own', async () => {
    await sg!.stop();
    unregister();
    expireLease();
    sg = await startSpecGuard(fixture('config.yaml'));
    await policyInForce();
    kubectlOk(AGENT, ['delete', 'application', '-n', NS, APP, '--cascade=foreground', '--wait=false']);
    const finalizers = async () => ((await readApplication(NS, APP))?.metadata?.finalizers ?? []) as string[];
    await waitFor('the foregroundDeletion finalizer', async () => (await finalizers()).includes('foregroundDeletion'), 5000, 50);
    // This control plane runs no controller-manager: the collector's part is played by hand.
    const gc = ['--as=system:serviceaccount:kube-system:generic-garbage-collector'];
    const index = (await finalizers()).indexOf('foregroundDeletion');
    const collected = jsonPatch(gc, [{ op: 'test', path: `/metadata/finalizers/${index}`, value: 'foregroundDeletion' }, { op: 'remove', path: `/metadata/finalizers/${index}` }]);
    expect(collected.stderr).toBe('');
    expect(await finalizers()).toEqual([FINALIZER]);
    // The controller cascades (nothing deployed here) and removes its finalizer.
    expect(merge(CONTROLLER, { metadata: { finalizers: null } }).stderr).toBe('');
    await waitFor('the Application gone', async () => (await readApplication(NS, APP)) === undefined, 5000, 50);
  });
});
