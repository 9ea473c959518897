import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { CA_BUNDLE_KEY, CA_SECRET } from '../../src/certs/index.js';
import { runCli } from '../helpers/cli.js';
import { admin, AGENT, ALICE, agentApply, fixture, getJson, inCluster, kubectl, kubectlOk, leaseHeldByAnother, readApplication, startSpecGuard, state, unregister, waitFor, type SpecGuard } from './harness.js';

// A trusted partial write (a merge patch of one field) to an object that still carries an
// untrusted change, its revert delayed by a leader change, must not stamp that change along.
jest.setTimeout(120_000);

const NS = 'argocd';
const describeLocal = inCluster ? describe.skip : describe;

describeLocal('a trusted write does not launder drift', () => {
  let sg: SpecGuard;

  beforeAll(async () => {
    unregister();
    // Another replica holds the lease (a leader change in progress): this one serves admission but reverts nothing.
    leaseHeldByAnother();
    sg = await startSpecGuard(fixture('config.yaml'));
    // Register what spec-guard would, the GitOps way, pointing at this replica.
    const ca = Buffer.from(getJson(['secret', '-n', 'spec-guard', CA_SECRET]).data[CA_BUNDLE_KEY], 'base64').toString('utf8');
    const caFile = join(tmpdir(), `spec-guard-launder-ca-${process.pid}.pem`);
    writeFileSync(caFile, ca);
    const manifests = runCli(['manifests', '--config', fixture('config.yaml'), '--webhook-url', `https://127.0.0.1:${sg.webhookPort}`, '--ca-bundle-file', caFile, '--self-user', 'system:serviceaccount:spec-guard:spec-guard']);
    expect(manifests.code).toBe(0);
    kubectlOk([], ['apply', '--server-side', '-f', '-'], { input: manifests.stdout });
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    kubectl([], ['delete', 'application', '-n', NS, 'launder', '--ignore-not-found', '--wait=false']);
  });

  it("the agent's merge patch of one field keeps the canonical value where alice's change was not reverted yet", async () => {
    agentApply('launder', NS);
    await waitFor('stamped', async () => (await readApplication(NS, 'launder'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    await new Promise((r) => setTimeout(r, 500)); // the watch brings the canonical value to this replica's cache
    // Behind admission: the policy and the validating webhooks are gone for a moment.
    kubectlOk([], ['delete', 'validatingadmissionpolicy,validatingadmissionpolicybinding,validatingwebhookconfiguration', 'spec-guard']);
    await new Promise((r) => setTimeout(r, 2000)); // the apiserver drops a deleted policy at its next refresh
    kubectlOk(ALICE, ['patch', 'application', '-n', NS, 'launder', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
    expect((await readApplication(NS, 'launder'))!.spec.source.targetRevision).toBe('evil');
    // Nobody reverts (no leader). The agent writes one other field.
    const kube = await admin();
    await kube.request('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/launder`, {
      body: { spec: { source: { path: 'new-path' } } },
      contentType: 'application/merge-patch+json',
      headers: { 'Impersonate-User': AGENT[0]!.replace('--as=', '') },
      query: { fieldManager: 'argocd-agent' },
    });
    const stored = (await readApplication(NS, 'launder'))!;
    expect(stored.spec.source.path).toBe('new-path');
    expect(stored.spec.source.targetRevision).toBe('HEAD');
    const status = runCli(['status', '--config', fixture('config.yaml'), '--kubeconfig', state().adminKubeconfig]);
    expect(status.stdout).toMatch(/applications\.argoproj\.io argocd\/launder\s+in sync\s+stamped/);
  });
});
